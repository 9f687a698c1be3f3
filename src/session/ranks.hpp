// session/ranks.hpp — which rank of a multi-process job this process is (torchrun, mpirun, srun),
// and which process of a `cuscope run`; and output paths with `%r` (rank), `%p` (pid) and `%h`
// (host) expanded, so that each rank of a job writes its own table, JSON report and trace. A path
// that several processes would write (no `%r` under a launcher, no `%p` in a later process of a
// `cuscope run`) gets the rank or the pid before its extension, with a note saying so, and so does
// a file another live process on this host writes (run_claim.hpp): one process never replaces, or
// writes into, another's file. Read once, when the session starts.
//
// Never: change a path to anything but a regular file (a device, a pipe) or to the program's own
// stdout or stderr, or a path that names the process already.
#pragma once

#include <cstdint>
#include <cuscope/session.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope::inline v0::detail {

struct ProcessIdentity {
  std::int64_t rank = -1;       ///< -1: no launcher variable is set
  std::int64_t world_size = 0;  ///< 0: not known
  std::string rank_variable;    ///< the variable the rank came from ("" when none)
  long pid = 0;
  std::string host;
  std::vector<std::string> problems;  ///< variables set to something that is not a rank or a size
  /// Under `cuscope run` (CUSCOPE_RUN_ID, "PID-NANOSECONDS"): when the run began, in nanoseconds
  /// since the epoch (0: not under one), and its id.
  std::uint64_t run_start_ns = 0;
  std::string run_id;
  /// Under `cuscope run`, and not the process it started: one the program started in turn.
  bool run_below = false;
  /// Another process of the run started its session first: it writes the paths that name no
  /// process, and this one writes its own (this_process() finds out; run_claim.hpp).
  bool run_later = false;
};

/// The rank from the first of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID that is set, and
/// the world size from its launcher's companion (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// SLURM_NTASKS); the run's id and start from CUSCOPE_RUN_ID. `pid` and `host` are given (the
/// caller reads them from the process).
ProcessIdentity process_identity(EnvLookup lookup, long pid, std::string host);

/// `pattern` with `%r` (the rank; "0" when there is none), `%p`, `%h` and `%%` replaced; any other
/// `%` is kept as it is.
std::string expand_output_path(std::string_view pattern, const ProcessIdentity& id);

/// The file this process writes for the output path `pattern` (the option `variable`): `pattern`
/// expanded, or, where other processes would write the same file, expanded with "-%r" or "-%p"
/// before the file name's extension, and then `*note` says why:
///   - several ranks (a rank above 0, or rank 0 of more than one) and `pattern` names neither %r
///     nor %p: "-%r";
///   - no ranks, under `cuscope run`, no %p, and another process of the run started first
///     (run_later), or the file was written since the run began (by a process of the run that
///     ended): "-%p".
/// A path to something that exists and is not a regular file (a device, a pipe), or that is the
/// program's own stdout or stderr (/dev/stderr sent to a log), stays as it is.
std::string own_output_path(std::string_view variable, std::string_view pattern, const ProcessIdentity& id,
                            std::string* note);

/// This process: the launcher variables and the run's from the environment, getpid(),
/// gethostname(), and (under `cuscope run`) whether another process of the run came first.
ProcessIdentity this_process();

/// CUSCOPE_OUTPUT (when the table is printed), CUSCOPE_JSON and CUSCOPE_TRACE of `o`, each the file
/// this process writes (own_output_path); a note for each one changed.
void expand_output_paths(Options& o, const ProcessIdentity& id, std::vector<std::string>* notes);

/// Claims each report file of `o` (expanded and absolute: the session's, after expand_output_paths)
/// for this session (process `pid`), so that no two live sessions on this host (its network
/// namespace) write one file, however its path is spelled: a file another session claimed first
/// gets "-PID" before its extension, with a note that replaces the variable's earlier one. A file
/// that is not a regular one (a device, a pipe, a descriptor, the program's own stdout or stderr)
/// is not claimed.
void claim_output_paths(Options& o, long pid, std::vector<std::string>* notes);

}  // namespace cuscope::inline v0::detail

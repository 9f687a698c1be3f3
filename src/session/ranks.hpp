// session/ranks.hpp — which rank of a multi-process job this process is (torchrun, mpirun, srun),
// and output paths with `%r` (rank), `%p` (pid) and `%h` (host) expanded, so that each rank of a
// job writes its own table, JSON report and trace. Read once, when the session starts.
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
};

/// The rank from the first of RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID that is set, and
/// the world size from its launcher's companion (WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE,
/// SLURM_NTASKS). `pid` and `host` are given (the caller reads them from the process).
ProcessIdentity process_identity(EnvLookup lookup, long pid, std::string host);

/// `pattern` with `%r` (the rank; "0" when there is none), `%p`, `%h` and `%%` replaced; any other
/// `%` is kept as it is.
std::string expand_output_path(std::string_view pattern, const ProcessIdentity& id);

/// This process: the launcher variables from the environment, getpid() and gethostname().
ProcessIdentity this_process();

/// CUSCOPE_OUTPUT, CUSCOPE_JSON and CUSCOPE_TRACE of `o`, expanded.
void expand_output_paths(Options& o, const ProcessIdentity& id);

}  // namespace cuscope::inline v0::detail

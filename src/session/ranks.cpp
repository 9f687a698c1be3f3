// session/ranks.cpp — the process's rank in its job and output path expansion (see ranks.hpp).
#include "session/ranks.hpp"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "session/internal.hpp"
#include "session/run_claim.hpp"

namespace cuscope::inline v0::detail {
namespace {

struct Launcher {
  const char* rank;
  const char* size;
};
// torchrun, Open MPI, MPICH/Intel MPI (PMI), Slurm: the first whose rank is set wins.
constexpr Launcher kLaunchers[] = {{"RANK", "WORLD_SIZE"},
                                   {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                   {"PMI_RANK", "PMI_SIZE"},
                                   {"SLURM_PROCID", "SLURM_NTASKS"}};

// A whole number in [min, 2^31): ranks and sizes of real jobs; anything else is a problem.
bool whole(const char* text, std::int64_t min, std::int64_t& out) {
  const std::string_view v(text);
  std::int64_t parsed = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || parsed < min ||
      parsed > std::numeric_limits<std::int32_t>::max()) {
    return false;
  }
  out = parsed;
  return true;
}

// CUSCOPE_RUN_ID, "PID-NANOSECONDS" as `cuscope run` sets it: the process it started, and the
// run's start; false otherwise.
bool run_start(std::string_view id, std::uint64_t& run_pid, std::uint64_t& start_ns) {
  const std::size_t dash = id.find('-');
  if (dash == std::string_view::npos || dash == 0) return false;
  std::uint64_t pid = 0;
  std::uint64_t ns = 0;
  const auto [pid_end, pid_ec] = std::from_chars(id.data(), id.data() + dash, pid);
  const char* end = id.data() + id.size();
  const auto [ns_end, ns_ec] = std::from_chars(id.data() + dash + 1, end, ns);
  if (pid_ec != std::errc{} || pid_end != id.data() + dash || pid == 0 || ns_ec != std::errc{} ||
      ns_end != end || ns == 0)
    return false;
  run_pid = pid;
  start_ns = ns;
  return true;
}

// Whether `pattern` holds %`field` (not as part of "%%").
bool names(std::string_view pattern, char field) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i) {
    if (pattern[i] != '%') continue;
    if (pattern[i + 1] == field) return true;
    if (pattern[i + 1] == '%') ++i;
  }
  return false;
}

// `pattern` with `tag` before the extension of its file name ("out/report.json" -> "out/report-%r.json";
// a name without one, or only a leading dot, gets it at the end).
std::string tagged(std::string_view pattern, std::string_view tag) {
  const std::size_t slash = pattern.rfind('/');
  const std::size_t name = slash == std::string_view::npos ? 0 : slash + 1;
  const std::size_t dot = pattern.rfind('.');
  const std::size_t at = dot != std::string_view::npos && dot > name ? dot : pattern.size();
  std::string out(pattern.substr(0, at));
  out += tag;
  out += pattern.substr(at);
  return out;
}

// Whether `path`, which exists (`st`), is not a file of cuscope's to name: not a regular file (a
// device, a pipe), or the program's own stdout or stderr (/dev/stderr sent to a log).
bool not_a_report_file(const std::string& path, const struct stat& st) {
  return !S_ISREG(st.st_mode) || standard_stream(path) != nullptr;
}

// The report files `o` names, with their variables: the table's only when it is printed.
std::vector<std::pair<const char*, std::string*>> report_paths(Options& o) {
  std::vector<std::pair<const char*, std::string*>> paths;
  if (o.print_at_exit) paths.emplace_back("CUSCOPE_OUTPUT", &o.output_path);
  paths.emplace_back("CUSCOPE_JSON", &o.json_path);
  paths.emplace_back("CUSCOPE_TRACE", &o.trace_path);
  return paths;
}

// The file `path` names, however it is spelled (./, //, a linked folder): its folder's device and
// inode, and its name; where the folder cannot be read, the path itself. Not the file's own inode:
// each rewrite of a report replaces the file (renamed over it).
std::string file_identity(const std::string& path) {
  const std::size_t slash = path.rfind('/');
  const std::string folder = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  struct stat st {};
  if (stat(folder.c_str(), &st) != 0) return path;
  return fmt::format("{}:{}/{}", static_cast<unsigned long long>(st.st_dev),
                     static_cast<unsigned long long>(st.st_ino), path.substr(slash + 1));
}

}  // namespace

ProcessIdentity process_identity(EnvLookup lookup, long pid, std::string host) {
  ProcessIdentity id;
  id.pid = pid;
  id.host = std::move(host);
  for (const Launcher& l : kLaunchers) {
    const char* rank = lookup(l.rank);
    if (rank == nullptr) continue;
    id.rank_variable = l.rank;
    if (!whole(rank, 0, id.rank)) {
      id.problems.push_back(
          fmt::format("{}='{}' is not a rank (a whole number from 0); the report has no rank "
                      "and %r in output paths is 0",
                      l.rank, rank));
      id.rank = -1;
    }
    if (const char* size = lookup(l.size); size != nullptr && !whole(size, 1, id.world_size)) {
      id.problems.push_back(fmt::format(
          "{}='{}' is not a world size (a whole number from 1); the report has none", l.size, size));
      id.world_size = 0;
    }
    break;
  }
  if (const char* run = lookup("CUSCOPE_RUN_ID"); run != nullptr && *run != '\0') {
    std::uint64_t run_pid = 0;
    if (run_start(run, run_pid, id.run_start_ns)) {
      id.run_id = run;
      id.run_below = run_pid != static_cast<std::uint64_t>(pid);
    } else {
      id.problems.push_back(fmt::format(
          "CUSCOPE_RUN_ID='{}' is not what `cuscope run` sets (PID-NANOSECONDS); ignored", run));
    }
  }
  return id;
}

std::string expand_output_path(std::string_view pattern, const ProcessIdentity& id) {
  std::string out;
  out.reserve(pattern.size() + 16);
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    const char next = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
    if (c != '%' || (next != 'r' && next != 'p' && next != 'h' && next != '%')) {
      out += c;
      continue;
    }
    ++i;
    if (next == 'r') out += fmt::format("{}", id.rank < 0 ? 0 : id.rank);
    if (next == 'p') out += fmt::format("{}", id.pid);
    if (next == 'h') out += id.host;
    if (next == '%') out += '%';
  }
  return out;
}

std::string own_output_path(std::string_view variable, std::string_view pattern, const ProcessIdentity& id,
                            std::string* note) {
  const std::string plain = expand_output_path(pattern, id);
  struct stat st {};
  const bool exists = !plain.empty() && stat(plain.c_str(), &st) == 0;
  if (plain.empty() || (exists && not_a_report_file(plain, st)) || names(pattern, 'p')) return plain;
  const bool several_ranks = id.rank > 0 || (id.rank == 0 && id.world_size > 1);
  if (several_ranks) {
    if (names(pattern, 'r')) return plain;
    std::string own = expand_output_path(tagged(pattern, "-%r"), id);
    const std::string of = id.world_size > 0 ? fmt::format(" of {}", id.world_size) : "";
    *note = fmt::format("{}={} names neither the rank (%r) nor the process (%p), and this is rank {}{}: it "
                        "writes {}, as each rank writes its own",
                        variable, pattern, id.rank, of, own);
    return own;
  }
  if (id.run_start_ns == 0) return plain;
  std::string why;
  if (id.run_later) {
    // Not "writes it": that process may record nothing, and leave nothing (report_files.cpp).
    why = fmt::format("another process of this `cuscope run` started first, and {} is its", plain);
  } else if (exists && std::uint64_t(st.st_mtim.tv_sec) * 1'000'000'000u + std::uint64_t(st.st_mtim.tv_nsec) >=
                           id.run_start_ns) {
    why = fmt::format("another process of this `cuscope run` wrote {} already", plain);
  } else {
    return plain;
  }
  std::string own = expand_output_path(tagged(pattern, "-%p"), id);
  *note = fmt::format("{}={}: {}; this process ({}) writes {}", variable, pattern, why, id.pid, own);
  return own;
}

ProcessIdentity this_process() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  ProcessIdentity id =
      process_identity([](const char* name) -> const char* { return std::getenv(name); },
                       static_cast<long>(getpid()), host[0] != '\0' ? host : "unknown-host");
  if (!id.run_id.empty()) id.run_later = !claim_run(id.run_id);
  return id;
}

void expand_output_paths(Options& o, const ProcessIdentity& id, std::vector<std::string>* notes) {
  for (auto [variable, path] : report_paths(o)) {  // no table: no file, and no note of one
    std::string note;
    *path = own_output_path(variable, *path, id, &note);
    if (!note.empty()) notes->push_back(std::move(note));
  }
}

void claim_output_paths(Options& o, long pid, std::vector<std::string>* notes) {
  for (auto [variable, path] : report_paths(o)) {
    if (path->empty()) continue;
    // Devices and descriptors (/dev/stderr, /dev/fd/3, /proc/self/fd/1): not files cuscope names.
    if (path->rfind("/dev/", 0) == 0 || path->rfind("/proc/", 0) == 0) continue;
    struct stat st {};
    if (stat(path->c_str(), &st) == 0 && not_a_report_file(*path, st)) continue;
    if (claim_path(file_identity(*path))) continue;
    std::string own = tagged(*path, fmt::format("-{}", pid));
    // This note says where the file goes now: an earlier one for the same variable (its rank or
    // pid) named a file this process no longer writes.
    const std::string earlier = std::string(variable) + "=";
    std::erase_if(*notes, [&earlier](const std::string& n) { return n.rfind(earlier, 0) == 0; });
    notes->push_back(fmt::format("{}: another live cuscope session on this host is writing {} (it started first); "
                                 "this process ({}) writes {}",
                                 variable, *path, pid, own));
    *path = std::move(own);
  }
}

}  // namespace cuscope::inline v0::detail

// session/ranks.cpp — the process's rank in its job and output path expansion (see ranks.hpp).
#include "session/ranks.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <charconv>
#include <cstdlib>
#include <limits>

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

ProcessIdentity this_process() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return process_identity([](const char* name) -> const char* { return std::getenv(name); },
                          static_cast<long>(getpid()), host[0] != '\0' ? host : "unknown-host");
}

void expand_output_paths(Options& o, const ProcessIdentity& id) {
  for (std::string* path : {&o.output_path, &o.json_path, &o.trace_path})
    *path = expand_output_path(*path, id);
}

}  // namespace cuscope::inline v0::detail

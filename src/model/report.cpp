// model/report.cpp — lookups on a Report snapshot, the names of its enums, and the version.
#include "cuscope/report.hpp"

#include "cuscope/version.hpp"

#define CUSCOPE_STRINGIFY_(x) #x
#define CUSCOPE_STRINGIFY(x) CUSCOPE_STRINGIFY_(x)

namespace cuscope {
inline namespace v0 {

const char* version() noexcept {
  return CUSCOPE_STRINGIFY(CUSCOPE_VERSION_MAJOR) "." CUSCOPE_STRINGIFY(
      CUSCOPE_VERSION_MINOR) "." CUSCOPE_STRINGIFY(CUSCOPE_VERSION_PATCH);
}

namespace {

const RangeStats* child_named(const std::vector<RangeStats>& ranges, const RangeStats& parent,
                              std::string_view name) {
  for (std::size_t child : parent.children) {
    if (child < ranges.size() && ranges[child].name == name) return &ranges[child];
  }
  return nullptr;
}

}  // namespace

const RangeStats* Report::find(std::string_view path) const {
  if (ranges.empty()) return nullptr;
  const RangeStats* node = &ranges.front();
  if (path.empty()) return node;
  // Every component must name a child, so "a/" and "/a" (an empty component) find nothing.
  for (;;) {
    const std::size_t slash = path.find('/');
    node = child_named(ranges, *node, path.substr(0, slash));
    if (node == nullptr || slash == std::string_view::npos) return node;
    path.remove_prefix(slash + 1);
  }
}

std::string_view to_string(CopyKind k) {
  switch (k) {
    case CopyKind::HtoD:
      return "HtoD";
    case CopyKind::DtoH:
      return "DtoH";
    case CopyKind::DtoD:
      return "DtoD";
    case CopyKind::HtoH:
      return "HtoH";
    case CopyKind::PtoP:
      return "PtoP";
    case CopyKind::Other:
      return "other";
  }
  return "other";
}

std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::memory:
      return "memory-bound";
    case Bound::compute:
      return "compute-bound";
    case Bound::latency:
      return "latency-bound";
    case Bound::launch:
      return "launch-bound";
    case Bound::unknown:
      return "unknown";
  }
  return "unknown";
}

std::string_view to_string(Severity s) { return s == Severity::warning ? "warning" : "info"; }

std::string_view to_string(SortKey k) {
  switch (k) {
    case SortKey::host_total:
      return "host_total";
    case SortKey::host_self:
      return "host_self";
    case SortKey::gpu_total:
      return "gpu_total";
    case SortKey::kernel_total:
      return "kernel_total";
    case SortKey::gpu_busy:
      return "gpu_busy";
    case SortKey::calls:
      return "calls";
    case SortKey::name:
      return "name";
  }
  return "unknown";
}

}  // namespace v0
}  // namespace cuscope

// cli/report_json.cpp — a JSON report (cuscope.report/1, as format_json writes it) read back into a
// Report, so `cuscope show` prints the table of a report written by CUSCOPE_JSON.
#include <array>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "cli/cli.hpp"
#include "model/diagnostic_fields.hpp"

namespace cuscope::cli {

namespace {

using Json = nlohmann::json;

template <class T>
struct IsList : std::false_type {};
template <class T>
struct IsList<std::vector<T>> : std::true_type {};
template <class T, std::size_t N>
struct IsList<std::array<T, N>> : std::true_type {};  // a fixed count: get<> refuses another

[[noreturn]] void malformed(const char* key, const char* what) {
  throw std::runtime_error(std::string("\"") + key + "\" is " + what);
}

// That `v`, the value of `key`, holds a T exactly: a count is a whole number >= 0 that fits, a text a
// string. A value of another type once read as 0 (a "host" of 5 made a diff say -100%, and pass).
template <class T>
void check(const Json& v, const char* key) {
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) malformed(key, "not true or false");
  } else if constexpr (std::is_integral_v<T>) {
    if (!v.is_number_integer()) malformed(key, "not a whole number");
    if constexpr (std::is_unsigned_v<T>) {
      if (!v.is_number_unsigned()) malformed(key, "below 0");
      if (v.get<std::uint64_t>() > std::numeric_limits<T>::max()) malformed(key, "out of range");
    } else {
      const bool fits = v.is_number_unsigned() ? v.get<std::uint64_t>() <=
                                                     static_cast<std::uint64_t>(std::numeric_limits<T>::max())
                                               : v.get<std::int64_t>() >= std::numeric_limits<T>::min() &&
                                                     v.get<std::int64_t>() <= std::numeric_limits<T>::max();
      if (!fits) malformed(key, "out of range");
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) malformed(key, "not a number");
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) malformed(key, "not a string");
  } else if constexpr (IsList<T>::value) {
    if (!v.is_array()) malformed(key, "not an array");
    for (const Json& e : v) check<typename T::value_type>(e, key);
  } else {
    static_assert(IsList<T>::value, "a type report_json.cpp does not check");
  }
}

// `out` from `key` of `j`, where present and not null; a value of another type is malformed.
template <class T>
void get(const Json& j, const char* key, T& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  check<T>(*it, key);
  out = it->get<T>();
}

// The object at `key`, nullptr where absent or null; anything else there is malformed.
const Json* object_at(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return nullptr;
  if (!it->is_object()) malformed(key, "not an object");
  return &*it;
}

// The array of objects at `key` (empty where absent or null); anything else there is malformed.
const Json& array_at(const Json& j, const char* key) {
  static const Json kEmpty = Json::array();
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return kEmpty;
  if (!it->is_array()) malformed(key, "not an array");
  for (const Json& e : *it)
    if (!e.is_object()) malformed(key, "not an array of objects");
  return *it;
}

DurationStats duration(const Json& j) {
  DurationStats d;
  get(j, "count", d.count);
  get(j, "total_ns", d.total_ns);
  get(j, "min_ns", d.min_ns);
  get(j, "max_ns", d.max_ns);
  get(j, "max_call", d.max_call);  // absent before reports recorded it: 0, unknown
  return d;
}

ActivityStats activity(const Json& j) {
  ActivityStats a;
  get(j, "kernel_calls", a.kernel_calls);
  get(j, "kernel_ns", a.kernel_ns);
  get(j, "gpu_busy_ns", a.gpu_busy_ns);
  get(j, "gpu_span_ns", a.gpu_span_ns);
  if (const Json* m = object_at(j, "memcpy")) {
    for (std::size_t i = 0; i < kCopyKinds; ++i) {
      const std::string kind(to_string(static_cast<CopyKind>(i)));
      const Json* c = object_at(*m, kind.c_str());
      if (c == nullptr) continue;
      get(*c, "count", a.memcpy[i].count);
      get(*c, "bytes", a.memcpy[i].bytes);
      get(*c, "total_ns", a.memcpy[i].total_ns);
    }
  }
  get(j, "memset_count", a.memset_count);
  get(j, "memset_bytes", a.memset_bytes);
  get(j, "memset_ns", a.memset_ns);
  get(j, "sync_count", a.sync_count);
  get(j, "sync_ns", a.sync_ns);
  get(j, "alloc_count", a.alloc_count);
  get(j, "alloc_bytes", a.alloc_bytes);
  get(j, "free_count", a.free_count);
  get(j, "free_bytes", a.free_bytes);
  get(j, "peak_bytes", a.peak_bytes);
  get(j, "pageable_copies", a.pageable_copies);
  get(j, "pageable_bytes", a.pageable_bytes);
  get(j, "blocking_copies", a.blocking_copies);
  get(j, "blocking_bytes", a.blocking_bytes);
  get(j, "kernel_streams", a.kernel_streams);
  get(j, "busiest_stream_ns", a.busiest_stream_ns);
  return a;
}

Bound bound(const std::string& s) {
  for (Bound b : {Bound::memory, Bound::compute, Bound::latency, Bound::launch})
    if (to_string(b) == s) return b;
  return Bound::unknown;
}

KernelStats kernel(const Json& k) {
  KernelStats s;
  get(k, "name", s.name);
  if (const Json* d = object_at(k, "duration")) s.duration = duration(*d);
  get(k, "grid", s.grid);
  get(k, "block", s.block);
  get(k, "registers_per_thread", s.registers_per_thread);
  get(k, "static_shared_bytes", s.static_shared_bytes);
  get(k, "dynamic_shared_bytes", s.dynamic_shared_bytes);
  get(k, "device", s.device);
  return s;
}

RangeStats range(const Json& j, std::size_t count) {
  RangeStats r;
  get(j, "name", r.name);
  get(j, "path", r.path);
  get(j, "parent", r.parent);
  get(j, "depth", r.depth);
  get(j, "children", r.children);
  for (std::size_t c : r.children)
    if (c == 0 || c >= count) throw std::runtime_error("a range's child index is out of range");
  if (r.parent >= count) throw std::runtime_error("a range's parent index is out of range");
  get(j, "calls", r.calls);
  get(j, "open", r.open);
  get(j, "recursive_calls", r.recursive_calls);
  get(j, "threads", r.threads);
  if (const Json* h = object_at(j, "host")) r.host = duration(*h);
  get(j, "host_self_ns", r.host_self_ns);
  if (const Json* g = object_at(j, "gpu")) r.gpu = duration(*g);
  if (const Json* g = object_at(j, "gpu_projected")) r.gpu_projected = duration(*g);
  if (const Json* s = object_at(j, "self")) r.self = activity(*s);
  if (const Json* t = object_at(j, "total")) r.total = activity(*t);
  for (const Json& k : array_at(j, "kernels")) r.kernels.push_back(kernel(k));
  if (const Json* v = object_at(j, "verdict")) {
    std::string b;
    get(*v, "bound", b);
    r.verdict.bound = bound(b);
    get(*v, "dram_bytes_per_s", r.verdict.dram_bytes_per_s);
    get(*v, "flop_per_s", r.verdict.flop_per_s);
    get(*v, "arithmetic_intensity", r.verdict.arithmetic_intensity);
    get(*v, "roofline_pct", r.verdict.roofline_pct);
    get(*v, "reason", r.verdict.reason);
  }
  for (const Json& f : array_at(j, "findings")) {
    Finding x;
    get(f, "id", x.id);
    std::string severity;
    get(f, "severity", severity);
    x.severity = severity == "warning" ? Severity::warning : Severity::info;
    get(f, "observation", x.observation);
    get(f, "cause", x.cause);
    get(f, "fix", x.fix);
    r.findings.push_back(std::move(x));
  }
  get(j, "profiled_kernels", r.profiled_kernels);
  for (const Json& m : array_at(j, "metrics")) {
    MetricValue v;
    get(m, "name", v.name);
    get(m, "label", v.label);
    get(m, "unit", v.unit);
    get(m, "value", v.value);
    r.metrics.push_back(std::move(v));
  }
  for (const Json& c : array_at(j, "counts")) {
    CountStats s;
    get(c, "name", s.name);
    get(c, "self", s.self);
    get(c, "total", s.total);
    get(c, "per_host_second", s.per_host_second);
    get(c, "per_gpu_second", s.per_gpu_second);
    r.counts.push_back(std::move(s));
  }
  for (const Json& g : array_at(j, "graph")) {  // absent in reports before graphs
    GraphPathStats p;
    get(g, "path", p.path);
    get(g, "kernel_calls", p.kernel_calls);
    get(g, "kernel_ns", p.kernel_ns);
    get(g, "gpu_busy_ns", p.gpu_busy_ns);
    for (const Json& k : array_at(g, "kernels")) p.kernels.push_back(kernel(k));
    r.graph.push_back(std::move(p));
  }
  return r;
}

SpanStats span(const Json& j) {
  SpanStats s;
  get(j, "domain", s.domain);
  get(j, "name", s.name);
  if (const Json* h = object_at(j, "host")) s.host = duration(*h);
  get(j, "open", s.open);
  get(j, "cross_thread", s.cross_thread);
  return s;
}

}  // namespace

bool report_from_json(const std::string& text, Report* out, std::string* error) {
  const Json j = Json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    *error = "not a cuscope trace or JSON report";
    return false;
  }
  const auto schema = j.find("schema");
  if (schema == j.end() || !schema->is_string() || *schema != "cuscope.report/1") {
    *error = "not a cuscope JSON report (its \"schema\" is not \"cuscope.report/1\")";
    return false;
  }
  try {
    Report r;
    get(j, "device", r.device);
    get(j, "gpu_timing", r.gpu_timing);
    get(j, "activity_status", r.activity_status);
    get(j, "counters_status", r.counters_status);
    get(j, "clock", r.clock);
    if (const Json* p = object_at(j, "peaks")) {
      get(*p, "dram_bytes_per_s", r.peaks.dram_bytes_per_s);
      get(*p, "fp64_flop_per_s", r.peaks.fp64_flop_per_s);
      get(*p, "fp32_flop_per_s", r.peaks.fp32_flop_per_s);
      get(*p, "fp16_flop_per_s", r.peaks.fp16_flop_per_s);
      get(*p, "source", r.peaks.source);
    }
    get(j, "notes", r.notes);
    get(j, "steps", r.steps);
    get(j, "recorded_steps", r.recorded_steps);
    get(j, "clock_steps", r.clock_steps);  // absent (a report from before 2026-11-28): 0
    get(j, "step_ms", r.step_ms);
    get(j, "window_start_step", r.window_start_step);
    get(j, "wall_ns", r.wall_ns);
    get(j, "final", r.final);  // absent (a report from before 2026-11-28, nearly all written at exit): final
    get(j, "rank", r.rank);  // null or absent (a single process, or a report before ranks): -1
    get(j, "world_size", r.world_size);
    get(j, "pid", r.pid);  // null or absent (a report from before): 0
    get(j, "host", r.host);
    if (const Json* d = object_at(j, "diagnostics")) {
      // The names are string literals: their data() is null-terminated.
      for (const model::DiagnosticField& f : model::kDiagnosticFields)
        get(*d, f.json.data(), r.diagnostics.*f.field);
    }
    if (j.find("ranges") == j.end()) malformed("ranges", "missing");
    const Json& ranges = array_at(j, "ranges");
    if (ranges.empty()) throw std::runtime_error("\"ranges\" holds no root");
    r.ranges.clear();
    for (const Json& x : ranges) r.ranges.push_back(range(x, ranges.size()));
    // The table walks children from the root: each range may be listed once, by its own parent, and
    // every one must be reached from the root (one not reached, or a cycle apart, would be left out).
    std::vector<bool> listed(r.ranges.size(), false);
    for (std::size_t i = 0; i < r.ranges.size(); ++i) {
      for (std::size_t c : r.ranges[i].children) {
        if (listed[c] || r.ranges[c].parent != i) throw std::runtime_error("the ranges do not form a tree");
        listed[c] = true;
      }
    }
    std::vector<std::size_t> walk{0};
    for (std::size_t at = 0; at < walk.size(); ++at)
      for (std::size_t c : r.ranges[walk[at]].children) walk.push_back(c);
    if (walk.size() != r.ranges.size())
      throw std::runtime_error("the ranges do not form a tree (" +
                               std::to_string(r.ranges.size() - walk.size()) + " not reached from the root)");
    for (const Json& x : array_at(j, "spans")) r.spans.push_back(span(x));  // absent before spans
    *out = std::move(r);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("malformed JSON report: ") + e.what();
    return false;
  }
}

}  // namespace cuscope::cli

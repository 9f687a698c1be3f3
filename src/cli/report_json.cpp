// cli/report_json.cpp — a JSON report (cuscope.report/1, as format_json writes it) read back into a
// Report, so `cuscope show` prints the table of a report written by CUSCOPE_JSON.
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "model/diagnostic_fields.hpp"

namespace cuscope::cli {

namespace {

using Json = nlohmann::json;

template <class T>
void get(const Json& j, const char* key, T& out) {
  if (auto it = j.find(key); it != j.end() && !it->is_null()) out = it->get<T>();
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
  if (auto m = j.find("memcpy"); m != j.end()) {
    for (std::size_t i = 0; i < kCopyKinds; ++i) {
      auto c = m->find(std::string(to_string(static_cast<CopyKind>(i))));
      if (c == m->end()) continue;
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
  if (auto d = k.find("duration"); d != k.end()) s.duration = duration(*d);
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
  if (auto h = j.find("host"); h != j.end()) r.host = duration(*h);
  get(j, "host_self_ns", r.host_self_ns);
  if (auto g = j.find("gpu"); g != j.end()) r.gpu = duration(*g);
  if (auto g = j.find("gpu_projected"); g != j.end()) r.gpu_projected = duration(*g);
  if (auto s = j.find("self"); s != j.end()) r.self = activity(*s);
  if (auto t = j.find("total"); t != j.end()) r.total = activity(*t);
  for (const Json& k : j.value("kernels", Json::array())) r.kernels.push_back(kernel(k));
  if (auto v = j.find("verdict"); v != j.end()) {
    std::string b;
    get(*v, "bound", b);
    r.verdict.bound = bound(b);
    get(*v, "dram_bytes_per_s", r.verdict.dram_bytes_per_s);
    get(*v, "flop_per_s", r.verdict.flop_per_s);
    get(*v, "arithmetic_intensity", r.verdict.arithmetic_intensity);
    get(*v, "roofline_pct", r.verdict.roofline_pct);
    get(*v, "reason", r.verdict.reason);
  }
  for (const Json& f : j.value("findings", Json::array())) {
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
  for (const Json& m : j.value("metrics", Json::array())) {
    MetricValue v;
    get(m, "name", v.name);
    get(m, "label", v.label);
    get(m, "unit", v.unit);
    get(m, "value", v.value);
    r.metrics.push_back(std::move(v));
  }
  for (const Json& c : j.value("counts", Json::array())) {
    CountStats s;
    get(c, "name", s.name);
    get(c, "self", s.self);
    get(c, "total", s.total);
    get(c, "per_host_second", s.per_host_second);
    get(c, "per_gpu_second", s.per_gpu_second);
    r.counts.push_back(std::move(s));
  }
  for (const Json& g : j.value("graph", Json::array())) {  // absent in reports before graphs
    GraphPathStats p;
    get(g, "path", p.path);
    get(g, "kernel_calls", p.kernel_calls);
    get(g, "kernel_ns", p.kernel_ns);
    get(g, "gpu_busy_ns", p.gpu_busy_ns);
    for (const Json& k : g.value("kernels", Json::array())) p.kernels.push_back(kernel(k));
    r.graph.push_back(std::move(p));
  }
  return r;
}

SpanStats span(const Json& j) {
  SpanStats s;
  get(j, "domain", s.domain);
  get(j, "name", s.name);
  if (auto h = j.find("host"); h != j.end()) s.host = duration(*h);
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
  if (j.value("schema", std::string()) != "cuscope.report/1") {
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
    if (auto p = j.find("peaks"); p != j.end()) {
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
    if (auto d = j.find("diagnostics"); d != j.end()) {
      // The names are string literals: their data() is null-terminated.
      for (const model::DiagnosticField& f : model::kDiagnosticFields)
        get(*d, f.json.data(), r.diagnostics.*f.field);
    }
    const Json& ranges = j.at("ranges");
    if (!ranges.is_array() || ranges.empty()) throw std::runtime_error("\"ranges\" holds no root");
    r.ranges.clear();
    for (const Json& x : ranges) r.ranges.push_back(range(x, ranges.size()));
    // The table walks children from the root: each range may be listed once, by its own parent.
    std::vector<bool> listed(r.ranges.size(), false);
    for (std::size_t i = 0; i < r.ranges.size(); ++i) {
      for (std::size_t c : r.ranges[i].children) {
        if (listed[c] || r.ranges[c].parent != i) throw std::runtime_error("the ranges do not form a tree");
        listed[c] = true;
      }
    }
    if (auto s = j.find("spans"); s != j.end()) {  // absent in reports written before spans
      if (!s->is_array()) throw std::runtime_error("\"spans\" is not an array");
      for (const Json& x : *s) r.spans.push_back(span(x));
    }
    *out = std::move(r);
    return true;
  } catch (const std::exception& e) {
    *error = std::string("malformed JSON report: ") + e.what();
    return false;
  }
}

}  // namespace cuscope::cli

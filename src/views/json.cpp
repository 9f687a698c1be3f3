// views/json.cpp — the Report as JSON (schema "cuscope.report/1", documented in docs/json-schema.md).
//
// A small hand-written writer, so the library needs no JSON dependency. Field names are the C++
// names; integers are written whole (uint64 exact), doubles in their shortest round-trip form.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuscope/report.hpp"
#include "cuscope/version.hpp"
#include "model/diagnostic_fields.hpp"
#include "views/json_text.hpp"

namespace cuscope {
inline namespace v0 {
namespace {

/// Appends JSON text, two-space indented, placing commas and newlines itself.
class JsonWriter {
 public:
  [[nodiscard]] std::string take() && { return std::move(out_); }

  void begin_object() { open('{', false); }
  void end_object() { close('}'); }
  void begin_array() { open('[', false); }
  /// An array kept on one line: `[1, 2, 3]`. Meant for short lists of numbers.
  void begin_inline_array() { open('[', true); }
  void end_array() { close(']'); }

  void key(std::string_view name) {
    separate();
    quoted(name);
    out_ += ": ";
    after_key_ = true;
  }

  void put(std::string_view s) {
    separate();
    quoted(s);
  }
  void put(std::uint64_t v) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  void put(std::uint32_t v) { put(std::uint64_t{v}); }
  void put(bool v) {
    separate();
    out_ += v ? "true" : "false";
  }
  void put(int v) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", v);
  }
  // Shortest text that reads back as the same double, always with a '.' or an exponent so that
  // readers see a floating-point number. JSON has no inf or NaN and the schema types these fields
  // as numbers: a sum that overflowed is written as the largest finite double of its sign, and a
  // NaN (which no input can make: count() refuses it) as 0.0.
  void put(double v) {
    separate();
    if (std::isnan(v)) v = 0.0;
    if (std::isinf(v)) v = std::copysign(std::numeric_limits<double>::max(), v);
    const std::string text = fmt::format("{}", v);
    out_ += text;
    if (text.find_first_of(".e") == std::string::npos) out_ += ".0";
  }
  void null() {
    separate();
    out_ += "null";
  }

  template <class T>
  void field(std::string_view name, const T& value) {
    key(name);
    put(value);
  }
  /// `"name": v`, or `"name": null` where there is no value.
  void field_or_null(std::string_view name, bool present, std::uint64_t v) {
    key(name);
    if (present) {
      put(v);
    } else {
      null();
    }
  }
  /// `"name": [...]`, each element written by `each(w, element)` (one per line).
  template <class Items, class Each>
  void array(std::string_view name, const Items& items, Each each) {
    key(name);
    begin_array();
    for (const auto& item : items) each(*this, item);
    end_array();
  }
  /// `"name": {...}`, its fields written by `fill()`.
  template <class Fill>
  void object(std::string_view name, Fill fill) {
    key(name);
    begin_object();
    fill();
    end_object();
  }

 private:
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (open_.empty()) return;
    Container& c = open_.back();
    if (!c.empty) out_ += c.one_line ? ", " : ",";
    if (!c.one_line) newline();
    c.empty = false;
  }

  void open(char bracket, bool one_line) {
    separate();
    out_ += bracket;
    open_.push_back({true, one_line});
  }

  void close(char bracket) {
    const Container c = open_.back();
    open_.pop_back();
    if (!c.empty && !c.one_line) newline();
    out_ += bracket;
  }

  void newline() {
    out_ += '\n';
    out_.append(2 * open_.size(), ' ');
  }

  // Valid UTF-8 is copied as it is; a byte that does not start a valid sequence (from an option
  // value, a path, a device string) becomes U+FFFD, so the file always reads as UTF-8.
  void quoted(std::string_view s) {
    out_ += '"';
    views::append_json_text(out_, s);
    out_ += '"';
  }

  struct Container {
    bool empty;     ///< nothing written in it yet
    bool one_line;  ///< elements on one line
  };

  std::string out_;
  std::vector<Container> open_;
  bool after_key_ = false;
};

// `max_call` only where it is recorded (a range's host times), so that other durations do not
// carry a field that is always 0.
void write_duration(JsonWriter& w, const DurationStats& d, bool with_max_call = false) {
  w.begin_object();
  w.field("count", d.count);
  w.field("total_ns", d.total_ns);
  w.field("min_ns", d.min_ns);
  w.field("max_ns", d.max_ns);
  if (with_max_call) w.field("max_call", d.max_call);
  w.field("mean_ns", d.mean_ns());
  w.end_object();
}

void write_triple(JsonWriter& w, const std::array<std::uint32_t, 3>& v) {
  w.begin_inline_array();
  for (std::uint32_t x : v) w.put(x);
  w.end_array();
}

void write_activity(JsonWriter& w, const ActivityStats& a) {
  w.begin_object();
  w.field("kernel_calls", a.kernel_calls);
  w.field("kernel_ns", a.kernel_ns);
  w.field("gpu_busy_ns", a.gpu_busy_ns);
  w.field("gpu_span_ns", a.gpu_span_ns);
  w.field("busy_share", a.busy_share());
  w.object("memcpy", [&] {
    for (std::size_t i = 0; i < kCopyKinds; ++i) {
      const CopyStats& c = a.memcpy[i];
      w.object(to_string(static_cast<CopyKind>(i)), [&] {
        w.field("count", c.count);
        w.field("bytes", c.bytes);
        w.field("total_ns", c.total_ns);
        w.field("bytes_per_s", c.bytes_per_s());
      });
    }
  });
  w.field("memset_count", a.memset_count);
  w.field("memset_bytes", a.memset_bytes);
  w.field("memset_ns", a.memset_ns);
  w.field("sync_count", a.sync_count);
  w.field("sync_ns", a.sync_ns);
  w.field("alloc_count", a.alloc_count);
  w.field("alloc_bytes", a.alloc_bytes);
  w.field("free_count", a.free_count);
  w.field("free_bytes", a.free_bytes);
  w.field("peak_bytes", a.peak_bytes);
  w.field("pageable_copies", a.pageable_copies);
  w.field("pageable_bytes", a.pageable_bytes);
  w.field("blocking_copies", a.blocking_copies);
  w.field("blocking_bytes", a.blocking_bytes);
  w.field("kernel_streams", std::uint64_t{a.kernel_streams});
  w.field("busiest_stream_ns", a.busiest_stream_ns);
  w.end_object();
}

void write_kernel(JsonWriter& w, const KernelStats& k) {
  w.begin_object();
  w.field("name", k.name);
  w.key("duration");
  write_duration(w, k.duration);
  w.key("grid");
  write_triple(w, k.grid);
  w.key("block");
  write_triple(w, k.block);
  w.field("registers_per_thread", k.registers_per_thread);
  w.field("static_shared_bytes", k.static_shared_bytes);
  w.field("dynamic_shared_bytes", k.dynamic_shared_bytes);
  w.field("device", k.device);
  w.end_object();
}

void write_range(JsonWriter& w, const RangeStats& r, std::size_t id) {
  w.begin_object();
  w.field("id", std::uint64_t{id});
  w.field("name", r.name);
  w.field("path", r.path);
  w.field_or_null("parent", id != 0, r.parent);
  w.field("depth", r.depth);
  w.key("children");
  w.begin_inline_array();
  for (std::size_t child : r.children) w.put(std::uint64_t{child});
  w.end_array();
  w.field("calls", r.calls);
  w.field("open", r.open);
  w.field("recursive_calls", r.recursive_calls);
  w.field("threads", r.threads);
  w.key("host");
  write_duration(w, r.host, true);
  w.field("host_self_ns", r.host_self_ns);
  w.key("gpu");
  write_duration(w, r.gpu);
  w.key("gpu_projected");
  write_duration(w, r.gpu_projected);
  w.key("self");
  write_activity(w, r.self);
  w.key("total");
  write_activity(w, r.total);
  w.array("kernels", r.kernels, write_kernel);
  w.object("verdict", [&] {
    w.field("bound", to_string(r.verdict.bound));
    w.field("dram_bytes_per_s", r.verdict.dram_bytes_per_s);
    w.field("flop_per_s", r.verdict.flop_per_s);
    w.field("arithmetic_intensity", r.verdict.arithmetic_intensity);
    w.field("roofline_pct", r.verdict.roofline_pct);
    w.field("reason", r.verdict.reason);
  });
  w.array("findings", r.findings, [](JsonWriter& o, const Finding& f) {
    o.begin_object();
    o.field("id", f.id);
    o.field("severity", to_string(f.severity));
    o.field("observation", f.observation);
    o.field("cause", f.cause);
    o.field("fix", f.fix);
    o.end_object();
  });
  w.field("profiled_kernels", r.profiled_kernels);
  w.array("metrics", r.metrics, [](JsonWriter& o, const MetricValue& m) {
    o.begin_object();
    o.field("name", m.name);
    o.field("label", m.label);
    o.field("unit", m.unit);
    o.field("value", m.value);
    o.end_object();
  });
  w.array("counts", r.counts, [](JsonWriter& o, const CountStats& c) {
    o.begin_object();
    o.field("name", c.name);
    o.field("self", c.self);
    o.field("total", c.total);
    o.field("per_host_second", c.per_host_second);
    o.field("per_gpu_second", c.per_gpu_second);
    o.end_object();
  });
  w.array("graph", r.graph, [](JsonWriter& o, const GraphPathStats& g) {
    o.begin_object();
    o.field("path", g.path);
    o.field("kernel_calls", g.kernel_calls);
    o.field("kernel_ns", g.kernel_ns);
    o.field("gpu_busy_ns", g.gpu_busy_ns);
    o.array("kernels", g.kernels, write_kernel);
    o.end_object();
  });
  w.end_object();
}

void write_span(JsonWriter& w, const SpanStats& s) {
  w.begin_object();
  w.field("domain", s.domain);
  w.field("name", s.name);
  w.key("host");
  write_duration(w, s.host);
  w.field("open", s.open);
  w.field("cross_thread", s.cross_thread);
  w.end_object();
}

void write_diagnostics(JsonWriter& w, const Diagnostics& d) {
  w.begin_object();
  for (const model::DiagnosticField& f : model::kDiagnosticFields) w.field(f.json, d.*f.field);
  w.end_object();
}

}  // namespace

std::string format_json(const Report& report) {
  JsonWriter w;
  w.begin_object();
  w.field("schema", std::string_view{"cuscope.report/1"});
  w.field("version", std::string_view{version()});
  w.field("device", report.device);
  w.field("gpu_timing", report.gpu_timing);
  w.field("activity_status", report.activity_status);
  w.field("counters_status", report.counters_status);
  w.field("clock", report.clock);
  w.object("peaks", [&] {
    w.field("dram_bytes_per_s", report.peaks.dram_bytes_per_s);
    w.field("fp64_flop_per_s", report.peaks.fp64_flop_per_s);
    w.field("fp32_flop_per_s", report.peaks.fp32_flop_per_s);
    w.field("fp16_flop_per_s", report.peaks.fp16_flop_per_s);
    w.field("source", report.peaks.source);
  });
  w.array("notes", report.notes, [](JsonWriter& o, const std::string& note) { o.put(note); });
  w.field("steps", report.steps);
  w.field("recorded_steps", report.recorded_steps);
  w.field("clock_steps", report.clock_steps);
  w.field("step_ms", report.step_ms);
  w.field("window_start_step", report.window_start_step);
  w.field("wall_ns", report.wall_ns);
  w.field("final", report.final);
  w.field_or_null("rank", report.rank >= 0, static_cast<std::uint64_t>(report.rank));
  w.field_or_null("world_size", report.world_size > 0, static_cast<std::uint64_t>(report.world_size));
  w.field_or_null("pid", report.pid > 0, static_cast<std::uint64_t>(report.pid));
  w.key("host");
  if (report.host.empty()) {
    w.null();
  } else {
    w.put(report.host);
  }
  w.key("diagnostics");
  write_diagnostics(w, report.diagnostics);
  w.key("ranges");
  w.begin_array();
  for (std::size_t id = 0; id < report.ranges.size(); ++id) write_range(w, report.ranges[id], id);
  w.end_array();
  w.array("spans", report.spans, write_span);
  w.end_object();
  std::string out = std::move(w).take();
  out += '\n';
  return out;
}

}  // namespace v0
}  // namespace cuscope

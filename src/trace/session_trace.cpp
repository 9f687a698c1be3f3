// trace/session_trace.cpp — trace mode's writer in the session (see session_trace.hpp).
#include "trace/session_trace.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cuscope/version.hpp>

#include "producers/log.hpp"
#include "session/session.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {

namespace {

// The session's writer. Leaked, like the session: a scope on another thread may still be inside
// Writer::record() when the session ends.
trace::Writer* g_active = nullptr;
auto* g_closed = new std::vector<trace::Writer*>;  // kept reachable, never destroyed
std::string* g_path = new std::string;

std::string options_line(const Options& o) {
  return fmt::format(
      "gpu_events={} activities={} whole_ms={} wait={} wait_ms={} warmup={} active={} repeat={} "
      "max_depth={} metrics='{}' trace_limit_mb={}",
      o.gpu_events, o.activities, o.whole_ms, o.wait_steps, o.wait_ms, o.warmup_steps, o.active_steps,
      o.repeat, o.max_depth, o.metrics, o.trace_limit_mb);
}

}  // namespace

std::string start_trace(Session& s) noexcept {
  try {
    const Options& o = s.options;
    if (o.trace_path.empty()) return "";
    std::string error;
    std::unique_ptr<trace::Writer> w =
        trace::Writer::open(o.trace_path, std::uint64_t{o.trace_limit_mb} << 20, s.forest.names, &error);
    if (!w) return fmt::format("trace mode is off: {} (CUSCOPE_TRACE)", error);
    w->meta("version", version());
    w->meta("clock", "CLOCK_MONOTONIC nanoseconds (host scopes, CUDA events and CUPTI records alike)");
    w->meta("start_ns", std::to_string(s.start_ns));
    w->meta("pid", std::to_string(::getpid()));
    if (!s.host.empty()) w->meta("host", s.host);
    w->meta("device", s.device);
    w->meta("max_depth", std::to_string(o.max_depth));
    w->meta("options", options_line(o));
    if (s.rank >= 0) w->meta("rank", std::to_string(s.rank));  // absent: no launcher, no rank
    if (s.world_size > 0) w->meta("world_size", std::to_string(s.world_size));
    w->start();
    g_active = w.release();
    *g_path = o.trace_path;
    trace::g_writer.store(g_active, std::memory_order_release);
    return "";
  } catch (const std::exception& e) {
    return fmt::format("trace mode is off: {}", e.what());
  }
}

bool trace_on() noexcept { return trace::g_writer.load(std::memory_order_relaxed) != nullptr; }

void trace_step(std::uint64_t now_ns, std::uint64_t step, bool recording) noexcept {
  try {
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->step(now_ns, step, recording);
  } catch (...) {  // out of memory: the mark is lost; the trace's replay then merely ages less
  }
}

void trace_recording(std::uint64_t now_ns, bool on) noexcept {
  try {
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->recording(now_ns, on);
  } catch (...) {  // out of memory: the switch is lost; the replay then counts the work as recorded
  }
}

void finish_trace() noexcept {
  if (g_active == nullptr) return;
  trace::g_writer.store(nullptr, std::memory_order_release);
  g_active->finish_events();
}

bool trace_open() noexcept { return g_active != nullptr; }

std::uint64_t trace_dropped() noexcept { return g_active != nullptr ? g_active->dropped() : 0; }

void close_trace(Session& s, const Report& r) noexcept {
  if (g_active == nullptr) return;
  try {
    trace::Summary sum;
    sum.device = r.device;
    sum.gpu_timing = r.gpu_timing;
    sum.activity_status = r.activity_status;
    sum.counters_status = r.counters_status;
    sum.clock = r.clock;
    sum.window_start_step = r.window_start_step;
    sum.outside_window_scopes = r.diagnostics.outside_window_scopes;
    sum.rejected_counts = r.diagnostics.rejected_counts;
    sum.unrecorded_scopes = r.diagnostics.unrecorded_scopes;
    sum.notes = r.notes;
    sum.dram_bytes_per_s = r.peaks.dram_bytes_per_s;
    sum.fp64_flop_per_s = r.peaks.fp64_flop_per_s;
    sum.fp32_flop_per_s = r.peaks.fp32_flop_per_s;
    sum.fp16_flop_per_s = r.peaks.fp16_flop_per_s;
    sum.peaks_source = r.peaks.source;
    sum.steps = r.steps;
    sum.recorded_steps = r.recorded_steps;
    sum.clock_steps = r.clock_steps;
    sum.step_ms = r.step_ms;
    sum.wall_ns = r.wall_ns;
    sum.cross_thread_ends = r.diagnostics.cross_thread_ends;
    sum.stray_pops = s.stray_pops.load(std::memory_order_relaxed);
    sum.gpu_event_failures = r.diagnostics.gpu_event_failures;
    sum.scopes_in_capture = r.diagnostics.scopes_in_capture;
    sum.adjusted_names = r.diagnostics.adjusted_names;
    sum.name_table_full = r.diagnostics.name_table_full;
    sum.refused_buffers = r.diagnostics.activity_buffers_refused;
    sum.spans = r.spans;
    sum.unmatched_span_ends = r.diagnostics.unmatched_span_ends;
    sum.spans_dropped = r.diagnostics.spans_dropped;
    sum.activity_buffers = r.diagnostics.activity_buffers;
    sum.activity_processing_ns = r.diagnostics.activity_processing_ns;
    if (!g_active->close(sum))
      warn_once(fmt::format("the trace '{}' could not be written completely", *g_path));
  } catch (...) {
    warn_once(fmt::format("the trace '{}' could not be finished", *g_path));
  }
  try {
    g_closed->push_back(g_active);
  } catch (...) {  // out of memory: the writer stays allocated, unreferenced
  }
  g_active = nullptr;
}

}  // namespace cuscope::inline v0::detail

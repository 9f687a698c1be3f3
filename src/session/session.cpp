// session/session.cpp — the session's life: start (explicit or from the first scope), flush,
// snapshot and reset. The rest of its life is beside it: the step window and enable (window.cpp), a
// thread's state (threads.cpp), the collector thread that resolves CUDA events (collector.cpp), the
// end at exit (exit.cpp), fork (fork.cpp), and its messages (warnings.cpp).
//
// Nothing here may throw into the program: every public entry point catches.
//
// Lifetime: every entry point works in a static constructor before main and in a static
// destructor after it. So nothing they reach has a dynamic initializer at namespace scope: state
// is constant-initialized (atomics, std::mutex, std::once_flag) or a leaked function-local static.
//
// fork(): a child process has cuscope off (see cuscope/session.hpp, and fork.cpp): every entry
// point returns there before taking a lock.
#include "session/session.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>

#include "producers/clock.hpp"
#include "producers/cuda_probe.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/gpu_events.hpp"
#include "producers/launch_notes.hpp"
#include "producers/log.hpp"
#include "producers/nvtx_domain.hpp"
#include "producers/window_edges.hpp"
#include "session/handover.hpp"
#include "session/hardware.hpp"
#include "session/internal.hpp"
#include "session/ranks.hpp"
#include "session/run_claim.hpp"
#include "trace/session_trace.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

// Published with release once whole, read with acquire: the fork handlers (fork.cpp) read it on
// whatever thread forks, while another thread's first scope may be making it.
std::atomic<Session*> g_session{nullptr};

}  // namespace

// Whether scopes record CUDA events, and why not ("on..." when they do): CUSCOPE_EVENTS against
// what the session has. Decided once, after CUPTI tracing started or did not.
std::string event_timing(const Options& o, bool gpu_available, const std::string& no_gpu_reason,
                         bool tracing) {
  if (!o.gpu_events) return "disabled by option (CUSCOPE_GPU_EVENTS=0)";
  if (o.events == EventTiming::off) return "off by option (CUSCOPE_EVENTS=off)";
  if (!gpu_available) return no_gpu_reason;
  if (o.events == EventTiming::automatic && tracing)
    return "projected: each call's span of GPU work as CUPTI traces it, no CUDA events (CUSCOPE_EVENTS=auto; "
           "'always' adds them)";
  // CUSCOPE_EVENT_TIMESTAMPS=cupti, once CUPTI records the events' device timestamps.
  const std::string clock = tracing && event_timestamps_from_cupti() ? std::string(kCuptiClockWords) : "";
  if (o.events == EventTiming::sampled)
    return fmt::format("on, sampled: the first {} calls of each range, then one in {}{}", kFirstTimedCalls,
                       o.events_sample_every, clock.empty() ? "" : "; " + clock);
  return clock.empty() ? "on" : "on, " + clock;
}

Session::Session() = default;

Session& session() {
  static const bool made = [] {
    register_fork_handlers();
    g_session.store(new Session(), std::memory_order_release);  // leaked on purpose (see session.hpp)
    return true;
  }();
  (void)made;
  return *g_session.load(std::memory_order_acquire);
}

Session* session_if_made() noexcept { return g_session.load(std::memory_order_acquire); }

Sink& current_sink() { return session(); }

namespace {

// What the session has recorded so far.
Report live_report(Session& s) noexcept {
  Report r;
  r.final = false;  // freeze_report() marks the one built at the end
  try {
    if (!s.closed.load(std::memory_order_acquire)) resolve_gpu_events();  // else CUDA may be gone
    {
      std::lock_guard agg(s.aggregator_mutex);
      count_lost_launch_notes(s);  // refused since the collector's last drain: counted now
      s.aggregator.build(r);
    }
    s.spans.build(s.forest.names, r);
    {
      std::lock_guard lock(s.lifecycle_mutex);
      r.device = s.device;
      r.gpu_timing = timing_with_clock_given_up(s.gpu_timing);
      r.activity_status = s.attach_deferred ? deferred_attach_status(s)
                          : s.detach_asked
                              ? with_detach_stage(s.activity_status, s.closed.load(std::memory_order_relaxed))
                              : s.activity_status;
      // Not once the last window asked for the detach: its stage is what holds CUPTI (detached, or
      // paused for good), whatever the switch says.
      if (!s.recording_on && s.tracing.load(std::memory_order_relaxed) && !s.detach_asked)
        r.activity_status += ", paused while recording is off (set_enabled(false), CUSCOPE_ENABLE=0)";
      r.counters_status = s.counters_status;
      r.clock = clock_description();
      r.rank = s.rank;
      r.world_size = s.world_size;
      r.pid = s.pid;
      r.host = s.host;
      if (std::string failure = counters_failure(); !failure.empty()) r.counters_status = failure;
      apply_verdicts(r, s.peaks, s.counter_metrics);
      r.wall_ns = s.started ? now_ns() - s.start_ns : 0;
      // A whole start (Options::whole_ms) records from the first step.
      r.window_start_step =
          s.options.whole_ms != 0 ? 0 : std::uint64_t{s.options.wait_steps} + s.options.warmup_steps;
    }
    r.notes = notes_so_far();
    r.steps = s.steps.load(std::memory_order_relaxed);
    r.recorded_steps = s.recorded_steps.load(std::memory_order_relaxed);
    r.clock_steps = s.clock_steps.load(std::memory_order_relaxed);
    r.step_ms = r.clock_steps != 0 ? s.options.step_ms : 0;
    r.diagnostics.cross_thread_ends = s.cross_thread_ends.load(std::memory_order_relaxed);
    r.diagnostics.unbalanced_ends += s.stray_pops.load(std::memory_order_relaxed);
    r.diagnostics.rejected_counts = s.rejected_counts.load(std::memory_order_relaxed);
    r.diagnostics.trace_records_dropped = trace_dropped();
    EventFailureCauses causes;
    std::uint64_t across_waits = 0;
    {
      std::lock_guard threads(s.threads_mutex);
      for (const auto& ts : s.threads) {
        r.diagnostics.outside_window_scopes += ts->outside_window.get();
        if (!ts->gpu) continue;
        causes.add(*ts->gpu);
        across_waits += ts->gpu->across_waits.load(std::memory_order_relaxed);
        r.diagnostics.scopes_in_capture += ts->gpu->in_capture.load(std::memory_order_relaxed);
      }
    }
    r.diagnostics.gpu_event_failures += causes.failures;
    if (std::string why = causes.describe(); !why.empty()) r.notes.push_back(std::move(why));
    if (std::string why = across_waits_note(across_waits); !why.empty()) r.notes.push_back(std::move(why));
  } catch (const std::exception& e) {
    warn_once(fmt::format("snapshot failed: {}", e.what()));
  }
  return r;
}

}  // namespace

// The session's report (snapshot() without the forwarding): also the trace summary of a session
// that reset_for_testing() ends. After shutdown() it is the one shutdown() built, with the notes
// printed since: later scopes, steps and records change nothing in it.
Report report_of(Session& s) noexcept {
  try {
    std::optional<Report> final_report;
    {
      std::lock_guard lock(s.lifecycle_mutex);
      final_report = s.final_report;
    }
    if (final_report) {
      std::vector<std::string> notes = notes_so_far();
      for (std::string& n : final_report->notes) {  // made when it was frozen, not a warning: kept
        if (n.rfind(kEventFailuresNote, 0) == 0 || n.rfind(kEventsAcrossWaitsNote, 0) == 0)
          notes.push_back(std::move(n));
      }
      final_report->notes = std::move(notes);
      return *final_report;
    }
  } catch (const std::exception& e) {
    warn_once(fmt::format("snapshot failed: {}", e.what()));
  }
  return live_report(s);
}

void freeze_report(Session& s) noexcept {
  try {
    Report r = live_report(s);
    r.final = true;
    std::lock_guard lock(s.lifecycle_mutex);
    s.final_report = std::move(r);
  } catch (const std::exception& e) {
    warn_once(fmt::format("snapshot failed: {}", e.what()));
  }
}

void reset_for_testing() noexcept {
  Session& old = session();
  {
    std::lock_guard lock(old.lifecycle_mutex);
    old.shut_down = true;
  }
  stop_collector(old);
  settle_detach_for_stop();  // as shutdown() does: the collector, which alone finalizes, is stopped
  g_state.store(kNotStarted, std::memory_order_release);
  g_flags.store(0, std::memory_order_relaxed);
  disable_range_profiler();
  stop_activity_tracing();                                       // the next session starts tracing again
  g_push_correlation.store(nullptr, std::memory_order_release);  // trace_with_fake_cupti_for_testing()'s
  g_pop_correlation.store(nullptr, std::memory_order_release);
  finish_trace();
  old.closed.store(true, std::memory_order_release);   // its report is final: no CUDA-event queries
  if (trace_open()) close_trace(old, report_of(old));  // its summary names the device, as at exit
  forget_cupti_clock_for_testing();  // after its report: a clock it gave up is not the next session's
  static auto* retired = new std::vector<Session*>;  // kept reachable: threads may still point into them
  retired->push_back(g_session.load(std::memory_order_relaxed));
  old.spans.retire();  // no thread uses it again: fork() need not hold its lock
  g_session.store(new Session(), std::memory_order_release);
  detach_this_thread();
  forget_warnings();
  release_path_claims();  // the next session's files are its own
  // Last, once the old session's report is built: the next session may call CUPTI.
  set_detach_stage(DetachStage::none);
}

void trace_with_fake_cupti_for_testing(CorrelationHook push, CorrelationPopHook pop,
                                       bool launch_notes) noexcept {
  Session& s = session();
  std::lock_guard lock(s.lifecycle_mutex);
  s.forest.record_instances.store(true, std::memory_order_relaxed);
  s.launch_attributed.store(launch_notes, std::memory_order_release);
  g_pop_correlation.store(pop, std::memory_order_release);
  g_push_correlation.store(push, std::memory_order_release);
  s.tracing.store(true, std::memory_order_release);
  // Where the session could record events (a GPU, or fake CUDA), what CUSCOPE_EVENTS says with
  // tracing: "auto" records none.
  if (s.records_events() || s.gpu_timing.rfind("projected", 0) == 0)
    s.gpu_timing = event_timing(s.options, true, {}, true);
  const Phase now = phase_now(s);
  g_flags.store(flags_for(s, now), std::memory_order_relaxed);
  pause_for(s, now);  // as start() does where CUPTI traces
}

bool start_from_scope() noexcept {
  if (g_state.load(std::memory_order_acquire) == kNotStarted) cuscope::start();
  return g_state.load(std::memory_order_relaxed) == kOn;
}

}  // namespace detail

namespace {

bool start_session(const Options& given, bool from_caller);

}  // namespace

bool start() {
  if (detail::forked_child()) return false;
  // A copy that forwards lets the engine read the environment: what is wrong with it said once.
  if (const detail::Engine* e = detail::forward_target()) return e->start_from_env();
  return start_session(options_from_env(), false);
}

bool start(const Options& given) {
  if (detail::forked_child()) return false;
  if (const detail::Engine* e = detail::forward_target()) return e->start(given);
  return start_session(given, true);
}

namespace {

// start()'s and start(Options)'s work; `from_caller`: the options are the program's own, and a
// session already started (from the environment, by a scope or set_enabled() before, or an earlier
// start) does not take them: said once, since the return value is easy to leave unread.
bool start_session(const Options& given, bool from_caller) {
  using namespace detail;
  try {
    Session& s = session();
    std::lock_guard lock(s.lifecycle_mutex);
    if (s.started) {
      if (from_caller)
        warn_once(
            "cuscope::start(options) came after the session had started (a scope, step(), set_enabled() or "
            "start() before it starts one from the CUSCOPE_* environment); its options are not applied: "
            "call it before any of those");
      return false;
    }
    s.started = true;
    Options options = given;
    if (options.max_depth < 1 || options.max_depth > model::kHardMaxDepth) {
      // What CUSCOPE_MAX_DEPTH does with such a value: keep the default, and say so.
      const std::uint32_t fallback = Options{}.max_depth;
      warn_once(fmt::format("Options::max_depth={} is out of range [1, {}]; using {}", options.max_depth,
                            model::kHardMaxDepth, fallback));
      options.max_depth = fallback;
    }
    if (options.events == EventTiming::sampled &&
        (options.events_sample_every < 2 || options.events_sample_every > kMaxEventSampleEvery)) {
      // What CUSCOPE_EVENTS does with sampled:0 or sampled:1: keep the default, and say so (0 timed
      // every call, under a header saying "one in 0").
      warn_once(
          fmt::format("Options::events_sample_every={} is out of range [2, {}] for sampled events; using {}",
                      options.events_sample_every, kMaxEventSampleEvery, to_string(Options{}.events)));
      options.events = Options{}.events;
      options.events_sample_every = Options{}.events_sample_every;
    }
    settle_window_options(options);  // the step window's (window_options.cpp)
    if (options.report_every_s > kMaxReportEvery) {
      warn_once(
          fmt::format("Options::report_every_s={} is out of range [0, {}]; writing the report at exit only",
                      options.report_every_s, kMaxReportEvery));
      options.report_every_s = 0;
    } else if (options.report_every_s != 0 && !has_report_file(options)) {
      warn_once(
          fmt::format("CUSCOPE_REPORT_EVERY={}: no file to rewrite (set CUSCOPE_JSON, or CUSCOPE_OUTPUT to "
                      "a file); the report is written at exit only",
                      options.report_every_s));
    }
    const ProcessIdentity id = this_process();  // each rank of a job writes its own files
    for (const std::string& problem : id.problems) warn_once(problem);
    expand_output_paths(options, id, &s.path_notes);
    anchor_report_paths(options);
    claim_output_paths(options, id.pid, &s.path_notes);
    s.below_run = id.run_below;
    if (!s.below_run) say_path_notes(s);  // below a run: when its report is first written, if ever
    sweep_stale_temporaries(options);
    s.rank = id.rank;
    s.world_size = id.world_size;
    s.pid = id.pid;
    s.host = id.host;
    s.options = options;
    start_clock();
    s.start_ns = now_ns();
    s.wait_began_ns = s.start_ns;  // the first wait, if the window begins with one
    s.whole = options.whole_ms != 0;
    s.clock_from_sample = options.step_ms != given.step_ms;  // settle_window_options() set it
    s.forest.max_depth.store(options.max_depth, std::memory_order_relaxed);
    nvtx_domain();

    s.recording_on = options.enabled;
    GpuProbe probe;
    const bool wants_cuda = options.gpu_events || options.activities;
    if (wants_cuda) {
      probe = probe_gpu();
      s.device = probe.device;
    } else {
      s.device = "not queried (GPU timing and tracing are off)";
    }
    if (!options.activities) {
      s.activity_status = "disabled by option (CUSCOPE_ACTIVITIES=0)";
    } else if (!probe.available) {
      s.activity_status = probe.reason;
    } else if (defers_attach(options)) {
      defer_first_attach(s);  // a wait step, or recording off: CUPTI costs nothing until it traces
    } else {
      s.activity_status = start_activity_tracing(s);
      if (s.tracing.load(std::memory_order_relaxed) && pauses_tracing(options))
        s.activity_status += ", paused outside the step window";
    }
    if (wants_cupti_event_clock(options) && !s.tracing.load(std::memory_order_relaxed))
      warn_once(fmt::format(
          "CUSCOPE_EVENT_TIMESTAMPS=cupti: CUPTI does not trace ({}); CUDA events time themselves",
          s.activity_status));
    s.gpu_timing =
        event_timing(options, probe.available, probe.reason, s.tracing.load(std::memory_order_relaxed));
    g_event_sample_every.store(options.events == EventTiming::sampled ? options.events_sample_every : 0,
                               std::memory_order_relaxed);
    const Phase first = first_phase(options);
    pause_for(s, first);  // a session that begins with wait steps, or off, traces nothing yet
    if (!options.metrics.empty()) s.counters_status = probe.available ? start_counters(s) : probe.reason;
    if (probe.available) s.peaks = device_peaks();
    if (std::string off = start_trace(s); !off.empty()) warn_once(off);
    trace_step(s.start_ns, 0, first == Phase::Record);
    if (!options.enabled) trace_recording(s.start_ns, false);

    start_window_edges(s.start_ns, records(s, first));  // not while recording is off
    g_flags.store(flags_for(s, first), std::memory_order_relaxed);
    if (!records(s, first)) {
      std::lock_guard agg(s.aggregator_mutex);
      s.aggregator.set_recording(false, s.start_ns);
    }
    start_collector(s);  // also keeps the clock calibrated
    register_exit_handlers();
    g_state.store(options.enabled ? kOn : kOff, std::memory_order_release);
    return true;
  } catch (const std::exception& e) {
    warn_once(fmt::format("could not start: {}; scopes record nothing", e.what()));
    g_state.store(kOff, std::memory_order_release);
    return false;
  }
}

}  // namespace

void flush() {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->flush();
  Session& s = session();
  if (s.closed.load(std::memory_order_acquire)) return;  // the report is final, CUDA may be gone
  // A normal flush: work still running stays with CUPTI and arrives complete later.
  if (s.tracing.load(std::memory_order_acquire)) flush_activity();  // takes the aggregator lock itself
  resolve_gpu_events();
}

Report snapshot() {
  using namespace detail;
  if (forked_child()) return forked_child_report();
  if (const Engine* e = forward_target()) return e->snapshot();
  return report_of(session());
}

Options current_options() {
  if (const detail::Engine* e = detail::forward_target()) return e->current_options();
  if (detail::forked_child()) {
    Options off;
    off.enabled = false;
    off.print_at_exit = false;
    return off;
  }
  detail::Session& s = detail::session();
  std::lock_guard lock(s.lifecycle_mutex);
  return s.options;
}

}  // namespace v0
}  // namespace cuscope
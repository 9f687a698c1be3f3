// session/window.cpp — the step window: which phase a step is in (wait, warm-up, active, done), the
// scope flags of each phase, CUPTI's pause outside the window and while recording is off, the
// detach after the last window and between windows (CUPTI attached again for the next, and first
// attached at the first window), and the calls that move them: the program's (step(), set_enabled())
// and the steps CUSCOPE_STEP_MS's clock ends (clock_step(), from the stepper thread).
// start() (session.cpp) sets the first step's phase up with the same calls.
//
// Never here: a switch outside the session's lifecycle lock (one transition at a time, none once
// shutdown() began), or a CUPTI call of its own (producers/cupti/adapter.hpp makes them).
#include <fmt/format.h>

#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>

#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/log.hpp"
#include "producers/outside_scopes.hpp"
#include "producers/suspended_frames.hpp"
#include "producers/window_edges.hpp"
#include "session/handover.hpp"
#include "session/internal.hpp"
#include "trace/session_trace.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

// Whether CUPTI's tracing is paused in phase `p`: where nothing it records would count (wait steps,
// and the steps after the last window). Warm-up steps trace, so that a window's first launches
// (CUPTI instrumenting again after a pause) fall outside it.
bool paused_in(Phase p) { return p == Phase::Wait || p == Phase::Done; }

}  // namespace

// The phase of step `step` (0-based): wait, warm-up and active steps, that cycle `o.repeat` times
// (0: without end), then done.
Phase phase_of(const Options& o, std::uint64_t step) {
  const std::uint64_t cycle = std::uint64_t{o.wait_steps} + o.warmup_steps + o.active_steps;
  if (o.repeat != 1 && o.active_steps != 0) {
    if (o.repeat != 0 && step / cycle >= o.repeat) return Phase::Done;
    step %= cycle;
  }
  if (step < o.wait_steps) return Phase::Wait;
  if (step < std::uint64_t{o.wait_steps} + o.warmup_steps) return Phase::Warmup;
  if (o.active_steps == 0 || step < std::uint64_t{o.wait_steps} + o.warmup_steps + o.active_steps)
    return Phase::Record;
  return Phase::Done;
}

Phase first_phase(const Options& o) { return o.whole_ms != 0 ? Phase::Record : phase_of(o, 0); }

Phase phase_now(const Session& s) { return s.whole ? Phase::Record : phase_of(s.options, s.window_step); }

std::uint32_t flags_for(const Session& s, Phase p) {
  const bool tracing = s.tracing.load(std::memory_order_relaxed);
  std::uint32_t f = 0;
  if (p == Phase::Record) {
    f |= kRecording;
    if (s.records_events()) f |= kGpuEvents;
    const std::uint64_t recorded = s.recorded_steps.load(std::memory_order_relaxed);
    if (s.counters_status.rfind("on", 0) == 0 && counters_failure().empty() &&
        (s.options.metric_steps == 0 || recorded < s.options.metric_steps)) {
      f |= kCounters;
    }
  }
  if (tracing && (f & kRecording)) f |= kInstances;
  // Not while a detach is asked for: CUPTI is (or is about to be) detached, and no scope may push
  // while it is attached again (launch notes' hooks mark the thread's launches as the pushed scope's).
  if (tracing && !s.launch_attributed.load(std::memory_order_relaxed) && !s.detach_asked &&
      (p == Phase::Record || p == Phase::Warmup))
    f |= kCorrelation;
  if (p == Phase::Record && trace_on()) f |= kTrace;
  return f;
}

namespace {

// CUPTI traces again after a detach between windows (reattach_activity_tracing()): the activity
// status as the new attach has it, or, where it does not trace again, off for the rest (and CUDA
// events time the calls, where CUSCOPE_EVENTS=auto had left that to CUPTI), with a note. A detach
// still under way 2 s after a window began (the collector settles it) is one note, and each later
// step of the window tries again without waiting. The caller holds the lifecycle lock.
void reattach(Session& s) {
  const bool first = s.attach_deferred;  // the session's first attach: nothing of CUPTI's to forget
  const bool after_off = detach_for() == DetachFor::recording_off;  // else between windows
  const char* detached = after_off ? "while recording was off" : "between step windows";
  const Reattached r = reattach_activity_tracing(s, !s.reattach_late, !first);
  if (r.how == Reattached::How::under_way) {
    s.reattach_late = true;
    warn_once(after_off
                  ? "CUPTI's detach while recording was off was still under way 2 s after recording was "
                    "switched on: its GPU work is recorded only from the step or switch at which CUPTI is "
                    "attached again"
                  : "CUPTI's detach between step windows was still under way 2 s after a window began: that "
                    "window's GPU work is recorded only from the step at which CUPTI is attached again");
    return;
  }
  s.reattach_late = false;
  s.detach_asked = false;
  s.attach_deferred = false;
  if (r.detach_refused) s.detach_between_off = true;  // its note said so; later ones pause only
  const char* paused = pauses_tracing(s.options) ? ", paused outside the step window" : "";
  if (r.how == Reattached::How::refused) {
    s.tracing.store(false, std::memory_order_release);
    if (s.gpu_timing.rfind("projected", 0) == 0) s.gpu_timing = event_timing(s.options, true, {}, false);
    if (first) {  // as a start that CUPTI refused: the status says why
      s.activity_status = r.status;
      return;
    }
    s.activity_status =
        fmt::format("off since CUPTI could not trace again after a detach {}: {}", detached, r.status);
    warn_once(
        fmt::format("CUPTI could not trace again after a detach {} ({}): the {} GPU work is not recorded",
                    detached, r.status, after_off ? "later" : "later windows'"));
    return;
  }
  if (r.how == Reattached::How::resumed) return;  // none made: paused only, as the status says
  if (r.how == Reattached::How::called_off) {
    // Paused only, as the status says; a pause that short never gains, which the program should know.
    warn_once(
        after_off
            ? fmt::format("CUPTI's detach while recording was off was called off: recording was switched on "
                          "within the {} s the detach waits for the last records, so CUPTI was only paused",
                          kDetachWaitNs / 1'000'000'000)
            : fmt::format("CUPTI's detach between step windows was called off: a wait ended within the {} s "
                          "the detach waits for the window's records, so CUPTI was only paused in it; a "
                          "longer wait (CUSCOPE_WAIT, CUSCOPE_WAIT_MS) detaches it",
                          kDetachWaitNs / 1'000'000'000));
    return;
  }
  // The first attach, or CUPTI never left (a refused detach's note says why): not a re-attach.
  if (first || r.detach_refused) {
    s.activity_status = r.status + paused;
    return;
  }
  ++(after_off ? s.reattaches_after_off : s.reattaches);
  s.activity_status = r.status;
  const auto times = [](std::uint64_t n) { return fmt::format("{} {}", n, n == 1 ? "time" : "times"); };
  if (s.reattaches != 0)
    s.activity_status += ", detached between step windows and attached again " + times(s.reattaches);
  if (s.reattaches_after_off != 0)
    s.activity_status +=
        ", detached while recording was off and attached again " + times(s.reattaches_after_off);
  s.activity_status += paused;
}

}  // namespace

bool defers_attach(const Options& o) {
  if (!o.metrics.empty() || wants_cupti_event_clock(o)) return false;
  return !o.enabled || (o.detach_between && paused_in(first_phase(o)));
}

void defer_first_attach(Session& s) {
  defer_attach(s.recording_on ? DetachFor::between_windows : DetachFor::recording_off);
  s.tracing.store(true, std::memory_order_release);  // what a step checks: CUPTI's calls are gated meanwhile
  s.detach_asked = s.attach_deferred = true;
}

std::string deferred_attach_status(const Session& s) {
  if (phase_now(s) == Phase::Done) return "not attached: the last step window ended before any step traced";
  if (s.closed.load(std::memory_order_acquire))  // the last report: nothing attaches it any more
    return s.recording_on ? "not attached: no step traced before the session ended"
                          : "not attached: recording was off until the session ended (CUSCOPE_ENABLE=0)";
  if (!s.recording_on)
    return "not attached yet: CUPTI attaches when recording is switched on (CUSCOPE_ENABLE=0, "
           "cuscope::set_enabled(true))";
  return "not attached yet: CUPTI attaches at the first step that traces (CUSCOPE_DETACH_BETWEEN)";
}

// Pauses or resumes CUPTI's tracing for phase `p` and the program's switch: paused outside the
// window, and while recording is off (set_enabled(false), CUSCOPE_ENABLE=0: scopes record nothing,
// and the GPU work launched then is neither paid for nor recorded); after a detach between windows
// (detach_asked, in a phase that traces: the last window's detach is never followed by one) CUPTI
// traces again. The caller holds the lifecycle lock: one transition at a time, and none once
// shutdown() began. Nothing when already so. True when CUPTI was attached again or stopped tracing
// (the scope flags depend on it).
bool pause_for(Session& s, Phase p) {
  if (!s.tracing.load(std::memory_order_acquire)) return false;
  const bool paused = paused_in(p) || !s.recording_on;
  if (!paused && s.detach_asked) {
    reattach(s);
    return true;
  }
  pause_activity_tracing(paused);
  return false;
}

namespace {

// The step that ends the last window (it enters Phase::Done, right after the pause; the caller
// holds the lifecycle lock): CUPTI is detached rather than left paused (CUSCOPE_DETACH,
// docs/cupti-windows.md), where the session traces and no hardware counters run (the range profiler
// is CUPTI's too).
void detach_after_last_window(Session& s) {
  if (s.detach_asked) {
    // A detach between windows still holds CUPTI (recording was off since: nothing attached it
    // again); it is the last window's now, and says so.
    set_detach_for(DetachFor::last_window);
    return;
  }
  if (!s.options.detach || !s.options.metrics.empty() || !s.tracing.load(std::memory_order_acquire)) return;
  s.detach_asked = request_detach();
}

// Where CUPTI just stopped tracing (a step into a wait from the window, the program's switch off
// while it traced), right after the pause; the caller holds the lifecycle lock: with
// Options::detach_between CUPTI is detached until the next step or switch that traces, as after the
// last window, where the session traces and no such detach was refused. start() turned the option
// off where hardware counters run or CUPTI times cuscope's events (their device timestamps are keyed
// by CUPTI's correlation ids, which a re-attach starts again).
void detach_until_traced(Session& s, DetachFor why) {
  // A detach that still holds CUPTI (recording off since, so nothing attached it again) stays asked
  // for: the next step or switch that traces attaches CUPTI again.
  if (!s.options.detach_between || s.detach_between_off || s.detach_asked ||
      !s.tracing.load(std::memory_order_acquire))
    return;
  s.detach_asked = request_detach(why);
}

// Writes the trace's mark (`mark()`: a step's end, the program's switch) and, where the model's
// recording changes from `was` to `now_records`, switches it at `now_ns` in the same hold of the lock
// a CUPTI buffer is traced and taken under: no record lands between the two in the trace that the
// live model took before the switch. The caller holds the lifecycle lock.
template <class Mark>
void mark_and_switch(Session& s, bool was, bool now_records, std::uint64_t now_ns, Mark&& mark) {
  if (was == now_records) {
    mark();
    return;
  }
  std::lock_guard agg(s.aggregator_mutex);
  mark();
  s.aggregator.set_recording(now_records, now_ns);
}

}  // namespace

bool records(const Session& s, Phase p) { return p == Phase::Record && s.recording_on; }

// Wait steps, or steps after the last window (phase_of: Done, which a window without an active
// bound, or repeated without end, never reaches).
bool pauses_tracing(const Options& o) { return o.wait_steps != 0 || (o.active_steps != 0 && o.repeat != 0); }

namespace {

// Whether the step that ends at `now` is the last step of a wait that has lasted less than
// Options::wait_ms: the window stays at it, and the next step is that wait step again.
bool wait_goes_on(const Session& s, std::uint64_t now) {
  const Options& o = s.options;
  if (o.wait_ms == 0 || phase_of(o, s.window_step) != Phase::Wait ||
      phase_of(o, s.window_step + 1) == Phase::Wait)
    return false;
  return now - s.wait_began_ns < std::uint64_t{o.wait_ms} * 1'000'000;
}

// Where recording starts or stops at `at_ns` (`was` to `now`: a step's end, the program's switch),
// the recorded stretches' edges (producers/window_edges.hpp); where it stops, every thread marked,
// so that its frames still open take the stretch that follows out at its next exit
// (producers/suspended_frames.hpp). The caller holds the lifecycle lock.
inline void note_recorded_edges(Session& s, bool was, bool now, std::uint64_t at_ns) {
  note_window_edges(at_ns, was && !now, now && !was);
  if (was && !now) {
    std::lock_guard threads(s.threads_mutex);
    mark_window_closed(s.threads);
  }
}

// A step's end, by the program (step()) or by CUSCOPE_STEP_MS's clock (clock_step()): the window's
// phase moves on, with the flags, the model's and the trace's marks and CUPTI's switches it needs.
// The program's first step() stops the clock's steps for good, with a note.
void end_step(Session& s, bool by_clock) {
  // One transition at a time, each whole (flags, window, trace mark), and none once shutdown()
  // cleared the flags: its summary follows, and the steps are final.
  std::lock_guard lock(s.lifecycle_mutex);
  // The program has called step() when some step is not the clock's.
  const bool program_steps =
      s.steps.load(std::memory_order_relaxed) != s.clock_steps.load(std::memory_order_relaxed);
  if (s.shut_down || (by_clock && program_steps)) return;
  const Options& o = s.options;
  if (!by_clock && !program_steps) {
    if (o.step_ms != 0 && !s.clock_from_sample)  // the program's own CUSCOPE_STEP_MS
      warn_once(
          fmt::format("cuscope::step() was called: the program marks its own steps, so those "
                      "CUSCOPE_STEP_MS={} ended every {} ms stop after step {}",
                      o.step_ms, o.step_ms, s.steps.load(std::memory_order_relaxed)));
  }
  const std::uint64_t finished = s.steps.fetch_add(1, std::memory_order_relaxed);
  if (by_clock) s.clock_steps.fetch_add(1, std::memory_order_relaxed);
  // One time for the step's end, in the model as in the trace (a replay finds the same windows):
  // not after CUPTI's pause, which takes its time.
  const std::uint64_t ended = now_ns();
  const Phase was = phase_now(s);
  if (s.whole) {
    s.whole = ended - s.start_ns < std::uint64_t{o.whole_ms} * 1'000'000;  // else the window's first step
  } else if (!wait_goes_on(s, ended)) {
    ++s.window_step;
  }
  const Phase next = phase_now(s);
  if (next == Phase::Wait && was != Phase::Wait) s.wait_began_ns = ended;
  // Before the flags that close the window: a thread that finds them closed finds this time too.
  const bool records_was = records(s, was), records_next = records(s, next);
  note_recorded_edges(s, records_was, records_next, ended);
  if (was == Phase::Record) s.recorded_steps.fetch_add(1, std::memory_order_relaxed);
  g_flags.store(flags_for(s, next), std::memory_order_relaxed);  // also ends the counters' steps
  mark_and_switch(s, records_was, records_next, ended,
                  [&] { trace_step(ended, finished + 1, next == Phase::Record); });
  // A phase that pauses or traces again, or, after a detach between windows that was still under
  // way when this window began, each of the window's steps until CUPTI is attached again.
  const bool switches = paused_in(was) != paused_in(next) || (s.detach_asked && !paused_in(next));
  if (switches && pause_for(s, next))
    g_flags.store(flags_for(s, next), std::memory_order_relaxed);  // as the new attach traces
  if (was == next) return;
  if (next == Phase::Done) detach_after_last_window(s);
  if (next == Phase::Wait && !paused_in(was)) detach_until_traced(s, DetachFor::between_windows);
}

}  // namespace

void clock_step(Session& s) {
  if (!forked_child()) end_step(s, true);
}

}  // namespace detail

void step() {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->step();
  Session& s = session();
  if (g_state.load(std::memory_order_acquire) == kNotStarted) start();
  end_step(s, false);
}

void set_enabled(bool on) {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->set_enabled(on);
  if (g_state.load(std::memory_order_acquire) == kNotStarted) start();
  Session& s = session();
  std::lock_guard lock(s.lifecycle_mutex);
  if (s.shut_down) return;
  g_state.store(on ? kOn : kOff, std::memory_order_release);
  if (s.recording_on == on) return;
  const Phase p = phase_now(s);
  const bool was = records(s, p);
  s.recording_on = on;
  // The switch's time, in the model as in the trace: what is called outside every scope while
  // recording is off (host-timed synchronizes, allocations) counts outside the window.
  const std::uint64_t now = now_ns();
  const bool records_now = records(s, p);
  note_recorded_edges(s, was, records_now, now);  // a scope open across the switch counts as across a wait
  mark_and_switch(s, was, records_now, now, [&] { trace_recording(now, on); });
  if (pause_for(s, p)) g_flags.store(flags_for(s, p), std::memory_order_relaxed);
  if (!on && !paused_in(p)) {
    detach_until_traced(s, DetachFor::recording_off);
    g_flags.store(flags_for(s, p), std::memory_order_relaxed);  // no external correlation while it detaches
  } else if (on && s.detach_asked && paused_in(p) && detach_for() == DetachFor::recording_off) {
    set_detach_for(DetachFor::between_windows);  // switched on in a wait step: the next window attaches it
  }
}

bool enabled() {
  using namespace detail;
  if (const Engine* e = forward_target()) return e->enabled();
  const int state = g_state.load(std::memory_order_acquire);
  if (state != kNotStarted) return state == kOn;
  // Not started: what the first scope would do, which starts the session from the environment.
  // Read quietly: start() reports bad values once.
  return options_from([](const char* name) -> const char* { return std::getenv(name); }, Options{}, nullptr)
      .enabled;
}

}  // namespace v0
}  // namespace cuscope

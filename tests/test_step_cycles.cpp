// The step window repeated (CUSCOPE_REPEAT): each cycle's active steps recorded, the others left out
// and counted, and CUPTI's tracing paused where nothing it records would count (wait steps, and
// after the last window) and resumed for the warm-up steps, with a fake standing for CUPTI.
// Never here: a GPU, or CUPTI itself (tests/gpu/test_gpu_activity.cu checks the real pause).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "cupti_buffer.hpp"
#include "kind_names.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"
#include "trace/replay.hpp"
#include "trace_kit.hpp"

namespace {

// (steps marked so far, paused) for each change the session asked of CUPTI.
std::vector<std::pair<std::uint64_t, bool>>* g_changes = nullptr;

// The changes as text, for a failed comparison's message.
std::string shown(const std::vector<std::pair<std::uint64_t, bool>>& changes) {
  std::string out;
  for (const auto& [steps, paused] : changes)
    out += "(" + std::to_string(steps) + (paused ? ", paused) " : ", resumed) ");
  return out;
}

void record_change(bool paused) {
  g_changes->emplace_back(cuscope::detail::session().steps.load(std::memory_order_relaxed), paused);
}

void fake_push(std::uint64_t) noexcept {}
void fake_pop() noexcept {}

// A session traced by fake CUPTI whose pauses land in `changes`.
struct PausedSession {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  std::vector<std::pair<std::uint64_t, bool>> changes;
  explicit PausedSession(const cuscope::Options& o) : session(o) {
    g_changes = &changes;
    cuscope::detail::set_pause_hook_for_testing(&record_change);
    cuscope::detail::trace_with_fake_cupti_for_testing(fake_push, fake_pop, true);
  }
  ~PausedSession() {
    cuscope::detail::set_pause_hook_for_testing(nullptr);
    g_changes = nullptr;
  }
  PausedSession(const PausedSession&) = delete;
  PausedSession& operator=(const PausedSession&) = delete;
};


// `steps` steps, each one scope named `name`, then the report.
cuscope::Report run_steps(int steps, const char* name) {
  for (int i = 0; i < steps; ++i) {
    { cuscope::Scope scope(name); }
    cuscope::step();
  }
  return cuscope::snapshot();
}

}  // namespace

TEST_CASE("a repeated window records the active steps of each cycle, then nothing", "[session][window]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 2;
  o.repeat = 2;  // steps 2, 3 and 6, 7 recorded; 8 and 9 after the last window
  cuscope_test::Session session(o);
  const cuscope::Report r = run_steps(10, "cycled");
  CHECK(r.steps == 10);
  CHECK(r.recorded_steps == 4);
  CHECK(r.window_start_step == 2);
  REQUIRE(r.find("cycled") != nullptr);
  CHECK(r.find("cycled")->calls == 4);
  CHECK(r.diagnostics.outside_window_scopes == 6);
}

TEST_CASE("repeat 0 cycles the window without end", "[session][window]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 2;
  o.active_steps = 1;
  o.repeat = 0;  // one step in three: steps 2, 5, 8, ...
  cuscope_test::Session session(o);
  const cuscope::Report r = run_steps(30, "one_in_three");
  CHECK(r.recorded_steps == 10);
  CHECK(r.find("one_in_three")->calls == 10);
  CHECK(r.diagnostics.outside_window_scopes == 20);
}

TEST_CASE("repeat without active steps runs the window once, with a note", "[session][window]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.repeat = 3;  // nothing to repeat: every step after the wait is active
  cuscope_test::Session session(o);
  CHECK(cuscope::current_options().repeat == 1);
  const cuscope::Report r = run_steps(5, "once");
  CHECK(r.recorded_steps == 4);
  CHECK(r.find("once")->calls == 4);
  CHECK(r.notes ==
        std::vector<std::string>{"Options::repeat=3 needs active_steps > 0 (a window to repeat); the "
                                 "window runs once"});
}

TEST_CASE("CUPTI's tracing pauses in wait steps and after the last window, and resumes for warm-up",
          "[session][window][tracing]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 2;  // wait 0, warm-up 1, active 2, wait 3, warm-up 4, active 5, then done
  PausedSession traced(o);
  const cuscope::Report r = run_steps(8, "paused_between");
  CHECK(traced.changes ==
        std::vector<std::pair<std::uint64_t, bool>>{{0, true}, {1, false}, {3, true}, {4, false}, {6, true}});
  CHECK(r.recorded_steps == 2);
  CHECK(r.find("paused_between")->calls == 2);
}

TEST_CASE("a window that opens at once and never closes never pauses CUPTI", "[session][window][tracing]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 2;  // traced from the start; no active bound: no step after the window
  PausedSession traced(o);
  run_steps(6, "never_paused");
  CHECK(traced.changes.empty());
}

TEST_CASE("an active window without repeat pauses CUPTI once, when it ends", "[session][window][tracing]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.active_steps = 3;
  PausedSession traced(o);
  const cuscope::Report r = run_steps(6, "then_paused");
  CHECK(traced.changes == std::vector<std::pair<std::uint64_t, bool>>{{3, true}});
  CHECK(r.find("then_paused")->calls == 3);
}

// The activity status says "paused outside the step window" where some step pauses CUPTI
// (pauses_tracing()): never for a window that repeats without end and has no wait steps, whose
// warm-up steps trace.
TEST_CASE("a window repeated without end and no wait steps never pauses CUPTI, nor says it does",
          "[session][window][tracing]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 1;
  o.active_steps = 9;
  o.repeat = 0;  // one step in ten left out as warm-up, every one traced
  PausedSession traced(o);
  run_steps(25, "never_paused");
  CHECK(traced.changes.empty());
  CHECK_FALSE(cuscope::detail::pauses_tracing(cuscope::current_options()));
}

TEST_CASE("the windows that pause CUPTI say so", "[session][window][tracing]") {
  cuscope::Options o;
  CHECK_FALSE(cuscope::detail::pauses_tracing(o));  // every step recorded
  o.warmup_steps = 3;
  CHECK_FALSE(cuscope::detail::pauses_tracing(o));  // warm-up traces, and every step after records
  o.active_steps = 2;
  CHECK(cuscope::detail::pauses_tracing(o));  // after the window
  o.repeat = 4;
  CHECK(cuscope::detail::pauses_tracing(o));  // after the last window
  o.repeat = 0;
  CHECK_FALSE(cuscope::detail::pauses_tracing(o));  // no step after the last window
  o.wait_steps = 1;
  CHECK(cuscope::detail::pauses_tracing(o));  // each cycle's wait step
}

namespace {

// A pause that takes a while, as CUPTI's may (every kind, then every launch callback): the time
// halfway through the last pause.
std::uint64_t g_during_pause = 0;

void slow_pause(bool paused) {
  if (!paused) return;
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
  g_during_pause = cuscope::detail::now_ns();
  std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

// The window closes when its last step ends, before CUPTI pauses: work launched while the pause
// runs (by another thread, outside every scope) is outside the window, live as in the replay.
TEST_CASE("a window closes when its step ends, not after CUPTI's pause: live and replay agree",
          "[session][window][tracing][trace]") {
  using cuscope_test::trace_kit::temp_path;
  const std::string trace_path = temp_path("pause_window.cuscope");
  const std::string json_path = temp_path("pause_window.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.wait_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;  // wait 0, active 1, wait 2, ...
  {
    cuscope_test::WithoutGpu no_gpu;
    cuscope_test::Session session(o);
    cuscope::detail::set_pause_hook_for_testing(&slow_pause);
    cuscope::detail::trace_with_fake_cupti_for_testing(fake_push, fake_pop, false);
    cuscope::step();  // the window opens
    cuscope::step();  // and closes: CUPTI pauses
    cuscope::detail::set_pause_hook_for_testing(nullptr);
    auto& s = cuscope::detail::session();
    cuscope_test::CuptiBuffer buffer;
    const std::uint64_t t = g_during_pause;
    buffer.api(7, t).kernel(7, t + 10, t + 20, "launched_during_pause");
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    const cuscope::Report live = cuscope::snapshot();
    CHECK(live.diagnostics.outside_window_records == 1);
    CHECK(live.find("(unscoped)") == nullptr);
    cuscope::shutdown();
  }
  cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
}

namespace {

// Each switch of an activity kind, as CUPTI would have been asked: "KERNEL off", "MEMCPY on", ...
std::vector<std::string>* g_switches = nullptr;

CUptiResult record_switch(CUpti_ActivityKind kind, bool on) {
  const char* name = cuscope_test::kind_name(kind);
  g_switches->push_back(std::string(name) + (on ? " on" : " off"));
  return CUPTI_SUCCESS;
}

// A window of one wait and one active step, repeated, with `kinds` on and faked: each of two cycles'
// pause and resume switches them as `cycle` says, and the stop turns each off once (`stop`, sorted).
void check_switches(const std::vector<CUpti_ActivityKind>& kinds, const std::vector<std::string>& cycle,
                    const std::vector<std::string>& stop) {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;  // wait 0, active 1, wait 2, active 3, wait 4, active 5
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session(o);
  std::vector<std::string> switches;
  g_switches = &switches;
  cuscope::detail::trace_kinds_with_fake_cupti_for_testing(cuscope::detail::session(), kinds, &record_switch);
  cuscope::step();  // 0 -> 1: tracing, as it was
  for (int c = 0; c < 2; ++c) {
    switches.clear();
    cuscope::step();  // paused
    cuscope::step();  // resumed
    INFO("cycle " << c);
    CHECK(switches == cycle);
  }
  switches.clear();
  cuscope::detail::reset_for_testing();  // stops
  std::sort(switches.begin(), switches.end());
  CHECK(switches == stop);
  g_switches = nullptr;
}

}  // namespace

// The order is what keeps every record's launch known: the kernels off first and on last. A resume
// that put the kinds back in its own order would turn them around at every other cycle.
TEST_CASE("every pause and resume switches CUPTI's kinds in one order: kernels off first, on last",
          "[session][window][tracing]") {
  // CUDA_EVENT (cuscope's own events) stays on, and goes off at the stop.
  check_switches({CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                  CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_CUDA_EVENT},
                 {"KERNEL off", "MEMCPY off", "OVERHEAD off", "OVERHEAD on", "MEMCPY on", "KERNEL on"},
                 {"CUDA_EVENT off", "KERNEL off", "MEMCPY off", "OVERHEAD off"});
}

// External correlation: the API records and the external correlations tie the kernels to scopes,
// so they come back before the kernels; the API kinds first of all (trace_calls() turns the calls
// that launch nothing off again after each), and every cycle the same.
TEST_CASE("with external correlation a resume turns the API kinds on first, the kernels last",
          "[session][window][tracing]") {
  // As start_activity_tracing() leaves them without launch notes: the record kinds, then the API's.
  check_switches(
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
       CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER},
      {"KERNEL off", "MEMCPY off", "EXTERNAL off", "RUNTIME off", "DRIVER off", "RUNTIME on", "DRIVER on",
       "EXTERNAL on", "MEMCPY on", "KERNEL on"},
      {"DRIVER off", "EXTERNAL off", "KERNEL off", "MEMCPY off", "RUNTIME off"});
}

// Trace mode: the replay finds each cycle's window from the step marks, as the live session had it.
TEST_CASE("a repeated window replays from its trace to the exit report", "[session][window][trace]") {
  using cuscope_test::trace_kit::temp_path;
  const std::string trace_path = temp_path("repeated_window.cuscope");
  const std::string json_path = temp_path("repeated_window.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 2;  // wait 0, warm-up 1, active 2, wait 3, warm-up 4, active 5, then done
  {
    cuscope_test::WithoutGpu no_gpu;
    cuscope_test::Session session(o);
    cuscope::detail::trace_with_fake_cupti_for_testing(fake_push, fake_pop, false);
    auto& s = cuscope::detail::session();
    for (std::uint32_t step = 0; step < 8; ++step) {
      { cuscope::Scope scope("cycled"); }
      cuscope_test::CuptiBuffer buffer;  // one unscoped launch a step: in the window or out by its time
      const std::uint64_t t = cuscope::detail::now_ns();
      buffer.api(100 + step, t).kernel(100 + step, t + 10, t + 20, "unscoped_kernel");
      {
        std::lock_guard lock(s.aggregator_mutex);
        cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
      }
      cuscope::step();
    }
    const cuscope::Report live = cuscope::snapshot();
    CHECK(live.recorded_steps == 2);
    REQUIRE(live.find("cycled") != nullptr);
    CHECK(live.find("cycled")->calls == 2);
    REQUIRE(live.find("(unscoped)") != nullptr);
    CHECK(live.find("(unscoped)")->self.kernel_calls == 2);
    CHECK(live.diagnostics.outside_window_records == 6);
    cuscope::shutdown();
  }
  cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);  // 'cycled' twice, as live
}

// Recording switched off (set_enabled(false)) pauses CUPTI's tracing as a wait step does: the GPU
// work launched while scopes record nothing is neither paid for nor recorded. Switched on again it
// resumes, but not inside a wait step (the window's own pause stands), and a switch to what already
// holds asks nothing of CUPTI. The steps: 0 wait, 1 warm-up, 2 active, 3 wait, 4 warm-up, ...
TEST_CASE("recording switched off pauses CUPTI's tracing and on resumes it within the window's pauses",
          "[session][window]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  PausedSession s(o);  // a wait step: tracing starts paused
  const std::string off = ", paused while recording is off (set_enabled(false), CUSCOPE_ENABLE=0)";
  const auto says_off = [&] { return cuscope::snapshot().activity_status.find(off) != std::string::npos; };
  cuscope::step();  // into the warm-up step: resumes
  CHECK_FALSE(says_off());
  cuscope::set_enabled(false);  // warm-up step: pauses
  CHECK(says_off());
  cuscope::set_enabled(false);  // already off: nothing asked
  cuscope::step();              // into the active step: still off, still paused
  cuscope::set_enabled(true);   // resumes
  CHECK_FALSE(says_off());
  cuscope::step();              // into a wait step: the window pauses
  cuscope::set_enabled(false);  // already paused
  cuscope::set_enabled(true);   // a wait step: stays paused
  cuscope::step();              // into the warm-up step: resumes
  const std::vector<std::pair<std::uint64_t, bool>> expected{{0, true}, {1, false}, {1, true},
                                                             {2, false}, {3, true},  {4, false}};
  INFO("changes: " << shown(s.changes));
  CHECK(s.changes == expected);
}

TEST_CASE("a session started with recording off says its tracing is paused until recording is on",
          "[session][window]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.enabled = false;
  PausedSession s(o);  // no window: paused only because recording is off
  CHECK(cuscope::snapshot().activity_status.find(", paused while recording is off") != std::string::npos);
  cuscope::set_enabled(true);
  CHECK(cuscope::snapshot().activity_status.find(", paused while recording is off") == std::string::npos);
  cuscope::set_enabled(false);
  const std::vector<std::pair<std::uint64_t, bool>> expected{{0, true}, {0, false}, {0, true}};
  INFO("changes: " << shown(s.changes));
  CHECK(s.changes == expected);
}

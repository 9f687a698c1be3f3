// CUPTI while recording is off (docs/cupti-windows.md, "While recording is off"): a session that
// starts with recording off (CUSCOPE_ENABLE=0) attaches no CUPTI until recording is switched on;
// with CUSCOPE_DETACH_BETWEEN a switch off detaches CUPTI once the last records are in, and the switch
// on attaches it again; a switch on within that second calls the detach off; a refused finalize is
// said once; a switch on in a wait step leaves the attach to the next window; the status at each
// stage; and recording off across the windows of a window that detaches CUPTI between them. Fakes stand for
// CUPTI (detach_fixture.hpp); the collector thread runs for real. Never here: a GPU, or CUPTI itself
// (tests/gpu/test_gpu_detach.cu checks the real attach and detach).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cuscope/cuscope.hpp"
#include "detach_fixture.hpp"
#include "producers/cupti/detach.hpp"
#include "session/internal.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

using cuscope::detail::DetachStage;
using namespace cuscope_test::detach;

// No step window; CUPTI detached while recording is off.
cuscope::Options detached_while_off() {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.detach_between = true;
  return o;
}

const std::string kOffOnlyNote =
    "Options::detach_between: no step window repeats with wait steps (repeat != 1, wait_steps > 0), so CUPTI "
    "is detached only while recording is off (cuscope::set_enabled(false))";

// Recording off from the start, no step window.
cuscope::Options recording_off() {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.enabled = false;
  return o;
}

// start(o) where CUPTI could trace: a GPU's start defers the attach where defers_attach(o); here the
// fakes stand for CUPTI and the case plays that call. The fakes' log is empty after it.
void start_deferred(const cuscope::Options& o) {
  cuscope::detail::reset_for_testing();  // a session as start() leaves it, no fake tracing set up
  cuscope::start(o);
  REQUIRE(cuscope::detail::defers_attach(o));
  {
    cuscope::detail::Session& s = cuscope::detail::session();
    std::lock_guard lock(s.lifecycle_mutex);
    cuscope::detail::defer_first_attach(s);
  }
  std::lock_guard lock(g_log_mutex);
  g_log.clear();
}

const std::string kPausedWhileOff = ", paused while recording is off (set_enabled(false), CUSCOPE_ENABLE=0)";

}  // namespace

TEST_CASE("start() leaves CUPTI unattached with recording off, or in a wait step detached between windows",
          "[tracing][detach][options]") {
  using cuscope::detail::defers_attach;
  cuscope::Options o = cuscope_test::quiet_options();
  CHECK_FALSE(defers_attach(o));  // the defaults: attached at the start
  o.enabled = false;
  CHECK(defers_attach(o));  // CUSCOPE_ENABLE=0, with or without CUSCOPE_DETACH_BETWEEN
  o.metrics = "sol";
  CHECK_FALSE(defers_attach(o));  // hardware counters start with the session
  o.metrics.clear();
  o.event_timestamps = cuscope::EventTimestamps::cupti;
  o.events = cuscope::EventTiming::always;
  CHECK_FALSE(defers_attach(o));  // CUPTI's clock for cuscope's events
  o = cuscope_test::quiet_options();
  o.detach_between = true;
  CHECK_FALSE(defers_attach(o));  // recording on, no wait step: traced from the start
  o.wait_steps = 2;
  o.active_steps = 1;
  o.repeat = 0;
  CHECK(defers_attach(o));  // the first wait step
  o.wait_steps = 0;
  o.warmup_steps = 1;
  CHECK_FALSE(defers_attach(o));  // a warm-up step traces
}

TEST_CASE("recording off at the start attaches no CUPTI until it is switched on, which attaches it",
          "[session][tracing][detach]") {
  FakeCuptiSession traced(recording_off());
  start_deferred(recording_off());
  CHECK(cuscope::snapshot().activity_status ==
        "not attached yet: CUPTI attaches when recording is switched on (CUSCOPE_ENABLE=0, "
        "cuscope::set_enabled(true))");
  { CUSCOPE_SCOPE("while_off"); }
  cuscope::flush();                                             // no CUPTI call: none is attached
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // nor the collector's polls
  CHECK(logged().empty());
  CHECK(cuscope::snapshot().find("while_off") == nullptr);
  cuscope::set_enabled(true);
  CHECK(logged() == std::vector<std::string>{"attach"});
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(cuscope::snapshot().activity_status == "on (fake CUPTI)");  // no window: nothing paused
  // Without CUSCOPE_DETACH_BETWEEN a later switch off pauses CUPTI only, as before.
  cuscope::set_enabled(false);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with({"attach"}, kPause));
  CHECK(cuscope::snapshot().activity_status == "on (fake CUPTI)" + kPausedWhileOff);
  CHECK(cuscope::snapshot().notes.empty());
}

TEST_CASE("with CUSCOPE_DETACH_BETWEEN each switch off detaches CUPTI and each switch on attaches it again",
          "[session][tracing][detach]") {
  FakeCuptiSession traced(detached_while_off());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);  // the last records in after 50 ms
  cuscope::set_enabled(false);
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused while recording is off; CUPTI detaches once the last records are in"));
  detach_made();
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached while recording is off"));
  cuscope::set_enabled(true);
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached while recording was off and attached again 1 time");
  cuscope::set_enabled(false);
  detach_made();
  cuscope::set_enabled(true);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached while recording was off and attached again 2 times");
  const std::vector<std::string> cycle = with(with(kPause, without_normal_flushes(kDetach)), {"attach"});
  CHECK(without_normal_flushes(logged()) == with(cycle, cycle));
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{kOffOnlyNote});
}

TEST_CASE("a switch on within the second a detach waits calls it off: CUPTI only paused, said once",
          "[session][tracing][detach]") {
  FakeCuptiSession traced(detached_while_off());
  const std::string status = cuscope::snapshot().activity_status;
  cuscope::detail::set_detach_wait_for_testing(3'600'000'000'000);  // pending until the case says
  cuscope::set_enabled(false);
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::pending);
  cuscope::set_enabled(true);
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  cuscope::detail::set_detach_wait_for_testing(1);              // a detach still pending would go now
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the collector's ticks
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with(kPause, {"MEMCPY on", "KERNEL on"}));
  CHECK(cuscope::snapshot().activity_status == status);  // as it was: paused and resumed
  const std::string called_off =
      "CUPTI's detach while recording was off was called off: recording was switched on within the 1 s the "
      "detach waits for the last records, so CUPTI was only paused";
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{called_off, kOffOnlyNote});
  cuscope::detail::set_detach_wait_for_testing(3'600'000'000'000);
  cuscope::set_enabled(false);
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::pending);
  cuscope::set_enabled(true);  // called off again: not said again
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{called_off, kOffOnlyNote});
}

TEST_CASE("a refused finalize while recording is off is said once, and later switches off only pause",
          "[session][tracing][detach]") {
  FakeCuptiSession traced(detached_while_off());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  g_finalize_result = CUPTI_ERROR_NOT_SUPPORTED;
  cuscope::set_enabled(false);
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(reaches(DetachStage::kept));  // the collector said so, the API callbacks off
  cuscope::set_enabled(true);           // attached again: every kind was off
  cuscope::set_enabled(false);          // paused only
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> first = with(with(kPause, without_normal_flushes(kDetach)),
                                              {"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)", "attach"});
  CHECK(without_normal_flushes(logged()) == with(first, kPause));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.activity_status == "on (fake CUPTI)" + kPausedWhileOff);  // it never left
  REQUIRE(r.notes.size() == 2);                                     // in order
  CHECK(r.notes[0].starts_with("CUPTI is not detached while recording is off: "));
  CHECK(r.notes[0].find("cuptiFinalize") != std::string::npos);
  CHECK(r.notes[0].ends_with("; it is paused while recording is off from now on"));
  CHECK(r.notes[1] == kOffOnlyNote);
}

// Switched off in the window, on again in the wait step after it: the detach is the window's now, and
// the next window's first step attaches CUPTI, not the switch.
TEST_CASE("a switch on in a wait step leaves CUPTI detached until the next window, which attaches it",
          "[session][window][tracing][detach]") {
  cuscope::Options o = detached_while_off();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;  // 0 waits, 1 warms up, 2 is recorded, 3 waits, 4 warms up, ...
  FakeCuptiSession traced(o);
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  cuscope::step();
  cuscope::step();              // the recorded step 2 begins
  cuscope::set_enabled(false);  // in it: detached while off
  detach_made();
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached while recording is off"));
  cuscope::step();             // into wait step 3, still detached
  cuscope::set_enabled(true);  // a wait step: nothing traces yet
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached between step windows until the next one"));
  cuscope::step();  // warm-up step 4: attached again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 1 time, paused outside the step "
        "window");
  CHECK(without_normal_flushes(logged()) == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
  CHECK(cuscope::snapshot().notes.empty());
}

TEST_CASE("recording off through a window that ends before it is switched on: CUPTI never attaches",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();  // one active step, once
  o.enabled = false;
  FakeCuptiSession traced(o);
  start_deferred(o);
  cuscope::step();  // the window ends: done
  CHECK(cuscope::snapshot().activity_status ==
        "not attached: the last step window ended before any step traced");
  cuscope::set_enabled(true);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  CHECK(logged().empty());
  CHECK(cuscope::snapshot().activity_status ==
        "not attached: the last step window ended before any step traced");
}

// The last report of a session whose CUPTI never attached says that nothing will any more.
TEST_CASE("a session that ends with recording off all along reports CUPTI never attached",
          "[session][tracing][detach]") {
  FakeCuptiSession traced(recording_off());
  start_deferred(recording_off());
  cuscope::shutdown();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.final);
  CHECK(r.activity_status == "not attached: recording was off until the session ended (CUSCOPE_ENABLE=0)");
  CHECK_FALSE(r.tracing_on());
  CHECK(logged().empty());  // the stop called no CUPTI
}

TEST_CASE("a session that ends in its first wait, detached between windows, reports CUPTI never attached",
          "[session][window][tracing][detach]") {
  cuscope::Options o = detached_while_off();
  o.wait_steps = 5;
  o.active_steps = 1;
  o.repeat = 0;
  FakeCuptiSession traced(o);
  start_deferred(o);
  cuscope::step();  // still waiting
  cuscope::shutdown();
  CHECK(cuscope::snapshot().activity_status == "not attached: no step traced before the session ended");
  CHECK(logged().empty());
}

// Recording off in a window that repeats and detaches CUPTI between its windows
// (CUSCOPE_DETACH_BETWEEN, test_cupti_detach_between.cpp): the detach between windows stands.
TEST_CASE("recording off when the next window begins keeps CUPTI detached until recording is on",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  first_detach();
  cuscope::set_enabled(false);
  cuscope::step();  // the warm-up step, recording off: nothing to trace
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  const std::vector<std::string> before = logged();
  CHECK(std::count(before.begin(), before.end(), "attach") == 0);
  cuscope::set_enabled(true);  // attached again, at the switch
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(log == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
}

// Recording off from a wait step through the whole next window: nothing attaches CUPTI, and the
// window's end asks for no second detach; the first window with recording on attaches it again.
TEST_CASE("recording off through a whole window keeps the detach, and the next window attaches CUPTI again",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  first_detach();
  cuscope::set_enabled(false);
  steps(4);  // warm-up 4, active 5, its end into wait 6, then warm-up 7 with recording off
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached between step windows until the next one"));
  cuscope::set_enabled(true);  // in warm-up step 7: attached again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
}

// The same through the last window: the detach between windows is the last window's, and says so;
// recording on again after it attaches nothing.
TEST_CASE("recording off through the last window keeps the detach between windows as the last one's",
          "[session][window][tracing][detach]") {
  cuscope::Options o = between_windows();
  o.repeat = 2;  // steps 0-2 and 3-5, then done
  FakeCuptiSession traced(o);
  first_detach();
  cuscope::set_enabled(false);
  steps(3);  // warm-up 4, active 5, then done
  cuscope::set_enabled(true);
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached after the last step window"));
  CHECK(without_normal_flushes(logged()) == with(kPause, without_normal_flushes(kDetach)));
}

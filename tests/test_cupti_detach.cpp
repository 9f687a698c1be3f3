// Detaching CUPTI after the last step window (CUSCOPE_DETACH, docs/cupti-windows.md): the order of
// the sequence (pause, normal flushes until the window's records are in, a forced flush, every kind
// off, the API callbacks armed, cuptiFinalize at the next API exit), no CUPTI call after it, exact
// counts across it, a refused finalize, and the windows that never detach. Fakes stand for CUPTI
// (detach_fixture.hpp); the collector thread runs for real. Stops, forks and next sessions around a
// detach: test_cupti_detach_lifetimes.cpp.
// Never here: a GPU, or CUPTI itself (tests/gpu/test_gpu_detach.cu checks the real detach).
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cupti_buffer.hpp"
#include "cuscope/cuscope.hpp"
#include "detach_fixture.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/subscriber.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

using cuscope::detail::DetachStage;
using namespace cuscope_test::detach;

}  // namespace

TEST_CASE("the last window's end pauses CUPTI, delivers its records, then detaches in order",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();  // the window's one step ends: paused, the detach pending
  const cuscope::Report pending = cuscope::snapshot();
  // Pending for 1 s (kDetachWaitNs), unless this thread was held up that long.
  if (cuscope::detail::detach_stage() == DetachStage::pending)
    CHECK(pending.activity_status.ends_with(
        ", paused after the last step window; CUPTI detaches once the window's records are in"));
  REQUIRE(reaches(DetachStage::armed));
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused after the last step window; CUPTI detaches now"));
  cuscope::detail::api_exit_for_testing();  // the collector's next CUDA call returns
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  const std::vector<std::string> log = logged();
  CHECK(without_normal_flushes({log.begin(), std::find(log.begin(), log.end(), "MEMCPY off") + 1}) == kPause);
  CHECK(after(log, "MEMCPY off") == kDetach);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.activity_status.ends_with(", detached after the last step window"));
  CHECK(r.notes.empty());
}

TEST_CASE("after the detach cuscope calls CUPTI no more: polls, flush, snapshot and shutdown",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  const std::size_t armed = logged().size();  // the API callbacks' arming was the last call
  cuscope::detail::api_exit_for_testing();
  cuscope::detail::api_exit_for_testing();                      // a second API exit: no second finalize
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the collector's polls, 100 ms apart
  cuscope::flush();
  cuscope::detail::flush_activity_forced();
  cuscope::step();  // after the last window: no pause, no resume
  (void)cuscope::snapshot();
  cuscope::shutdown();  // its flushes, the kinds and the subscriber: all gone with CUPTI
  const std::vector<std::string> log = logged();
  CHECK(std::vector<std::string>(log.begin() + static_cast<std::ptrdiff_t>(armed), log.end()) ==
        std::vector<std::string>{"cuptiFinalize"});
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached after the last step window"));
}

TEST_CASE("records that arrive between the pause and the detach are kept, incomplete ones counted",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  const std::uint64_t t = cuscope::detail::now_ns();
  cuscope_test::CuptiBuffer late;  // the window's kernel, completed after the pause
  late.api(1, t).kernel(1, t + 10, t + 20, "finished_after_pause");
  cuscope_test::CuptiBuffer running;  // one still running at the detach: CUPTI never completes it
  running.api(2, t + 30).kernel(2, 0, 0, "still_running");
  g_at_pending_flush = &late;
  g_at_forced_flush = &running;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(r.diagnostics.incomplete_at_exit == 1);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.outside_window_records == 0);
  cuscope::shutdown();
  const cuscope::Report final_report = cuscope::snapshot();  // the same after the exit's stop
  CHECK(final_report.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(final_report.diagnostics.incomplete_at_exit == 1);
}

// CUPTI's normal flush hands back no buffer with an incomplete record in it (cupti_activity.h,
// cuptiActivityFlushAll): while the GPU still runs the window's last work, normal flushes bring
// nothing, however quiet that looks. A GPU 0.3 s behind its host (the H200 trial's worker,
// docs/cupti-windows.md) must still have the window's records come complete before the forced
// flush.
TEST_CASE(
    "a window whose GPU runs 300 ms behind the pause has its records delivered complete before the detach",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  const std::uint64_t t = cuscope::detail::now_ns();
  cuscope_test::CuptiBuffer complete;
  complete.api(1, t).kernel(1, t + 10, t + 20, "behind_the_pause");
  cuscope_test::CuptiBuffer incomplete;
  incomplete.api(1, t).kernel(1, 0, 0, "behind_the_pause");
  HeldBuffer held{&complete, &incomplete, t + 300'000'000};
  g_held = &held;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.incomplete_at_exit == 0);
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
}

TEST_CASE("a refused finalize warns once and leaves CUPTI paused, its API callbacks off",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  g_finalize_result = CUPTI_ERROR_NOT_SUPPORTED;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(reaches(DetachStage::kept));      // the collector said so
  cuscope::detail::api_exit_for_testing();  // no second try
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 1);
  // After it, the API callbacks off (then the collector's flushes again: CUPTI is still attached).
  CHECK(without_normal_flushes(after(log, "cuptiFinalize")) ==
        std::vector<std::string>{"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)"});
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].starts_with("CUPTI is paused, not detached, after the last step window: "));
  CHECK(r.notes[0].find("cuptiFinalize") != std::string::npos);
  CHECK_FALSE(r.activity_status.ends_with(" after the last step window"));  // not detached
}

TEST_CASE("CUSCOPE_DETACH=0 keeps pausing after the last window, no detach",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.detach = false;
  FakeCuptiSession traced(o);
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a detach asked for would be pending
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(log == kPause);
  CHECK_FALSE(cuscope::snapshot().activity_status.ends_with(" after the last step window"));
}

TEST_CASE("a window repeated without end never detaches, it pauses between windows",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.wait_steps = 1;
  o.repeat = 0;  // wait 0, active 1, wait 2, active 3, ...
  FakeCuptiSession traced(o);
  for (int i = 0; i < 6; ++i) cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 0);
  CHECK(std::count(log.begin(), log.end(), "KERNEL off") == 3);  // steps 1, 3, 5 ended windows
}

TEST_CASE("a repeated window detaches after its last cycle only", "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.wait_steps = 1;
  o.repeat = 2;  // wait 0, active 1, wait 2, active 3, then done
  FakeCuptiSession traced(o);
  cuscope::step();
  cuscope::step();  // the first window's end: paused only
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  cuscope::step();  // the last window's end
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
}

TEST_CASE("a window that never ends never detaches", "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.active_steps = 0;  // every step recorded
  o.warmup_steps = 1;
  FakeCuptiSession traced(o);
  for (int i = 0; i < 5; ++i) cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()).empty());
}

TEST_CASE("no detach where hardware counters run: the range profiler is CUPTI's too",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.metrics = "sol";  // without a GPU the counters do not start; the detach is left out all the same
  FakeCuptiSession traced(o);
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == kPause);
}

TEST_CASE("no detach where another tool holds CUPTI's subscriber: one note, CUPTI paused",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  // As start_activity_tracing() leaves a session whose cuptiSubscribe another tool refused.
  cuscope::detail::set_subscribe_result_for_testing(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  (void)cuscope::detail::subscribe(cuscope::detail::session(), false);
  cuscope::detail::set_subscribe_result_for_testing(0);
  REQUIRE(cuscope::detail::subscriber_refused());
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == kPause);
  const std::vector<std::string> notes = cuscope::snapshot().notes;
  CHECK(std::count(notes.begin(), notes.end(),
                   "CUPTI is paused, not detached, after the last step window: another tool holds CUPTI's "
                   "subscriber, and detaching would detach it too") == 1);
}

TEST_CASE("the activity status trades its pause for the detach's stage, and stays on for tracing_on()",
          "[tracing][detach]") {
  const std::string paused = "on, synchronizes seen by callbacks, paused outside the step window";
  const auto status_at = [&](DetachStage stage) {
    cuscope::detail::set_detach_stage(stage);
    return cuscope::detail::with_detach_stage(paused);
  };
  CHECK(status_at(DetachStage::pending) ==
        "on, synchronizes seen by callbacks, paused after the last step window; CUPTI detaches once the "
        "window's records are in");
  CHECK(status_at(DetachStage::finalizing) ==
        "on, synchronizes seen by callbacks, paused after the last step window; CUPTI detaches now");
  const std::string detached = status_at(DetachStage::detached);
  CHECK(detached == "on, synchronizes seen by callbacks, detached after the last step window");
  cuscope::Report r;
  r.activity_status = detached;
  CHECK(r.tracing_on());                          // as for a paused session
  CHECK(status_at(DetachStage::kept) == paused);  // refused: paused, as it says
  CHECK(status_at(DetachStage::none) == paused);
}

// Recording switched off or on after the last window (set_enabled(), which pauses CUPTI while off)
// leaves the detach alone: no pause or resume of its own while the detach is pending, armed or made,
// the detach's sequence as without the switches, and the status says the detach, not a pause that
// recording on would end (CUPTI is detached, or stays paused for good).
TEST_CASE(
    "recording switched around the last window's detach makes no CUPTI call, and the status says the detach",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();  // the window's one step ends: paused, the detach pending
  cuscope::set_enabled(false);
  cuscope::set_enabled(true);
  cuscope::set_enabled(false);
  if (cuscope::detail::detach_stage() == DetachStage::pending)
    CHECK(cuscope::snapshot().activity_status.ends_with(
        ", paused after the last step window; CUPTI detaches once the window's records are in"));
  REQUIRE(reaches(DetachStage::armed));
  cuscope::set_enabled(true);
  cuscope::set_enabled(false);
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused after the last step window; CUPTI detaches now"));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::detached);
  cuscope::set_enabled(true);
  cuscope::set_enabled(false);
  const std::vector<std::string> log = logged();
  CHECK(without_normal_flushes({log.begin(), std::find(log.begin(), log.end(), "MEMCPY off") + 1}) == kPause);
  CHECK(after(log, "MEMCPY off") == kDetach);
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached after the last step window"));
}

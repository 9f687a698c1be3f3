// Steps, scopes and shutdown() from many threads at once (issue 26, point 1): each step is one
// whole transition, none follows shutdown(), and the report shutdown() built is the report for
// good. Tagged [threads]: the TSan run (ctest --preset tsan) runs them too.
//
// Never: leave a thread running into the next test's session.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <thread>
#include <vector>

#include "producers/scope_state.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

constexpr int kSteppers = 4;

std::uint32_t flags_now() { return cuscope::detail::g_flags.load(std::memory_order_relaxed); }

}  // namespace

TEST_CASE("steps racing shutdown() stop at it: the flags stay cleared and the steps final",
          "[threads][session]") {
  // Every step is inside the window (the default: no wait, no warm-up, no end), so every step
  // sets the recording flags: one that lands after shutdown() cleared them turns recording on again.
  for (int round = 0; round < 5; ++round) {
    cuscope_test::Session session;
    REQUIRE(flags_now() != 0);
    std::atomic<bool> stop{false};
    std::vector<std::thread> steppers;
    for (int t = 0; t < kSteppers; ++t) {
      steppers.emplace_back([&stop] {
        while (!stop.load(std::memory_order_relaxed)) cuscope::step();
      });
    }
    while (cuscope::detail::session().steps.load(std::memory_order_relaxed) < 200) std::this_thread::yield();
    cuscope::shutdown();
    const cuscope::Report at_shutdown = cuscope::snapshot();
    for (int i = 0; i < 1000; ++i) cuscope::step();  // the steppers go on beside these
    stop.store(true, std::memory_order_relaxed);
    for (std::thread& t : steppers) t.join();
    CHECK(flags_now() == 0);
    CHECK_FALSE(cuscope::enabled());
    const cuscope::Report after = cuscope::snapshot();
    CHECK(at_shutdown.steps >= 200);
    CHECK(after.steps == at_shutdown.steps);
    CHECK(after.recorded_steps == at_shutdown.recorded_steps);
    CHECK(cuscope::detail::session().steps.load(std::memory_order_relaxed) == at_shutdown.steps);
  }
}

TEST_CASE("steps from many threads are counted exactly and the window closes once", "[threads][session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 10;
  o.warmup_steps = 5;
  o.active_steps = 100;
  cuscope_test::Session session(o);
  constexpr int kStepsEach = 1000;
  std::vector<std::thread> steppers;
  for (int t = 0; t < kSteppers; ++t) {
    steppers.emplace_back([] {
      for (int i = 0; i < kStepsEach; ++i) cuscope::step();
    });
  }
  for (std::thread& t : steppers) t.join();
  CHECK(flags_now() == 0);  // the window is over: the last transition left it closed
  { CUSCOPE_SCOPE("after_window"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == std::uint64_t{kSteppers} * kStepsEach);
  CHECK(r.recorded_steps == 100);
  CHECK(r.find("after_window") == nullptr);
}

TEST_CASE("a scope open at shutdown() stays open in the report, and later scopes change nothing",
          "[threads][session]") {
  cuscope_test::Session session;
  { CUSCOPE_SCOPE("closed_before"); }
  cuscope::push("open_at_shutdown");
  std::atomic<bool> shut{false};
  std::thread late([&shut] {
    while (!shut.load(std::memory_order_acquire)) std::this_thread::yield();
    for (int i = 0; i < 100; ++i) {
      CUSCOPE_SCOPE("closed_before");  // a path the report has: still no new call in it
      cuscope::step();
    }
  });
  cuscope::shutdown();
  shut.store(true, std::memory_order_release);
  late.join();
  cuscope::pop();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("closed_before") != nullptr);
  CHECK(r.find("closed_before")->calls == 1);
  REQUIRE(r.find("open_at_shutdown") != nullptr);
  CHECK(r.find("open_at_shutdown")->calls == 0);
  CHECK(r.diagnostics.open_scopes == 1);
  CHECK(r.steps == 0);
}

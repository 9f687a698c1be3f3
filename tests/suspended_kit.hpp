// tests/suspended_kit.hpp — what the suspended frames' cases share (test_suspended_frames.cpp,
// test_suspended_threads.cpp): a window every other step, sleeps outside it measured, and the bound
// a suspended scope's host time must stay under.
// Never here: a check that a step took a given time (a slow machine makes the sleeps longer, never
// shorter).
#pragma once

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <thread>

#include "session_fixture.hpp"

namespace suspended_kit {

using Clock = std::chrono::steady_clock;

constexpr std::uint64_t kSleepNs = 80'000'000;
constexpr std::uint64_t kClockSlackNs = 1'000'000;  // cuscope's clock against steady_clock's

inline std::uint64_t ns_since(Clock::time_point t) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - t).count());
}

// Sleeps kSleepNs outside the window: the nanoseconds it took, added to `*slept`.
inline void sleep_outside(std::uint64_t* slept) {
  const Clock::time_point t = Clock::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs));
  *slept += ns_since(t);
}

// Wait 1, active 1, without end: steps 1, 3, 5, ... recorded.
inline cuscope::Options every_other(cuscope::Options o = cuscope_test::quiet_options()) {
  o.wait_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  return o;
}

inline std::uint64_t host_ns(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* s = r.find(path);
  REQUIRE(s != nullptr);
  return s->host.total_ns;
}

// Every scope ended, in order.
inline void check_all_closed(const cuscope::Report& r) {
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

// What a case measured around its scope: from before its entry to after its exit, and the sleeps
// outside the window in it. A scope suspended across them counts at most `elapsed - slept` (a slow
// machine makes both longer, the bound no looser).
struct Measured {
  std::uint64_t elapsed = 0, slept = 0;
  [[nodiscard]] std::uint64_t recorded_bound() const { return elapsed - slept + kClockSlackNs; }
};

}  // namespace suspended_kit

// The scope clock: the cycle counter calibrated against CLOCK_MONOTONIC, driven here by fake
// clocks (a counter at a chosen rate, a reference that NTP slews), and the real one's fallback.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <thread>

#include "producers/clock.hpp"
#include "session_fixture.hpp"

using cuscope::detail::ClockCalibrator;
using cuscope::detail::ClockSegment;

namespace {

// A machine whose counter runs at `ghz` (ticks per ns), read together with a reference clock
// whose rate differs from true time by `ppm` (a slew), with reads `jitter` ns apart at most.
struct FakeMachine {
  double ghz = 2.9;
  double ppm = 0;
  double true_ns = 1e12;  // an arbitrary start
  double ref_ns = 5e11;
  std::uint64_t ticks() const { return static_cast<std::uint64_t>(true_ns * ghz); }
  std::uint64_t ref() const { return static_cast<std::uint64_t>(ref_ns); }
  void advance(double ns) {
    true_ns += ns;
    ref_ns += ns * (1 + ppm * 1e-6);
  }
};

}  // namespace

TEST_CASE("the first segment waits for its baseline, then reads the reference's nanoseconds", "[clock]") {
  FakeMachine m;
  ClockCalibrator c;
  CHECK_FALSE(c.sample(m.ticks(), m.ref()));
  m.advance(50e6);
  CHECK_FALSE(c.sample(m.ticks(), m.ref()));  // 50 ms: too short a baseline
  m.advance(60e6);
  REQUIRE(c.sample(m.ticks(), m.ref()));
  REQUIRE(c.calibrated());
  const ClockSegment seg = c.segment();
  CHECK(seg.to_ns(m.ticks()) == m.ref());
  m.advance(1e9);  // a second later, on the first segment alone
  const auto error = static_cast<std::int64_t>(seg.to_ns(m.ticks()) - m.ref());
  CHECK(std::llabs(error) <= 2);
}

namespace {

// Runs `seconds` of recalibration once a second, reading the clock ten times between samples.
// `ppm_at(second)` is the reference's slew at that second; reads of the reference are off by a
// few tens of ns (the sample's own jitter). Returns the worst |clock - reference| seen in
// [from, seconds) and checks that time never goes back.
std::int64_t run(FakeMachine& m, ClockCalibrator& c, int seconds, int from, double (*ppm_at)(int)) {
  std::int64_t worst = 0;
  std::uint64_t previous = 0;
  for (int second = 0; second < seconds; ++second) {
    m.ppm = ppm_at(second);
    const ClockSegment seg = c.segment();
    for (int part = 0; part < 10; ++part) {
      m.advance(100e6);
      const std::uint64_t now = seg.to_ns(m.ticks());
      CHECK(now >= previous);
      previous = now;
      if (second >= from)
        worst = std::max<std::int64_t>(worst, std::llabs(static_cast<std::int64_t>(now - m.ref())));
    }
    const std::uint64_t jitter = static_cast<std::uint64_t>((second * 7919) % 61);  // 0..60 ns
    REQUIRE(c.sample(m.ticks(), m.ref() + jitter));
    CHECK(c.segment().to_ns(m.ticks()) == seg.to_ns(m.ticks()));  // no step at the new segment
  }
  return worst;
}

ClockCalibrator calibrated(FakeMachine& m) {
  ClockCalibrator c;
  c.sample(m.ticks(), m.ref());
  m.advance(100e6);
  REQUIRE(c.sample(m.ticks(), m.ref()));
  return c;
}

}  // namespace

TEST_CASE("recalibration keeps the clock within a microsecond of a slewing reference for an hour",
          "[clock]") {
  // The counter's nominal rate is 40 ppm off, and NTP slews the reference up to 50 ppm, changing
  // its correction gradually (as its PLL does) over the hour.
  FakeMachine m;
  m.ghz = 2.9 * (1 + 40e-6);
  ClockCalibrator c = calibrated(m);
  const std::int64_t worst = run(m, c, 3600, 0, [](int s) { return 50.0 * std::sin(s / 600.0); });
  INFO("worst offset from the reference: " << worst << " ns");
  CHECK(worst < 1000);
}

TEST_CASE("an abrupt slew change is steered out within seconds, never accumulated", "[clock]") {
  FakeMachine m;
  ClockCalibrator c = calibrated(m);
  // 500 ppm (adjtime's maximum) switched on at once after a minute: a transient of at most
  // 500 us for the second it lasts, then the slope follows.
  const std::int64_t settled =
      run(m, c, 3600, 65, [](int s) { return s < 60 ? 0.0 : (s < 1800 ? 500.0 : -500.0); });
  INFO("worst offset from the reference, after the first seconds: " << settled << " ns");
  // The flip at 1800 s, from +500 to -500 ppm, is 1000 ppm for the second before the next sample.
  CHECK(settled < 1'001'000);
  const std::int64_t end = std::llabs(static_cast<std::int64_t>(c.segment().to_ns(m.ticks()) - m.ref()));
  CHECK(end < 1000);  // an hour later, nothing accumulated
}

TEST_CASE("a counter far off the reference is dropped and calibrated afresh", "[clock]") {
  FakeMachine m;
  ClockCalibrator c;
  c.sample(m.ticks(), m.ref());
  m.advance(100e6);
  REQUIRE(c.sample(m.ticks(), m.ref()));
  m.advance(1e9);
  m.ref_ns += 50e6;  // the reference moved 50 ms against the counter (the machine slept, say)
  REQUIRE(c.sample(m.ticks(), m.ref()));
  CHECK_FALSE(c.calibrated());  // back to the reference until a new baseline is taken
  CHECK(c.last_offset_ns() == 0);
  m.advance(100e6);
  REQUIRE(c.sample(m.ticks(), m.ref()));
  CHECK(c.segment().to_ns(m.ticks()) == m.ref());
}

TEST_CASE("samples that show no time passing change nothing", "[clock]") {
  FakeMachine m;
  ClockCalibrator c;
  c.sample(m.ticks(), m.ref());
  CHECK_FALSE(c.sample(m.ticks(), m.ref()));
  CHECK_FALSE(c.sample(m.ticks() - 5, m.ref() + 10));
  CHECK_FALSE(c.calibrated());
}

TEST_CASE("a segment maps counter values just before its start without wrapping", "[clock]") {
  const ClockSegment seg{1'000'000, 5'000'000, std::uint64_t{1} << 31};  // 0.5 ns per tick
  CHECK(seg.to_ns(1'000'000) == 5'000'000);
  CHECK(seg.to_ns(1'000'100) == 5'000'050);
  CHECK(seg.to_ns(999'900) == 4'999'950);  // another core's counter, a hair behind
}

namespace {

// The clock a session names once the cycle counter is calibrated.
bool counter_clock(const std::string& clock) {
  return clock.rfind("TSC, kept on the CLOCK_MONOTONIC basis (last offset ", 0) == 0 ||
         clock.rfind("cntvct_el0, kept on the CLOCK_MONOTONIC basis (last offset ", 0) == 0;
}

}  // namespace

TEST_CASE("the session reports which clock its times come from", "[clock]") {
  cuscope_test::Session session;
  std::string clock = cuscope::snapshot().clock;
  std::string why_not;
  if (cuscope::detail::invariant_counter(&why_not)) {
    // Calibrating only until the collector's first baseline (100 ms): given 5 s on a loaded machine.
    const bool calibrating = clock == "CLOCK_MONOTONIC (calibrating the TSC)" ||
                             clock == "CLOCK_MONOTONIC (calibrating the cntvct_el0)";
    CHECK((calibrating || counter_clock(clock)));
    for (int i = 0; i < 500 && !counter_clock(clock); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      clock = cuscope::snapshot().clock;
    }
    INFO("the clock after up to 5 s: " << clock);
    CHECK(counter_clock(clock));
  } else {
    CHECK(clock == "CLOCK_MONOTONIC (" + why_not + ")");
  }
  const std::uint64_t a = cuscope::detail::now_ns();
  const std::uint64_t m = cuscope::detail::monotonic_ns();
  const std::uint64_t b = cuscope::detail::now_ns();
  CHECK(a <= b);
  CHECK(std::llabs(static_cast<std::int64_t>(m - a)) < 1'000'000);  // same basis, whichever clock
}

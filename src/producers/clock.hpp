// producers/clock.hpp — the one clock of a session: host scopes, CUDA events and (registered as
// CUPTI's timestamp callback) GPU activity records are all in these nanoseconds, on the
// CLOCK_MONOTONIC basis, so host and GPU intervals compare directly.
//
// Hot path: where the CPU has an invariant time-stamp counter (x86 constant_tsc + nonstop_tsc, and
// the kernel trusts it as its clocksource; the generic timer on ARM), now_ns() reads the counter
// and maps it to nanoseconds with one multiply: about 10 ns where clock_gettime costs 20-25 ns.
// The map is a linear segment calibrated against CLOCK_MONOTONIC off the hot path (the session's
// collector thread, about once a second), each new segment starting where the last one ended so
// that time never steps, and steering the slope so the difference from CLOCK_MONOTONIC (NTP slew,
// rate error) stays well under a microsecond. Until the first calibration (about 100 ms after
// start), and where there is no invariant counter, now_ns() is clock_gettime(CLOCK_MONOTONIC).
#pragma once

#include <atomic>
#include <cstdint>
#include <ctime>
#include <string>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

namespace cuscope::inline v0::detail {

inline std::uint64_t monotonic_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

/// The CPU's cycle counter (rdtsc; cntvct_el0 on ARM); 0 where there is none.
inline std::uint64_t cycle_counter() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#elif defined(__aarch64__)
  std::uint64_t v = 0;
  asm volatile("mrs %0, cntvct_el0" : "=r"(v));
  return v;
#else
  return 0;
#endif
}

__extension__ using int128 = __int128;  // GCC and Clang on 64-bit targets
__extension__ using uint128 = unsigned __int128;

/// ns = ns0 + (ticks - tick0) * mult / 2^32, for ticks from tick0 on (and a little before).
struct ClockSegment {
  std::uint64_t tick0 = 0;
  std::uint64_t ns0 = 0;
  std::uint64_t mult = 0;  ///< nanoseconds per tick, 32.32 fixed point

  [[nodiscard]] std::uint64_t to_ns(std::uint64_t ticks) const noexcept {
    // Both factors fit in 64 signed bits (mult is far below 2^63: under 2^31 ns per tick), so
    // the product is one signed 64 x 64 -> 128 multiply.
    const auto delta = static_cast<std::int64_t>(ticks - tick0);
    const int128 product = static_cast<int128>(delta) * static_cast<std::int64_t>(mult);
    return ns0 + static_cast<std::uint64_t>(static_cast<std::int64_t>(product >> 32));
  }
};

/// The segment in use, or nullptr for CLOCK_MONOTONIC (constant-initialized: usable before main).
extern std::atomic<const ClockSegment*> g_clock_segment;

inline std::uint64_t now_ns() noexcept {
  const ClockSegment* s = g_clock_segment.load(std::memory_order_acquire);
  if (s == nullptr) return monotonic_ns();
  return s->to_ns(cycle_counter());
}

/// Calibrates a counter against a reference clock and hands out segments. A pure state machine
/// over (counter, reference) samples, so that tests drive it with fake clocks.
class ClockCalibrator {
 public:
  /// The first segment waits for this much reference time after the first sample, so that its
  /// slope is known to well under a part per million.
  static constexpr std::uint64_t kFirstBaselineNs = 100'000'000;
  /// The slope is steered to take out the measured offset over about this long.
  static constexpr std::uint64_t kSteerNs = 1'000'000'000;

  /// Feeds one sample: `ticks` of the counter read at reference time `ref_ns`. Returns true when
  /// a new segment is ready (segment()), taking over at `ticks`.
  bool sample(std::uint64_t ticks, std::uint64_t ref_ns) noexcept;
  [[nodiscard]] const ClockSegment& segment() const noexcept { return segment_; }
  [[nodiscard]] bool calibrated() const noexcept { return segment_.mult != 0; }
  /// The last measured difference, segment time minus reference time, in ns.
  [[nodiscard]] std::int64_t last_offset_ns() const noexcept { return last_offset_; }

 private:
  std::uint64_t first_ticks_ = 0, first_ns_ = 0;
  std::uint64_t prev_ticks_ = 0, prev_ns_ = 0;
  bool have_first_ = false;
  ClockSegment segment_;
  std::int64_t last_offset_ = 0;
};

/// Whether this machine has a counter cuscope trusts for now_ns(), and why not when it has none
/// ("" when it has). x86: CPUID's invariant-TSC bit and, where Linux says, "tsc" as the kernel's
/// clocksource. ARM: the generic timer.
bool invariant_counter(std::string* why_not) noexcept;

/// Starts calibrating (the first call takes the first sample), where the machine has a counter
/// cuscope trusts (else the clock stays CLOCK_MONOTONIC, and says why). Safe to call again.
void start_clock() noexcept;
/// Takes a sample and publishes a new segment when one is due (the collector thread, ~1/s).
void recalibrate_clock() noexcept;
/// What now_ns() reads, for the report: "tsc" (or "cntvct") with how it is kept on the
/// CLOCK_MONOTONIC basis, or "CLOCK_MONOTONIC" with why.
std::string clock_description();

}  // namespace cuscope::inline v0::detail

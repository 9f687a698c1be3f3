// producers/clock.cpp — calibrating the cycle counter against CLOCK_MONOTONIC (see clock.hpp).
// Never on the hot path: start_clock() runs at session start, recalibrate_clock() on the
// collector thread.
#include "producers/clock.hpp"

#include <fmt/format.h>

#include <fstream>
#include <mutex>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace cuscope::inline v0::detail {

std::atomic<const ClockSegment*> g_clock_segment{nullptr};

namespace {

// A published segment is read by other threads for a few nanoseconds after they load its
// pointer; a ring this long is rewritten only after that many recalibrations (minutes).
constexpr std::size_t kPublished = 256;
constexpr std::uint64_t kResampleNs = 1'000'000'000;
constexpr std::int64_t kMaxOffsetNs = 10'000'000;  // beyond: the counter is not to be trusted

struct ClockState {
  std::mutex mutex;
  ClockCalibrator calibrator;  // guarded by mutex
  ClockSegment published[kPublished];
  std::size_t next = 0;              // guarded by mutex
  bool started = false;              // guarded by mutex
  std::uint64_t last_sample_ns = 0;  // guarded by mutex
  std::string why_not;               // guarded by mutex: why CLOCK_MONOTONIC is in use
};

ClockState& clock_state() {
  static ClockState* s = new ClockState();  // leaked: CUPTI may read the clock until the end
  return *s;
}

std::uint64_t fixed_ns_per_tick(std::uint64_t ns, std::uint64_t ticks) {
  return static_cast<std::uint64_t>((static_cast<uint128>(ns) << 32) / ticks);
}

// A (counter, reference) pair read as close together as this thread can: the counter is read on
// both sides of the reference and the tightest of three tries is kept.
void take_sample(std::uint64_t* ticks, std::uint64_t* ref_ns) {
  std::uint64_t best = UINT64_MAX;
  for (int i = 0; i < 3; ++i) {
    const std::uint64_t before = cycle_counter();
    const std::uint64_t ref = monotonic_ns();
    const std::uint64_t after = cycle_counter();
    if (after - before < best) {
      best = after - before;
      *ticks = before + (after - before) / 2;
      *ref_ns = ref;
    }
  }
}

void publish(ClockState& s, const ClockSegment* segment) {
  if (segment == nullptr) {
    g_clock_segment.store(nullptr, std::memory_order_release);
    return;
  }
  ClockSegment& slot = s.published[s.next++ % kPublished];
  slot = *segment;
  g_clock_segment.store(&slot, std::memory_order_release);
}

}  // namespace

bool ClockCalibrator::sample(std::uint64_t ticks, std::uint64_t ref_ns) noexcept {
  if (!have_first_) {
    first_ticks_ = ticks;
    first_ns_ = ref_ns;
    prev_ticks_ = ticks;
    prev_ns_ = ref_ns;
    have_first_ = true;
    return false;
  }
  if (ticks <= prev_ticks_ || ref_ns <= prev_ns_) return false;  // no time passed, or a counter went back
  if (!calibrated()) {
    if (ref_ns - first_ns_ < kFirstBaselineNs) return false;
    segment_ = {ticks, ref_ns, fixed_ns_per_tick(ref_ns - first_ns_, ticks - first_ticks_)};
    last_offset_ = 0;
    prev_ticks_ = ticks;
    prev_ns_ = ref_ns;
    return true;
  }
  const std::uint64_t ours = segment_.to_ns(ticks);
  const auto offset = static_cast<std::int64_t>(ours - ref_ns);
  last_offset_ = offset;
  if (offset > kMaxOffsetNs || offset < -kMaxOffsetNs) {
    // The counter and the reference disagree by far more than rate error can explain (a VM
    // migrated, the machine slept): start over from this sample.
    *this = ClockCalibrator{};
    sample(ticks, ref_ns);
    return true;  // segment() is empty: fall back to the reference until calibrated again
  }
  // The rate over the last interval (tracks NTP's slew), steered to take the offset out over
  // the next kSteerNs; the new segment starts where the old one is now, so time never steps.
  const std::uint64_t rate = fixed_ns_per_tick(ref_ns - prev_ns_, ticks - prev_ticks_);
  const auto steered =
      static_cast<int128>(rate) * (static_cast<int128>(kSteerNs) - offset) / static_cast<int128>(kSteerNs);
  segment_ = {ticks, ours, static_cast<std::uint64_t>(steered)};
  prev_ticks_ = ticks;
  prev_ns_ = ref_ns;
  return true;
}

bool invariant_counter(std::string* why_not) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (__get_cpuid(0x80000007, &a, &b, &c, &d) == 0 || (d & (1u << 8)) == 0) {
    *why_not = "the CPU has no invariant TSC";
    return false;
  }
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  if (source >> name && name != "tsc") {
    *why_not = fmt::format("the kernel does not use the TSC as its clocksource ({})", name);
    return false;
  }
  return true;
#elif defined(__aarch64__)
  return true;  // the generic timer is constant-rate by the architecture
#else
  *why_not = "no cycle counter cuscope knows on this CPU";
  return false;
#endif
}

void start_clock() noexcept {
  try {
    ClockState& s = clock_state();
    std::lock_guard lock(s.mutex);
    if (s.started) return;
    s.started = true;
    if (!invariant_counter(&s.why_not)) return;
    std::uint64_t ticks = 0, ref = 0;
    take_sample(&ticks, &ref);
    s.calibrator.sample(ticks, ref);
    s.last_sample_ns = ref;
  } catch (...) {  // the clock stays CLOCK_MONOTONIC
  }
}

void recalibrate_clock() noexcept {
  ClockState& s = clock_state();
  std::lock_guard lock(s.mutex);
  if (!s.started || !s.why_not.empty()) return;
  const std::uint64_t due = s.calibrator.calibrated() ? kResampleNs : ClockCalibrator::kFirstBaselineNs;
  if (monotonic_ns() - s.last_sample_ns < due) return;
  std::uint64_t ticks = 0, ref = 0;
  take_sample(&ticks, &ref);
  s.last_sample_ns = ref;
  if (!s.calibrator.sample(ticks, ref)) return;
  publish(s, s.calibrator.calibrated() ? &s.calibrator.segment() : nullptr);
}

std::string clock_description() {
  ClockState& s = clock_state();
  std::lock_guard lock(s.mutex);
#if defined(__aarch64__)
  constexpr const char* kCounter = "cntvct_el0";
#else
  constexpr const char* kCounter = "TSC";
#endif
  if (!s.why_not.empty()) return fmt::format("CLOCK_MONOTONIC ({})", s.why_not);
  if (!s.started) return "CLOCK_MONOTONIC (session not started)";
  if (g_clock_segment.load(std::memory_order_acquire) == nullptr)
    return fmt::format("CLOCK_MONOTONIC (calibrating the {})", kCounter);
  return fmt::format("{}, kept on the CLOCK_MONOTONIC basis (last offset {} ns)", kCounter,
                     s.calibrator.last_offset_ns());
}

}  // namespace cuscope::inline v0::detail

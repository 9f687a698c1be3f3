// producers/clock.hpp — the one clock of a session: host scopes, CUDA events and (registered as
// CUPTI's timestamp callback) GPU activity records are all in these nanoseconds, so host and
// GPU intervals compare directly. CLOCK_MONOTONIC through the vDSO: no syscall, ~15-20 ns.
#pragma once

#include <cstdint>
#include <ctime>

namespace cuscope::inline v0::detail {

inline std::uint64_t now_ns() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<std::uint64_t>(ts.tv_nsec);
}

}  // namespace cuscope::inline v0::detail

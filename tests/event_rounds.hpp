// The nested scopes both event clocks are checked on (tests/test_gpu_events.cpp with CUDA's,
// tests/test_event_timestamps.cpp with CUPTI's): three rounds of an outer scope on device 0 around
// an inner one on device 1's stream 3, timed by `events` on fake CUDA, and the times they must give.
#pragma once

#include <catch2/catch.hpp>
#include <cstdint>

#include "fake_cuda.hpp"
#include "model/range_tree.hpp"
#include "producers/gpu_events.hpp"

namespace cuscope_test {

// Each round: outer opens, 125 µs, inner opens, 2.5 ms × the round's number, inner closes, 7.75 ms,
// outer closes.
inline void nested_rounds(FakeCuda& cuda, cuscope::detail::GpuEvents& events, cuscope::model::Node& outer,
                          cuscope::model::Node& inner) {
  for (int round = 0; round < 3; ++round) {
    REQUIRE(events.begin(1, FakeCuda::stream(0)));
    cuda.advance_ns(125'000);
    REQUIRE(events.begin(2, FakeCuda::stream(1, 3)));
    cuda.advance_ns(2'500'000 * static_cast<std::uint64_t>(round + 1));
    events.end(2, &inner);
    cuda.advance_ns(7'750'000);
    events.end(1, &outer);
  }
}

// What nested_rounds() must give, exactly, once resolved.
inline void check_nested_rounds(const cuscope::model::Node& outer, const cuscope::model::Node& inner) {
  CHECK(inner.gpu.count.get() == 3);
  CHECK(inner.gpu.min_ns.get() == 2'500'000);
  CHECK(inner.gpu.max_ns.get() == 7'500'000);
  CHECK(inner.gpu.total_ns.get() == 15'000'000);
  CHECK(outer.gpu.count.get() == 3);
  CHECK(outer.gpu.min_ns.get() == 10'375'000);
  CHECK(outer.gpu.max_ns.get() == 15'375'000);
  CHECK(outer.gpu.total_ns.get() == 3 * (125'000 + 7'750'000) + 15'000'000);
}

}  // namespace cuscope_test

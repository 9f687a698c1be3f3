// tests/findings_kit.hpp — what the findings tests share: a range of 10 calls at a depth, and its
// kernels' numbers. Never a rule's logic: each test states its thresholds itself.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>

namespace cuscope_test {

inline cuscope::RangeStats range_at(int depth = 2) {
  cuscope::RangeStats r;
  r.name = "r";
  r.path = depth == 1 ? "r" : "step/r";
  r.depth = depth;
  r.calls = 10;
  r.host = {10, 10'000'000, 1'000'000, 1'000'000};
  return r;
}

inline void kernels(cuscope::ActivityStats& a, std::uint64_t calls, std::uint64_t mean_ns, std::uint64_t busy,
                    std::uint64_t span) {
  a.kernel_calls = calls;
  a.kernel_ns = calls * mean_ns;
  a.gpu_busy_ns = busy;
  a.gpu_span_ns = span;
}

}  // namespace cuscope_test

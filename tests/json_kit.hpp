// What the JSON view's tests share (test_json_writer.cpp, test_json_read_back.cpp,
// test_report_lookups.cpp): a small report built by hand, its JSON parsed back with nlohmann::json,
// and the largest uint64. Never a test case here; never a session.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <limits>
#include <nlohmann/json.hpp>

#include "report_builder.hpp"

namespace cuscope_test::json_kit {

using cuscope::format_json;
using cuscope::KernelStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope_test::make_range;
using nlohmann::json;

inline constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

// root ─┬─ step ─┬─ forward
//       │        └─ mlp
//       └─ (unscoped)
inline Report make_report() {
  Report r;
  r.device = "NVIDIA H100 80GB HBM3 (sm_90)";
  r.gpu_timing = "no CUDA driver (cudaGetDeviceCount: error 35)";
  r.activity_status = "on";
  r.notes = {"first note", "second note"};
  r.steps = 12;
  r.recorded_steps = 10;
  r.wall_ns = 2'500'000'000;

  RangeStats root = make_range("", "", 0, 0);
  root.children = {1, 4};
  RangeStats step = make_range("step", "step", 0, 1);
  step.children = {2, 3};
  step.calls = 10;
  step.recursive_calls = 2;
  step.threads = 3;
  step.host = {10, 10, 1, 2, 7};
  step.host_self_ns = 4;
  RangeStats forward = make_range("forward", "step/forward", 1, 2);
  forward.calls = 10;
  forward.self.kernel_calls = 2;
  forward.self.gpu_busy_ns = 750;
  forward.self.gpu_span_ns = 1'000;
  KernelStats gemm;
  gemm.name = "gemm_kernel<float>";
  gemm.duration = {20, 1'500, 50, 100};
  gemm.grid = {128, 2, 1};
  gemm.block = {256, 1, 1};
  gemm.registers_per_thread = 64;
  gemm.static_shared_bytes = 4'096;
  gemm.dynamic_shared_bytes = 49'152;
  gemm.device = 1;
  KernelStats softmax;
  softmax.name = "softmax_kernel";
  softmax.duration = {10, 300, 30, 30};
  forward.kernels = {gemm, softmax};
  RangeStats mlp = make_range("mlp", "step/mlp", 1, 2);
  mlp.calls = 20;
  RangeStats unscoped = make_range("(unscoped)", "(unscoped)", 0, 1);
  unscoped.self.kernel_calls = 5;
  r.ranges = {root, step, forward, mlp, unscoped};
  return r;
}

inline json parsed(const Report& r) { return json::parse(format_json(r)); }

}  // namespace cuscope_test::json_kit

// What the table view's tests share (test_table_rows.cpp, test_table_header.cpp,
// test_table_sections.cpp): a small report built by hand (make_report: the golden text's), two
// sibling ranges, and the lines of a table's text. Never a test case here; never a session.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "report_builder.hpp"

namespace cuscope_test::table_kit {

using cuscope::ActivityStats;
using cuscope::KernelStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope_test::make_range;

inline constexpr std::uint64_t kMs = 1'000'000;

inline void set_host(RangeStats& r, std::uint64_t calls, std::uint64_t total_ms, std::uint64_t self_ms) {
  r.calls = calls;
  r.threads = 1;
  r.host = {calls, total_ms * kMs, total_ms * kMs / calls / 2, total_ms * kMs / calls * 2};
  r.host_self_ns = self_ms * kMs;
}

inline ActivityStats kernels_activity(std::uint64_t calls, std::uint64_t kernel_ns, std::uint64_t busy_ns,
                                      std::uint64_t span_ns) {
  ActivityStats a;
  a.kernel_calls = calls;
  a.kernel_ns = kernel_ns;
  a.gpu_busy_ns = busy_ns;
  a.gpu_span_ns = span_ns;
  return a;
}

inline KernelStats kernel(std::string name, std::uint64_t calls, std::uint64_t total_ns, std::uint32_t grid_x,
                          std::uint32_t block_x) {
  KernelStats k;
  k.name = std::move(name);
  k.duration = {calls, total_ns, total_ns / calls, total_ns / calls};
  k.grid = {grid_x, 1, 1};
  k.block = {block_x, 1, 1};
  return k;
}

// root ─┬─ step ─┬─ forward ── attention
//       │        ├─ mlp
//       │        └─ warmup (no completed call)
//       └─ (unscoped)
inline Report make_report() {
  Report r;
  r.device = "NVIDIA H100 80GB HBM3 (sm_90)";
  r.gpu_timing = "no CUDA driver (cudaGetDeviceCount: error 35)";
  r.activity_status = "on";
  r.notes = {"CUSCOPE_TOP_KERNELS=abc ignored: not a number"};
  r.steps = 12;
  r.recorded_steps = 10;
  r.wall_ns = 2'500 * kMs;
  r.diagnostics.dropped_records = 3;
  r.diagnostics.open_scopes = 2;
  r.diagnostics.unbalanced_ends = 1;

  RangeStats root = make_range("", "", 0, 0);
  root.children = {1, 5};
  root.total = kernels_activity(65, 882'400'000, 852'400'000, 1'103'200'000);

  RangeStats step = make_range("step", "step", 0, 1);
  step.children = {2, 3, 4};
  set_host(step, 10, 1'200, 100);
  step.self.memcpy[0] = {10, 2u << 20, 200'000};
  step.self.memcpy[1] = {10, 1u << 20, 100'000};
  step.total = kernels_activity(60, 880 * kMs, 850 * kMs, 1'100 * kMs);
  step.total.memcpy = step.self.memcpy;
  root.total.memcpy = step.self.memcpy;

  RangeStats forward = make_range("forward", "step/forward", 1, 2);
  forward.children = {6};
  set_host(forward, 10, 700, 200);
  forward.self = kernels_activity(30, 180 * kMs, 170 * kMs, 200 * kMs);
  forward.total = kernels_activity(40, 580 * kMs, 550 * kMs, 690 * kMs);
  // Shortest first on purpose: the table must not rely on the report's order.
  forward.kernels = {
      kernel("void softmax_kernel<float, 1024, true>(float const*, float*, int, int, float)", 10, 30 * kMs,
             4096, 1024),
      kernel("gemm_kernel<float>", 20, 150 * kMs, 128, 256),
  };

  RangeStats mlp = make_range("mlp", "step/mlp", 1, 2);
  set_host(mlp, 20, 400, 400);
  mlp.self = kernels_activity(20, 300 * kMs, 300 * kMs, 360 * kMs);
  mlp.total = mlp.self;
  mlp.kernels = {kernel("gemm_kernel<float>", 20, 300 * kMs, 256, 256)};

  RangeStats warmup = make_range("warmup", "step/warmup", 1, 2);

  RangeStats unscoped = make_range("(unscoped)", "(unscoped)", 0, 1);
  unscoped.self = kernels_activity(5, 2'400'000, 2'400'000, 3'200'000);
  unscoped.total = unscoped.self;
  unscoped.kernels = {kernel("init_kernel", 5, 2'400'000, 64, 128)};

  RangeStats attention = make_range("attention", "step/forward/attention", 2, 3);
  set_host(attention, 10, 500, 500);
  attention.self = kernels_activity(10, 400 * kMs, 380 * kMs, 475 * kMs);
  attention.total = attention.self;
  attention.kernels = {kernel("flash_attention_kernel", 10, 400 * kMs, 512, 128)};

  r.ranges = {root, step, forward, mlp, warmup, unscoped, attention};
  return r;
}

inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// The header line starting with `prefix`, or "" when there is none.
inline std::string header_line(const std::string& text, std::string_view prefix) {
  for (const std::string& line : lines_of(text)) {
    if (line.empty()) break;
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return {};
}

/// root with two top-level ranges, alpha (first entered) and beta, each with one call.
inline Report two_siblings() {
  Report r;
  r.gpu_timing = "on";
  r.activity_status = "on";
  RangeStats root = make_range("", "", 0, 0);
  root.children = {1, 2};
  RangeStats alpha = make_range("alpha", "alpha", 0, 1);
  set_host(alpha, 1, 10, 10);
  RangeStats beta = make_range("beta", "beta", 0, 1);
  set_host(beta, 1, 10, 10);
  r.ranges = {root, alpha, beta};
  return r;
}

}  // namespace cuscope_test::table_kit

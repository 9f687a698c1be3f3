// Tests of the table view: golden text for a small report, then one behaviour per test.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuscope/report.hpp"
#include "report_builder.hpp"
#include "views/format.hpp"

using cuscope::ActivityStats;
using cuscope::format_table;
using cuscope::KernelStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::SortKey;
using cuscope::TableOptions;
using cuscope_test::make_range;

namespace {

constexpr std::uint64_t kMs = 1'000'000;

void set_host(RangeStats& r, std::uint64_t calls, std::uint64_t total_ms, std::uint64_t self_ms) {
  r.calls = calls;
  r.threads = 1;
  r.host = {calls, total_ms * kMs, total_ms * kMs / calls / 2, total_ms * kMs / calls * 2};
  r.host_self_ns = self_ms * kMs;
}

ActivityStats kernels_activity(std::uint64_t calls, std::uint64_t kernel_ns, std::uint64_t busy_ns,
                               std::uint64_t span_ns) {
  ActivityStats a;
  a.kernel_calls = calls;
  a.kernel_ns = kernel_ns;
  a.gpu_busy_ns = busy_ns;
  a.gpu_span_ns = span_ns;
  return a;
}

KernelStats kernel(std::string name, std::uint64_t calls, std::uint64_t total_ns, std::uint32_t grid_x,
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
Report make_report() {
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

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

/// The range rows of a table, each as its indent and name ("  forward").
std::vector<std::string> range_rows(const std::string& text) {
  std::vector<std::string> rows;
  bool in_table = false;
  for (const std::string& line : lines_of(text)) {
    if (line.rfind("range ", 0) == 0) {
      in_table = true;
      continue;
    }
    const std::size_t first = line.find_first_not_of(' ');
    if (!in_table || first == std::string::npos) continue;
    if (line.compare(first, std::string_view("·").size(), "·") == 0) continue;
    if (line.compare(first, std::string_view("…").size(), "…") == 0) continue;
    rows.push_back(line.substr(0, line.find(' ', first)));
  }
  return rows;
}

/// The lines of a table that list kernels ("· name  calls ...").
std::vector<std::string> kernel_lines(const std::string& text) {
  std::vector<std::string> kernels;
  for (const std::string& line : lines_of(text)) {
    const std::size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line.compare(first, std::string_view("·").size(), "·") == 0) {
      kernels.push_back(line.substr(first));
    }
  }
  return kernels;
}

/// The header line starting with `prefix`, or "" when there is none.
std::string header_line(const std::string& text, std::string_view prefix) {
  for (const std::string& line : lines_of(text)) {
    if (line.empty()) break;
    if (line.rfind(prefix, 0) == 0) return line;
  }
  return {};
}

/// root with two top-level ranges, alpha (first entered) and beta, each with one call.
Report two_siblings() {
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

}  // namespace

TEST_CASE("table matches the golden text for a small report", "[table]") {
  const std::string expected =
      R"golden(cuscope 0.1.0 — device: NVIDIA H100 80GB HBM3 (sm_90) — wall 2.50 s — steps 10/12
GPU timing: off — no CUDA driver (cudaGetDeviceCount: error 35)
note: CUSCOPE_TOP_KERNELS=abc ignored: not a number
lost or off: 3 dropped records, 2 scopes still open, 1 unbalanced end
total: host 1.20 s in top-level ranges — kernel time 882 ms — GPU busy 852 ms

range          calls  host total  host mean  host self  GPU total  kernels  kernel time  GPU busy    memcpy  bound
step              10      1.20 s     120 ms     100 ms          -       60       880 ms     77.3%  3.00 MiB      -
  forward         10      700 ms    70.0 ms     200 ms          -       40       580 ms     79.7%         -      -
    · gemm_kernel<float>                                            calls 20  total  150 ms  mean 7.50 ms  grid 128x1x1 block 256x1x1
    · void softmax_kernel<float, 1024, true>(float const*, float*…  calls 10  total 30.0 ms  mean 3.00 ms  grid 4096x1x1 block 1024x1x1
    attention     10      500 ms    50.0 ms     500 ms          -       10       400 ms     80.0%         -      -
      · flash_attention_kernel  calls 10  total 400 ms  mean 40.0 ms  grid 512x1x1 block 128x1x1
  mlp             20      400 ms    20.0 ms     400 ms          -       20       300 ms     83.3%         -      -
    · gemm_kernel<float>  calls 20  total 300 ms  mean 15.0 ms  grid 256x1x1 block 256x1x1
(unscoped)         0           -          -          -          -        5      2.40 ms     75.0%         -      -
  · init_kernel  calls 5  total 2.40 ms  mean 480 µs  grid 64x1x1 block 128x1x1
)golden";
  const std::string text = format_table(make_report());
  REQUIRE(text == expected);
}

TEST_CASE("table indents children under their parent", "[table]") {
  const std::vector<std::string> expected{"step", "  forward", "    attention", "  mlp", "(unscoped)"};
  REQUIRE(range_rows(format_table(make_report())) == expected);
}

TEST_CASE("table orders siblings by each sort key, largest first", "[table]") {
  struct Case {
    SortKey key;
    void (*make_beta_larger)(RangeStats&);
  };
  const std::vector<Case> cases{
      {SortKey::host_total, [](RangeStats& r) { r.host.total_ns += 1; }},
      {SortKey::host_self, [](RangeStats& r) { r.host_self_ns += 1; }},
      {SortKey::gpu_total,
       [](RangeStats& r) {
         r.gpu = {1, 5, 5, 5};
       }},
      {SortKey::kernel_total, [](RangeStats& r) { r.total = kernels_activity(1, 5, 5, 5); }},
      {SortKey::gpu_busy, [](RangeStats& r) { r.total = kernels_activity(1, 5, 5, 5); }},
      {SortKey::calls, [](RangeStats& r) { set_host(r, 2, 10, 10); }},
  };
  for (const Case& c : cases) {
    INFO("sort " << cuscope::to_string(c.key));
    Report r = two_siblings();
    c.make_beta_larger(r.ranges[2]);
    TableOptions options;
    options.sort = c.key;
    REQUIRE(range_rows(format_table(r, options)) == std::vector<std::string>{"beta", "alpha"});
  }
}

TEST_CASE("table sorts by a key only, not by the others", "[table]") {
  Report r = two_siblings();
  r.ranges[2].host_self_ns = 99 * kMs;  // beta leads on host_self only
  TableOptions options;
  options.sort = SortKey::host_total;
  REQUIRE(range_rows(format_table(r, options)) == std::vector<std::string>{"alpha", "beta"});
  options.sort = SortKey::host_self;
  REQUIRE(range_rows(format_table(r, options)) == std::vector<std::string>{"beta", "alpha"});
}

TEST_CASE("table sorts by name in ascending order", "[table]") {
  Report r = two_siblings();
  r.ranges[1].name = "zeta";
  set_host(r.ranges[1], 9, 90, 90);  // zeta leads every other key
  TableOptions options;
  options.sort = SortKey::name;
  REQUIRE(range_rows(format_table(r, options)) == std::vector<std::string>{"beta", "zeta"});
}

TEST_CASE("table breaks sort ties by name", "[table]") {
  Report r = two_siblings();
  r.ranges[1].name = "zeta";  // entered first, equal on every key
  REQUIRE(range_rows(format_table(r)) == std::vector<std::string>{"beta", "zeta"});
}

TEST_CASE("table cuts rows at max_rows and counts the rest", "[table]") {
  TableOptions options;
  options.max_rows = 2;
  const std::string text = format_table(make_report(), options);
  REQUIRE(range_rows(text) == std::vector<std::string>{"step", "  forward"});
  REQUIRE(lines_of(text).back() == "… 3 more ranges (max_rows=2)");

  options.max_rows = 4;
  REQUIRE(lines_of(format_table(make_report(), options)).back() == "… 1 more range (max_rows=4)");
}

TEST_CASE("table with max_rows 0 or above the row count lists every range without a cut line", "[table]") {
  for (std::size_t max_rows : {std::size_t{0}, std::size_t{5}}) {
    TableOptions options;
    options.max_rows = max_rows;
    const std::string text = format_table(make_report(), options);
    REQUIRE(range_rows(text).size() == 5);
    REQUIRE(text.find("more range") == std::string::npos);
  }
}

TEST_CASE("table with top_kernels 0 lists no kernel lines", "[table]") {
  TableOptions options;
  options.top_kernels = 0;
  const std::string text = format_table(make_report(), options);
  REQUIRE(kernel_lines(text).empty());
  REQUIRE(range_rows(text).size() == 5);
}

TEST_CASE("table lists the top kernels longest first and counts the others", "[table]") {
  TableOptions options;
  options.top_kernels = 1;
  const std::vector<std::string> kernels = kernel_lines(format_table(make_report(), options));
  REQUIRE(kernels.size() == 5);
  REQUIRE(kernels[0].rfind("· gemm_kernel<float>  calls 20  total 150 ms", 0) == 0);
  REQUIRE(kernels[1] == "· … 1 more kernel");
}

TEST_CASE("table truncates long kernel names to 60 characters with an ellipsis", "[table]") {
  const std::vector<std::string> kernels = kernel_lines(format_table(make_report()));
  const std::string& softmax = kernels[1];
  const std::size_t start = std::string_view("· ").size();
  const std::string name = softmax.substr(start, softmax.find("  calls") - start);
  REQUIRE(name == "void softmax_kernel<float, 1024, true>(float const*, float*…");
  REQUIRE(cuscope::views::display_width(name) == 60);
}

TEST_CASE("table shows the kernel launch shape", "[table]") {
  Report r = make_report();
  r.ranges[6].kernels[0].grid = {16, 8, 2};
  r.ranges[6].kernels[0].block = {32, 4, 1};
  const std::string text = format_table(r);
  REQUIRE(text.find(
              "· flash_attention_kernel  calls 10  total 400 ms  mean 40.0 ms  grid 16x8x2 block 32x4x1\n") !=
          std::string::npos);
}

TEST_CASE("table hides ranges with no completed call unless show_zero_calls", "[table]") {
  TableOptions options;
  REQUIRE(range_rows(format_table(make_report(), options)) ==
          std::vector<std::string>{"step", "  forward", "    attention", "  mlp", "(unscoped)"});
  options.show_zero_calls = true;
  REQUIRE(range_rows(format_table(make_report(), options)) ==
          std::vector<std::string>{"step", "  forward", "    attention", "  mlp", "  warmup", "(unscoped)"});
}

TEST_CASE("table keeps a range with no completed call when a child is listed", "[table]") {
  Report r = make_report();
  r.ranges[1].calls = 0;  // step still open, its children completed
  r.ranges[1].host = {};
  const std::string text = format_table(r);
  REQUIRE(range_rows(text) ==
          std::vector<std::string>{"(unscoped)", "step", "  forward", "    attention", "  mlp"});
  REQUIRE(text.find("\nstep               0           -          -          -          -       60") !=
          std::string::npos);
}

TEST_CASE("table lists (unscoped) while it holds GPU work and hides it when idle", "[table]") {
  Report r = make_report();
  RangeStats& unscoped = r.ranges[5];
  unscoped.self = {};
  unscoped.total = {};
  unscoped.kernels.clear();
  REQUIRE(range_rows(format_table(r)) ==
          std::vector<std::string>{"step", "  forward", "    attention", "  mlp"});

  unscoped.total.memcpy[0] = {1, 4096, 1'000};
  REQUIRE(range_rows(format_table(r)).back() == "(unscoped)");
}

TEST_CASE("table shows the CUDA-event time when it was measured and a dash when not", "[table]") {
  Report r = two_siblings();
  r.ranges[1].gpu = {1, 4'560'000, 4'560'000, 4'560'000};
  const std::vector<std::string> lines = lines_of(format_table(r));
  REQUIRE(lines[lines.size() - 2] ==
          "alpha      1     10.0 ms    10.0 ms    10.0 ms    4.56 ms        0            -         -       - "
          "     -");
  REQUIRE(lines.back() ==
          "beta       1     10.0 ms    10.0 ms    10.0 ms          -        0            -         -       - "
          "     -");
}

TEST_CASE("header lists exactly the non-zero diagnostics", "[table]") {
  Report r = two_siblings();
  REQUIRE(header_line(format_table(r), "lost or off:").empty());

  r.diagnostics.zero_timestamp_records = 1;
  r.diagnostics.cross_thread_ends = 4;
  r.diagnostics.overhead_ns = 1'500'000;
  REQUIRE(header_line(format_table(r), "lost or off:") ==
          "lost or off: 1 record with a zero timestamp, 4 scopes ended on another thread, 1.50 ms of CUPTI "
          "overhead");

  REQUIRE(header_line(format_table(make_report()), "lost or off:") ==
          "lost or off: 3 dropped records, 2 scopes still open, 1 unbalanced end");
}

TEST_CASE("header names every diagnostics counter when all are set", "[table]") {
  Report r = two_siblings();
  cuscope::Diagnostics& d = r.diagnostics;
  d = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2'000, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  REQUIRE(
      header_line(format_table(r), "lost or off:") ==
      "lost or off: 2 dropped records, 2 records with a zero timestamp, 2 records not matched to a scope, "
      "2 records of an unknown kind, 2 records outside the window, 2 scopes outside the window, "
      "2 scopes still open, 2 unbalanced ends, "
      "2 scopes ended on another thread, 2 entries past the maximum depth, 2 adjusted names, "
      "2 entries past a full name table, 2 scopes not recorded (thread limit or out of memory), 2 CUDA event failures, "
      "2 CUPTI overhead records, 2 replayed kernels without counters, 2 records still running at exit, "
      "2 CUPTI buffers refused (memory bound), 2 scopes inside a graph capture (no CUDA-event time), "
      "2 counts of inf or NaN refused, 2 trace records dropped (trace truncated), "
      "2 NVTX range ends without an open start, 2 NVTX start/end ranges not tracked (too many open), "
      "2.00 µs of CUPTI overhead");
}

TEST_CASE("header prints each status that is off with its reason", "[table]") {
  Report r = two_siblings();
  std::string text = format_table(r);
  REQUIRE(header_line(text, "GPU timing:").empty());
  REQUIRE(header_line(text, "GPU activity:").empty());

  r.gpu_timing = "no CUDA driver (cudaGetDeviceCount: error 35)";
  r.activity_status = "CUPTI not found (libcupti.so.13)";
  text = format_table(r);
  REQUIRE(header_line(text, "GPU timing:") ==
          "GPU timing: off — no CUDA driver (cudaGetDeviceCount: error 35)");
  REQUIRE(header_line(text, "GPU activity:") == "GPU activity: off — CUPTI not found (libcupti.so.13)");
}

TEST_CASE("header prints a reason once even when a note repeats it", "[table]") {
  Report r = two_siblings();
  r.activity_status = "CUPTI not found";
  r.notes = {"CUPTI not found", "bad option", "bad option"};
  const std::string text = format_table(r);
  const std::string header = text.substr(0, text.find("\n\n"));
  REQUIRE(header ==
          "cuscope 0.1.0 — device:  — wall 0 ns — steps 0/0\n"
          "GPU activity: off — CUPTI not found\n"
          "note: bad option\n"
          "total: host 20.0 ms in top-level ranges");

  r.activity_status = "on";
  r.notes = {"on"};
  REQUIRE(header_line(format_table(r), "note:") == "note: on");
}

TEST_CASE("table of a report without ranges is a header and a line saying so", "[table]") {
  Report r;
  r.device = "no GPU";
  r.gpu_timing = "on";
  r.activity_status = "on";
  REQUIRE(format_table(r) ==
          "cuscope 0.1.0 — device: no GPU — wall 0 ns — steps 0/0\n"
          "total: host 0 ns in top-level ranges — kernel time 0 ns — GPU busy 0 ns\n"
          "\n"
          "(no ranges recorded)\n");
}

TEST_CASE("durations scale from ns to s with three significant digits", "[table]") {
  using cuscope::views::format_duration;
  REQUIRE(format_duration(0) == "0 ns");
  REQUIRE(format_duration(999) == "999 ns");
  REQUIRE(format_duration(1'000) == "1.00 µs");
  REQUIRE(format_duration(12'345) == "12.3 µs");
  REQUIRE(format_duration(999'499) == "999 µs");
  REQUIRE(format_duration(999'500) == "1.00 ms");
  REQUIRE(format_duration(4'560'000) == "4.56 ms");
  REQUIRE(format_duration(1'500'000'000) == "1.50 s");
  REQUIRE(format_duration(4'000'000'000'000) == "4000 s");
}

TEST_CASE("sizes scale from bytes to binary units with three significant digits", "[table]") {
  using cuscope::views::format_bytes;
  REQUIRE(format_bytes(0) == "0 B");
  REQUIRE(format_bytes(1023) == "1023 B");
  REQUIRE(format_bytes(1024) == "1.00 KiB");
  REQUIRE(format_bytes(1536) == "1.50 KiB");
  REQUIRE(format_bytes(1'048'063) == "1023 KiB");
  REQUIRE(format_bytes(1'048'064) == "1.00 MiB");
  REQUIRE(format_bytes(3u << 20) == "3.00 MiB");
  REQUIRE(format_bytes(1'288'490'189) == "1.20 GiB");
  REQUIRE(format_bytes(std::numeric_limits<std::uint64_t>::max()) == "16.0 EiB");
}

TEST_CASE("shares print as percentages with one decimal", "[table]") {
  using cuscope::views::format_percent;
  REQUIRE(format_percent(0.0) == "0.0%");
  REQUIRE(format_percent(0.875) == "87.5%");
  REQUIRE(format_percent(1.0) == "100.0%");
}

TEST_CASE("widths and truncation count UTF-8 code points", "[table]") {
  using cuscope::views::display_width;
  using cuscope::views::truncate;
  REQUIRE(display_width("µs") == 2);
  REQUIRE(truncate("µµµµ", 4) == "µµµµ");
  REQUIRE(truncate("µµµµ", 3) == "µµ…");
  REQUIRE(truncate("abcdef", 1) == "…");
}

TEST_CASE("table shows a range's verdict, its reason and its hardware counters", "[table][metrics]") {
  Report r = two_siblings();
  r.counters_status = "on: sol on GH100 (8 replay passes per kernel) in step/mlp, during every recorded step";
  r.gpu_timing = "on";
  RangeStats& alpha = r.ranges[1];
  alpha.verdict.bound = cuscope::Bound::memory;
  alpha.verdict.reason = "DRAM at 87% of peak while SM at 12%: memory-bound";
  alpha.profiled_kernels = 3;
  alpha.metrics = {{"dram__bytes_read.sum", "DRAM read", "byte", 3.0 * 1024 * 1024},
                   {"sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %", "percent", 12.0},
                   {"gpu__time_duration.sum", "time", "nanosecond", 4'560'000}};
  const std::string text = format_table(r);
  const std::vector<std::string> lines = lines_of(text);
  CHECK(header_line(text, "hardware counters:") ==
        "hardware counters: on: sol on GH100 (8 replay passes per kernel) in step/mlp, during every recorded "
        "step");
  CHECK(text.find("  @ 3 kernels replayed:  DRAM read 3.00 MiB  SM % 12.0%  time 4.56 ms\n") !=
        std::string::npos);
  CHECK(text.find("  ! DRAM at 87% of peak while SM at 12%: memory-bound\n") != std::string::npos);
  CHECK(text.find("memory\n") != std::string::npos);  // the bound column of alpha's row
}

TEST_CASE("table says why hardware counters are off only when they were asked for", "[table][metrics]") {
  Report r = two_siblings();
  r.gpu_timing = "on";
  CHECK(header_line(format_table(r), "hardware counters:").empty());
  r.counters_status = "no permission for GPU performance counters (ERR_NVGPUCTRPERM)";
  CHECK(header_line(format_table(r), "hardware counters:") ==
        "hardware counters: off — no permission for GPU performance counters (ERR_NVGPUCTRPERM)");
}

TEST_CASE("an empty table says when the step window was never reached and what it left out", "[table]") {
  Report r;
  r.device = "no GPU";
  r.gpu_timing = "on";
  r.activity_status = "on";
  r.window_start_step = 5;
  r.steps = 0;
  r.diagnostics.outside_window_scopes = 12;
  const auto after_header = [](const std::string& text) { return text.substr(text.find("\n\n") + 2); };
  const std::string text = format_table(r);
  REQUIRE(header_line(text, "lost or off:") == "lost or off: 12 scopes outside the window");
  REQUIRE(after_header(text) ==
          "(no ranges recorded: the step window was never reached — it opens after step 5, and 0 steps were "
          "marked with cuscope::step(); 12 scopes left out)\n");

  r.steps = 1;
  r.diagnostics.outside_window_scopes = 1;
  REQUIRE(after_header(format_table(r)) ==
          "(no ranges recorded: the step window was never reached — it opens after step 5, and 1 step was "
          "marked with cuscope::step(); 1 scope left out)\n");

  r.steps = 9;  // the window opened, but every scope ran before or after it
  REQUIRE(after_header(format_table(r)) ==
          "(no ranges recorded: 1 scope outside the step window left out)\n");

  r.diagnostics.outside_window_scopes = 0;  // nothing ran at all
  REQUIRE(after_header(format_table(r)) == "(no ranges recorded)\n");
}

TEST_CASE("header counts refused counts and scopes outside the window", "[table]") {
  Report r = two_siblings();
  r.diagnostics.rejected_counts = 1;
  REQUIRE(header_line(format_table(r), "lost or off:") == "lost or off: 1 count of inf or NaN refused");
  r.diagnostics.rejected_counts = 3;
  r.diagnostics.outside_window_scopes = 1;
  REQUIRE(header_line(format_table(r), "lost or off:") ==
          "lost or off: 1 scope outside the window, 3 counts of inf or NaN refused");
}

namespace {

cuscope::SpanStats span(std::string domain, std::string name, cuscope::DurationStats host, std::uint64_t open,
                        std::uint64_t cross_thread) {
  return {std::move(domain), std::move(name), host, open, cross_thread};
}

// The text after the range rows: the NVTX start/end range section, if any.
std::string after_ranges(const std::string& table, std::string_view last_range_line) {
  const std::size_t at = table.find(last_range_line);
  return at == std::string::npos ? "(last range line not found)" : table.substr(at + last_range_line.size());
}

}  // namespace

TEST_CASE("table lists NVTX start/end ranges in a section after the range tree", "[table][spans]") {
  Report r = make_report();
  r.spans = {span("io", "load", {3, 3 * kMs, kMs / 2, 3 * kMs / 2}, 1, 2),
             span("", "a very long start/end range name that does not fit", {1, 850, 850, 850}, 0, 0),
             span("", "pending", {}, 4, 0)};
  REQUIRE(
      after_ranges(format_table(r),
                   "  · init_kernel  calls 5  total 2.40 ms  mean 480 µs  grid 64x1x1 block 128x1x1\n") ==
      "\n"
      "NVTX start/end range                      calls  host total  host mean  host max  open  cross-thread\n"
      "io/load                                       3     3.00 ms    1.00 ms   1.50 ms     1             2\n"
      "a very long start/end range name that d…      1      850 ns     850 ns    850 ns     0             0\n"
      "pending                                       0           -          -         -     4             "
      "0\n");
}

TEST_CASE("table prints no NVTX start/end range section when there are none", "[table][spans]") {
  const std::string text = format_table(make_report());
  REQUIRE(text.find("NVTX") == std::string::npos);
}

TEST_CASE("table lists NVTX start/end ranges even when no range was recorded", "[table][spans]") {
  Report r;
  r.device = "no GPU";
  r.gpu_timing = "on";
  r.activity_status = "on";
  r.spans = {span("", "load", {2, 30, 10, 20}, 0, 1)};
  REQUIRE(format_table(r) ==
          "cuscope 0.1.0 — device: no GPU — wall 0 ns — steps 0/0\n"
          "total: host 0 ns in top-level ranges — kernel time 0 ns — GPU busy 0 ns\n"
          "\n"
          "(no ranges recorded)\n"
          "\n"
          "NVTX start/end range  calls  host total  host mean  host max  open  cross-thread\n"
          "load                      2       30 ns      15 ns     20 ns     0             1\n");
}

TEST_CASE("table cuts NVTX start/end ranges at max_rows and counts the rest", "[table][spans]") {
  Report r;
  r.spans = {span("", "a", {1, 3, 3, 3}, 0, 0), span("", "b", {1, 2, 2, 2}, 0, 0),
             span("", "c", {1, 1, 1, 1}, 0, 0)};
  TableOptions options;
  options.max_rows = 1;
  REQUIRE(after_ranges(format_table(r, options), "(no ranges recorded)\n") ==
          "\n"
          "NVTX start/end range  calls  host total  host mean  host max  open  cross-thread\n"
          "a                         1        3 ns       3 ns      3 ns     0             0\n"
          "… 2 more NVTX start/end ranges (max_rows=1)\n");
}

TEST_CASE("table lists a range's findings under it, worst first, up to max_findings", "[table][findings]") {
  Report r = two_siblings();
  RangeStats& alpha = r.ranges[1];
  alpha.verdict.bound = cuscope::Bound::launch;
  alpha.verdict.reason = "GPU busy 12% of its span with 400 kernels averaging 3.0 µs: launch-bound";
  alpha.findings = {{"launch-bound", cuscope::Severity::warning, "GPU busy 12% of the range's GPU span", "c1", "f1"},
                    {"small-kernels", cuscope::Severity::info, "400 kernels averaging 3.0 µs", "c2", "f2"}};
  cuscope::TableOptions o;
  o.max_findings = 1;
  std::string text = format_table(r, o);
  CHECK(text.find("  ! launch-bound (warning): GPU busy 12% of the range's GPU span\n"
                  "    cause: c1; fix: f1\n"
                  "  ! … 1 more finding (JSON: findings)\n") != std::string::npos);
  // A finding that says what the verdict says replaces the verdict's line.
  CHECK(text.find("launch-bound\n  ! GPU busy 12% of its span") == std::string::npos);
  CHECK(text.find("! GPU busy 12% of its span") == std::string::npos);
  o.max_findings = 3;
  text = format_table(r, o);
  CHECK(text.find("  ! small-kernels (info): 400 kernels averaging 3.0 µs\n    cause: c2; fix: f2\n") !=
        std::string::npos);
  CHECK(text.find("more finding") == std::string::npos);
  o.max_findings = 0;
  text = format_table(r, o);
  CHECK(text.find("(warning)") == std::string::npos);
  CHECK(text.find("more finding") == std::string::npos);
  // No finding shown: the verdict's own line says it.
  CHECK(text.find("  ! GPU busy 12% of its span with 400 kernels averaging 3.0 µs: launch-bound\n") !=
        std::string::npos);
}

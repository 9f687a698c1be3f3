// The table view's range rows and kernel lines: golden text for a small report, indentation, the
// order of each sort key, the row and kernel cuts, which ranges are listed, the cells, and the unit
// rules of every cell (durations, sizes, shares, UTF-8 widths).
//
// Never: a session or a model; reports are built by hand (tests/table_kit.hpp).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "cuscope/report.hpp"
#include "table_kit.hpp"
#include "views/format.hpp"

using cuscope::format_table;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::SortKey;
using cuscope::TableOptions;
using cuscope_test::table_kit::kernels_activity;
using cuscope_test::table_kit::kMs;
using cuscope_test::table_kit::lines_of;
using cuscope_test::table_kit::make_report;
using cuscope_test::table_kit::set_host;
using cuscope_test::table_kit::two_siblings;

namespace {

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

// The table view's lines beside the range rows: a range's verdict, reason and hardware counters,
// its findings (worst first, up to max_findings), and the NVTX start/end range section after the
// range tree, with its cut.
//
// Never: a session or a model; reports are built by hand (tests/table_kit.hpp).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuscope/report.hpp"
#include "table_kit.hpp"

using cuscope::format_table;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::TableOptions;
using cuscope_test::table_kit::header_line;
using cuscope_test::table_kit::kMs;
using cuscope_test::table_kit::lines_of;
using cuscope_test::table_kit::make_report;
using cuscope_test::table_kit::two_siblings;

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

// tests/test_bench_summary.cpp — the benchmarks' statistics and output (bench/summary.hpp): each
// round's ratio of two interleaved configurations and their median and range, each round's order of
// the configurations, the warm-up's drift, and the range column and JSON keys that appear only where
// a value has one. The GPU bench's summary is test_gpu_bench_summary.cpp's. Never times anything: the
// inputs are written here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../bench/summary.hpp"

using cuscope_bench::Measurement;
using cuscope_bench::Summary;
using cuscope_bench::Target;

TEST_CASE("bench: each round's ratio is of the round's medians, rounds either lacks left out", "[bench]") {
  // Round 1: a's median 20 over b's 10; round 2: 9 over 3; a's seventh sample starts a round b lacks.
  const std::vector<double> a = {10, 30, 20, 9, 9, 9, 100};
  const std::vector<double> b = {10, 10, 10, 3, 6, 3};
  CHECK(cuscope_bench::round_ratios(a, b, 3) == std::vector<double>{2.0, 3.0});
  // One value a round (the launch loops' means).
  CHECK(cuscope_bench::round_ratios({6, 8}, {3, 2}, 1) == std::vector<double>{2.0, 4.0});
  CHECK(cuscope_bench::round_ratios(a, {}, 3).empty());  // a configuration skipped
  CHECK(cuscope_bench::round_ratios(a, b, 0).empty());
  // A round whose denominator is 0 (nothing measured) gives no ratio rather than infinity.
  CHECK(cuscope_bench::round_ratios({1, 2}, {0, 1}, 1) == std::vector<double>{2.0});
}

TEST_CASE("bench: a paired ratio is the median of the rounds' ratios, with their range", "[bench]") {
  const Measurement m = cuscope_bench::paired_ratio("paired.x", "paired: x", {1.2, 1.0, 1.1, 1.4});
  CHECK(m.key == "paired.x");
  CHECK(m.unit == "x");
  CHECK(m.value == Approx(1.15));
  CHECK(m.low == 1.0);
  CHECK(m.high == 1.4);
  const Measurement none = cuscope_bench::paired_ratio("paired.y", "paired: y", {});
  CHECK(std::isnan(none.value));
  CHECK(std::isnan(none.low));
  CHECK(std::isnan(none.high));
}

TEST_CASE("bench: each round's order puts each configuration in each place once, after changing ones",
          "[bench]") {
  // w = 0, 1, 3, 2 for four: round r holds r + w mod 4.
  CHECK(cuscope_bench::round_order(4, 0) == std::vector<int>{0, 1, 3, 2});
  CHECK(cuscope_bench::round_order(4, 1) == std::vector<int>{1, 2, 0, 3});
  CHECK(cuscope_bench::round_order(4, 5) == cuscope_bench::round_order(4, 1));
  CHECK(cuscope_bench::round_order(11, 0) == std::vector<int>{0, 1, 10, 2, 9, 3, 8, 4, 7, 5, 6});
  CHECK(cuscope_bench::round_order(1, 3) == std::vector<int>{0});
  CHECK(cuscope_bench::round_order(0, 2).empty());
  for (const int n : {5, 10, 11, 13, 14}) {
    for (int place = 0; place < n; ++place) {  // over n rounds, every configuration in every place
      std::vector<int> seen;
      for (int round = 0; round < n; ++round) seen.push_back(cuscope_bench::round_order(n, round)[place]);
      std::sort(seen.begin(), seen.end());
      std::vector<int> all(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) all[static_cast<std::size_t>(i)] = i;
      CHECK(seen == all);
    }
  }
  // The bench's 11 launch loops and 14 transformer configurations over 5 rounds: each configuration
  // comes after at least 4 different ones (a rotated order gave 6 of them the same one in every round).
  for (const int n : {11, 14}) {
    std::vector<std::set<int>> before(static_cast<std::size_t>(n));
    for (int round = 0; round < 5; ++round) {
      const std::vector<int> order = cuscope_bench::round_order(n, round);
      for (std::size_t i = 1; i < order.size(); ++i)
        before[static_cast<std::size_t>(order[i])].insert(order[i - 1]);
    }
    for (int c = 0; c < n; ++c) {
      INFO(n << " configurations, configuration " << c);
      CHECK(before[static_cast<std::size_t>(c)].size() >= 4);
    }
  }
}

TEST_CASE("bench: the range column and the JSON's min and max appear only where a value has a range",
          "[bench]") {
  Summary s;
  s.title = "t";
  s.measurements.push_back({"plain", "plain", 2.0, "x"});
  SECTION("without ranges: the table and JSON as before") {
    s.targets.push_back({"goal.plain", "goal plain", 1.0, "x", "<= 1.05x", true});
    const std::string table = cuscope_bench::format_table(s);
    CHECK(table.find("  range") == std::string::npos);
    CHECK(table.find("<= 1.05x        PASS\n") != std::string::npos);
    const std::string json = cuscope_bench::format_json(s);
    CHECK(json.find("\"min\"") == std::string::npos);
    CHECK(json.find("\"max\"") == std::string::npos);
  }
  SECTION("with ranges: each paired value's range, in the table and the JSON") {
    s.measurements.push_back(cuscope_bench::paired_ratio("paired.x", "paired x", {1.02, 1.09, 1.05}));
    Target t{"goal.x", "goal x", 1.05, "x", "<= 1.05x", true};
    t.low = 1.02;
    t.high = 1.09;
    s.targets.push_back(t);
    const std::string table = cuscope_bench::format_table(s);
    CHECK(table.find("  range\n") != std::string::npos);  // 3 ratios: no 95% interval of their median
    CHECK(table.find("1.05x          1.02x-1.09x\n") != std::string::npos);                 // the measurement
    CHECK(table.find("<= 1.05x        PASS          1.02x-1.09x\n") != std::string::npos);  // the target
    const std::string json = cuscope_bench::format_json(s);
    CHECK(json.find(
              "{\"key\": \"plain\", \"label\": \"plain\", \"value\": 2, \"unit\": \"x\", \"cv\": null}") !=
          std::string::npos);
    CHECK(
        json.find("\"key\": \"paired.x\", \"label\": \"paired x\", \"value\": 1.05, \"unit\": \"x\", \"cv\": "
                  "null, \"min\": 1.02, \"max\": 1.09}") != std::string::npos);
    CHECK(json.find("\"result\": \"PASS\", \"min\": 1.02, \"max\": 1.09}") != std::string::npos);
  }
}

TEST_CASE("bench: the median's 95% interval is of order statistics, none below 6 samples", "[bench]") {
  using cuscope_bench::median_interval;
  // Below 6 samples even the whole range holds the median with less than 95% (5: 1 - 2/32).
  CHECK(std::isnan(median_interval({1, 2, 3, 4, 5}).first));
  CHECK(std::isnan(median_interval({}).second));
  // 6 to 8: the whole range (P(all on one side) = 2/64 ... 2/256, each end at most 2.5%), unsorted in.
  CHECK(median_interval({6, 1, 5, 2, 4, 3}) == std::pair<double, double>{1, 6});
  CHECK(median_interval({8, 1, 7, 2, 6, 3, 5, 4}) == std::pair<double, double>{1, 8});
  // 9: the 2nd to the 8th (P(Binomial(9, 1/2) <= 1) = 10/512 <= 0.025 < P(<= 2) = 46/512).
  CHECK(median_interval({9, 1, 8, 2, 7, 3, 6, 4, 5}) == std::pair<double, double>{2, 8});
  // 48: the 17th to the 32nd; 64: the 24th to the 41st.
  std::vector<double> v48(48), v64(64);
  for (std::size_t i = 0; i < v48.size(); ++i) v48[i] = static_cast<double>(48 - i);
  for (std::size_t i = 0; i < v64.size(); ++i) v64[i] = static_cast<double>(i + 1);
  CHECK(median_interval(v48) == std::pair<double, double>{17, 32});
  CHECK(median_interval(v64) == std::pair<double, double>{24, 41});
}

TEST_CASE(
    "bench: a paired value of 6 or more ratios shows its median's 95% interval, in the table and the JSON",
    "[bench]") {
  Summary s;
  s.title = "t";
  s.measurements.push_back(cuscope_bench::paired_ratio(
      "paired.x", "paired x", {1.01, 0.98, 1.03, 1.10, 1.02, 1.04, 1.05, 0.90, 1.06}));
  const Measurement& m = s.measurements.back();
  CHECK(m.value == Approx(1.03));
  CHECK(m.low == Approx(0.90));
  CHECK(m.high == Approx(1.10));
  CHECK(m.ci_low == Approx(0.98));  // the 2nd and 8th of 9
  CHECK(m.ci_high == Approx(1.06));
  Target t{"goal.x", "goal x", m.value, "x", "<= 1.05x", true};
  t.low = m.low;
  t.high = m.high;
  t.ci_low = m.ci_low;
  t.ci_high = m.ci_high;
  s.targets.push_back(t);
  const std::string table = cuscope_bench::format_table(s);
  CHECK(table.find("  range (the median's 95% interval)\n") != std::string::npos);
  CHECK(table.find("1.03x          0.90x-1.10x (0.98x-1.06x)\n") != std::string::npos);
  CHECK(table.find("<= 1.05x        PASS          0.90x-1.10x (0.98x-1.06x)\n") != std::string::npos);
  const std::string json = cuscope_bench::format_json(s);
  CHECK(json.find("\"cv\": null, \"min\": 0.9, \"max\": 1.1, \"median_ci95\": [0.98, 1.06]}") !=
        std::string::npos);
  CHECK(json.find("\"result\": \"PASS\", \"min\": 0.9, \"max\": 1.1, \"median_ci95\": [0.98, 1.06]}") !=
        std::string::npos);
}

TEST_CASE("bench: the drift is each round's first samples over its others, rounds cut short left out",
          "[bench]") {
  using cuscope_bench::round_drift;
  // Rounds of 5: the first 2 slow in the first round (a start that had not settled), none in the second,
  // and a third round cut short.
  const std::vector<double> v{130, 110, 100, 100, 100, 200, 200, 200, 200, 200, 300};
  CHECK(round_drift(v, 5, 2) == std::vector<double>{1.2, 1.0});
  CHECK(round_drift(v, 5, 5).empty());  // nothing after the first to compare with
  CHECK(round_drift(v, 5, 0).empty());
  CHECK(round_drift(v, 0, 0).empty());
  CHECK(round_drift({}, 5, 2).empty());
}

TEST_CASE("cycle means: each sample the mean of its cycle, cycles cut within each round", "[bench]") {
  // Two rounds of 5 samples, cycles of 2: [1 3][5 7][9] | [2 2][4 8][6].
  const std::vector<double> v{1, 3, 5, 7, 9, 2, 2, 4, 8, 6};
  CHECK(cuscope_bench::cycle_means(v, 5, 2) == std::vector<double>{2, 2, 6, 6, 9, 2, 2, 6, 6, 6});
  // One step recorded in 4, the rest paused: the median of steps is a paused step's, that of the
  // cycle means what the program paid.
  const std::vector<double> windowed{10, 10, 10, 30, 10, 10, 10, 30};
  CHECK(cuscope_bench::median(windowed) == 10);
  CHECK(cuscope_bench::median(cuscope_bench::cycle_means(windowed, 8, 4)) == 15);
  CHECK(cuscope_bench::cycle_means(v, 0, 2) == v);  // nothing to cut
  CHECK(cuscope_bench::cycle_means({}, 5, 2).empty());
}

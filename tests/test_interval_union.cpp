// The union of GPU intervals ("GPU busy"): exact inside its window, never double counting.
#include <algorithm>
#include <catch2/catch.hpp>
#include <utility>
#include <vector>

#include "model/interval_union.hpp"

using cuscope::model::IntervalUnion;

TEST_CASE("disjoint intervals add up", "[busy]") {
  IntervalUnion u;
  u.add(0, 10);
  u.add(20, 25);
  u.add(30, 40);
  CHECK(u.measure() == 25);
}

TEST_CASE("overlapping kernels on two streams count once", "[busy]") {
  IntervalUnion u;
  // stream A: [0,100) [100,200); stream B: [50,150) [300,350), arriving interleaved by end time
  u.add(0, 100);
  u.add(50, 150);
  u.add(100, 200);
  u.add(300, 350);
  CHECK(u.measure() == 250);
  CHECK(u.late() == 0);
}

TEST_CASE("an interval arriving out of order inside the window is merged exactly", "[busy]") {
  IntervalUnion u;
  u.add(100, 110);
  u.add(200, 210);
  u.add(0, 150);  // covers the first one and the gap before the second
  CHECK(u.measure() == 160);
  u.add(140, 205);  // bridges everything
  CHECK(u.measure() == 210);
}

TEST_CASE("empty and reversed intervals are ignored", "[busy]") {
  IntervalUnion u;
  u.add(5, 5);
  u.add(9, 3);
  CHECK(u.measure() == 0);
}

TEST_CASE("intervals past the window are folded and late ones clipped, never double counted", "[busy]") {
  IntervalUnion u;
  const std::uint64_t n = 2 * IntervalUnion::kWindow + 10;
  for (std::uint64_t i = 0; i < n; ++i) u.add(i * 100, i * 100 + 10);
  CHECK(u.measure() == n * 10);
  u.add(0, 10);  // long folded: clipped entirely, counted as late
  CHECK(u.late() == 1);
  CHECK(u.measure() == n * 10);
  u.add((n - 5) * 100 - 50, (n - 5) * 100 + 5);  // inside the window, out of order: exact
  CHECK(u.late() == 1);
  CHECK(u.measure() == n * 10 + 50);
}

TEST_CASE("an interval touching or inside the last one extends it, a later one follows it", "[busy]") {
  IntervalUnion u;
  u.add(100, 200);
  u.add(200, 250);  // touches: one interval [100, 250)
  u.add(150, 240);  // inside
  u.add(240, 260);  // overlaps the end
  u.add(300, 310);  // after a gap
  CHECK(u.measure() == 170);
  u.add(255, 305);  // out of order: joins the last two
  CHECK(u.measure() == 210);
  CHECK(u.late() == 0);
}

TEST_CASE("a copied union goes on independently of its original", "[busy]") {
  IntervalUnion a;
  for (std::uint64_t i = 0; i < 20; ++i) a.add(i * 100, i * 100 + 10);
  IntervalUnion b = a;
  b.add(5000, 5050);
  b.add(50, 95);
  a.add(6000, 6001);
  CHECK(a.measure() == 201);
  CHECK(b.measure() == 200 + 50 + 45);
}

// Intervals that arrive nearly in time order (each at most a few places late, as kernels of a few
// streams do), against the measure of their union computed from all of them sorted.
TEST_CASE("nearly ordered intervals over many folds: the measure is exact", "[busy]") {
  std::uint64_t state = 12345;
  auto next = [&state](std::uint64_t bound) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    return (state >> 33) % bound;
  };
  std::vector<std::pair<std::uint64_t, std::uint64_t>> all;
  IntervalUnion u;
  for (std::uint64_t i = 0; i < 20 * IntervalUnion::kWindow; ++i) {
    const std::uint64_t start = 1000 + i * 100 + next(400);  // up to 4 places out of order
    const std::uint64_t end = start + 1 + next(250);
    all.emplace_back(start, end);
    u.add(start, end);
  }
  std::sort(all.begin(), all.end());
  std::uint64_t exact = 0, covered_to = 0;
  for (const auto& [start, end] : all) {
    const std::uint64_t from = std::max(start, covered_to);
    if (end > from) exact += end - from;
    covered_to = std::max(covered_to, end);
  }
  CHECK(u.late() == 0);
  CHECK(u.measure() == exact);
}

// The union of GPU intervals ("GPU busy"): exact inside its window, never double counting.
#include <catch2/catch.hpp>

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

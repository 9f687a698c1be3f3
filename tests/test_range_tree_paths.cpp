// The range tree on one thread: nesting and paths, siblings, statistics per range and the slowest
// call's ordinal, direct and indirect recursion, depth limits, unbalanced and repeated ends, ranges
// still open; fed with range begin/end events directly.
//
// Never: a session, a clock or a second thread (test_range_tree_threads.cpp has those).
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "model_fixture.hpp"
#include "range_tree_kit.hpp"

using cuscope::Report;
using cuscope::model::ThreadTree;
using cuscope_test::range_tree_kit::calls;

using Fixture = cuscope_test::ModelFixture;

TEST_CASE("nested ranges form a path and time their parents inclusively", "[tree]") {
  Fixture f;
  auto step = f.tree->begin(f.id("step"), 1000);
  auto fwd = f.tree->begin(f.id("forward"), 1100);
  f.tree->end(fwd.depth, 1400);
  auto bwd = f.tree->begin(f.id("backward"), 1500);
  f.tree->end(bwd.depth, 1900);
  f.tree->end(step.depth, 2000);

  const Report r = f.report();
  const auto* s = r.find("step");
  REQUIRE(s != nullptr);
  CHECK(s->calls == 1);
  CHECK(s->host.total_ns == 1000);
  CHECK(s->host_self_ns == 300);  // 1000 - 300 - 400
  CHECK(s->children.size() == 2);
  REQUIRE(r.find("step/forward") != nullptr);
  CHECK(r.find("step/forward")->host.total_ns == 300);
  CHECK(r.find("step/forward")->depth == 2);
  CHECK(r.find("step/backward")->host.total_ns == 400);
  CHECK(r.find("step/backward")->host_self_ns == 400);
  CHECK(r.find("forward") == nullptr);
}

TEST_CASE("the same name under different parents is a different range", "[tree]") {
  Fixture f;
  for (const char* parent : {"encoder", "decoder"}) {
    auto p = f.tree->begin(f.id(parent), 0);
    auto a = f.tree->begin(f.id("attention"), 10);
    f.tree->end(a.depth, parent[0] == 'e' ? 30 : 60);
    f.tree->end(p.depth, 100);
  }
  const Report r = f.report();
  CHECK(r.find("encoder/attention")->host.total_ns == 20);
  CHECK(r.find("decoder/attention")->host.total_ns == 50);
  CHECK(r.root().children.size() == 2);
}

TEST_CASE("repeated entries aggregate count, total, min, max and mean", "[tree]") {
  Fixture f;
  calls(f, f.tree, "k", {50, 10, 30, 110});
  const Report report = f.report();
  const auto* k = report.find("k");
  REQUIRE(k != nullptr);
  CHECK(k->calls == 4);
  CHECK(k->host.count == 4);
  CHECK(k->host.total_ns == 200);
  CHECK(k->host.min_ns == 10);
  CHECK(k->host.max_ns == 110);
  CHECK(k->host.mean_ns() == Approx(50.0));
}

TEST_CASE("direct recursion re-enters the open range and counts time once", "[tree]") {
  Fixture f;
  // fib -> fib -> fib, each inner entry 100 ns shorter, with a "leaf" inside the innermost.
  auto a = f.tree->begin(f.id("fib"), 0);
  auto b = f.tree->begin(f.id("fib"), 100);
  auto c = f.tree->begin(f.id("fib"), 200);
  auto leaf = f.tree->begin(f.id("leaf"), 250);
  f.tree->end(leaf.depth, 300);
  f.tree->end(c.depth, 400);
  f.tree->end(b.depth, 500);
  f.tree->end(a.depth, 600);
  const Report r = f.report();
  const auto* fib = r.find("fib");
  REQUIRE(fib != nullptr);
  CHECK(fib->calls == 3);
  CHECK(fib->recursive_calls == 2);
  CHECK(fib->host.count == 1);
  CHECK(fib->host.total_ns == 600);
  CHECK(fib->host_self_ns == 550);
  REQUIRE(r.find("fib/leaf") != nullptr);
  CHECK(r.find("fib/leaf")->host.total_ns == 50);
  CHECK(r.find("fib/fib") == nullptr);
}

TEST_CASE("indirect recursion makes deeper paths", "[tree]") {
  Fixture f;
  auto a = f.tree->begin(f.id("even"), 0);
  auto b = f.tree->begin(f.id("odd"), 10);
  auto c = f.tree->begin(f.id("even"), 20);
  f.tree->end(c.depth, 30);
  f.tree->end(b.depth, 40);
  f.tree->end(a.depth, 50);
  const Report r = f.report();
  REQUIRE(r.find("even/odd/even") != nullptr);
  CHECK(r.find("even/odd/even")->calls == 1);
  CHECK(r.find("even")->recursive_calls == 0);
}

TEST_CASE("entries past the maximum depth are counted and timed into the deepest range", "[tree]") {
  Fixture f;
  f.forest->max_depth = 3;
  std::vector<ThreadTree::Token> tokens;
  const char* names[] = {"d1", "d2", "d3", "d4", "d5"};
  for (int i = 0; i < 5; ++i) tokens.push_back(f.tree->begin(f.id(names[i]), std::uint64_t(i) * 10));
  CHECK(tokens[3].depth == ThreadTree::kOverflowDepth);
  CHECK(tokens[3].instance == tokens[2].instance);  // GPU work there goes to d3
  for (int i = 4; i >= 0; --i) f.tree->end(tokens[std::size_t(i)].depth, 100 + std::uint64_t(4 - i) * 10);
  const Report r = f.report();
  CHECK(r.diagnostics.depth_overflows == 2);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  REQUIRE(r.find("d1/d2/d3") != nullptr);
  CHECK(r.find("d1/d2/d3")->host.total_ns == 100);
  CHECK(r.find("d1/d2/d3/d4") == nullptr);
}

TEST_CASE("a thousand levels of nesting stay bounded by the hard maximum depth", "[tree]") {
  Fixture f;
  f.forest->max_depth = 256;
  std::vector<ThreadTree::Token> tokens;
  const auto level = f.id("level");
  const auto other = f.id("other");
  for (int i = 0; i < 1000; ++i) tokens.push_back(f.tree->begin(i % 2 ? level : other, std::uint64_t(i)));
  for (int i = 999; i >= 0; --i) f.tree->end(tokens[std::size_t(i)].depth, 5000);
  const Report r = f.report();
  CHECK(r.diagnostics.depth_overflows == 1000 - 256);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.ranges.size() == 257);  // root + 256 levels
  CHECK(r.ranges.back().depth == 256);
}

TEST_CASE("an end that skips open ranges closes them as unbalanced without timing them", "[tree]") {
  Fixture f;
  auto outer = f.tree->begin(f.id("outer"), 0);
  f.tree->begin(f.id("leaked"), 10);  // never ended
  f.tree->end(outer.depth, 100);
  const Report r = f.report();
  CHECK(r.diagnostics.unbalanced_ends == 1);
  CHECK(r.find("outer")->host.total_ns == 100);
  CHECK(r.find("outer/leaked")->calls == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("ending a range twice is counted, not fatal", "[tree]") {
  Fixture f;
  auto a = f.tree->begin(f.id("a"), 0);
  f.tree->end(a.depth, 10);
  f.tree->end(a.depth, 20);
  f.tree->end_innermost(30);
  const Report r = f.report();
  CHECK(r.diagnostics.unbalanced_ends == 2);
  CHECK(r.find("a")->calls == 1);
}

TEST_CASE("ranges still open are reported as open", "[tree]") {
  Fixture f;
  f.tree->begin(f.id("a"), 0);
  f.tree->begin(f.id("b"), 0);
  const Report r = f.report();
  CHECK(r.diagnostics.open_scopes == 2);
  CHECK(r.find("a/b")->calls == 0);
}

TEST_CASE("the slowest call is known by its ordinal, of equal maxima the first", "[tree]") {
  Fixture f;
  calls(f, f.tree, "k", {50, 10, 110, 30, 110, 20});  // the 3rd and the 5th take 110
  const Report report = f.report();
  const auto* k = report.find("k");
  REQUIRE(k != nullptr);
  CHECK(k->host.max_ns == 110);
  CHECK(k->host.max_call == 3);
  CHECK(k->gpu.max_call == 0);  // CUDA-event times do not record it
}

TEST_CASE("the slowest call's ordinal counts host-timed entries: not re-entries, not unbalanced ones",
          "[tree]") {
  Fixture f;
  auto first = f.tree->begin(f.id("k"), 0);
  auto again = f.tree->begin(f.id("k"), 1);  // direct recursion: not a host-timed call
  f.tree->end(again.depth, 500);
  f.tree->end(first.depth, 10);
  auto skipped = f.tree->begin(f.id("k"), 100);
  f.tree->begin(f.id("inner"), 101);  // left open: closed as unbalanced, untimed, by k's end
  f.tree->end(skipped.depth, 120);
  auto slow = f.tree->begin(f.id("k"), 200);
  f.tree->end(slow.depth, 290);
  const Report report = f.report();
  const auto* k = report.find("k");
  REQUIRE(k != nullptr);
  CHECK(k->host.count == 3);
  CHECK(k->host.max_ns == 90);
  CHECK(k->host.max_call == 3);
}

TEST_CASE("direct recursion uses no depth: 10,001 entries are one frame", "[tree]") {
  Fixture f;
  f.forest->max_depth = 3;
  auto a = f.begin("a", 0);
  auto b = f.begin("b", 0);
  std::vector<ThreadTree::Token> tokens;
  for (std::uint64_t i = 0; i < 10'001; ++i) tokens.push_back(f.tree->begin(f.id("r"), 100 + i));
  CHECK(tokens.back().depth == 3);
  CHECK(f.tree->open_depth() == 3);
  CHECK(f.tree->reentries(3) == 10'000);
  const Report open = f.report();
  CHECK(open.diagnostics.open_scopes == 10'003);
  CHECK(open.find("a/b/r")->open == 10'001);
  for (std::size_t i = tokens.size(); i-- > 0;) f.tree->end(tokens[i].depth, 20'100 + (10'000 - i));
  f.tree->end(b.depth, 40'000);
  f.tree->end(a.depth, 40'000);
  const Report r = f.report();
  const auto* rr = r.find("a/b/r");
  REQUIRE(rr != nullptr);
  CHECK(rr->calls == 10'001);
  CHECK(rr->recursive_calls == 10'000);
  CHECK(rr->host.count == 1);
  CHECK(rr->host.total_ns == 30'100 - 100);
  CHECK(r.diagnostics.depth_overflows == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.ranges.size() == 4);
}

TEST_CASE("a range with 100,000 siblings is found again, in order of first entry", "[tree]") {
  Fixture f;
  constexpr int kSiblings = 100'000;
  std::vector<std::uint32_t> ids;
  for (int i = 0; i < kSiblings; ++i) ids.push_back(f.id(("s" + std::to_string(i)).c_str()));
  auto p = f.begin("parent", 0);
  for (int round = 0; round < 2; ++round) {
    for (int i = 0; i < kSiblings; ++i) {
      // Every other sibling first, then the rest, so entries do not follow creation order.
      const auto id = ids[std::size_t((i * 2) % kSiblings + (i * 2 >= kSiblings ? 1 : 0))];
      const auto t = f.tree->begin(id, 10);
      f.tree->end(t.depth, 10 + std::uint64_t(round + 1));
    }
  }
  f.tree->end(p.depth, 100);
  const Report r = f.report();
  const auto* parent = r.find("parent");
  REQUIRE(parent != nullptr);
  REQUIRE(parent->children.size() == std::size_t(kSiblings));
  CHECK(r.ranges[parent->children[0]].name == "s0");
  CHECK(r.ranges[parent->children[1]].name == "s2");
  CHECK(r.ranges[parent->children[kSiblings / 2]].name == "s1");
  for (std::size_t c : parent->children) {
    REQUIRE(r.ranges[c].calls == 2);
    REQUIRE(r.ranges[c].host.total_ns == 3);
  }
  CHECK(r.ranges.size() == std::size_t(kSiblings) + 2);
}

// The range tree: nesting, siblings, recursion, depth limits and unbalanced ends, fed with range
// begin/end events directly (no session, no clock).
#include <catch2/catch.hpp>

#include "model_fixture.hpp"

using cuscope::Report;
using cuscope::model::ThreadTree;

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
  const std::uint64_t durations[] = {50, 10, 30, 110};
  std::uint64_t t = 0;
  for (std::uint64_t d : durations) {
    auto k = f.tree->begin(f.id("k"), t);
    f.tree->end(k.depth, t + d);
    t += 1000;
  }
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

TEST_CASE("trees of several threads merge by path", "[tree]") {
  Fixture f;
  ThreadTree* other = f.forest->make_tree();
  auto a = f.tree->begin(f.id("work"), 0);
  f.tree->end(a.depth, 10);
  auto b = other->begin(f.id("work"), 0);
  other->end(b.depth, 30);
  const Report report = f.report();
  const auto* w = report.find("work");
  CHECK(w->calls == 2);
  CHECK(w->threads == 2);
  CHECK(w->host.min_ns == 10);
  CHECK(w->host.max_ns == 30);
}

// The range tree's inline common paths (begin_common/end_common, what a scope's enter and exit try
// first): which cases they take and which they decline, that they build the same tree as
// begin()/end(), and that they publish instance ids.
//
// Never: a session, a clock or a second thread; the tree is driven directly, as a scope drives it.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "model_fixture.hpp"

using cuscope::Report;
using cuscope::model::ThreadTree;

using Fixture = cuscope_test::ModelFixture;

// The inline common paths (begin_common/end_common, what a scope's enter and exit try first) must
// record exactly what begin()/end() record, and decline, having done nothing, every other case.

TEST_CASE("the common begin takes only a known child of the innermost range", "[tree][hotpath]") {
  Fixture f;
  f.forest->record_instances = false;
  f.forest->max_depth = 3;
  const std::uint32_t a = f.id("a"), b = f.id("b"), c = f.id("c");
  ThreadTree::Token tok{};
  CHECK_FALSE(f.tree->begin_common(a, 0, &tok));  // first visit: begin() makes the node
  auto ta = f.tree->begin(a, 0);
  auto tb = f.tree->begin(b, 1);
  auto tc = f.tree->begin(c, 2);
  f.tree->end(tc.depth, 3);
  f.tree->end(tb.depth, 4);
  f.tree->end(ta.depth, 10);
  f.forest->max_depth = 2;
  REQUIRE(f.tree->begin_common(a, 20, &tok));  // the root's hint is "a" now
  const ThreadTree::Token ta2 = tok;
  CHECK(ta2.depth == 1);
  CHECK(ta2.tag != 0);
  CHECK(ta2.tag != ta.tag);
  CHECK(ta2.instance == ta.instance + 3);  // a, b, c entered since
  CHECK_FALSE(ta2.reentry);
  const std::uint32_t da = ta2.depth;
  CHECK_FALSE(f.tree->begin_common(a, 25, &tok));  // direct recursion: begin() re-enters
  REQUIRE(f.tree->begin_common(b, 25, &tok));
  const std::uint32_t db = tok.depth;
  CHECK(db == 2);
  CHECK_FALSE(f.tree->begin_common(c, 30, &tok));  // depth 2 is the maximum: begin() counts it
  CHECK(f.tree->open_depth() == 2);
  CHECK_FALSE(f.tree->end_common(1, 40));  // not the innermost
  CHECK(f.tree->end_common(db, 40));
  f.forest->record_instances = true;
  CHECK_FALSE(f.tree->begin_common(b, 45, &tok));  // instance ids: begin() writes the slot
  f.forest->record_instances = false;
  f.tree->new_owner();
  CHECK_FALSE(f.tree->begin_common(b, 45, &tok));  // a new owner: begin() counts the thread
  f.tree->end(f.tree->begin(b, 45).depth, 50);
  REQUIRE(f.tree->begin_common(b, 55, &tok));
  CHECK(tok.depth == 2);
  CHECK(f.tree->end_common(2, 60));
  CHECK(f.tree->end_common(da, 70));
  CHECK_FALSE(f.tree->end_common(1, 80));  // nothing open
  CHECK(f.tree->open_depth() == 0);
  const Report r = f.report();
  CHECK(r.find("a")->calls == 2);
  CHECK(r.find("a")->host.total_ns == 60);
  CHECK(r.find("a")->host_self_ns == 32);  // (10 - 3) + (50 - 25)
  CHECK(r.find("a")->threads == 1);
  CHECK(r.find("a/b")->calls == 4);
  CHECK(r.find("a/b")->threads == 2);
  CHECK(r.find("a/b")->host.total_ns == 28);
  CHECK(r.find("a/b")->host.min_ns == 3);
  CHECK(r.find("a/b")->host.max_ns == 15);
  CHECK(r.find("a/b/c")->calls == 1);
  CHECK(r.diagnostics.depth_overflows == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("the common end declines re-entered frames, overflow above and ends posted elsewhere",
          "[tree][hotpath]") {
  Fixture f;
  f.forest->record_instances = false;
  SECTION("a re-entered frame") {
    auto x = f.begin("x", 0);
    f.begin("x", 10);
    CHECK_FALSE(f.tree->end_common(x.depth, 20));
    f.tree->end(x.depth, 20);  // the re-entry
    CHECK(f.tree->end_common(x.depth, 30));
    CHECK(f.report().find("x")->calls == 2);
    CHECK(f.report().find("x")->host.total_ns == 30);
  }
  SECTION("an entry past the maximum depth still open") {
    f.forest->max_depth = 1;
    auto x = f.begin("x", 0);
    auto y = f.begin("y", 10);
    REQUIRE(y.depth == ThreadTree::kOverflowDepth);
    CHECK_FALSE(f.tree->end_common(x.depth, 20));
    f.tree->end(y.depth, 20);
    CHECK(f.tree->end_common(x.depth, 30));
    CHECK(f.report().diagnostics.depth_overflows == 1);
    CHECK(f.report().diagnostics.unbalanced_ends == 0);
  }
  SECTION("an end posted by another thread, taken by the owner") {
    auto x = f.begin("x", 0);
    auto y = f.begin("y", 10);
    REQUIRE(f.tree->post_remote_end(x.depth, x.tag, 0, 50));
    ThreadTree::RemoteEnd e{};
    CHECK_FALSE(f.tree->close_remote(&e));  // y is innermost: x waits
    CHECK_FALSE(f.tree->end_common(y.depth, 80));
    f.tree->end(y.depth, 80);
    REQUIRE(f.tree->close_remote(&e));
    ThreadTree::Token tok{};
    REQUIRE(f.tree->begin_common(f.id("x"), 90, &tok));
    CHECK(tok.depth == 1);
    CHECK(f.tree->end_common(1, 95));
    CHECK(f.report().find("x")->host.total_ns == 55);
    CHECK(f.report().find("x/y")->host.total_ns == 70);
  }
}

TEST_CASE("the common paths and begin/end build the same tree", "[tree][hotpath]") {
  // The same entries on two trees: one through begin()/end() only, one trying the common paths
  // first as a scope does. Siblings alternate, recursion, overflow, an unbalanced end.
  Fixture plain, common;
  for (Fixture* f : {&plain, &common}) {
    f->forest->record_instances = false;
    f->forest->max_depth = 3;
  }
  const char* names[] = {"step", "fwd", "attn", "mlp", "deep", "fwd"};
  const bool use_common[] = {false, true};
  std::string json[2];
  Fixture* fixtures[] = {&plain, &common};
  for (int k = 0; k < 2; ++k) {
    Fixture& f = *fixtures[k];
    auto enter = [&](const char* name, std::uint64_t t) {
      ThreadTree::Token tok{};
      if (use_common[k] && f.tree->begin_common(f.id(name), t, &tok)) return tok.depth;
      return f.tree->begin(f.id(name), t).depth;
    };
    auto leave = [&](std::uint32_t depth, std::uint64_t t) {
      if (!use_common[k] || !f.tree->end_common(depth, t)) f.tree->end(depth, t);
    };
    std::uint64_t t = 0;
    for (int i = 0; i < 50; ++i) {
      const std::uint32_t step = enter(names[0], t += 3);
      const std::uint32_t fwd = enter(names[1], t += 5);
      const std::uint32_t rec = enter(names[5], t += 1);  // fwd inside fwd: direct recursion
      leave(rec, t += 2);
      for (int j = 0; j < 3; ++j) {
        const std::uint32_t child = enter(names[2 + (i + j) % 2], t += 7);
        const std::uint32_t deep = enter(names[4], t += 1);  // depth 4: past the maximum
        leave(deep, t += 1);
        leave(child, t += 11 + std::uint64_t(i % 5));
      }
      if (i % 10 == 9) enter(names[2], t += 1);  // never ended here: closed by fwd's end
      leave(fwd, t += 13);
      leave(step, t += 17);
    }
    json[k] = cuscope::format_json(f.report());
  }
  CHECK(common.report().find("step/fwd/attn")->calls == 75);
  CHECK(common.report().diagnostics.unbalanced_ends == 5);
  CHECK(common.report().diagnostics.depth_overflows == 150);
  CHECK(json[0] == json[1]);
}

TEST_CASE("siblings entered in turn take the common begin from their second round on", "[tree][hotpath]") {
  Fixture f;
  f.forest->record_instances = false;
  const std::uint32_t layer = f.id("layer");
  const std::uint32_t ids[] = {f.id("q"), f.id("k"), f.id("v")};
  const auto l = f.tree->begin(layer, 0);
  std::uint64_t t = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3; ++i) {
      ThreadTree::Token tok{};
      // Round 0 makes the nodes; in round 1 the first sibling follows no one yet (its turn
      // after "v" is learnt then); from round 2 on every entry is the common one.
      const bool expect_common = round == 2 || (round == 1 && i > 0);
      const bool common = f.tree->begin_common(ids[i], t, &tok);
      CHECK(common == expect_common);
      if (!common) tok = f.tree->begin(ids[i], t);
      CHECK(tok.depth == 2);
      CHECK(f.tree->end_common(tok.depth, t + 10 + std::uint64_t(i)));
      t += 100;
    }
  }
  f.tree->end(l.depth, t);
  const Report r = f.report();
  CHECK(r.find("layer")->children.size() == 3);
  CHECK(r.find("layer/q")->calls == 3);
  CHECK(r.find("layer/q")->host.total_ns == 30);
  CHECK(r.find("layer/k")->host.total_ns == 33);
  CHECK(r.find("layer/v")->calls == 3);
  CHECK(r.find("layer/v")->host.total_ns == 36);
  CHECK(r.find("layer")->host_self_ns == 900 - 99);
}

TEST_CASE("the common begin publishes instance ids once the thread's ring exists", "[tree][hotpath]") {
  Fixture f;
  f.forest->record_instances = true;
  const std::uint32_t a = f.id("a"), b = f.id("b");
  ThreadTree::Token tok{};
  CHECK_FALSE(f.tree->begin_common<true>(a, 0, &tok));  // no node yet, and no ring
  const auto ta = f.tree->begin(a, 0);  // makes the node and the instance ring
  const auto tb = f.tree->begin(b, 1);
  f.tree->end(tb.depth, 2);
  REQUIRE(f.tree->begin_common<true>(b, 3, &tok));
  CHECK(tok.instance == tb.instance + 1);
  cuscope::model::Node* node = nullptr;
  std::uint64_t parent = 0;
  REQUIRE(f.forest->resolve_instance(tok.instance, &node, &parent));
  CHECK(node == f.forest->node_for_testing(tb.instance));
  CHECK(parent == ta.instance);
  CHECK(f.tree->end_common(tok.depth, 5));
  f.tree->end(ta.depth, 6);
  REQUIRE(f.tree->begin_common<true>(a, 7, &tok));  // a top-level call: no parent
  REQUIRE(f.forest->resolve_instance(tok.instance, &node, &parent));
  CHECK(parent == 0);
  CHECK(f.forest->node_for_testing(tok.instance) == f.forest->node_for_testing(ta.instance));
  CHECK(f.tree->end_common(tok.depth, 8));
  CHECK(f.report().find("a/b")->calls == 2);
}

// The range tree across threads: trees of several threads merged by path (the slowest call's
// ordinal among them), a tree handed to a new thread, ends posted by another thread and when they
// take effect, and the bound on trees; fed with range begin/end events directly.
//
// Never: a session or a clock; never a thread of its own (the trees' owners are played in turn on
// the test's thread).
#include <catch2/catch.hpp>
#include <cstdint>

#include "model_fixture.hpp"
#include "range_tree_kit.hpp"

using cuscope::Report;
using cuscope::model::ThreadTree;
using cuscope_test::range_tree_kit::calls;

using Fixture = cuscope_test::ModelFixture;

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

TEST_CASE("over several threads, the slowest call's ordinal is that of the thread with the longest",
          "[tree]") {
  Fixture f;
  ThreadTree* other = f.forest->make_tree();
  calls(f, f.tree, "work", {40, 10, 10, 10});  // its longest: the 1st, 40 ns
  calls(f, other, "work", {10, 10, 60, 10});   // its longest: the 3rd, 60 ns
  const Report report = f.report();
  const auto* w = report.find("work");
  REQUIRE(w != nullptr);
  CHECK(w->host.count == 8);
  CHECK(w->host.max_ns == 60);
  CHECK(w->host.max_call == 3);
  // Equal maxima on both: the thread merged first (the first tree made) keeps its ordinal.
  calls(f, f.tree, "work", {60});
  const Report again = f.report();
  CHECK(again.find("work")->host.max_call == 5);
}

TEST_CASE("a tree handed to a new thread counts that thread once per range", "[tree]") {
  Fixture f;
  for (int owner = 0; owner < 3; ++owner) {
    if (owner > 0) f.tree->new_owner();
    for (int i = 0; i < 5; ++i) {
      auto w = f.begin("work", 0);
      if (owner == 2) f.end(f.begin("only_third", 0), 1);
      f.end(w, 2);
    }
  }
  const Report r = f.report();
  CHECK(r.find("work")->threads == 3);
  CHECK(r.find("work")->calls == 15);
  CHECK(r.find("work/only_third")->threads == 1);
}

TEST_CASE("an end posted by another thread closes the frame at the owner's next boundary", "[tree]") {
  Fixture f;
  auto x = f.begin("x", 100);
  CHECK(f.tree->post_remote_end(x.depth, x.tag, ThreadTree::kRemotePushed, 250));
  CHECK_FALSE(f.tree->post_remote_end(x.depth, x.tag, 0, 260));  // already ended
  ThreadTree::RemoteEnd e{};
  REQUIRE(f.tree->close_remote(&e));
  CHECK(e.depth == 1);
  CHECK(e.bits == ThreadTree::kRemotePushed);
  CHECK_FALSE(f.tree->close_remote(&e));
  CHECK_FALSE(f.tree->post_remote_end(x.depth, x.tag, 0, 270));  // closed: stale
  f.end(f.begin("after", 300), 400);
  const Report r = f.report();
  CHECK(r.find("x")->calls == 1);
  CHECK(r.find("x")->host.total_ns == 150);
  CHECK(r.find("after")->calls == 1);
  CHECK(r.find("x/after") == nullptr);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("a frame ended elsewhere below an open one closes once that one ends", "[tree]") {
  Fixture f;
  auto x = f.begin("x", 0);
  auto y = f.begin("y", 10);
  REQUIRE(f.tree->post_remote_end(x.depth, x.tag, 0, 50));
  ThreadTree::RemoteEnd e{};
  CHECK_FALSE(f.tree->close_remote(&e));  // y is innermost: x waits
  f.end(y, 80);
  REQUIRE(f.tree->close_remote(&e));
  CHECK(e.depth == 1);
  f.end(f.begin("z", 90), 95);
  const Report r = f.report();
  CHECK(r.find("x")->host.total_ns == 50);
  CHECK(r.find("x/y")->host.total_ns == 70);
  CHECK(r.find("z")->calls == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

TEST_CASE("a stale end from another thread does not touch a later frame at that depth", "[tree]") {
  Fixture f;
  auto x = f.begin("x", 0);
  f.end(x, 10);
  auto y = f.begin("y", 20);
  CHECK(y.tag != x.tag);
  CHECK_FALSE(f.tree->post_remote_end(x.depth, x.tag, 0, 30));
  ThreadTree::RemoteEnd e{};
  CHECK_FALSE(f.tree->close_remote(&e));
  f.end(y, 40);
  CHECK(f.report().find("y")->host.total_ns == 20);
}

TEST_CASE("trees are made lock-free up to the limit, then refused", "[tree]") {
  Fixture f;
  f.forest->max_trees = 3;
  CHECK(f.forest->make_tree() != nullptr);
  CHECK(f.forest->make_tree() != nullptr);
  CHECK(f.forest->full());
  CHECK(f.forest->make_tree() == nullptr);
  int trees = 0;
  f.forest->for_each_tree([&](const ThreadTree&) { ++trees; });
  CHECK(trees == 3);
}

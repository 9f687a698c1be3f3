// The range tree: nesting, siblings, recursion, depth limits and unbalanced ends, fed with range
// begin/end events directly (no session, no clock).
#include <catch2/catch.hpp>
#include <initializer_list>
#include <string>

#include "model_fixture.hpp"

using cuscope::Report;
using cuscope::model::ThreadTree;

using Fixture = cuscope_test::ModelFixture;

namespace {

// Enters and leaves `name` on `tree` once per duration, 1 µs apart.
void calls(Fixture& f, ThreadTree* tree, const char* name, std::initializer_list<std::uint64_t> durations) {
  std::uint64_t t = 0;
  for (std::uint64_t d : durations) {
    auto k = tree->begin(f.id(name), t);
    tree->end(k.depth, t + d);
    t += 1000;
  }
}

}  // namespace

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

TEST_CASE("the slowest call is known by its ordinal; of equal maxima the first", "[tree]") {
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

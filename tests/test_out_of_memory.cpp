// Out of memory on a scope's first visit of a path: the entry is not recorded but counted
// (unrecorded_scopes), the program goes on, and the next entry, once memory returns, is recorded.
//
// Its own executable: it replaces the global operator new with one that fails, on the test's own
// thread only, while a FailAllocations is alive. Never: fail an allocation of another thread (the
// session's collector) or of Catch2 outside that window.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <new>
#include <thread>

#include "model_fixture.hpp"
#include "session_fixture.hpp"

namespace {

thread_local bool t_fail_allocations = false;

// While alive, every allocation of the calling thread throws std::bad_alloc.
struct FailAllocations {
  FailAllocations() { t_fail_allocations = true; }
  ~FailAllocations() { t_fail_allocations = false; }
  FailAllocations(const FailAllocations&) = delete;
  FailAllocations& operator=(const FailAllocations&) = delete;
};

void* allocate(std::size_t bytes, std::size_t alignment) {
  if (t_fail_allocations) throw std::bad_alloc();
  if (bytes == 0) bytes = 1;
  void* p = nullptr;
  if (alignment <= alignof(std::max_align_t)) {
    p = std::malloc(bytes);
  } else if (posix_memalign(&p, alignment, bytes) != 0) {
    p = nullptr;
  }
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void* allocate_or_null(std::size_t bytes, std::size_t alignment) noexcept {
  try {
    return allocate(bytes, alignment);
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
}

}  // namespace

// Every form, so that each allocation and its release are ours (a sanitizer's own nothrow form
// would be paired with our free).
void* operator new(std::size_t bytes) { return allocate(bytes, alignof(std::max_align_t)); }
void* operator new[](std::size_t bytes) { return allocate(bytes, alignof(std::max_align_t)); }
void* operator new(std::size_t bytes, std::align_val_t a) {
  return allocate(bytes, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t bytes, std::align_val_t a) {
  return allocate(bytes, static_cast<std::size_t>(a));
}
void* operator new(std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, alignof(std::max_align_t));
}
void* operator new[](std::size_t bytes, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, alignof(std::max_align_t));
}
void* operator new(std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t bytes, std::align_val_t a, const std::nothrow_t&) noexcept {
  return allocate_or_null(bytes, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using cuscope::model::Forest;
using cuscope::model::Node;
using cuscope::model::ThreadTree;
using Fixture = cuscope_test::ModelFixture;

TEST_CASE(
    "range tree: out of memory on a first visit records nothing, counts the entry, and the tree goes on",
    "[oom]") {
  Fixture f;
  f.forest->record_instances = false;  // the node alone is new
  Forest& forest = *f.forest;
  ThreadTree* tree = f.tree;
  const std::uint32_t outer = f.id("outer");

  ThreadTree::Token first{};
  {
    FailAllocations off;
    first = tree->begin(outer, 100);  // a fresh tree: its child index and its first node block
  }
  CHECK(first.depth == 0);
  CHECK(first.instance == cuscope::model::kNoInstance);
  CHECK(forest.unrecorded_scopes.load() == 1);
  CHECK(tree->open_depth() == 0);
  CHECK(tree->root().first_child.load() == nullptr);

  // Memory is back: the same path is recorded.
  const ThreadTree::Token again = tree->begin(outer, 1'000);
  REQUIRE(again.depth == 1);
  tree->end(again.depth, 4'000);
  const Node* node = tree->root().first_child.load();
  REQUIRE(node != nullptr);
  CHECK(node->name_id == outer);
  CHECK(node->calls.get() == 1);
  CHECK(node->host.total_ns.get() == 3'000);
  CHECK(tree->unbalanced_ends.get() == 0);
}

TEST_CASE(
    "range tree: out of memory for the instance ring records nothing, and the next entry has an instance",
    "[oom]") {
  Fixture f;
  f.forest->record_instances = false;  // until the ring is what is new, below
  Forest& forest = *f.forest;
  ThreadTree* tree = f.tree;
  const std::uint32_t outer = f.id("outer");
  const std::uint32_t inner = f.id("inner");
  const ThreadTree::Token seen = tree->begin(outer, 0);  // the path exists: only the ring is new
  tree->end(seen.depth, 10);
  const ThreadTree::Token open = tree->begin(outer, 100);
  REQUIRE(open.depth == 1);

  forest.record_instances = true;
  ThreadTree::Token lost{};
  {
    FailAllocations off;
    lost = tree->begin(inner, 200);  // a new path under "outer", and the first instance ring
  }
  CHECK(lost.depth == 0);
  CHECK(lost.instance == cuscope::model::kNoInstance);
  CHECK(forest.unrecorded_scopes.load() == 1);
  CHECK(tree->open_depth() == 1);  // "outer" stays open, and closes normally

  const ThreadTree::Token found = tree->begin(inner, 300);
  REQUIRE(found.depth == 2);
  CHECK(forest.node_for_testing(found.instance) == tree->innermost());
  tree->end(found.depth, 400);
  tree->end(open.depth, 500);
  const Node* outer_node = tree->root().first_child.load();
  REQUIRE(outer_node != nullptr);
  CHECK(outer_node->calls.get() == 2);
  const Node* inner_node = outer_node->first_child.load();
  REQUIRE(inner_node != nullptr);
  CHECK(inner_node->name_id == inner);
  CHECK(inner_node->calls.get() == 1);
  CHECK(tree->unbalanced_ends.get() == 0);
}

namespace {

void first_visit() { CUSCOPE_SCOPE("oom_first_visit"); }

}  // namespace

TEST_CASE("a scope whose first visit runs out of memory is counted unrecorded, and the program goes on",
          "[oom]") {
  cuscope_test::Session session;
  first_visit();  // interns the site's name, on this thread's tree
  std::thread([] {
    cuscope::count("oom_attach", 1);  // attaches the thread: its state and a fresh tree
    {
      FailAllocations off;
      first_visit();  // the fresh tree's first path: before the fix, std::terminate
    }
    first_visit();
  }).join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.unrecorded_scopes == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  const cuscope::RangeStats* range = r.find("oom_first_visit");
  REQUIRE(range != nullptr);
  CHECK(range->calls == 2);  // the main thread's and the thread's second; not the lost one
}

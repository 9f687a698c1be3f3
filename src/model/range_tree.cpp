// model/range_tree.cpp — building the per-thread range trees. begin/end are the hot path:
// no lock and no allocation once a path has been seen.
#include "model/range_tree.hpp"

#include <algorithm>
#include <new>

namespace cuscope::model {
namespace {

static_assert(std::is_trivially_destructible_v<Node>, "nodes live in raw blocks, never destroyed one by one");

constexpr std::uint64_t kTagMask = ThreadTree::kMaxTag;
constexpr std::uint64_t kRemoteEnded = std::uint64_t{1} << 13;
constexpr unsigned kRemoteBitsShift = 14;
constexpr unsigned kElapsedShift = 16;
constexpr std::uint64_t kMaxElapsed = (std::uint64_t{1} << (64 - kElapsedShift)) - 1;

std::size_t child_hash(const Node* parent, std::uint32_t name_id) {
  std::uint64_t h = (reinterpret_cast<std::uintptr_t>(parent) >> 3) * 0x9E3779B97F4A7C15ull;
  h ^= name_id * 0xC2B2AE3D27D4EB4Full;
  return static_cast<std::size_t>(h ^ (h >> 29));
}

}  // namespace

ThreadTree::ThreadTree(Forest& forest, std::uint32_t slot)
    : forest_(forest), slot_(slot), root_(0, 0, nullptr, 0) {
  frames_[0].node.store(&root_, std::memory_order_relaxed);
}

ThreadTree::~ThreadTree() { delete[] instances_.load(std::memory_order_relaxed); }

Node* ThreadTree::child(Node* parent, std::uint32_t name_id) {
  Node* const hint = parent->hint;
  if (hint != nullptr && hint->name_id == name_id) return hint;
  Node* found = nullptr;
  if (hint != nullptr && hint->after != nullptr && hint->after->name_id == name_id) {
    parent->hint = hint->after;
    return hint->after;
  }
  if (children_ != nullptr) {
    for (std::size_t i = child_hash(parent, name_id) & children_mask_;; i = (i + 1) & children_mask_) {
      Node* c = children_[i];
      if (c == nullptr) break;
      if (c->parent == parent && c->name_id == name_id) {
        found = c;
        break;
      }
    }
  }
  if (found == nullptr) found = make_child(parent, name_id);
  if (hint != nullptr) hint->after = found;  // siblings entered in turn find each other next time
  parent->hint = found;
  return found;
}

void ThreadTree::index_child(Node* n) {
  std::size_t i = child_hash(n->parent, n->name_id) & children_mask_;
  while (children_[i] != nullptr) i = (i + 1) & children_mask_;
  children_[i] = n;
}

Node* ThreadTree::make_child(Node* parent, std::uint32_t name_id) {
  // Grow first (at most half full), so a failed allocation leaves the tree as it was.
  if ((children_used_ + 1) * 2 > children_mask_ + 1 || children_ == nullptr) {
    const std::size_t capacity = children_ == nullptr ? 64 : (children_mask_ + 1) * 2;
    auto grown = std::make_unique<Node*[]>(capacity);  // value-initialized: all null
    std::unique_ptr<Node*[]> old = std::move(children_);
    const std::size_t old_capacity = old ? children_mask_ + 1 : 0;
    children_ = std::move(grown);
    children_mask_ = capacity - 1;
    for (std::size_t i = 0; i < old_capacity; ++i) {
      if (old[i] != nullptr) index_child(old[i]);
    }
  }
  if (block_used_ == NodeBlock::kNodes) {
    node_blocks_.push_back(std::make_unique<NodeBlock>());
    block_used_ = 0;
  }
  void* where = node_blocks_.back()->bytes + sizeof(Node) * block_used_++;
  Node* n = new (where) Node(name_id, forest_.next_node_id(), parent, parent->depth + 1);
  index_child(n);
  ++children_used_;
  if (parent->last_child != nullptr) {
    parent->last_child->next_sibling.store(n, std::memory_order_release);
  } else {
    parent->first_child.store(n, std::memory_order_release);
  }
  parent->last_child = n;
  return n;
}

InstanceSlot* ThreadTree::instance_ring() {
  InstanceSlot* ring = instances_.load(std::memory_order_relaxed);
  if (ring == nullptr) {
    ring = new InstanceSlot[kInstanceRing];
    instances_.store(ring, std::memory_order_release);
  }
  return ring;
}

ThreadTree::Token ThreadTree::begin(std::uint32_t name_id, std::uint64_t now_ns) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  const std::uint64_t slot_bits = std::uint64_t{slot_} << kInstanceSeqBits;
  Frame& top = frames_[d];  // the root's at d == 0
  Node* parent = top.node.load(std::memory_order_relaxed);
  if (overflow_open_ == 0 && d > 0 && parent->name_id == name_id) {
    // Direct recursion re-enters the open frame and shares its instance: no depth used.
    top.reentries.store(top.reentries.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
    parent->recursive_calls.add(1);
    return {d, slot_bits | top.seq, top.tag, true};
  }
  if (overflow_open_ > 0 || d >= forest_max_depth(forest_)) {
    ++overflow_open_;
    depth_overflows.add(1);
    return {kOverflowDepth, d ? (slot_bits | top.seq) : kNoInstance};
  }
  // A first visit allocates (the child index, a node block, the instance ring): out of memory
  // there leaves the tree as it was, and the entry goes unrecorded, counted, instead of ending the
  // program.
  const bool instances = forest_.record_instances.load(std::memory_order_relaxed);
  InstanceSlot* ring = nullptr;
  Node* node = nullptr;
  try {
    if (instances) ring = instance_ring();
    node = child(parent, name_id);
  } catch (const std::bad_alloc&) {
    forest_.unrecorded_scopes.fetch_add(1, std::memory_order_relaxed);
    return {0, kNoInstance};
  }
  if (node->owner_generation != generation_) {
    node->owner_generation = generation_;
    node->threads.add(1);
  }
  next_tag_ = next_tag_ == kMaxTag ? 1 : next_tag_ + 1;
  Frame& f = frames_[d + 1];
  f.node.store(node, std::memory_order_relaxed);
  f.start_ns.store(now_ns, std::memory_order_relaxed);
  f.children_ns = 0;
  f.seq = next_seq_++;
  f.tag = next_tag_;
  f.remote_pending = false;
  f.remote_bits = 0;
  f.remote_end_ns = 0;
  if (ring != nullptr) {
    publish_instance(ring, f.seq, node, d ? top.seq : 0);
  }
  f.remote.store(f.tag, std::memory_order_release);
  depth_.store(d + 1, std::memory_order_release);
  return {d + 1, slot_bits | f.seq, f.tag, false};
}

void ThreadTree::close_top(std::uint64_t now_ns, bool timed) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  Frame& f = frames_[d];
  const std::uint32_t reentered = f.reentries.load(std::memory_order_relaxed);
  if (timed) {
    record_close(d, now_ns);
  } else {
    unbalanced_ends.add(1 + reentered);
  }
  if (reentered != 0) f.reentries.store(0, std::memory_order_relaxed);
  if (f.remote_pending) {
    f.remote_pending = false;
    --remote_waiting_;
  }
  f.remote.store(0, std::memory_order_relaxed);
  depth_.store(d - 1, std::memory_order_relaxed);
}

void ThreadTree::end(std::uint32_t depth, std::uint64_t now_ns) {
  if (depth == kOverflowDepth) {
    if (overflow_open_ > 0) {
      --overflow_open_;
    } else {
      unbalanced_ends.add(1);
    }
    return;
  }
  std::uint32_t d = depth_.load(std::memory_order_relaxed);
  if (depth == 0 || depth > d) {  // already closed as unbalanced, or never opened here
    unbalanced_ends.add(1);
    return;
  }
  if (overflow_open_ > 0) {
    unbalanced_ends.add(overflow_open_);
    overflow_open_ = 0;
  }
  for (; d > depth; --d) close_top(now_ns, false);
  Frame& f = frames_[depth];
  if (const std::uint32_t r = f.reentries.load(std::memory_order_relaxed); r > 0) {
    f.reentries.store(r - 1, std::memory_order_relaxed);  // an inner entry: counted, not timed
    f.node.load(std::memory_order_relaxed)->calls.add(1);
    return;
  }
  close_top(now_ns, true);
}

void ThreadTree::end_innermost(std::uint64_t now_ns) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  if (overflow_open_ > 0) {
    --overflow_open_;
  } else if (d > 0) {
    end(d, now_ns);
  } else {
    unbalanced_ends.add(1);
  }
}

void ThreadTree::abandon_open() {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  std::uint64_t open = overflow_open_;
  for (std::uint32_t i = 1; i <= d; ++i) {
    open += 1 + frames_[i].reentries.load(std::memory_order_relaxed);
    frames_[i].reentries.store(0, std::memory_order_relaxed);
    frames_[i].remote_pending = false;
  }
  for (auto& f : frames_) f.remote.store(0, std::memory_order_relaxed);
  for (auto& n : remote_unframed_) n.store(0, std::memory_order_relaxed);
  take_attention(kRemotePostedBit);
  remote_waiting_ = 0;
  unbalanced_ends.add(open);
  overflow_open_ = 0;
  depth_.store(0, std::memory_order_relaxed);
}

bool ThreadTree::post_remote_end(std::uint32_t depth, std::uint32_t tag, std::uint32_t bits,
                                 std::uint64_t now_ns) {
  if (depth == 0 || depth > kHardMaxDepth || tag == 0 || tag > kMaxTag) return false;
  std::atomic<std::uint64_t>& word = frames_[depth].remote;
  std::uint64_t expected = tag;  // that frame, open, not ended yet
  if (word.load(std::memory_order_acquire) != expected) return false;
  const std::uint64_t start = frames_[depth].start_ns.load(std::memory_order_relaxed);
  const std::uint64_t elapsed = std::min(now_ns > start ? now_ns - start : 0, kMaxElapsed);
  const std::uint64_t ended =
      tag | kRemoteEnded | (std::uint64_t{bits & 3} << kRemoteBitsShift) | (elapsed << kElapsedShift);
  if (!word.compare_exchange_strong(expected, ended, std::memory_order_acq_rel)) return false;
  set_attention(kRemotePostedBit);
  return true;
}

void ThreadTree::post_remote_unframed(bool overflow, std::uint32_t bits) {
  remote_unframed_[(overflow ? 2 : 0) + ((bits & kRemotePushed) ? 1 : 0)].fetch_add(
      1, std::memory_order_relaxed);
  set_attention(kRemotePostedBit);
}

void ThreadTree::take_remote_posts() {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  for (std::uint32_t i = 1; i <= d; ++i) {
    Frame& f = frames_[i];
    const std::uint64_t w = f.remote.load(std::memory_order_acquire);
    if (!(w & kRemoteEnded) || (w & kTagMask) != f.tag) continue;
    if (f.remote_pending) {  // a second end of this frame (a re-entry's): taken after the first
      set_attention(kRemotePostedBit);
      continue;
    }
    f.remote_pending = true;
    f.remote_bits = static_cast<std::uint32_t>((w >> kRemoteBitsShift) & 3);
    f.remote_end_ns = f.start_ns.load(std::memory_order_relaxed) + (w >> kElapsedShift);
    ++remote_waiting_;
    f.remote.store(f.tag, std::memory_order_relaxed);  // open again for a further re-entry's end
  }
}

bool ThreadTree::close_remote(RemoteEnd* out) {
  if (remote_posted() && take_attention(kRemotePostedBit) != 0) take_remote_posts();
  // Entries with no frame: overflow ones sit above every frame.
  for (int k = 3; k >= 0; --k) {
    std::atomic<std::uint64_t>& n = remote_unframed_[k];
    if (n.load(std::memory_order_relaxed) == 0) continue;
    n.fetch_sub(1, std::memory_order_relaxed);
    const bool overflow = k >= 2;
    if (overflow && overflow_open_ > 0) --overflow_open_;
    *out = {overflow ? kOverflowDepth : 0, (k & 1) ? std::uint32_t{kRemotePushed} : 0};
    return true;
  }
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  if (remote_waiting_ == 0 || d == 0 || overflow_open_ > 0) return false;
  Frame& f = frames_[d];
  if (!f.remote_pending) return false;
  f.remote_pending = false;
  --remote_waiting_;
  *out = {d, f.remote_bits};
  end(d, f.remote_end_ns);  // a re-entry ends first, then the frame itself
  return true;
}

void ThreadTree::count(std::uint32_t name_id, double amount) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  Node* node = frames_[d].node.load(std::memory_order_relaxed);  // the root at d == 0
  NodeCount* c = node->first_count.load(std::memory_order_relaxed);
  while (c != nullptr && c->name_id != name_id) c = c->next.load(std::memory_order_relaxed);
  if (c == nullptr) {
    counts_.push_back(std::make_unique<NodeCount>(name_id));
    c = counts_.back().get();
    if (node->last_count != nullptr) {
      node->last_count->next.store(c, std::memory_order_release);
    } else {
      node->first_count.store(c, std::memory_order_release);
    }
    node->last_count = c;
  }
  c->value.store(c->value.load(std::memory_order_relaxed) + amount, std::memory_order_relaxed);
}

bool ThreadTree::resolve(std::uint64_t seq, Node** node, std::uint64_t* parent_seq) const {
  const InstanceSlot* ring = instances_.load(std::memory_order_acquire);
  if (ring == nullptr) return false;
  const InstanceSlot& s = ring[seq & (kInstanceRing - 1)];
  const std::uint64_t before = s.seq.load(std::memory_order_acquire);
  Node* n = s.node.load(std::memory_order_relaxed);
  const std::uint64_t p = s.parent_seq.load(std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_acquire);
  if (before != seq || s.seq.load(std::memory_order_relaxed) != seq) return false;
  *node = n;
  *parent_seq = p;
  return true;
}

Forest::Forest(NameTable* shared)
    : owned_names_(shared ? nullptr : std::make_unique<NameTable>()),
      names(shared ? *shared : *owned_names_) {}

Forest::~Forest() {
  const std::uint32_t n = tree_count_.load(std::memory_order_acquire);
  for (std::uint32_t slot = 1; slot <= n; ++slot) delete by_slot_[slot].load(std::memory_order_relaxed);
}

ThreadTree* Forest::make_tree() {
  std::uint32_t n = tree_count_.load(std::memory_order_relaxed);
  do {
    if (n >= max_trees.load(std::memory_order_relaxed) || n + 1 >= kMaxSlots) return nullptr;
  } while (
      !tree_count_.compare_exchange_weak(n, n + 1, std::memory_order_acq_rel, std::memory_order_relaxed));
  auto* tree = new ThreadTree(*this, n + 1);  // on bad_alloc the slot stays empty
  by_slot_[n + 1].store(tree, std::memory_order_release);
  return tree;
}

bool Forest::resolve_instance(std::uint64_t instance, Node** node, std::uint64_t* parent_instance) const {
  const std::uint64_t slot = instance >> kInstanceSeqBits;
  if (slot == 0 || slot >= kMaxSlots) return false;
  const ThreadTree* tree = by_slot_[slot].load(std::memory_order_acquire);
  std::uint64_t parent_seq = 0;
  if (tree == nullptr || !tree->resolve(instance & kInstanceSeqMask, node, &parent_seq)) return false;
  *parent_instance = parent_seq ? ((slot << kInstanceSeqBits) | parent_seq) : kNoInstance;
  return true;
}

}  // namespace cuscope::model

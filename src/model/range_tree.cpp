// model/range_tree.cpp — building the per-thread range trees. begin/end are the hot path:
// no lock and no allocation once a path has been seen.
#include "model/range_tree.hpp"

namespace cuscope::model {

ThreadTree::ThreadTree(Forest& forest, std::uint32_t slot)
    : forest_(forest), slot_(slot), root_(0, 0, nullptr, 0) {}

ThreadTree::~ThreadTree() { delete[] instances_.load(std::memory_order_relaxed); }

Node* ThreadTree::child(Node* parent, std::uint32_t name_id) {
  for (Node* c = parent->first_child.load(std::memory_order_relaxed); c != nullptr;
       c = c->next_sibling.load(std::memory_order_relaxed)) {
    if (c->name_id == name_id) return c;
  }
  Node* n = forest_.make_node(name_id, parent, parent->depth + 1);
  if (parent->last_child != nullptr) {
    parent->last_child->next_sibling.store(n, std::memory_order_release);
  } else {
    parent->first_child.store(n, std::memory_order_release);
  }
  parent->last_child = n;
  return n;
}

ThreadTree::Token ThreadTree::begin(std::uint32_t name_id, std::uint64_t now_ns) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  const std::uint64_t slot_bits = std::uint64_t{slot_} << kInstanceSeqBits;
  if (overflow_open_ > 0 || d >= forest_.max_depth.load(std::memory_order_relaxed) || d >= kHardMaxDepth) {
    ++overflow_open_;
    depth_overflows.add(1);
    return {kOverflowDepth, d ? (slot_bits | frames_[d - 1].seq) : kNoInstance};
  }
  Node* parent = d ? frames_[d - 1].node : &root_;
  Frame& f = frames_[d];
  if (d > 0 && parent->name_id == name_id) {
    // Direct recursion re-enters the open node and shares its instance.
    f = {parent, now_ns, 0, frames_[d - 1].seq, true};
    parent->recursive_calls.add(1);
  } else {
    f = {child(parent, name_id), now_ns, 0, next_seq_++, false};
    if (forest_.record_instances.load(std::memory_order_relaxed)) {
      InstanceSlot* ring = instances_.load(std::memory_order_relaxed);
      if (ring == nullptr) {
        ring = new InstanceSlot[kInstanceRing];
        instances_.store(ring, std::memory_order_release);
      }
      InstanceSlot& s = ring[f.seq & (kInstanceRing - 1)];
      s.seq.store(0, std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_release);
      s.node.store(f.node, std::memory_order_relaxed);
      s.parent_seq.store(d ? frames_[d - 1].seq : 0, std::memory_order_relaxed);
      s.seq.store(f.seq, std::memory_order_release);
    }
  }
  open_[d].store(f.node, std::memory_order_relaxed);
  depth_.store(d + 1, std::memory_order_release);
  return {d + 1, slot_bits | f.seq};
}

void ThreadTree::close_top(std::uint64_t now_ns, bool timed) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed) - 1;
  Frame& f = frames_[d];
  if (timed) {
    const std::uint64_t duration = now_ns > f.start_ns ? now_ns - f.start_ns : 0;
    f.node->calls.add(1);
    if (f.recursive) {
      frames_[d - 1].children_ns += f.children_ns;  // the outer entry of the same node owns them
    } else {
      f.node->host.add(duration);
      f.node->host_children_ns.add(f.children_ns < duration ? f.children_ns : duration);
      if (d > 0) frames_[d - 1].children_ns += duration;
    }
  }
  depth_.store(d, std::memory_order_relaxed);
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
  for (; d > depth; --d) {
    close_top(now_ns, false);
    unbalanced_ends.add(1);
  }
  close_top(now_ns, true);
}

void ThreadTree::end_innermost(std::uint64_t now_ns) {
  if (overflow_open_ > 0) {
    --overflow_open_;
  } else if (depth_.load(std::memory_order_relaxed) > 0) {
    close_top(now_ns, true);
  } else {
    unbalanced_ends.add(1);
  }
}

void ThreadTree::abandon_open() {
  unbalanced_ends.add(depth_.load(std::memory_order_relaxed) + overflow_open_);
  overflow_open_ = 0;
  depth_.store(0, std::memory_order_relaxed);
}

void ThreadTree::count(std::uint32_t name_id, double amount) {
  const std::uint32_t d = depth_.load(std::memory_order_relaxed);
  Node* node = d ? frames_[d - 1].node : &root_;
  NodeCount* c = node->first_count.load(std::memory_order_relaxed);
  while (c != nullptr && c->name_id != name_id) c = c->next.load(std::memory_order_relaxed);
  if (c == nullptr) {
    c = forest_.make_count(name_id);
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

ThreadTree* Forest::make_tree() {
  std::lock_guard lock(mutex_);
  const auto slot = static_cast<std::uint32_t>(trees_.size() + 1);
  if (slot >= kMaxSlots) return nullptr;
  trees_.push_back(std::make_unique<ThreadTree>(*this, slot));
  by_slot_[slot].store(trees_.back().get(), std::memory_order_release);
  return trees_.back().get();
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

NodeCount* Forest::make_count(std::uint32_t name_id) {
  std::lock_guard lock(node_mutex_);
  counts_.push_back(std::make_unique<NodeCount>(name_id));
  return counts_.back().get();
}

Node* Forest::make_node(std::uint32_t name_id, Node* parent, std::uint32_t depth) {
  std::lock_guard lock(node_mutex_);
  nodes_.push_back(std::make_unique<Node>(name_id, next_node_id_++, parent, depth));
  return nodes_.back().get();
}

}  // namespace cuscope::model

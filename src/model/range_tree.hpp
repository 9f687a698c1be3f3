// model/range_tree.hpp — the range tree, one per thread, built from range begin/end events.
//
// Each thread that opens scopes owns a ThreadTree. Only the owner writes it (begin/end), with
// relaxed atomic stores, so the hot path takes no lock; snapshots read it concurrently from any
// thread (children lists are append-only and published with release stores). Memory grows with
// the number of distinct paths, never with the number of entries.
//
// Recursion: a range entered while the innermost open range has the same name re-enters that
// frame (a re-entry count on the frame, counted in recursive_calls; only the outermost entry
// adds host time), so direct recursion uses no depth at any depth. Indirect recursion makes
// deeper paths, up to the tree's max depth; deeper entries are counted and their time stays in
// the deepest recorded range.
//
// Children are found through a per-tree hash of (parent, name), so entering a range costs the
// same with one sibling or 100,000; the append-only sibling lists stay for readers.
//
// Ends from other threads: a scope ended on another thread posts its end into the owner's
// frame (one CAS on a per-depth word that also holds the frame's tag); the owner closes it at
// its next scope boundary, once it is the innermost open entry (see close_remote()).
//
// Instances: every recorded entry gets an instance id (thread slot << 48 | per-thread sequence)
// and an InstanceSlot that GPU records, which carry the id as external correlation, resolve to
// (node, parent instance) later on another thread. Slots are a ring; a stale slot is detected.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "model/names.hpp"

namespace cuscope::model {

/// A counter with a single writer and any number of readers (a plain add on x86).
struct SoloCounter {
  std::atomic<std::uint64_t> value{0};
  void add(std::uint64_t x) {
    value.store(value.load(std::memory_order_relaxed) + x, std::memory_order_relaxed);
  }
  void set(std::uint64_t x) { value.store(x, std::memory_order_relaxed); }
  void sub(std::uint64_t x) {
    value.store(value.load(std::memory_order_relaxed) - x, std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint64_t get() const { return value.load(std::memory_order_relaxed); }
};

/// Duration statistics with a single writer (see SoloCounter).
struct SoloDurations {
  SoloCounter count, total_ns, max_ns;
  SoloCounter min_ns{UINT64_MAX};
  /// Adds `ns`; true when it is a new maximum (strictly longer: the first of equal maxima stays),
  /// so that the caller may note which call it was, in that rare branch only.
  bool add(std::uint64_t ns) {
    count.add(1);
    total_ns.add(ns);
    if (ns < min_ns.get()) min_ns.set(ns);
    if (ns <= max_ns.get()) return false;
    max_ns.set(ns);
    return true;
  }
};

/// A user counter of a node: written by the owner thread only, listed append-only.
struct NodeCount {
  explicit NodeCount(std::uint32_t name) : name_id(name) {}
  const std::uint32_t name_id;
  std::atomic<double> value{0};
  std::atomic<NodeCount*> next{nullptr};
};

struct alignas(64) Node {
  Node(std::uint32_t name_id_, std::uint32_t id_, Node* parent_, std::uint32_t depth_)
      : name_id(name_id_), id(id_), depth(depth_), parent(parent_) {}

  // The first cache line holds what a scope's enter and exit touch (the name, the owner's child
  // hint and host times); the rest is for building the tree and for readers.
  const std::uint32_t name_id;
  std::uint32_t owner_generation = 0;  // owner thread only: the tree generation that counted it
  Node* hint = nullptr;                // owner thread only: the child entered last
  // Written by the owner thread only.
  SoloCounter calls;
  SoloDurations host;
  SoloCounter host_children_ns;  // time of child ranges inside completed outermost entries

  const std::uint32_t id;  ///< unique across threads; 0 for thread roots
  const std::uint32_t depth;
  Node* const parent;
  std::atomic<Node*> first_child{nullptr};
  std::atomic<Node*> next_sibling{nullptr};
  Node* last_child = nullptr;  // owner thread only
  Node* after = nullptr;       // owner thread only: the sibling entered after this one last time
  SoloCounter recursive_calls;
  SoloCounter threads;  // distinct threads that entered it (a reused tree counts each owner)
  // Owner thread: which of the host-timed calls (1-based, host.count at the time) took host.max_ns;
  // 0 before the first. Written only when a new maximum is found, so outside the first line.
  SoloCounter host_max_call;
  // Written by whoever resolves CUDA events (serialized by the session).
  SoloDurations gpu;
  std::atomic<NodeCount*> first_count{nullptr};  // user counters (owner thread appends)
  /// Whether hardware counters are collected inside this range: 0 not decided yet, 1 yes, 2 no
  /// (decided once, by the range profiler, so other ranges pay one load).
  mutable std::atomic<std::uint8_t> counters_choice{0};
  NodeCount* last_count = nullptr;  // owner thread only
};
static_assert(offsetof(Node, host_children_ns) + sizeof(SoloCounter) <= 64,
              "a scope's node data in one line");

inline constexpr std::uint32_t kHardMaxDepth = 256;

/// External correlation ids with a meaning of their own (instance ids have a thread slot >= 1).
inline constexpr std::uint64_t kNoInstance = 0;
inline constexpr std::uint64_t kOutsideWindow = 1;    ///< a scope open during wait/warm-up steps
inline constexpr std::uint64_t kCuscopeInternal = 2;  ///< cuscope's own CUDA calls (event queries)
inline constexpr unsigned kInstanceSeqBits = 48;
inline constexpr std::uint64_t kInstanceSeqMask = (std::uint64_t{1} << kInstanceSeqBits) - 1;

struct InstanceSlot {
  std::atomic<std::uint64_t> seq{0};
  std::atomic<std::uint64_t> parent_seq{0};  ///< 0: a top-level range
  std::atomic<Node*> node{nullptr};
};

class Forest;

class ThreadTree {
 public:
  /// Result of begin(): what end() needs back. `depth` is 1 for a top-level range, and 0 for an
  /// entry not recorded: out of memory on its first visit (counted in the forest's
  /// unrecorded_scopes; the caller ends nothing).
  struct Token {
    std::uint32_t depth;
    std::uint64_t instance;  ///< external correlation id of this entry, kNoInstance if none
    std::uint32_t tag = 0;   ///< the frame's tag (1..kMaxTag) for post_remote_end; 0 on overflow
    bool reentry = false;    ///< direct recursion: re-entered the innermost frame
  };
  static constexpr std::uint32_t kOverflowDepth = UINT32_MAX;
  static constexpr std::uint32_t kInstanceRing = 1u << 14;
  static constexpr std::uint32_t kMaxTag = (1u << 13) - 1;
  /// What the entry did that its owner must undo when another thread ends it (post_remote_*).
  enum RemoteBits : std::uint32_t { kRemotePushed = 1, kRemoteGpu = 2 };
  /// An entry ended on another thread, closed by the owner (close_remote()).
  struct RemoteEnd {
    std::uint32_t depth;  ///< the frame's depth; kOverflowDepth or 0 (unrecorded) for no frame
    std::uint32_t bits;   ///< RemoteBits
  };

  ThreadTree(Forest& forest, std::uint32_t slot);
  ~ThreadTree();
  ThreadTree(const ThreadTree&) = delete;
  ThreadTree& operator=(const ThreadTree&) = delete;

  /// Opens the range `name_id` at `now_ns` under the innermost open range.
  Token begin(std::uint32_t name_id, std::uint64_t now_ns);
  /// begin() of the common entry, inline: the child entered last under the innermost range (or
  /// the sibling that followed that one last time: siblings entered in turn), a new frame below
  /// the maximum depth; no instance ids (kPublish false: it declines while the forest records them),
  /// or its instance id published in the thread's ring (kPublish true, while CUPTI traces: it
  /// declines until begin() has made the ring). Sets *token as begin() would return it and returns
  /// true, or returns false having done nothing: begin() then does it (recursion, overflow, another
  /// child, a new owner, the first instance). Owner thread only; like begin(), it leaves ends posted
  /// from elsewhere to the caller (close_remote()).
  template <bool kPublish = false>
  bool begin_common(std::uint32_t name_id, std::uint64_t now_ns, Token* token) {
    const std::uint32_t d = depth_.load(std::memory_order_relaxed);
    Node* parent = frames_[d].node.load(std::memory_order_relaxed);  // the root's frame at d == 0
    Node* node = parent->hint;
    if (node != nullptr && node->name_id != name_id) node = node->after;
    const Forest& forest = forest_;
    InstanceSlot* ring = nullptr;
    if constexpr (kPublish) ring = instances_.load(std::memory_order_relaxed);
    if (node == nullptr || node->name_id != name_id || parent->name_id == name_id || overflow_open_ != 0 ||
        node->owner_generation != generation_ || d >= forest_max_depth(forest) ||
        (kPublish ? ring == nullptr : forest_records_instances(forest)))
      return false;
    parent->hint = node;
    const std::uint32_t t = next_tag_ == kMaxTag ? 1 : next_tag_ + 1;
    const std::uint64_t seq = next_seq_;
    next_tag_ = t;
    next_seq_ = seq + 1;
    Frame& f = frames_[d + 1];  // its reentries and remote_pending are 0 since it last closed
    f.node.store(node, std::memory_order_relaxed);
    f.start_ns.store(now_ns, std::memory_order_relaxed);
    f.children_ns = 0;
    f.seq = seq;
    f.tag = t;
    if constexpr (kPublish) publish_instance(ring, seq, node, d ? frames_[d].seq : 0);
    f.remote.store(t, std::memory_order_release);
    depth_.store(d + 1, std::memory_order_release);
    *token = {d + 1, (std::uint64_t{slot_} << kInstanceSeqBits) | seq, t, false};
    return true;
  }
  /// Makes the next begin_common() decline (the innermost range forgets which child it entered
  /// last), so that the owner's next entry takes begin()'s way, where it has work to do first
  /// (producers/outside_scopes.hpp: scopes to open in the tree before it). Owner thread only.
  void decline_next_common() {
    frames_[depth_.load(std::memory_order_relaxed)].node.load(std::memory_order_relaxed)->hint = nullptr;
  }
  /// Moves the start of the frame at `depth` (the innermost, just opened) to `now_ns`: the producer
  /// did work of its own after begin() (a CUDA event record, a correlation push) that must not count
  /// in the range's host time. Owner thread only.
  void restart(std::uint32_t depth, std::uint64_t now_ns) {
    frames_[depth].start_ns.store(now_ns, std::memory_order_relaxed);
  }
  /// When the frame at `depth` (1-based, up to open_depth()) began, as its host time counts it.
  /// Owner thread.
  [[nodiscard]] std::uint64_t open_start(std::uint32_t depth) const {
    return frames_[depth].start_ns.load(std::memory_order_relaxed);
  }
  /// Moves the start of every open frame `ns` later: a stretch they were open across that must not
  /// count in their host time (producers/suspended_frames.hpp: the time between two step windows).
  /// Owner thread.
  void shift_open(std::uint64_t ns) {
    for (std::uint32_t d = depth_.load(std::memory_order_relaxed); d > 0; --d) shift_frame(d, ns);
  }
  /// Moves the start of the open frame at `depth` `ns` later (nothing where no frame is open at
  /// `depth`): a stretch it was open across that must not count in its host time. Owner thread.
  void shift_frame(std::uint32_t depth, std::uint64_t ns) {
    if (depth == 0 || depth > depth_.load(std::memory_order_relaxed)) return;
    frames_[depth].start_ns.store(frames_[depth].start_ns.load(std::memory_order_relaxed) + ns,
                                  std::memory_order_relaxed);
  }
  /// Closes the range opened by the begin() that returned `depth`. Ranges opened after it and
  /// still open are closed as unbalanced (counted, not timed).
  void end(std::uint32_t depth, std::uint64_t now_ns);
  /// end() of the common exit, inline: `depth` is the innermost frame, entered once, with no
  /// overflow above it and no end posted from elsewhere. False having done nothing: end() then
  /// does it. Owner thread only.
  bool end_common(std::uint32_t depth, std::uint64_t now_ns) {
    const std::uint32_t d = depth_.load(std::memory_order_relaxed);
    Frame& f = frames_[d];
    if (depth != d || d == 0 || (overflow_open_ | remote_waiting_) != 0 ||
        f.reentries.load(std::memory_order_relaxed) != 0)
      return false;
    record_close(d, now_ns);
    f.remote.store(0, std::memory_order_relaxed);
    depth_.store(d - 1, std::memory_order_relaxed);
    return true;
  }
  /// Closes the innermost open range (the push/pop API); counted as unbalanced when none is open.
  void end_innermost(std::uint64_t now_ns);

  /// Forgets open ranges (when a thread exits with ranges open); they count as unbalanced.
  void abandon_open();
  /// The tree passes to a new thread (its previous owner exited): ranges it enters count as
  /// entered by one more thread. Called under the lock that hands the tree over.
  void new_owner() { ++generation_; }

  /// Another thread ended the entry at `depth` with `tag` at `now_ns` (any thread). False when
  /// that entry is no longer open (it was closed as unbalanced, or its thread has exited).
  bool post_remote_end(std::uint32_t depth, std::uint32_t tag, std::uint32_t bits, std::uint64_t now_ns);
  /// Same for an entry past the maximum depth, or one made while not recording (no frame).
  void post_remote_unframed(bool overflow, std::uint32_t bits);
  /// Owner: whether close_remote() may have work (one relaxed load).
  [[nodiscard]] bool has_remote_ends() const { return remote_waiting_ != 0 || remote_posted(); }
  /// Owner: whether another thread posted an end not taken yet (one relaxed load).
  [[nodiscard]] bool remote_posted() const {
    return (attention_.load(std::memory_order_relaxed) & kRemotePostedBit) != 0;
  }

  /// The attention byte: bit kRemotePostedBit, an end posted from elsewhere (this tree's), and the
  /// producers' bits above it (producers/scope_state.hpp), which this tree only keeps. Any thread
  /// sets and clears bits with atomic operations, so that none is lost to another's. The common
  /// exits decline while any bit is set: one load for all.
  static constexpr std::uint8_t kRemotePostedBit = 1;
  void set_attention(std::uint8_t bits) { attention_.fetch_or(bits, std::memory_order_release); }
  /// Clears `bits`: those of them that were set.
  std::uint8_t take_attention(std::uint8_t bits) {
    return static_cast<std::uint8_t>(
        attention_.fetch_and(static_cast<std::uint8_t>(~bits), std::memory_order_acquire) & bits);
  }
  [[nodiscard]] std::uint8_t attention() const { return attention_.load(std::memory_order_relaxed); }
  /// Owner: whether the common exit must decline (an end posted, or a producer's bit).
  [[nodiscard]] bool exits_decline() const { return attention_.load(std::memory_order_relaxed) != 0; }
  /// Owner: closes the innermost open entry if another thread ended it (timed at that end) and
  /// says what to undo; false when the innermost entry is not one. Call until false.
  bool close_remote(RemoteEnd* out);

  /// Adds `amount` to counter `name_id` of the innermost open range (the root when none).
  /// Allocates once per (range, counter), on its first count.
  void count(std::uint32_t name_id, double amount);

  [[nodiscard]] const Node& root() const { return root_; }
  /// The node open at `depth` (1-based, up to open_depth()); readable from any thread.
  [[nodiscard]] const Node* open_node(std::uint32_t depth) const {
    return frames_[depth].node.load(std::memory_order_relaxed);
  }
  [[nodiscard]] std::uint32_t slot() const { return slot_; }
  [[nodiscard]] std::uint32_t open_depth() const { return depth_.load(std::memory_order_acquire); }
  /// Re-entries (direct recursion) open in the frame at `depth` (1-based); any thread.
  [[nodiscard]] std::uint32_t reentries(std::uint32_t depth) const {
    return frames_[depth].reentries.load(std::memory_order_relaxed);
  }
  /// The instance id of the innermost open frame (kNoInstance when none is open). Owner thread.
  [[nodiscard]] std::uint64_t innermost_instance() const {
    const std::uint32_t d = depth_.load(std::memory_order_relaxed);
    return d ? (std::uint64_t{slot_} << kInstanceSeqBits) | frames_[d].seq : kNoInstance;
  }
  [[nodiscard]] Node* innermost() const {
    const std::uint32_t d = depth_.load(std::memory_order_relaxed);
    return d ? frames_[d].node.load(std::memory_order_relaxed) : nullptr;
  }

  /// The node and parent instance of `instance` if its slot still holds it (any thread).
  bool resolve(std::uint64_t seq, Node** node, std::uint64_t* parent_seq) const;

  SoloCounter depth_overflows;
  SoloCounter unbalanced_ends;

 private:
  /// The timed close of the frame at depth `d` (owner thread): its node's call, host and self
  /// time, and its time as a child of the frame below. What end_common() and close_top() share.
  void record_close(std::uint32_t d, std::uint64_t now_ns) {
    Frame& f = frames_[d];
    const std::uint64_t start = f.start_ns.load(std::memory_order_relaxed);
    const std::uint64_t duration = now_ns > start ? now_ns - start : 0;
    Node* node = f.node.load(std::memory_order_relaxed);
    node->calls.add(1);
    if (node->host.add(duration)) node->host_max_call.set(node->host.count.get());
    node->host_children_ns.add(f.children_ns < duration ? f.children_ns : duration);
    frames_[d - 1].children_ns += duration;  // the root's frame at d == 1: never read
  }
  // One open range, in one cache line. The owner writes it; the atomics are read elsewhere too.
  struct alignas(64) Frame {
    std::atomic<Node*> node{nullptr};        // readers on other threads (open_node)
    std::atomic<std::uint64_t> start_ns{0};  // threads that post an end
    // For an end posted by another thread: tag | kRemoteEnded | bits << 14 | elapsed << 16.
    std::atomic<std::uint64_t> remote{0};
    std::atomic<std::uint32_t> reentries{0};  // direct recursion open in this frame; any reader
    std::uint32_t tag = 0;
    std::uint64_t children_ns = 0;
    std::uint64_t seq = 0;
    std::uint64_t remote_end_ns = 0;
    std::uint32_t remote_bits = 0;  // what that end asks the owner to undo
    bool remote_pending = false;    // ended on another thread, closed when it is innermost
  };
  /// Publishes instance `seq` (its node and its parent's instance, 0 at the top) in the ring, for
  /// resolve() on any thread: the slot is marked empty while it changes.
  static void publish_instance(InstanceSlot* ring, std::uint64_t seq, Node* node, std::uint64_t parent_seq) {
    InstanceSlot& s = ring[seq & (kInstanceRing - 1)];
    s.seq.store(0, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    s.node.store(node, std::memory_order_relaxed);
    s.parent_seq.store(parent_seq, std::memory_order_relaxed);
    s.seq.store(seq, std::memory_order_release);
  }
  static std::uint32_t forest_max_depth(const Forest& forest);
  static bool forest_records_instances(const Forest& forest);
  struct NodeBlock {
    static constexpr std::size_t kNodes = 256;
    alignas(Node) unsigned char bytes[sizeof(Node) * kNodes];
  };
  InstanceSlot* instance_ring();  // made on first need; throws std::bad_alloc
  Node* child(Node* parent, std::uint32_t name_id);
  Node* make_child(Node* parent, std::uint32_t name_id);
  void index_child(Node* n);
  void close_top(std::uint64_t now_ns, bool timed);
  void take_remote_posts();

  Forest& forest_;
  const std::uint32_t slot_;
  Node root_;
  // frames_[d] is the range open at depth d (1-based); frames_[0] is the root's, never closed,
  // so that every frame has a parent frame and the root a frame of its own.
  Frame frames_[kHardMaxDepth + 1];
  std::atomic<std::uint8_t> attention_{0};
  std::atomic<std::uint64_t> remote_unframed_[4] = {};  // [overflow * 2 + pushed]: posted ends
  std::uint32_t remote_waiting_ = 0;                    // owner only: frames with remote_pending
  std::atomic<std::uint32_t> depth_{0};
  std::uint32_t overflow_open_ = 0;
  std::uint32_t generation_ = 1;
  std::uint32_t next_tag_ = 0;
  std::uint64_t next_seq_ = 1;
  std::atomic<InstanceSlot*> instances_{nullptr};  // allocated on first need, never freed early

  // Owner only: nodes and counters live in per-tree blocks; children are found by hash.
  std::vector<std::unique_ptr<NodeBlock>> node_blocks_;
  std::size_t block_used_ = NodeBlock::kNodes;
  std::vector<std::unique_ptr<NodeCount>> counts_;
  std::unique_ptr<Node*[]> children_;  // open addressing on (parent, name_id); null: empty
  std::size_t children_mask_ = 0;
  std::size_t children_used_ = 0;
};

/// All thread trees, the name table and the node registry of one session.
class Forest {
 public:
  /// A forest with its own name table, or sharing `shared` (which must outlive it). Call sites
  /// cache name ids, so a process's sessions share one table.
  explicit Forest(NameTable* shared = nullptr);
  Forest(const Forest&) = delete;
  Forest& operator=(const Forest&) = delete;

 private:
  std::unique_ptr<NameTable> owned_names_;

 public:
  NameTable& names;

  ~Forest();

  /// A new tree, for a thread that opens its first scope; it lives as long as the forest.
  /// Lock-free. Nullptr past max_trees trees (threads reuse the trees of exited threads).
  ThreadTree* make_tree();
  /// Whether make_tree() would fail (lock-free).
  [[nodiscard]] bool full() const {
    return tree_count_.load(std::memory_order_acquire) >= max_trees.load(std::memory_order_relaxed);
  }

  /// Visits every tree (live or released); lock-free, concurrent with make_tree().
  template <class F>
  void for_each_tree(F&& f) const {
    const std::uint32_t n = tree_count_.load(std::memory_order_acquire);
    for (std::uint32_t slot = 1; slot <= n; ++slot) {
      if (const ThreadTree* t = by_slot_[slot].load(std::memory_order_acquire)) f(*t);
    }
  }

  /// Resolves an external correlation id to its node and its parent instance id (0 if none).
  bool resolve_instance(std::uint64_t instance, Node** node, std::uint64_t* parent_instance) const;

  /// The node of a live instance id (tests only; producers use resolve_instance).
  Node* node_for_testing(std::uint64_t instance) const {
    Node* node = nullptr;
    std::uint64_t parent = 0;
    return resolve_instance(instance, &node, &parent) ? node : nullptr;
  }

  /// A fresh node id, unique across the forest's trees (lock-free).
  std::uint32_t next_node_id() { return next_node_id_.fetch_add(1, std::memory_order_relaxed); }

  static constexpr std::uint32_t kMaxSlots = 1u << 16;

  std::atomic<std::uint32_t> max_depth{64};
  std::atomic<bool> record_instances{false};
  /// Live thread trees at most (instance ids hold 16 bits of slot); tests lower it.
  std::atomic<std::uint32_t> max_trees{kMaxSlots - 1};
  /// Trees whose thread exited, waiting for a new thread (kept by the session that hands them).
  std::atomic<std::uint32_t> idle_trees{0};
  /// Scope entries not recorded: their thread found no tree (max_trees threads alive), or their
  /// first visit of a path ran out of memory (ThreadTree::begin()).
  std::atomic<std::uint64_t> unrecorded_scopes{0};

 private:
  std::atomic<std::uint32_t> tree_count_{0};  // slots [1, tree_count_] are claimed
  std::atomic<ThreadTree*> by_slot_[kMaxSlots] = {};
  std::atomic<std::uint32_t> next_node_id_{1};
};

inline std::uint32_t ThreadTree::forest_max_depth(const Forest& forest) {
  const std::uint32_t max = forest.max_depth.load(std::memory_order_relaxed);
  return max < kHardMaxDepth ? max : kHardMaxDepth;
}
inline bool ThreadTree::forest_records_instances(const Forest& forest) {
  return forest.record_instances.load(std::memory_order_relaxed);
}

}  // namespace cuscope::model

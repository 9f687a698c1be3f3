// model/graphs.hpp — which range each CUDA graph node was created in (docs/cuda-graphs.md).
//
// A replayed graph's kernels carry the id of the node that launched them, not a scope: the scope
// open when the node was captured (or added by hand) is known only at creation, on the capturing
// thread, long before any replay. This map keeps node id -> range node (the range tree's Node,
// which lives as long as the forest: instance ids die with the scope, Nodes do not). Clones
// (instantiation, cudaGraphClone, cudaGraphExecUpdate) take their original's range, so the map
// answers for the template's ids and the exec's alike.
//
// Instantiation reports each exec node twice: GRAPHNODE_CREATED (on the instantiating thread, in
// whatever scope is open there) and GRAPHNODE_CLONED from its template node. The clone decides,
// whichever comes first: a creation never overrides what an id already has (CUPTI's node ids are
// unique), and a clone of an unknown original makes its node unknown, not the instantiating scope's.
//
// cudaGraphExecUpdate is not reported as clones (an H100 run, CUDA 13.0: the exec's node ids, which
// kernel records carry, kept the old graph's scope). The adapter reports the update itself
// (GraphExecUpdated, with the API call's correlation id as a fence) and the exec each clone belongs
// to. CUDA pairs the exec's nodes with the new graph's by rules it does not publish, so the map
// re-maps only what needs no pairing: when every node of the new graph was created in one range and
// the counts agree, each of the exec's nodes takes that range; otherwise its later kernels are of
// an unknown node, counted as after an update. Kernels launched before the update (correlation at
// or below the fence) keep the node's range from before; those before an earlier update are unknown.
//
// Bounded: past kMaxNodes the oldest entry makes room, counted as evicted; a kernel of an evicted
// node is then reported under "(unknown node)". Thread-safe with a lock of its own: producers
// call it on the capturing thread, the aggregator looks nodes up under its own lock (this lock is
// taken after it, never before).
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "model/events.hpp"

namespace cuscope::model {

class GraphNodeMap {
 public:
  /// Nodes remembered (a clone is one more node). 2^18 nodes: about 12 MiB at most.
  static constexpr std::size_t kMaxNodes = 1u << 18;

  explicit GraphNodeMap(std::size_t max_nodes = kMaxNodes) : max_nodes_(max_nodes == 0 ? 1 : max_nodes) {}
  GraphNodeMap(const GraphNodeMap&) = delete;
  GraphNodeMap& operator=(const GraphNodeMap&) = delete;

  /// A node id the map already holds (its clone came first) keeps what it has.
  void on(const GraphNodeCreated& e);
  /// A clone of a node not in the map (evicted, or created before tracing) is unknown, even when
  /// its own creation was reported first (then its entry stays, marked unknown).
  void on(const GraphNodeCloned& e);

  /// Ties clones already reported to the exec their instantiation made.
  void on(const GraphExecNodes& e);
  /// An exec update: see the top of this file. An exec none of whose nodes is known is counted.
  void on(const GraphExecUpdated& e);

  /// Whether `node_id` is known now (for launches after its last update); if so, *range is the
  /// range it was created in (nullptr: none).
  bool find(std::uint64_t node_id, const Node** range) const;

  /// What a kernel of `node_id` launched in the API call `correlation` is attributed to.
  struct Lookup {
    bool known = false;
    const Node* range = nullptr;
    bool after_update = false;  ///< unknown because its exec was updated and not re-mapped
    std::uint64_t fence = 0;    ///< the node's last update (0: none): the answer holds above it
    bool current = true;        ///< false: answered for a launch at or before the fence
  };
  [[nodiscard]] Lookup find(std::uint64_t node_id, std::uint64_t correlation) const;

  /// Changes with every change to the map (an insert, an eviction, a node re-created): an answer
  /// of find() read after version() returned v is still right while version() returns v.
  [[nodiscard]] std::uint64_t version() const { return version_.load(std::memory_order_acquire); }

  /// CUPTI attached again (a detach between step windows): its node ids and the correlation ids of
  /// the updates' fences mean nothing any more, so every node is forgotten, counted as evicted (a
  /// later kernel of a graph made before counts under "(unknown node)").
  void forget();
  [[nodiscard]] std::uint64_t evicted() const;
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] std::uint64_t updates_unmapped() const;

 private:
  struct Side {
    const Node* range = nullptr;
    bool known = true;          // false: a clone of an unknown node, or not re-mapped after an update
    bool after_update = false;  // unknown because of an update
  };
  struct Entry {
    Side now;                      // launches after `fence`
    Side before;                   // launches in (prev_fence, fence]
    std::uint64_t fence = 0;       // correlation of the last exec update (0: never updated)
    std::uint64_t prev_fence = 0;  // of the one before: launches at or below it are unknown
    std::uint32_t exec = 0;        // the exec this clone belongs to (0: none known)
  };
  // Sets `node_id` (inserted, or overwritten when `overwrite`); mutex_ held.
  void put(std::uint64_t node_id, Entry entry, bool overwrite);

  const std::size_t max_nodes_;
  mutable std::mutex mutex_;
  absl::flat_hash_map<std::uint64_t, Entry> nodes_;  // guarded by mutex_
  std::deque<std::uint64_t> order_;                  // guarded: ids, oldest first
  std::uint64_t evicted_ = 0;                        // guarded
  std::uint64_t updates_unmapped_ = 0;               // guarded
  std::atomic<std::uint64_t> version_{0};            // written under mutex_
};

}  // namespace cuscope::model

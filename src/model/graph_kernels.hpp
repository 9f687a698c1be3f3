// model/graph_kernels.hpp — a CUDA graph's kernels broken down by the range their node was
// created (captured) in, inside the range that launched the graph (docs/cuda-graphs.md).
//
// Owns the graph node map the producers feed, and a direct-mapped cache of each node's last row
// so that a replay's kernels skip the map's lock and hashing. It never decides the launching range
// (attribution.hpp does). Not thread-safe apart from the node map, which has its own lock.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <vector>

#include "model/graphs.hpp"
#include "model/range_activity.hpp"

namespace cuscope::model {

class GraphKernels {
 public:
  [[nodiscard]] GraphNodeMap& nodes() { return nodes_; }
  [[nodiscard]] const GraphNodeMap& nodes() const { return nodes_; }
  /// Off: graph kernels count in their launching range only, with no breakdown by capture-time
  /// range and nothing counted as of an unknown node (no callbacks, so no node is known).
  void set_breakdown(bool on) { breakdown_ = on; }
  [[nodiscard]] bool breakdown() const { return breakdown_; }

  /// A kernel of graph node `node_id`, launched by API call `correlation` in the range of `a`:
  /// added to a's breakdown by its node's range. Unknown nodes and launches after an exec update
  /// are counted in `diag`.
  void add(RangeActivity& a, std::uint64_t node_id, std::uint64_t correlation, const KernelKey& key,
           std::uint64_t start, std::uint64_t end, std::uint32_t registers, std::uint32_t static_shared,
           std::uint32_t dynamic_shared, Diagnostics& diag);

 private:
  // The last graph kernel of each node id (direct-mapped): a replay runs the same nodes in the same
  // ranges, so most kernels skip the node map's lock and the hashing. Valid while the map's
  // version is the one recorded (no node created, cloned, updated or evicted since), for launches
  // after the node's last exec update.
  struct Hit {
    std::uint64_t node_id = 0;
    std::uint64_t version = 0;
    const RangeActivity* activity = nullptr;
    GraphBreakdown::Row* row = nullptr;
    bool unknown = false;
    bool after_update = false;
    std::uint64_t fence = 0;  // the node's last exec update: the hit holds for launches above it
    KernelKey key{};
    KernelAgg* agg = nullptr;
  };
  static constexpr std::size_t kHits = 4096;

  GraphNodeMap nodes_;
  bool breakdown_ = true;
  std::vector<Hit> hits_;  // kHits once the first graph kernel came
};

}  // namespace cuscope::model

// model/graph_kernels.cpp — graph kernels by capture-time range, behind a cache of each node's row.
#include "model/graph_kernels.hpp"

namespace cuscope::model {

void GraphKernels::add(RangeActivity& a, std::uint64_t node_id, std::uint64_t correlation,
                       const KernelKey& key, std::uint64_t start, std::uint64_t end, std::uint32_t registers,
                       std::uint32_t static_shared, std::uint32_t dynamic_shared, Diagnostics& diag) {
  if (!breakdown_) return;
  if (hits_.empty()) hits_.resize(kHits);
  Hit& cached = hits_[node_id & (kHits - 1)];
  Hit* hit = &cached;
  Hit once;  // a launch at or before the node's last update: answered, not cached
  const std::uint64_t version = nodes_.version();
  if (cached.node_id != node_id || cached.version != version || cached.activity != &a ||
      (cached.fence != 0 && correlation <= cached.fence)) {
    if (!a.graph) a.graph = std::make_unique<GraphBreakdown>();
    const GraphNodeMap::Lookup l = nodes_.find(node_id, correlation);
    GraphBreakdown::Row& row = l.known ? a.graph->known[l.range] : a.graph->unknown;
    if (!l.current) hit = &once;
    *hit = Hit{node_id, version, &a, &row, !l.known, l.after_update, l.fence, key, &row.kernels[key]};
  } else if (!(cached.key == key)) {
    cached.key = key;
    cached.agg = &cached.row->kernels[key];
  }
  if (hit->unknown) diag.graph_kernels_unknown_node += 1;
  if (hit->after_update) diag.graph_kernels_after_update += 1;
  const std::uint64_t ns = elapsed_ns(start, end);
  GraphBreakdown::Row& row = *hit->row;
  row.calls += 1;
  row.ns += ns;
  row.busy.add(start, end);
  hit->agg->count(ns, registers, static_shared, dynamic_shared);
}

}  // namespace cuscope::model

// model/live_memory.cpp — allocations and frees per range, and the live bytes' peaks.
#include "model/live_memory.hpp"

#include <algorithm>

namespace cuscope::model {

void LiveMemory::apply(const MemoryActivity& m, Node* node, RangeActivities& activities) {
  RangeActivity& a = activities.of(node);
  if (m.is_alloc) {
    a.self.alloc_count += 1;
    a.self.alloc_bytes += m.bytes;
    if (live_.size() < kMaxLiveAllocations) live_.insert_or_assign(m.address, Allocation{node, m.bytes});
    a.self_live += static_cast<std::int64_t>(m.bytes);
    a.self.peak_bytes = std::max<std::uint64_t>(
        a.self.peak_bytes, static_cast<std::uint64_t>(std::max<std::int64_t>(a.self_live, 0)));
    for (Node* n = node; n != nullptr && n->id != 0; n = n->parent) {
      RangeActivity& up = activities.of(n);
      up.total_live += static_cast<std::int64_t>(m.bytes);
      up.total_peak = std::max<std::uint64_t>(
          up.total_peak, static_cast<std::uint64_t>(std::max<std::int64_t>(up.total_live, 0)));
    }
    if (node == nullptr) activities.unscoped().total_peak = activities.unscoped().self.peak_bytes;
    return;
  }
  a.self.free_count += 1;
  a.self.free_bytes += m.bytes;
  auto it = live_.find(m.address);
  if (it == live_.end()) return;  // allocated before tracing, or past the bound
  const Allocation alloc = it->second;
  live_.erase(it);
  RangeActivity& owner = activities.of(alloc.node);
  owner.self_live -= static_cast<std::int64_t>(alloc.bytes);
  for (Node* n = alloc.node; n != nullptr && n->id != 0; n = n->parent) {
    activities.of(n).total_live -= static_cast<std::int64_t>(alloc.bytes);
  }
}

}  // namespace cuscope::model

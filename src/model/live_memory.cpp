// model/live_memory.cpp — allocations and frees per range, and the live bytes' peaks.
#include "model/live_memory.hpp"

#include <algorithm>

namespace cuscope::model {

void LiveMemory::apply(const MemoryActivity& m, Node* node, RangeActivities& activities, Diagnostics& diag) {
  RangeActivity& a = activities.of(node);
  if (!m.is_alloc) {
    auto it = live_.find(m.address);
    a.self.free_count += 1;
    // A free whose producer did not say its size (the callbacks: cuMemFree takes an address only)
    // frees what its allocation was booked with.
    a.self.free_bytes += m.bytes != 0 || it == live_.end() ? m.bytes : it->second.bytes;
    // A free larger than the allocation at its address frees those that follow it within its
    // bytes too (one cuMemUnmap of a range mapped in pieces).
    const std::uint64_t end = m.address + m.bytes;
    for (std::uint64_t at = m.address; it != live_.end();) {
      const Allocation alloc = it->second;
      live_.erase(it);
      release(alloc, activities);
      at += alloc.bytes;
      if (alloc.bytes == 0 || at >= end) break;
      it = live_.find(at);
    }
    return;  // not on the books (allocated before tracing, or not tracked): nothing live to take off
  }
  a.self.alloc_count += 1;
  a.self.alloc_bytes += m.bytes;
  if (auto it = live_.find(m.address); it != live_.end()) {
    // Allocated again before its free was seen (the free's record was lost): the old one is gone.
    diag.allocations_untracked += 1;
    release(it->second, activities);
    it->second = Allocation{node, m.bytes};
  } else if (live_.size() < kMaxLiveAllocations) {
    live_.emplace(m.address, Allocation{node, m.bytes});
  } else {
    diag.allocations_untracked += 1;  // the table is full: kept off the books, as its free will be
    return;
  }
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
}

void LiveMemory::release(const Allocation& alloc, RangeActivities& activities) {
  activities.of(alloc.node).self_live -= static_cast<std::int64_t>(alloc.bytes);
  for (Node* n = alloc.node; n != nullptr && n->id != 0; n = n->parent) {
    activities.of(n).total_live -= static_cast<std::int64_t>(alloc.bytes);
  }
}

}  // namespace cuscope::model

// model/live_memory.hpp — GPU memory allocated and freed per range: counts and bytes, the bytes
// still live, and their peak, for the range and (inclusive) its ancestors.
//
// A free is charged to the range that made the allocation, found by address; a free that comes
// without its size (0 bytes: cuMemFree's callback sees only the address) frees the booked size,
// and one larger than the allocation at its address also frees the allocations that follow it,
// end to start, within its size (one cuMemUnmap of a range mapped in pieces).
// The table of live allocations is bounded: an allocation it cannot hold is counted
// (allocations_untracked) and kept out of the live books, so its free, which cannot be found,
// leaves them balanced; an address allocated again before its free was seen closes the old
// allocation first (counted too). Peaks are then lower bounds, and the report says so. It never decides
// attribution (attribution.hpp). Not thread-safe: the aggregator's one consumer at a time.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>

#include "model/events.hpp"
#include "model/range_activity.hpp"
#include "model/range_tree.hpp"

namespace cuscope::model {

class LiveMemory {
 public:
  static constexpr std::size_t kMaxLiveAllocations = 1u << 18;

  /// An allocation or free made in `node` (nullptr: outside every scope); what could not be
  /// followed is counted in `diag`.
  void apply(const MemoryActivity& m, Node* node, RangeActivities& activities, Diagnostics& diag);

 private:
  struct Allocation {
    Node* node;  // nullptr: unscoped
    std::uint64_t bytes;
  };
  // Takes `bytes` off the live books of `node` and its ancestors.
  static void release(const Allocation& alloc, RangeActivities& activities);

  absl::flat_hash_map<std::uint64_t, Allocation> live_;
};

}  // namespace cuscope::model

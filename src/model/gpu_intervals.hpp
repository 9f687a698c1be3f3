// model/gpu_intervals.hpp — where a GPU interval counts: the busy union and span hull of the
// instance that launched it, of every ancestor instance, and of the whole report.
//
// A range's busy time is the union of its work's intervals; its span is the hull of each call's
// work, summed over calls. It never decides attribution (attribution.hpp) or counts records
// (range_activity.hpp). Not thread-safe: the aggregator's one consumer at a time.
#pragma once

#include <cstdint>

#include "model/attribution.hpp"
#include "model/range_activity.hpp"

namespace cuscope::model {

class GpuIntervals {
 public:
  GpuIntervals(Attribution& attribution, RangeActivities& activities)
      : attribution_(attribution), activities_(activities) {}

  /// [start, end) of work that went to `t` (a range or "(unscoped)").
  void spread(const Target& t, std::uint64_t start, std::uint64_t end);
  /// [start, end) of work that went to the instance `inst`, and so to its ancestors.
  void spread_in_range(Instance* inst, std::uint64_t start, std::uint64_t end);

 private:
  [[gnu::noinline]] void spread_to_ancestors(std::uint64_t parent, const RangeActivity& own, std::uint64_t start,
                                             std::uint64_t end);

  Attribution& attribution_;
  RangeActivities& activities_;
};

}  // namespace cuscope::model

// model/gpu_intervals.hpp — where a GPU interval counts: the busy union and span hull of the
// call that launched it, of every ancestor call, and of the whole report.
//
// A range's busy time is the union of its kernels' intervals; a call's span is the hull of its
// kernels, copies and sets (the projected span), summed over calls; a record that ends before it
// starts counts as the instant it starts (0 ns, as its kernel or copy time). Where a step window
// records some stretches and not others, a call open across several windows has one hull per window
// its work ran in, summed: never the unrecorded stretch between them (a record that starts after a
// window began since the hull's end begins a new hull; work the GPU ran after its window's end, before
// the next began, still joins its window's). A call that left the
// attribution table and came back extends no span (counted as gpu_span_records_lost). It never
// decides attribution (attribution.hpp) or counts records (range_activity.hpp). Not thread-safe:
// the aggregator's one consumer at a time.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>

#include "model/attribution.hpp"
#include "model/range_activity.hpp"

namespace cuscope::model {

class GpuIntervals {
 public:
  GpuIntervals(Attribution& attribution, RangeActivities& activities, Diagnostics& diag)
      : attribution_(attribution), activities_(activities), diag_(diag) {}

  /// A kernel's [start, end) that went to `t` (a range or "(unscoped)"): busy time and spans.
  void spread(const Target& t, std::uint64_t start, std::uint64_t end);
  /// A kernel's [start, end) that went to the call `inst`, and so to its ancestors.
  void spread_in_range(Instance* inst, std::uint64_t start, std::uint64_t end) {
    spread_up<true>(inst, start, end);
  }
  /// A copy's or set's [start, end) that went to `t`: spans only (busy time is kernels').
  void extend_spans(const Target& t, std::uint64_t start, std::uint64_t end) {
    if (t.where == Where::Range) spread_up<false>(t.instance, start, end);
  }

 private:
  template <bool kBusy>
  void spread_up(Instance* inst, std::uint64_t start, std::uint64_t end);
  template <bool kBusy>
  [[gnu::noinline]] bool spread_to_ancestors(std::uint64_t parent, const RangeActivity& own, bool windowed,
                                             std::uint64_t start, std::uint64_t end);

  Attribution& attribution_;
  RangeActivities& activities_;
  Diagnostics& diag_;
};

}  // namespace cuscope::model

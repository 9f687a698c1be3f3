// model/interval_union.hpp — the measure of a union of time intervals, built as they arrive.
//
// GPU records arrive roughly in time order but interleaved across streams. The union keeps a
// sorted window of the most recent disjoint intervals (exact for any order inside the window)
// and, once it holds 2 × kWindow, folds the oldest kWindow into a running total in one go (so a
// fold costs O(1) per interval). An interval that starts before the folded frontier is clipped
// there and counted in late(): then the union can miss at most the clipped part, never count
// anything twice. Memory: at most 2 × kWindow intervals; exact for out-of-order arrivals within
// the last kWindow disjoint intervals.
#pragma once

#include <cstdint>
#include <vector>

namespace cuscope::model {

class IntervalUnion {
 public:
  static constexpr std::size_t kWindow = 64;

  /// Adds [start, end); empty or reversed intervals are ignored.
  void add(std::uint64_t start, std::uint64_t end) {
    // Kernels of one stream arrive in order: most intervals start after the last one, or inside it.
    if (start >= frontier_ && end > start && count_ != 0) {
      Span& last = spans_[count_ - 1];
      if (start > last.end && count_ < spans_.size() && count_ + 1 < 2 * kWindow) {
        spans_[count_++] = {start, end};
        return;
      }
      if (start >= last.start && start <= last.end) {
        if (end > last.end) last.end = end;
        return;
      }
    }
    add_anywhere(start, end);
  }
  /// Total length covered by at least one interval added so far.
  [[nodiscard]] std::uint64_t measure() const;
  /// Intervals that arrived after the window had moved past their start.
  [[nodiscard]] std::uint64_t late() const { return late_; }

 private:
  struct Span {
    std::uint64_t start, end;
  };
  [[gnu::noinline]] void add_anywhere(std::uint64_t start, std::uint64_t end);
  void fold_oldest(std::size_t n);

  // The window: spans_[0, count_), sorted by start, pairwise disjoint and non-adjacent. The rest of
  // spans_ is room to append without a reallocation on the inline path.
  std::vector<Span> spans_;
  std::size_t count_ = 0;
  std::uint64_t folded_ns_ = 0;
  std::uint64_t frontier_ = 0;  // everything before it is folded
  std::uint64_t late_ = 0;
};

}  // namespace cuscope::model

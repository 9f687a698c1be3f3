// model/interval_union.cpp — see interval_union.hpp.
#include "model/interval_union.hpp"

#include <algorithm>

namespace cuscope::model {

void IntervalUnion::add_anywhere(std::uint64_t start, std::uint64_t end) {
  if (start < frontier_) {
    ++late_;
    start = frontier_;
  }
  if (end <= start) return;
  // Fast path: in order after the last interval.
  if (window_.empty() || start > window_.back().end) {
    window_.push_back({start, end});
  } else {
    // First interval whose end reaches start: every one from there that starts before `end` merges.
    auto first = std::lower_bound(window_.begin(), window_.end(), start,
                                  [](const Span& s, std::uint64_t t) { return s.end < t; });
    auto last = first;
    Span merged{start, end};
    while (last != window_.end() && last->start <= end) {
      merged.start = std::min(merged.start, last->start);
      merged.end = std::max(merged.end, last->end);
      ++last;
    }
    if (first == last) {
      window_.insert(first, merged);
    } else {
      *first = merged;
      window_.erase(first + 1, last);
    }
  }
  if (window_.size() >= 2 * kWindow) fold_oldest(kWindow);
}

void IntervalUnion::fold_oldest(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) folded_ns_ += window_[i].end - window_[i].start;
  frontier_ = window_[n - 1].end;
  window_.erase(window_.begin(), window_.begin() + static_cast<std::ptrdiff_t>(n));
}

std::uint64_t IntervalUnion::measure() const {
  std::uint64_t total = folded_ns_;
  for (const Span& s : window_) total += s.end - s.start;
  return total;
}

}  // namespace cuscope::model

// model/interval_union.cpp — see interval_union.hpp.
#include "model/interval_union.hpp"

#include <algorithm>

namespace cuscope::model {

void IntervalUnion::add(std::uint64_t start, std::uint64_t end) {
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
  if (window_.size() > kWindow) fold_oldest();
}

void IntervalUnion::fold_oldest() {
  const Span oldest = window_.front();
  window_.erase(window_.begin());
  folded_ns_ += oldest.end - oldest.start;
  frontier_ = oldest.end;
}

std::uint64_t IntervalUnion::measure() const {
  std::uint64_t total = folded_ns_;
  for (const Span& s : window_) total += s.end - s.start;
  return total;
}

}  // namespace cuscope::model

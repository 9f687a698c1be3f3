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
  const auto begin = spans_.begin();
  const auto last = begin + static_cast<std::ptrdiff_t>(count_);
  // First interval whose end reaches start: every one from there that starts before `end` merges.
  const auto first =
      std::lower_bound(begin, last, start, [](const Span& s, std::uint64_t t) { return s.end < t; });
  auto past = first;
  Span merged{start, end};
  while (past != last && past->start <= end) {
    merged.start = std::min(merged.start, past->start);
    merged.end = std::max(merged.end, past->end);
    ++past;
  }
  if (first == past) {
    const auto at = static_cast<std::size_t>(first - begin);
    if (count_ == spans_.size()) spans_.resize(std::min(std::max<std::size_t>(8, 2 * count_), 2 * kWindow));
    std::move_backward(spans_.begin() + static_cast<std::ptrdiff_t>(at),
                       spans_.begin() + static_cast<std::ptrdiff_t>(count_),
                       spans_.begin() + static_cast<std::ptrdiff_t>(count_ + 1));
    spans_[at] = merged;
    ++count_;
  } else {
    *first = merged;
    count_ = static_cast<std::size_t>(std::move(past, last, first + 1) - begin);
  }
  if (count_ >= 2 * kWindow) fold_oldest(kWindow);
}

void IntervalUnion::fold_oldest(std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) folded_ns_ += spans_[i].end - spans_[i].start;
  frontier_ = spans_[n - 1].end;
  std::move(spans_.begin() + static_cast<std::ptrdiff_t>(n),
            spans_.begin() + static_cast<std::ptrdiff_t>(count_), spans_.begin());
  count_ -= n;
}

std::uint64_t IntervalUnion::measure() const {
  std::uint64_t total = folded_ns_;
  for (std::size_t i = 0; i < count_; ++i) total += spans_[i].end - spans_[i].start;
  return total;
}

}  // namespace cuscope::model

// model/attribution.cpp — correlation -> instance -> range, and the step window. Lookups only:
// nothing here counts a record.
#include "model/attribution.hpp"

#include <algorithm>

namespace cuscope::model {

Attribution::Attribution(const Forest& forest, RangeActivities& activities)
    : forest_(forest),
      activities_(activities),
      correlations_(kCorrelationSlots),
      instances_(kInstanceSlots) {}

void Attribution::set_recording(bool recording, std::uint64_t now_ns) {
  if (!windowed_) {
    windowed_ = true;
    if (recording_) windows_.push_back({0, UINT64_MAX});
  }
  if (recording == recording_) return;
  recording_ = recording;
  if (recording) {
    // Records come within seconds of their launch: the oldest half of many windows is long past.
    if (windows_.size() >= kMaxWindows)
      windows_.erase(windows_.begin(), windows_.begin() + static_cast<std::ptrdiff_t>(kMaxWindows / 2));
    windows_.push_back({now_ns, UINT64_MAX});
  } else if (!windows_.empty()) {
    windows_.back().end = now_ns;
  }
}

std::vector<Attribution::Window>::const_iterator Attribution::first_starting_after(std::uint64_t t) const {
  return std::upper_bound(windows_.begin(), windows_.end(), t,
                          [](std::uint64_t v, const Window& w) { return v < w.start; });
}

bool Attribution::in_window(std::uint64_t t) const {
  if (!windowed_) return true;
  const auto it = first_starting_after(t);  // the window before it is the last to start by `t`
  return it != windows_.begin() && t < std::prev(it)->end;
}

bool Attribution::window_began_searched(std::uint64_t lo, std::uint64_t hi) const {
  if (windows_.empty()) return false;
  const std::uint64_t latest = windows_.back().start;
  if (latest <= lo) return false;  // the common case: a record of the latest window after another
  if (latest <= hi) return true;
  const auto it = first_starting_after(lo);
  return it != windows_.end() && it->start <= hi;
}

Instance* Attribution::resolve(Instance& slot, std::uint64_t id) {
  Node* node = nullptr;
  std::uint64_t parent = 0;
  if (!forest_.resolve_instance(id, &node, &parent)) return nullptr;
  // Many instances of few ranges: the last range's activity is the likely one.
  if (node != last_node_ || last_activity_ == nullptr) {
    last_activity_ = &activities_.of(node);
    last_node_ = node;
  }
  const std::uint64_t thread = id >> kInstanceSeqBits;
  const std::uint64_t seq = id & kInstanceSeqMask;
  // A newer call of the same thread keeps its slot; a call at or below the thread's eviction mark
  // may have had its span counted when it left. Either way: late, no span.
  const bool newer_holds =
      slot.id != 0 && (slot.id >> kInstanceSeqBits) == thread && (slot.id & kInstanceSeqMask) > seq;
  const bool below_mark = thread < evicted_seq_.size() && seq <= evicted_seq_[thread];
  if (newer_holds || below_mark) {
    late_ = Instance{id, node, last_activity_, parent};
    return &late_;
  }
  evict(slot);
  slot = Instance{id, node, last_activity_, parent};
  return &slot;
}

void Attribution::evict(const Instance& slot) {
  if (slot.id == 0 || slot.total_end == 0) return;  // no span yet: if it comes back, it starts afresh
  add_call(slot.activity->evicted_call_spans, slot.span());
  if (evicted_seq_.empty()) evicted_seq_.resize(Forest::kMaxSlots, 0);
  const std::uint64_t thread = slot.id >> kInstanceSeqBits;
  if (thread < evicted_seq_.size())
    evicted_seq_[thread] = std::max(evicted_seq_[thread], slot.id & kInstanceSeqMask);
}

Target Attribution::locate(std::uint64_t correlation) {
  // Correlation 0 is CUPTI's "none": such a record can never be tied to an API call.
  if (correlation == 0) return {Where::Unresolved, nullptr};
  const Correlation& c = correlation_slot(correlation);
  if (c.correlation != key_of(correlation)) return {Where::Unknown, nullptr};
  if (c.instance == kOutsideWindow) return {Where::Outside, nullptr};
  if (c.instance == kCuscopeInternal) return {Where::Own, nullptr};
  if (c.instance == kNoInstance)
    return {in_window(c.api_start_ns) ? Where::Unscoped : Where::Outside, nullptr};
  Instance* inst = instance(c.instance);
  if (inst == nullptr) return {Where::Unresolved, nullptr};
  return {Where::Range, inst};
}

}  // namespace cuscope::model

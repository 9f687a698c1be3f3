// producers/event_timestamps.cpp — see event_timestamps.hpp.
#include "producers/event_timestamps.hpp"

namespace cuscope::inline v0::detail {

thread_local EventIds* t_event_ids = nullptr;

void EventTimestamps::put(std::uint32_t correlation, std::uint64_t device_ns) {
  records_.fetch_add(1, std::memory_order_relaxed);
  if (device_ns == 0) without_timestamp_.fetch_add(1, std::memory_order_relaxed);
  if (correlation == 0 || device_ns == 0) return;
  std::lock_guard lock(mutex_);
  try {
    if (order_.size() < kMaxKept) {
      order_.push_back(correlation);
    } else {
      kept_.erase(order_[next_]);  // the oldest put (taken already, or the program's own)
      order_[next_] = correlation;
      next_ = (next_ + 1) % kMaxKept;
    }
    kept_[correlation] = device_ns;
  } catch (...) {  // out of memory: this timestamp is lost; a pair waiting for it fails, counted
  }
}

void EventTimestamps::count_delivery() { generation_.fetch_add(1, std::memory_order_acq_rel); }

EventTimestamps::Map::iterator EventTimestamps::find(const EventIds& ids) {
  for (std::uint32_t id : {ids.runtime, ids.driver}) {
    if (id == 0) continue;
    if (auto it = kept_.find(id); it != kept_.end()) return it;
  }
  return kept_.end();
}

bool EventTimestamps::take(const EventIds& ids, std::uint64_t& device_ns) {
  std::lock_guard lock(mutex_);
  const auto it = find(ids);
  if (it == kept_.end()) return false;
  device_ns = it->second;
  kept_.erase(it);
  return true;
}

bool EventTimestamps::take_pair(const EventIds& start, const EventIds& stop, std::uint64_t& start_ns,
                                std::uint64_t& stop_ns) {
  std::lock_guard lock(mutex_);
  const auto start_it = find(start);
  if (start_it == kept_.end()) return false;
  const auto stop_it = find(stop);
  if (stop_it == kept_.end() || stop_it == start_it) return false;
  start_ns = start_it->second;
  stop_ns = stop_it->second;
  kept_.erase(start_it);  // absl: erasing one element leaves other iterators valid
  kept_.erase(stop_it);
  return true;
}

void EventTimestamps::clear() {
  std::lock_guard lock(mutex_);
  kept_.clear();
  order_.clear();
  next_ = 0;
  records_.store(0, std::memory_order_relaxed);
  without_timestamp_.store(0, std::memory_order_relaxed);
}

EventTimestamps& event_timestamps() {
  static auto* table = new EventTimestamps;  // leaked: CUPTI's thread may deliver during exit
  return *table;
}

}  // namespace cuscope::inline v0::detail

// producers/event_timestamps.cpp — see event_timestamps.hpp.
#include "producers/event_timestamps.hpp"

namespace cuscope::inline v0::detail {

thread_local EventIds* t_event_ids = nullptr;

void EventTimestamps::put(std::uint32_t correlation, std::uint64_t device_ns) {
  if (correlation == 0 || device_ns == 0) return;
  std::lock_guard lock(mutex_);
  if (current_.size() < kMaxKept) current_[correlation] = device_ns;
}

void EventTimestamps::age() {
  std::lock_guard lock(mutex_);
  previous_ = std::move(current_);
  current_.clear();
  generation_.fetch_add(1, std::memory_order_acq_rel);
}

bool EventTimestamps::take(const EventIds& ids, std::uint64_t& device_ns) {
  std::lock_guard lock(mutex_);
  for (std::uint32_t id : {ids.runtime, ids.driver}) {
    if (id == 0) continue;
    for (auto* map : {&current_, &previous_}) {
      if (auto it = map->find(id); it != map->end()) {
        device_ns = it->second;
        map->erase(it);
        return true;
      }
    }
  }
  return false;
}

void EventTimestamps::clear() {
  std::lock_guard lock(mutex_);
  current_.clear();
  previous_.clear();
}

EventTimestamps& event_timestamps() {
  static auto* table = new EventTimestamps;  // leaked: CUPTI's thread may deliver during exit
  return *table;
}

}  // namespace cuscope::inline v0::detail

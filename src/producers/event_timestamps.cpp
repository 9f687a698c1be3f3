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

std::pair<EventTimestamps::Map*, EventTimestamps::Map::iterator> EventTimestamps::find(const EventIds& ids) {
  for (std::uint32_t id : {ids.runtime, ids.driver}) {
    if (id == 0) continue;
    for (Map* map : {&current_, &previous_}) {
      if (auto it = map->find(id); it != map->end()) return {map, it};
    }
  }
  return {nullptr, {}};
}

bool EventTimestamps::take(const EventIds& ids, std::uint64_t& device_ns) {
  std::lock_guard lock(mutex_);
  const auto [map, it] = find(ids);
  if (map == nullptr) return false;
  device_ns = it->second;
  map->erase(it);
  return true;
}

bool EventTimestamps::take_pair(const EventIds& start, const EventIds& stop, std::uint64_t& start_ns,
                                std::uint64_t& stop_ns) {
  std::lock_guard lock(mutex_);
  const auto [start_map, start_it] = find(start);
  if (start_map == nullptr) return false;
  const auto [stop_map, stop_it] = find(stop);
  if (stop_map == nullptr || (stop_map == start_map && stop_it == start_it)) return false;
  start_ns = start_it->second;
  stop_ns = stop_it->second;
  start_map->erase(start_it);  // absl: erasing one element leaves other iterators valid
  stop_map->erase(stop_it);
  return true;
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

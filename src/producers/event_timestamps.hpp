// producers/event_timestamps.hpp — CUDA events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti):
// the device timestamps of CUPTI's CUDA_EVENT records, kept by the correlation id of the call that
// recorded the event, until the event resolver takes those of cuscope's own records.
//
// How a record finds its scope: cuscope records a scope's timing-disabled events with
// t_event_ids pointing at the pair's EventIds; CUPTI's callback at that call's entry (the runtime's
// cudaEventRecord, and the driver's cuEventRecord it makes) notes the call's correlation id there
// (note_event_record). The CUDA_EVENT record carries one of the two; the resolver takes the
// timestamp by either. The decoder puts every CUDA_EVENT record's timestamp here, the program's
// own events' too: those are never taken. The table keeps the last kMaxKept timestamps put, the
// oldest going first, so a scope's start stays however long the scope is open (CUPTI may deliver
// it while the scope runs), until kMaxKept more have come; a pair whose timestamp went fails, counted.
//
// Never: lock on a scope's path (the callback writes through a thread-local pointer), drop a
// timestamp by its age in deliveries, or grow without bound.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <cstdint>
#include <cuscope/session.hpp>
#include <mutex>
#include <utility>
#include <vector>

namespace cuscope::inline v0::detail {

/// Whether `o` asks for CUPTI's timestamps on events it would record (CUSCOPE_EVENT_TIMESTAMPS=cupti
/// with CUSCOPE_EVENTS=always or sampled: "auto" records none while CUPTI traces).
inline bool wants_cupti_event_clock(const Options& o) {
  return o.event_timestamps == EventTimestamps::cupti && o.gpu_events &&
         (o.events == EventTiming::always || o.events == EventTiming::sampled);
}

/// The correlation ids of one cudaEventRecord call, as CUPTI's callbacks saw them (0: not seen).
struct EventIds {
  std::uint32_t runtime = 0;
  std::uint32_t driver = 0;
};

/// While cuscope records one of its own events with CUPTI timing them: where the callback notes the
/// call's correlation ids. Null otherwise (the program's own event records are not noted).
extern thread_local EventIds* t_event_ids;

/// CUPTI's callback at an event record call's entry: notes `correlation` for cuscope's own record.
inline void note_event_record(bool driver, std::uint32_t correlation) noexcept {
  if (EventIds* ids = t_event_ids) (driver ? ids->driver : ids->runtime) = correlation;
}

class EventTimestamps {
 public:
  static constexpr std::size_t kMaxKept = 1u << 17;  // timestamps kept; past it the oldest goes

  /// Decoder: the device timestamp of the event recorded by the call `correlation`. When kMaxKept
  /// timestamps have been put since the oldest one still kept, that one goes.
  void put(std::uint32_t correlation, std::uint64_t device_ns);
  /// After each delivery of CUPTI's buffers: one more delivery (generation()); nothing goes.
  void count_delivery();
  /// Resolver: takes the timestamp of the record whose call had `ids`; false when not there (yet).
  bool take(const EventIds& ids, std::uint64_t& device_ns);
  /// Resolver: takes both timestamps of a pair, or, when either has not come yet, neither.
  bool take_pair(const EventIds& start, const EventIds& stop, std::uint64_t& start_ns,
                 std::uint64_t& stop_ns);
  /// Deliveries so far (count_delivery() calls): how long a pair has waited for its timestamps.
  std::uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  /// CUDA_EVENT records put so far (since clear()), and those of them without a device timestamp
  /// (never kept): what tells a record never delivered from one delivered without its timestamp.
  std::uint64_t records() const { return records_.load(std::memory_order_relaxed); }
  std::uint64_t records_without_timestamp() const {
    return without_timestamp_.load(std::memory_order_relaxed);
  }
  /// Tests: forget everything.
  void clear();

 private:
  using Map = absl::flat_hash_map<std::uint32_t, std::uint64_t>;
  // Where the timestamp of `ids` is kept (mutex_ held), or kept_.end().
  Map::iterator find(const EventIds& ids);

  std::mutex mutex_;
  Map kept_;                          // by correlation id; guarded by mutex_
  std::vector<std::uint32_t> order_;  // the ids put, oldest at next_ once full (a ring of kMaxKept)
  std::size_t next_ = 0;              // guarded by mutex_
  std::atomic<std::uint64_t> generation_{0};
  std::atomic<std::uint64_t> records_{0};
  std::atomic<std::uint64_t> without_timestamp_{0};
};

/// The process's table (CUPTI's records are the process's).
EventTimestamps& event_timestamps();

}  // namespace cuscope::inline v0::detail

// model/attribution.hpp — which range a GPU record belongs to: correlation id -> scope instance ->
// range, and the step window.
//
// Attribution is by correlation, not by time: an activity carries the correlation id of the API
// call that launched it; an ExternalCorrelation record ties that call to the scope instance that
// was innermost on the launching thread. An API call seen without an external correlation is work
// launched outside every scope ("(unscoped)"), or outside the step window.
//
// Bounded and direct-mapped: it never grows, never hashes on the common path, and never
// accumulates statistics (range_activity.hpp) or keeps records waiting (the aggregator does). A
// call evicted from the table with a span hands that span to its range; a call that comes back
// after that is "late" and extends no span, so no call is counted twice.
// Not thread-safe: the aggregator's one consumer at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "model/events.hpp"
#include "model/range_activity.hpp"
#include "model/range_tree.hpp"

namespace cuscope::model {

/// One scope instance (one call of a range) that launched GPU work, and its GPU hulls so far.
struct Instance {
  std::uint64_t id = 0;  // 0: an empty slot
  Node* node = nullptr;
  RangeActivity* activity = nullptr;  // activities.of(node), looked up once
  std::uint64_t parent = 0;
  std::uint64_t self_start = 0, self_end = 0;
  std::uint64_t total_start = 0, total_end = 0;
  // A call open across an unrecorded stretch of the step window has a total hull per recording window
  // its work ran in (gpu_intervals.hpp): the lengths of those before the current one.
  std::uint64_t closed_span = 0;

  /// The call's projected span so far: its hulls' lengths, one per recording window.
  [[nodiscard]] std::uint64_t span() const { return closed_span + (total_end - total_start); }
};

/// Where a record goes: a range's instance, "(unscoped)", nowhere counted (outside the step window,
/// cuscope's own calls), not yet known (its correlation may still come), or never (unresolved).
enum class Where : std::uint8_t { Range, Unscoped, Outside, Own, Unknown, Unresolved };
struct Target {
  Where where;
  Instance* instance;  // Where::Range: the innermost instance, valid until the next lookup
};

/// An API call: the scope instance it was made in.
struct Correlation {
  std::uint64_t correlation = 0;  // the id held, keyed by its attach (Attribution::key_of); 0: empty
  std::uint64_t instance = 0;     // kNoInstance: an API call outside every scope
  std::uint64_t api_start_ns = 0;
};

class Attribution {
 public:
  /// Correlations remembered: CUPTI's ids are dense and increasing, so a direct-mapped table of the
  /// last 2^18 API calls needs no hashing and never grows.
  static constexpr std::size_t kCorrelationSlots = 1u << 18;
  static constexpr std::size_t kInstanceSlots = 1u << 16;

  Attribution(const Forest& forest, RangeActivities& activities);

  void on(const ApiCall& a) {
    if (a.correlation == 0) return;  // CUPTI's "no correlation": nothing can point at it
    Correlation& slot = correlation_slot(a.correlation);
    const std::uint64_t key = key_of(a.correlation);
    if (slot.correlation == key) {  // scoped: its external correlation came first (CUPTI's order)
      // With external correlation a scope recorded in one window and still open in a later warm-up
      // step stays pushed: the call's time says it was made outside the window (launch notes decide
      // at the launch, and send no API call for a scoped one).
      if (windowed_ && slot.instance > kCuscopeInternal && !in_window(a.start_ns))
        slot.instance = kOutsideWindow;
      return;
    }
    slot = Correlation{key, kNoInstance, a.start_ns};
  }
  void on(const ExternalCorrelation& e) {
    if (e.correlation == 0) return;
    correlation_slot(e.correlation) = Correlation{key_of(e.correlation), e.instance, 0};
    if (e.instance > kCuscopeInternal) instance(e.instance);  // resolve while its ring slot is fresh
  }

  /// The scope instance API call `correlation` was made in, where the table holds that call and it
  /// was made in a scope; 0 otherwise (locate() says why). The decoder's common case.
  [[nodiscard]] std::uint64_t scoped_instance(std::uint64_t correlation) const {
    const Correlation& c = correlations_[correlation & (kCorrelationSlots - 1)];
    return c.correlation == key_of(correlation) && c.instance > kCuscopeInternal && correlation != 0
               ? c.instance
               : 0;
  }
  /// The instance `id`, looked up in the forest on first use; nullptr once it is gone from there.
  Instance* instance(std::uint64_t id) {
    // A thread's instances take consecutive slots (its sequence numbers are consecutive), from an
    // offset per thread slot: a new instance lands next to the last one, in a warm cache line, and
    // replaces the thread's oldest instead of a random, possibly still running, one.
    const std::uint64_t thread_offset = (id >> kInstanceSeqBits) * 0x9E3779B97F4A7C15ull >> 40;
    Instance& slot = instances_[(id + thread_offset) & (kInstanceSlots - 1)];
    if (slot.id == id) return &slot;
    return resolve(slot, id);
  }
  /// Where the work of API call `correlation` goes.
  Target locate(std::uint64_t correlation);

  /// The step window: work launched outside every scope counts only while recording. Before the
  /// first call, everything records. A window that repeats (CUSCOPE_REPEAT) keeps its last
  /// kMaxWindows recording intervals: work launched before the oldest kept one counts as outside.
  void set_recording(bool recording, std::uint64_t now_ns);
  static constexpr std::size_t kMaxWindows = 4096;
  /// Whether a recording window of the step window began in (lo, hi]: GPU work at `lo` and at `hi`
  /// then lies on both sides of an unrecorded stretch, and a call's hull must not join them
  /// (gpu_intervals.hpp). Work the GPU ran after its window's end but before the next began joins
  /// its window's. False where no step window was ever set. O(1) while both lie in the latest window.
  [[nodiscard]] bool window_began(std::uint64_t lo, std::uint64_t hi) const {
    return windowed_ && hi > lo && window_began_searched(lo, hi);
  }
  /// Whether a step window was ever set (set_recording()): else window_began() is always false.
  [[nodiscard]] bool windowed() const { return windowed_; }
  /// CUPTI attached again (a detach between step windows): its correlation ids start again at 1, so
  /// every API call and external correlation known so far is forgotten (a new call must not find an
  /// old one's scope). Scope instances and the step window stay: they are cuscope's own.
  /// O(1), on the program's thread in the step that attaches again: the table is not cleared (6 MiB);
  /// each attach keys its calls apart instead (key_of()), so an old call's slot matches no new one.
  void forget_correlations() { attach_key_ += kAttachKeyStep; }

  /// Whether `inst` is a call that may have left the table with its span counted: its records
  /// count in its range, but must not extend its span (or the call would count twice).
  [[nodiscard]] bool late(const Instance* inst) const { return inst == &late_; }
  /// Calls `f(const Instance&)` for each call in the table whose work has a span.
  template <class F>
  void for_each_spanned(F f) const {
    for (const Instance& i : instances_) {
      if (i.id != 0 && i.total_end != 0) f(i);
    }
  }

 private:
  Correlation& correlation_slot(std::uint64_t correlation) {
    return correlations_[correlation & (kCorrelationSlots - 1)];
  }
  // What a slot holds for `correlation`: the id, plus one step per attach before this one. CUPTI's
  // correlation ids are 32-bit (every record's correlationId is a uint32_t), so the attaches' keys
  // never meet; the slot's index, the id's low bits, is the same in every attach.
  static constexpr std::uint64_t kAttachKeyStep = std::uint64_t{1} << 32;
  [[nodiscard]] std::uint64_t key_of(std::uint64_t correlation) const { return correlation + attach_key_; }
  Instance* resolve(Instance& slot, std::uint64_t id);
  void evict(const Instance& slot);

  const Forest& forest_;
  RangeActivities& activities_;
  std::vector<Correlation> correlations_;  // direct-mapped by correlation id, kCorrelationSlots
  std::uint64_t attach_key_ = 0;           // kAttachKeyStep times the attaches forgotten
  std::vector<Instance> instances_;        // direct-mapped by instance id, kInstanceSlots
  Instance late_;                          // resolve()'s answer for a late call (see late())
  // Per thread slot (Forest::kMaxSlots, made at the first eviction), the highest sequence number
  // of a call evicted with a span: a call of that thread at or below it may have been counted
  // already. Direct-indexed: a workload of fresh calls evicts on nearly every kernel.
  std::vector<std::uint64_t> evicted_seq_;
  const Node* last_node_ = nullptr;  // resolve()'s last node, and its activity
  RangeActivity* last_activity_ = nullptr;
  struct Window {
    std::uint64_t start = 0, end = 0;  // [start, end) recording
  };
  std::vector<Window> windows_;  // recording intervals
  // The first of windows_ that starts after `t` (end() where none does).
  [[nodiscard]] std::vector<Window>::const_iterator first_starting_after(std::uint64_t t) const;
  [[nodiscard]] bool in_window(std::uint64_t t) const;
  [[nodiscard]] bool window_began_searched(std::uint64_t lo, std::uint64_t hi) const;
  bool windowed_ = false;
  bool recording_ = true;
};

}  // namespace cuscope::model

// producers/launch_notes.hpp — which scope launched what, noted by the launch callbacks
// (CUSCOPE_ATTRIBUTION=launch, docs/cupti.md): per launching thread, a ring of (correlation id,
// scope instance) that the thread writes inside its CUDA call (a launch, copy, set, allocation or
// wait), and that the decoder drains into the model before each buffer of activity records. It
// takes the place of the scopes' external-correlation pushes and of CUPTI's API records.
// Beside the rings, the calls timed by the callbacks themselves where their records are off
// (call notes: the host's waits in synchronizes, allocations and frees): rare and slow calls, so
// one bounded queue under its own lock, drained with the rings into the same model events as
// CUPTI's records of them.
//
// CUDA-free: the CUPTI subscriber (cupti/subscriber.cpp) calls note_launch() with CUPTI's
// correlation id, and cupti/call_callbacks.cpp calls note_call(); tests call them the same way.
// A full ring drains itself where it can: the thread whose note it refuses tries the drainer's two
// locks (try_lock only: the model's, then the registry's) and, holding both, drains every ring into
// the model as the collector does (counted as cuscope's own processing), then notes; so a thread
// whose collector is starved by a loaded machine keeps its attribution. Where a lock is busy (the
// decoder taking a buffer, a report being built), the note spills into a ring of the thread's own
// chained behind its full one, made then (kMaxSpillRings in the process, kept for reuse), which
// every drain empties with it; only past them is a note refused.
// Never here: a lock or an allocation on a launch's writing side after a thread's first note while
// its ring has room (a call note takes the queue's short lock, and allocates twice per process: the
// queue and the drain's vector it swaps with; a spill allocates, once per spill ring); waiting for
// the reader, or for any lock held across a CUDA or CUPTI call (a note that finds its ring and its
// spill rings full and the drainer's locks busy is refused, and so is one past a full queue, and the
// refusal is counted: its work is counted as unresolved, its call as lost); a CUDA or CUPTI call
// from a drain (it runs inside a CUDA call's callback on the program's thread).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace cuscope::inline v0::detail {

struct Sink;

/// One launch: its correlation id, the scope instance innermost on the launching thread then
/// (model/range_tree.hpp's ids, or kNoInstance, kOutsideWindow, kCuscopeInternal), and, for a
/// launch outside every scope, when it was made (the step window decides whether it counts).
struct LaunchNote {
  std::uint64_t correlation = 0;
  std::uint64_t instance = 0;
  std::uint64_t api_start_ns = 0;
};

/// One writer (the thread that holds it), one reader at a time (the drainer, under the registry's
/// lock: the collector, the decoder, or the writer itself when its ring is full). Bounded: kNotes
/// not yet drained at most. A ring may have a spill ring behind it, set once by its writer (which
/// then writes there too, when this one is full) and drained by the same reader.
class LaunchRing {
 public:
  static constexpr std::uint32_t kNotes = 4096;
  bool push(const LaunchNote& n) noexcept {
    const std::uint32_t head = head_.load(std::memory_order_relaxed);
    if (head - tail_.load(std::memory_order_acquire) == kNotes) return false;
    notes_[head & (kNotes - 1)] = n;
    head_.store(head + 1, std::memory_order_release);
    return true;
  }
  /// Notes pushed and not drained yet (the reader's view).
  [[nodiscard]] std::uint32_t pending() const {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_acquire);
  }
  template <class F>
  void drain(F&& f) {
    std::uint32_t tail = tail_.load(std::memory_order_relaxed);
    const std::uint32_t head = head_.load(std::memory_order_acquire);
    for (; tail != head; ++tail) f(notes_[tail & (kNotes - 1)]);
    tail_.store(tail, std::memory_order_release);
  }
  /// The ring behind this one, or nullptr (either side). Its notes pushed before the link are seen.
  [[nodiscard]] LaunchRing* spill() const { return spill_.load(std::memory_order_acquire); }
  /// The writer links `next` behind this ring, once (no spill ring yet).
  void link_spill(LaunchRing* next) { spill_.store(next, std::memory_order_release); }

 private:
  std::atomic<LaunchRing*> spill_{nullptr};  // never unlinked: kept with the ring for its next writer
  alignas(64) std::atomic<std::uint32_t> head_{0};
  alignas(64) std::atomic<std::uint32_t> tail_{0};
  LaunchNote notes_[kNotes];
};

/// A synchronize, an allocation or a free, as the callbacks saw it: the call's correlation id, when
/// it began and returned (the session clock), and for memory the address and the size (0 for a
/// free whose call names none: the size its allocation was booked with).
struct CallNote {
  enum class Kind : std::uint8_t { wait, alloc, free };
  Kind kind = Kind::wait;
  std::uint32_t device = 0;
  std::uint64_t correlation = 0;
  std::uint64_t start_ns = 0;
  std::uint64_t end_ns = 0;
  std::uint64_t address = 0;
  std::uint64_t bytes = 0;
};
/// Spill rings in the process at most (31 x 96 KiB): made only while a full ring's drainer's locks
/// are busy, and kept, each behind the ring it spilled from. With one ring, they hold half as many
/// notes as the model remembers correlations (model::Attribution::kCorrelationSlots): more notes
/// waiting than that would push out the oldest before their kernels come.
inline constexpr std::size_t kMaxSpillRings = 31;

/// Call notes waiting for the drain at most; past it a note is refused and counted as lost.
inline constexpr std::size_t kMaxCallNotes = 16384;

/// Called by the launch callback at the entry of a CUDA call that launches work into `sink`'s
/// session: notes `correlation` with the calling thread's innermost open scope instance. The
/// thread's ring full, it drains every ring into `sink`'s model first if sink.aggregator_mutex and
/// the registry's lock are both free (never waiting for either); else the note goes to a spill
/// ring of the thread's (kMaxSpillRings in the process); else it is lost (counted).
/// The caller holds neither lock (a CUDA call is never made under them).
void note_launch(Sink& sink, std::uint64_t correlation) noexcept;
/// Called by the call callbacks at the exit of a successful synchronize, allocation or free: notes
/// it with the calling thread's innermost open scope instance (the instance its entry saw).
void note_call(Sink& sink, const CallNote& note) noexcept;
/// Hands every note made so far to `sink`'s model (and to the trace, in trace mode), in each
/// thread's order. The caller holds sink.aggregator_mutex (the lock order: it, then the registry's
/// lock, then the call queue's).
void drain_launches(Sink& sink) noexcept;
/// Notes refused for `sink`'s session since the last call (a full ring or call queue, or no memory
/// for either): each counts in the session it was noted for (Sink::launch_notes_lost).
std::uint64_t take_lost_launch_notes(Sink& sink) noexcept;
/// The notes refused for `sink` since the last call, into its model's count of them. The caller
/// holds sink.aggregator_mutex. What every drain does, and a report built now (a refusal waits for
/// no drain to be counted there), also after the stop: one made just before it is this session's.
void count_lost_launch_notes(Sink& sink) noexcept;
/// Marks the calling thread's CUDA calls as cuscope's own (kCuscopeInternal) until the matching
/// own_calls_end(): what the correlation hooks do for the collector's event queries.
void own_calls_begin(std::uint64_t instance) noexcept;
void own_calls_end() noexcept;

/// Threads holding a ring now, rings made, and spill rings made (tests).
struct LaunchRingCounts {
  std::uint64_t leased = 0;
  std::uint64_t made = 0;
  std::uint64_t spills = 0;
};
LaunchRingCounts launch_ring_counts_for_testing() noexcept;
/// Notes made and not drained yet, over every ring and spill ring (tests).
std::uint64_t launch_notes_pending_for_testing() noexcept;

}  // namespace cuscope::inline v0::detail

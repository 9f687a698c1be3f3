// producers/launch_notes.cpp — see launch_notes.hpp.
#include "producers/launch_notes.hpp"

#include <algorithm>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include "model/attribution.hpp"
#include "model/events.hpp"
#include "producers/clock.hpp"
#include "producers/hot_tls.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "producers/to_model.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Every ring ever made, leased to one thread at a time; a thread's ring goes back to the free list
// when the thread exits, with its spill rings. A new thread gets a free ring already drained (its
// spill rings too), else a new one (threads that launch and exit faster than the decoder drains
// would otherwise share one ring's room), and past kMaxRings the last free ring, notes and all (its
// room is then shared; a note refused is counted). So the rings are about as many as the threads
// that launched within one drain.
constexpr std::size_t kMaxRings = 256;  // 256 x 96 KiB
static_assert(2 * (1 + kMaxSpillRings) * LaunchRing::kNotes <= model::Attribution::kCorrelationSlots,
              "a ring and every spill ring hold at most half the correlations the model remembers");
// A call note as queued: the note and the scope instance of its thread then.
struct QueuedCall {
  CallNote note;
  std::uint64_t instance = 0;
};
struct Registry {
  std::mutex mutex;                                // the rings' lists, and the one drainer
  std::vector<std::unique_ptr<LaunchRing>> rings;  // guarded by mutex
  std::vector<LaunchRing*> free;                   // guarded by mutex
  std::mutex calls_mutex;                          // held only to push or swap, never across a call
  std::vector<QueuedCall> calls;                   // guarded by calls_mutex; reserved at its first note
  std::vector<QueuedCall> draining;                // the drainer's (under mutex); swapped with calls,
                                                   // so reserved too at the note after the first drain
  std::atomic<std::size_t> spills{0};  // spill rings made (claimed before made): kMaxSpillRings at most
};

Registry& registry() {
  static Registry* r = new Registry();  // leaked: CUDA calls may come until the process ends
  return *r;
}

// Notes pushed and not drained, over `ring` and its spill rings (the reader's view).
std::uint64_t chain_pending(const LaunchRing& ring) {
  std::uint64_t pending = 0;
  for (const LaunchRing* g = &ring; g != nullptr; g = g->spill()) pending += g->pending();
  return pending;
}

// A thread's lease, freed at its exit by make_thread_owned's key (producers/hot_tls.hpp).
struct Lease {
  LaunchRing* ring = nullptr;
  Lease() = default;
  Lease(const Lease&) = delete;
  Lease& operator=(const Lease&) = delete;
  ~Lease() {
    if (ring == nullptr) return;
    Registry& r = registry();
    std::lock_guard lock(r.mutex);
    r.free.push_back(ring);  // reserved at lease time: no allocation here
  }
};
CUSCOPE_HOT_TLS constinit thread_local Lease* t_lease = nullptr;
CUSCOPE_HOT_TLS constinit thread_local std::uint64_t t_own_instance = 0;  // 0: the program's calls
CUSCOPE_HOT_TLS constinit thread_local std::uint32_t t_own_depth = 0;

// The calling thread's ring: leased on its first note (a lock, and an allocation when no ring is
// free), then one thread-local load.
[[gnu::noinline]] LaunchRing* lease_ring() noexcept {
  Lease* lease = t_lease != nullptr ? t_lease : make_thread_owned(t_lease);
  if (lease == nullptr) return nullptr;
  if (lease->ring != nullptr) return lease->ring;
  Registry& r = registry();
  try {
    std::lock_guard lock(r.mutex);
    // A drained ring, one with spill rings behind it first: they are the process's, kept for reuse.
    const auto drained_with = [&r](bool spills) {
      return std::find_if(r.free.begin(), r.free.end(), [spills](const LaunchRing* g) {
        return (g->spill() != nullptr) == spills && chain_pending(*g) == 0;
      });
    };
    auto drained = drained_with(true);
    if (drained == r.free.end()) drained = drained_with(false);
    if (drained == r.free.end() && (r.free.empty() || r.rings.size() < kMaxRings)) {
      r.rings.push_back(std::make_unique<LaunchRing>());
      r.free.reserve(r.rings.size());  // room for every ring to come back without allocating
      lease->ring = r.rings.back().get();
    } else {
      if (drained == r.free.end()) drained = r.free.end() - 1;
      lease->ring = *drained;
      r.free.erase(drained);
    }
  } catch (...) {  // out of memory: this note is lost (counted), the next one tries again
    return nullptr;
  }
  return lease->ring;
}

// The scope instance a CUDA call made now on this thread belongs to: cuscope's own calls; the
// innermost open scope of `sink`'s session while it records (outside the step window: not counted);
// or none (the step window decides by the call's time).
std::uint64_t launching_instance(const Sink& sink) noexcept {
  if (t_own_depth != 0) return t_own_instance;
  const ThreadState* ts = current_thread_state();
  if (ts == nullptr || ts->owner != &sink || ts->tree == nullptr) return model::kNoInstance;
  const std::uint64_t instance = ts->tree->innermost_instance();
  if (instance == model::kNoInstance) return model::kNoInstance;
  return (g_flags.load(std::memory_order_relaxed) & kRecording) ? instance : model::kOutsideWindow;
}

bool drain_if_free(Sink& sink) noexcept;  // below, beside drain_launches()

// The note of launch `correlation` made now on this thread.
LaunchNote launch_note(const Sink& sink, std::uint64_t correlation) noexcept {
  const std::uint64_t instance = launching_instance(sink);
  return LaunchNote{correlation, instance, instance == model::kNoInstance ? now_ns() : 0};
}

// `note` into a spill ring behind the writer's full `ring` (the writer's side): the first with room,
// else a new one linked behind the last, while the process has made fewer than kMaxSpillRings.
// False: none had room and none could be made.
bool spill(LaunchRing& ring, const LaunchNote& note) noexcept {
  LaunchRing* last = &ring;
  for (LaunchRing* g = ring.spill(); g != nullptr; g = g->spill()) {
    if (g->push(note)) return true;
    last = g;
  }
  Registry& r = registry();
  if (r.spills.fetch_add(1, std::memory_order_relaxed) >= kMaxSpillRings) {
    r.spills.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  auto* fresh = new (std::nothrow) LaunchRing();
  if (fresh == nullptr) {
    r.spills.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  fresh->push(note);        // before the link: a reader that sees the ring sees the note
  last->link_spill(fresh);  // kept: the registry and its rings live until the process ends
  return true;
}

// A note its ring refused: noted after the thread drained the rings itself, when it could without
// waiting; else in a spill ring; else lost (counted). Off the hot path: only a full ring comes here.
// The note is made again here, once (the same scope; outside every scope, a time some nanoseconds
// later): passing it kept one more register across every note_launch, 2 instructions a launch by
// callgrind.
[[gnu::noinline, gnu::cold]] void note_refused(Sink& sink, LaunchRing* ring,
                                               std::uint64_t correlation) noexcept {
  if (ring != nullptr) {
    const LaunchNote note = launch_note(sink, correlation);
    if ((drain_if_free(sink) && ring->push(note)) || spill(*ring, note)) return;
  }
  sink.launch_notes_lost.fetch_add(1, std::memory_order_relaxed);
}

}  // namespace

void note_launch(Sink& sink, std::uint64_t correlation) noexcept {
  LaunchRing* ring = t_lease != nullptr && t_lease->ring != nullptr ? t_lease->ring : lease_ring();
  if (ring == nullptr || !ring->push(launch_note(sink, correlation))) note_refused(sink, ring, correlation);
}

void note_call(Sink& sink, const CallNote& note) noexcept {
  const QueuedCall call{note, launching_instance(sink)};
  Registry& r = registry();
  try {
    std::lock_guard lock(r.calls_mutex);
    if (r.calls.capacity() == 0) r.calls.reserve(kMaxCallNotes);
    if (r.calls.size() < kMaxCallNotes) {
      r.calls.push_back(call);  // within the reserve: no allocation
      return;
    }
  } catch (...) {  // out of memory for the queue: this note is lost, the next one tries again
  }
  sink.launch_notes_lost.fetch_add(1, std::memory_order_relaxed);
}

namespace {

// Who made the CUDA call `correlation`: the scope instance, or for a call outside every scope the
// call's own times, which the step window judges. What CUPTI's API and external-correlation records
// would have said.
template <class Emit>
void caller_events(std::uint64_t correlation, std::uint64_t instance, std::uint64_t start_ns,
                   std::uint64_t end_ns, Emit&& emit) {
  if (instance == model::kNoInstance) {
    emit(model::ApiCall{correlation, start_ns, end_ns});
  } else {
    emit(model::ExternalCorrelation{correlation, instance});
  }
}

// The model events CUPTI's records of `call` would have made: who made the call, then what it did
// under the same correlation id.
template <class Emit>
void call_events(const QueuedCall& call, Emit&& emit) {
  const CallNote& n = call.note;
  caller_events(n.correlation, call.instance, n.start_ns, n.end_ns, emit);
  if (n.kind == CallNote::Kind::wait) {
    emit(model::SyncActivity{n.correlation, n.start_ns, n.end_ns});
  } else {
    emit(model::MemoryActivity{n.correlation, n.end_ns, n.address, n.bytes, n.kind == CallNote::Kind::alloc,
                               n.device});
  }
}

}  // namespace

namespace {

// What drain_launches() does once it holds r.mutex (and its caller sink.aggregator_mutex). Below
// them it takes only leaf locks held by nothing that waits or calls CUDA: the call queue's (a push
// or a swap) and, in trace mode, the trace's activity chunk (an encoding).
void drain_held(Sink& sink, Registry& r) noexcept {
  trace::Writer* w = trace::g_writer.load(std::memory_order_acquire);
  {
    std::lock_guard calls(r.calls_mutex);
    r.draining.swap(r.calls);  // the writers go on into the emptied vector, its reserve kept
  }
  const auto emit = [&](const auto& e) { to_model_and_trace(sink, w, e); };
  for (const QueuedCall& call : r.draining) call_events(call, emit);
  r.draining.clear();
  const auto note_events = [&](const LaunchNote& n) {
    caller_events(n.correlation, n.instance, n.api_start_ns, n.api_start_ns, emit);
  };
  for (const auto& ring : r.rings) {
    for (LaunchRing* g = ring.get(); g != nullptr; g = g->spill()) g->drain(note_events);
  }
}

// A full ring's own drain (note_refused), inside a CUDA call's callback on the program's thread: the
// collector's drain (cupti/adapter.cpp, drain_launch_notes: the notes and the count of those lost,
// timed as cuscope's own processing), but only if its locks are free now, in its order; try_lock
// never waits, so it cannot deadlock with a holder that waits on CUDA or CUPTI (the decoder holds
// the model's lock inside CUPTI's buffer callback). False: a lock was busy, nothing drained.
bool drain_if_free(Sink& sink) noexcept {
  if (!sink.launch_attributed.load(std::memory_order_acquire)) return false;
  std::unique_lock model_lock(sink.aggregator_mutex, std::try_to_lock);
  if (!model_lock.owns_lock()) return false;
  Registry& r = registry();
  std::unique_lock rings_lock(r.mutex, std::try_to_lock);
  if (!rings_lock.owns_lock()) return false;
  const std::uint64_t start = now_ns();
  drain_held(sink, r);
  count_lost_launch_notes(sink);
  sink.aggregator.add_processing(0, model::elapsed_ns(start, now_ns()));
  return true;
}

}  // namespace

void drain_launches(Sink& sink) noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  drain_held(sink, r);
}

std::uint64_t take_lost_launch_notes(Sink& sink) noexcept {
  return sink.launch_notes_lost.exchange(0, std::memory_order_relaxed);
}

void count_lost_launch_notes(Sink& sink) noexcept {
  // Not only while launch_attributed: a refusal after the stop turned it off is still this session's.
  sink.aggregator.add_lost_launch_notes(take_lost_launch_notes(sink));
}

void own_calls_begin(std::uint64_t instance) noexcept {
  t_own_instance = instance;
  ++t_own_depth;
}

void own_calls_end() noexcept {
  if (t_own_depth != 0) --t_own_depth;
}

std::uint64_t launch_notes_pending_for_testing() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  std::uint64_t pending = 0;
  for (const auto& ring : r.rings) pending += chain_pending(*ring);
  return pending;
}

LaunchRingCounts launch_ring_counts_for_testing() noexcept {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return {r.rings.size() - r.free.size(), r.rings.size(), r.spills.load(std::memory_order_relaxed)};
}

}  // namespace cuscope::inline v0::detail

// producers/gpu_events.hpp — CUDA-event timing of scopes, without synchronizing.
//
// The owner thread records a start event when a scope opens and a stop event when it closes,
// using event pairs from its own pools (created once, reused), and queues the pair. The resolver
// (collector thread or flush) reads finished pairs with cudaEventQuery and cudaEventElapsedTime,
// adds the time to the scope's node, and returns the pair to the pool. Under the CUPTI clock
// (CUSCOPE_EVENT_TIMESTAMPS=cupti, producers/event_timestamps.hpp) pairs are made without timing,
// a finished pair goes back to the pool at once, and its time is the difference of the device
// timestamps CUPTI delivers for its two records. Every CUDA call goes through
// producers/cuda_calls.hpp (tests run this with fake CUDA).
// Hot path: no lock, no allocation once the pool has warmed up; two cudaEventRecord calls.
//
// Pools per device: an event belongs to the device it was made on, so a thread keeps one pool per
// device (ordinals below kMaxDevices) and a pair never changes device. A scope on device 1's
// stream after one on device 0's takes a pair of device 1's pool: no event destroyed or remade,
// no cudaSetDevice. (Only past the bound, when a device's pool is dry, is an idle pair of another
// device remade on the one in need.)
//
// Creation in batches, on the owner thread, only when a device's pool is dry: kBatch pairs at
// once, with one allocation and at most one device switch (and back) for all. Once a device's pool
// holds as many pairs as are ever in flight on it (the warm-up), a scope only takes a pair and
// nothing is created in steady state. Not made ahead by the resolver: it runs every 10 ms (and on
// the program's own threads at a flush), so a burst deeper than what it had made ahead, or a GPU
// running behind, would lose timings below the bound; and the resolver would switch devices on a
// flushing program thread.
//
// Bound: kMaxPairs pairs per thread, all devices together (the size of the queue to the resolver,
// so a queued pair always fits). A lagging resolver or a GPU running behind grows the pool, in
// batches, up to it. A scope that then finds its device's pool dry and no idle pair of another
// device gets no event time: counted in `refused` and in `failures` (the report's
// gpu_event_failures), never silently. Every failure is counted by its cause too, on the failure
// paths only (EventFailureCauses below: the report's note that names them).
//
// What this must never do to the program:
// - record on the legacy NULL stream: such an event is a barrier with every blocking stream and
//   would serialize streams the program meant to overlap. A scope given no stream (or
//   cudaStreamLegacy) records no events; its GPU time is the span of its kernels (CUPTI).
// - record into a stream that is being captured into a CUDA graph: the event would become part
//   of the user's graph. Such a scope is counted as inside a capture and gets no event time.
// - wait: a pair is read only once cudaEventQuery says its stop event has completed.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "model/range_tree.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/spsc_ring.hpp"

namespace cuscope::inline v0::detail {

/// Whether a scope on `stream` may record CUDA events: false for no stream and the legacy stream.
bool events_allowed_on(cudaStream_t stream) noexcept;

/// Whether pairs made from now on take their times from CUPTI's device timestamps
/// (CUSCOPE_EVENT_TIMESTAMPS=cupti, set by the session once CUPTI records them) or from CUDA.
void set_event_timestamps_from_cupti(bool on) noexcept;
bool event_timestamps_from_cupti() noexcept;
/// How the session's GPU timing names the CUPTI clock (session.cpp, event_timing());
/// timing_with_clock_given_up() replaces exactly these words.
inline constexpr std::string_view kCuptiClockWords =
    "device timestamps from CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)";
/// Whether the CUPTI clock was given up for CUDA's since it was last set on: a pair's timestamps
/// failed to come while CUPTI had delivered no CUDA_EVENT record with a device timestamp since then
/// (records without one time nothing, so they do not count; a CUPTI probe on an H200 got no record at
/// all in some setups: docs/cupti-event-clock.md). Its note is said as it happens. Pairs made from
/// then on time themselves (cudaEventElapsedTime); pairs made before are timed if their timestamps
/// have come by the resolve that sees them finished, else fail, counted.
bool cupti_clock_given_up() noexcept;
/// How the session's GPU timing reads while the CUPTI clock is given up: `timing` (as decided at the
/// start, naming the CUPTI clock) with the clock's words replaced; `timing` as it is otherwise.
std::string timing_with_clock_given_up(const std::string& timing);
/// Tests: the clock off and not given up, for the next session (reset_for_testing()): a give-up is
/// its session's, kept past the stop for that session's report, never carried into the next.
void forget_cupti_clock_for_testing() noexcept;
/// The note said when the CUPTI clock is given up (one per give-up).
inline constexpr std::string_view kCuptiClockGivenUpNote =
    "CUSCOPE_EVENT_TIMESTAMPS=cupti given up: CUPTI delivered no CUDA_EVENT record with a device timestamp "
    "for a finished pair of events, nor any other since the session started; CUDA events time "
    "themselves from now on, and the pairs made before whose timestamps have not come count as failures "
    "(a CUPTI probe on an H200 got no CUDA_EVENT record at all in some setups: docs/cupti-event-clock.md)";

class GpuEvents {
 public:
  static constexpr std::size_t kRing = 4096;      // pairs in flight per thread
  static constexpr std::size_t kMaxPairs = 4096;  // pairs alive per thread at once, all devices
  static constexpr std::size_t kBatch = 16;       // pairs made at once when a device's pool is dry
  static constexpr int kMaxDevices = 64;          // devices with a pool: 0 .. kMaxDevices - 1
  static_assert(kMaxPairs % kBatch == 0 && kMaxPairs <= kRing);

  GpuEvents();
  GpuEvents(const GpuEvents&) = delete;
  GpuEvents& operator=(const GpuEvents&) = delete;

  /// Records the start event of the frame at `depth` on `stream`. False when it did not (no
  /// stream, stream capturing, pool at its bound, device ordinal past kMaxDevices, CUDA error): the
  /// scope then has no event time.
  bool begin(std::uint32_t depth, cudaStream_t stream) noexcept;
  /// Records the stop event of the frame at `depth` and queues the pair for `node`.
  void end(std::uint32_t depth, model::Node* node) noexcept;
  /// Forgets the frame at `depth` (its scope ended out of order).
  void abandon(std::uint32_t depth) noexcept;
  /// Forgets the pair of the frame at `depth`, counted in `across_waits`: its scope stays open
  /// across a wait between step windows (producers/suspended_frames.hpp), which a pair would count
  /// in its GPU time.
  void drop(std::uint32_t depth) noexcept;
  /// drop() of the frames at depths 1 to `depth`.
  void drop_open(std::uint32_t depth) noexcept {
    for (std::uint32_t d = 1; d <= depth; ++d) drop(d);
  }

  /// Resolver side (one resolver at a time): folds every finished pair into its node. Pairs on
  /// one stream finish in order, so the first unfinished pair of a stream stops that stream's
  /// pass; other streams go on. Returns true when nothing is left pending.
  bool resolve() noexcept;
  /// Resolver side, at the session's end (after the last resolve()): every pair still waiting, for
  /// its GPU work or for CUPTI's timestamps, is counted in `failures` and forgotten, its events back
  /// in the pool. A scope's event time is never lost uncounted.
  void give_up() noexcept;

  /// Scopes whose events could not be recorded or read.
  std::atomic<std::uint64_t> failures{0};
  /// Scopes whose stream was capturing when they began or ended.
  std::atomic<std::uint64_t> in_capture{0};
  /// Scopes whose pair drop() forgot: no event time, by design (the report's note on them).
  std::atomic<std::uint64_t> across_waits{0};
  /// Scopes that found the pool dry at its bound (kMaxPairs): no event time. Also in `failures`.
  std::atomic<std::uint64_t> refused{0};
  /// `failures` by cause, besides `refused` (the rest were not recorded: no pair could be made, or
  /// CUDA refused a record). Counted on the failure paths only; the report's note names them.
  std::atomic<std::uint64_t> unreadable{0};      // cudaEventQuery or cudaEventElapsedTime failed
  std::atomic<std::uint64_t> no_timestamps{0};   // CUPTI clock: the timestamps never came
  std::atomic<std::uint64_t> reversed{0};        // CUPTI clock: the stop's timestamp before the start's
  std::atomic<std::uint64_t> pending_at_end{0};  // not finished on the GPU (or not looked at) at the end
  std::atomic<int> first_error{0};               // the first cudaError_t of a record or query refused

  static constexpr std::size_t kMaxAwaiting = 1u << 16;  // finished pairs waiting for CUPTI's timestamps
  // Deliveries a finished pair waits for its timestamps, counting only those while none of this
  // thread's pairs was still unfinished on the GPU: CUPTI's normal flush holds back a whole buffer
  // (a thread's records) while any record in it is incomplete, so a GPU running behind the thread
  // holds its finished pairs' records for as long as it runs behind (docs/cupti-event-clock.md).
  static constexpr std::uint64_t kMaxDeliveries = 4;
  // Deliveries a finished pair waits at most, however far behind the GPU runs (about 5 s of the
  // collector's): a thread whose GPU never catches up (a pipelined loop) and whose records never
  // come still has its pairs counted as failures, and the list stays short.
  static constexpr std::uint64_t kMaxDeliveriesBehind = 50;

 private:
  struct Pair {
    cudaEvent_t start = nullptr;
    cudaEvent_t stop = nullptr;
    int device = -1;
    cudaStream_t stream = nullptr;
    model::Node* node = nullptr;
    Pair* next = nullptr;          // in its device's spare list
    bool cupti_clock = false;      // events without timing, their times from CUPTI (set when made)
    EventIds start_ids, stop_ids;  // with cupti_clock: the record calls' correlation ids
  };
  // A finished pair of the CUPTI clock, its events already back in the pool.
  struct Awaiting {
    model::Node* node;
    EventIds start_ids, stop_ids;
    std::uint64_t finished;         // event_timestamps().generation() when its stop event had finished
    std::uint64_t seen = finished;  // the generation when last looked at
    std::uint64_t waited = 0;       // deliveries since it finished while the pool had none unfinished
  };
  Pair* acquire(int device) noexcept;
  Pair* take(int device) noexcept;
  bool grow(int device) noexcept;
  bool move_idle_pair_to(int device) noexcept;
  static bool make_events(Pair* p) noexcept;
  static cudaError_t record(Pair* p, bool start, cudaStream_t stream) noexcept;
  bool record_start(Pair*& p, int device, cudaStream_t stream) noexcept;
  void add_time(model::Node* node, std::uint64_t ns) noexcept;
  bool take_device_times(model::Node* node, const EventIds& start, const EventIds& stop) noexcept;
  void await(const Pair* p) noexcept;
  bool resolve_awaiting(bool gpu_caught_up) noexcept;
  void fail_without_timestamps() noexcept;
  void fail() noexcept { failures.fetch_add(1, std::memory_order_relaxed); }
  // A failure of cause `cause` (one of the counters above).
  void fail(std::atomic<std::uint64_t>& cause) noexcept {
    cause.fetch_add(1, std::memory_order_relaxed);
    fail();
  }
  // Keeps `e`, the CUDA error of a refused record or query, when it is the first.
  void note_error(cudaError_t e) noexcept {
    int none = 0;
    first_error.compare_exchange_strong(none, static_cast<int>(e), std::memory_order_relaxed);
  }
  void spare(Pair* p) noexcept {
    p->next = spare_[p->device];
    spare_[p->device] = p;
  }

  Pair* open_[model::kHardMaxDepth] = {};
  Pair* spare_[kMaxDevices] = {};                // owner only: each device's pairs ready for a scope
  SpscRing<Pair*> pending_{kRing};               // owner -> resolver
  SpscRing<Pair*> free_{kRing};                  // resolver -> owner: read pairs, any device
  std::size_t created_ = 0;                      // owner only: pairs made, all devices
  std::vector<std::unique_ptr<Pair[]>> blocks_;  // owner only: the batches (capacity reserved)
  std::vector<Pair*> waiting_;                   // resolver only: taken off pending_, not finished yet
  std::vector<Awaiting> awaiting_;               // resolver only: finished, waiting for CUPTI's timestamps
};

/// How the report's note on event failures begins (EventFailureCauses::describe()).
inline constexpr std::string_view kEventFailuresNote = "CUDA event failures (";

/// How the report's note on scopes left without event time across waits begins (across_waits_note()).
inline constexpr std::string_view kEventsAcrossWaitsNote = "CUDA-event time left out of ";
/// "" for none; else the report's note on `n` scopes whose pairs drop() forgot.
std::string across_waits_note(std::uint64_t n);

/// The causes of the scopes' event failures, summed over threads' pools: the report's note on them.
struct EventFailureCauses {
  std::uint64_t failures = 0, refused = 0, unreadable = 0, no_timestamps = 0, reversed = 0,
                pending_at_end = 0;
  int first_error = 0;  // the first pool's first error met
  void add(const GpuEvents& pool) noexcept;
  /// "" without failures; else one line naming each cause's count, the first CUDA error, and (when
  /// CUPTI's timestamps did not come) how many CUDA_EVENT records CUPTI delivered in this process.
  std::string describe() const;
};

}  // namespace cuscope::inline v0::detail

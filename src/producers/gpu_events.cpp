// producers/gpu_events.cpp — see gpu_events.hpp.
#include "producers/gpu_events.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <new>
#include <vector>

#include "producers/cuda_calls.hpp"
#include "producers/log.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Makes `device` current for its lifetime (events are created on the current device), then puts
// the program's device back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device) noexcept {
    if (g_cuda.get_device(&previous_) != cudaSuccess || previous_ == device) {
      g_cuda.get_last_error();
      previous_ = -1;
      return;
    }
    if (g_cuda.set_device(device) != cudaSuccess) {
      g_cuda.get_last_error();
      previous_ = -1;
    }
  }
  ~DeviceGuard() {
    if (previous_ >= 0) g_cuda.set_device(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

// The device `stream` belongs to (the current device when CUDA cannot say), or -1.
int device_of(cudaStream_t stream) {
  int device = -1;
  if (g_cuda.stream_get_device(stream, &device) == cudaSuccess) return device;
  g_cuda.get_last_error();
  if (g_cuda.get_device(&device) == cudaSuccess) return device;
  g_cuda.get_last_error();
  return -1;
}

std::atomic<bool> g_cupti_clock{false};
std::atomic<bool> g_cupti_clock_given_up{false};
// CUDA_EVENT records with a device timestamp delivered in the process, and their count when the
// CUPTI clock was last set on: records that come without one do not keep the clock either.
std::uint64_t timestamped_records() {
  const EventTimestamps& t = event_timestamps();
  return t.records() - t.records_without_timestamp();
}
std::atomic<std::uint64_t> g_records_at_clock_start{0};

// Whether `stream` is being captured into a graph; an error counts as capturing (do nothing).
bool capturing(cudaStream_t stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  if (g_cuda.stream_is_capturing(stream, &status) == cudaSuccess)
    return status != cudaStreamCaptureStatusNone;
  g_cuda.get_last_error();
  return true;
}

}  // namespace

bool events_allowed_on(cudaStream_t stream) noexcept {
  return stream != nullptr && stream != cudaStreamLegacy;
}

void set_event_timestamps_from_cupti(bool on) noexcept {
  if (on) {
    g_records_at_clock_start.store(timestamped_records(), std::memory_order_relaxed);
    g_cupti_clock_given_up.store(false, std::memory_order_relaxed);
  }
  g_cupti_clock.store(on, std::memory_order_release);
}

bool event_timestamps_from_cupti() noexcept { return g_cupti_clock.load(std::memory_order_acquire); }

bool cupti_clock_given_up() noexcept { return g_cupti_clock_given_up.load(std::memory_order_acquire); }

void forget_cupti_clock_for_testing() noexcept {
  g_cupti_clock.store(false, std::memory_order_release);
  g_cupti_clock_given_up.store(false, std::memory_order_release);
}

std::string timing_with_clock_given_up(const std::string& timing) {
  const std::size_t at = timing.find(kCuptiClockWords);
  if (!cupti_clock_given_up() || at == std::string::npos) return timing;
  std::string out = timing;
  out.replace(at, kCuptiClockWords.size(),
              "CUDA's clock: CUSCOPE_EVENT_TIMESTAMPS=cupti given up, CUPTI delivered no CUDA_EVENT record "
              "with a device timestamp");
  return out;
}

GpuEvents::GpuEvents() {
  waiting_.reserve(kRing);
  blocks_.reserve(kMaxPairs / kBatch);
}

GpuEvents::Pair* GpuEvents::acquire(int device) noexcept {
  Pair* p = take(device);
  if (p == nullptr && grow(device)) p = take(device);
  if (p == nullptr) return nullptr;
  if (p->start != nullptr && p->cupti_clock != g_cupti_clock.load(std::memory_order_relaxed)) {
    // Made for another session's clock (tests and benchmarks start several): made again.
    g_cuda.event_destroy(p->start);
    g_cuda.event_destroy(p->stop);
    g_cuda.get_last_error();
    p->start = p->stop = nullptr;
  }
  if (p->start == nullptr) {  // made afresh: its handles died, or its batch could not make them
    DeviceGuard on(device);
    if (!make_events(p)) {
      spare(p);
      return nullptr;
    }
  }
  return p;
}

// A pair of `device`'s pool: its spare list's first, else one the resolver gave back (the pairs
// of other devices met on the way go to their own lists).
GpuEvents::Pair* GpuEvents::take(int device) noexcept {
  Pair* p = spare_[device];
  if (p != nullptr) {
    spare_[device] = p->next;
    return p;
  }
  while (free_.pop(p)) {
    if (p->device == device) return p;
    spare(p);
  }
  return nullptr;
}

// Adds kBatch pairs to `device`'s dry pool: one allocation, their events made with the device
// current once for all (after a failure, the rest are made on their first use). At the bound, an
// idle pair of another device instead. False: the pool stays dry.
bool GpuEvents::grow(int device) noexcept {
  if (created_ + kBatch > kMaxPairs) return move_idle_pair_to(device);
  Pair* block = new (std::nothrow) Pair[kBatch];
  if (block == nullptr) return false;
  blocks_.emplace_back(block);  // within the capacity reserved: no allocation, no throw
  created_ += kBatch;
  DeviceGuard on(device);
  bool made = true;
  for (std::size_t i = kBatch; i-- > 0;) {
    block[i].device = device;
    made = made && make_events(&block[i]);
    spare(&block[i]);
  }
  return true;
}

// At the bound: an idle pair of another device goes to `device` (its events are made on first
// use). False, and the scope counted as refused, when every pair is in flight.
bool GpuEvents::move_idle_pair_to(int device) noexcept {
  for (Pair*& head : spare_) {
    Pair* p = head;
    if (p == nullptr) continue;
    head = p->next;
    if (p->start != nullptr) {
      g_cuda.event_destroy(p->start);
      g_cuda.event_destroy(p->stop);
      g_cuda.get_last_error();
    }
    p->start = p->stop = nullptr;
    p->device = device;
    spare(p);
    return true;
  }
  refused.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Makes `p`'s two events on the current device; false, and no event left, when CUDA cannot. Under
// the CUPTI clock they are made without timing: a record then costs CUDA less, and CUPTI's
// CUDA_EVENT record carries the device's timestamp.
bool GpuEvents::make_events(Pair* p) noexcept {
  p->cupti_clock = g_cupti_clock.load(std::memory_order_acquire);
  const unsigned flags = p->cupti_clock ? cudaEventDisableTiming : cudaEventDefault;
  if (g_cuda.event_create_with_flags(&p->start, flags) == cudaSuccess &&
      g_cuda.event_create_with_flags(&p->stop, flags) == cudaSuccess)
    return true;
  g_cuda.get_last_error();
  if (p->start != nullptr) g_cuda.event_destroy(p->start);
  p->start = p->stop = nullptr;
  return false;
}

// Records `p`'s start event. A failure on a pair that worked before means its handles died with
// their context (cudaDeviceReset): they are forgotten (not destroyed: the context that owned them
// is gone) and the pair is made afresh once.
bool GpuEvents::record_start(Pair*& p, int device, cudaStream_t stream) noexcept {
  cudaError_t e = record(p, true, stream);
  if (e == cudaSuccess) return true;
  g_cuda.get_last_error();
  p->start = p->stop = nullptr;
  spare(p);
  p = acquire(device);
  if (p == nullptr) return false;
  e = record(p, true, stream);
  if (e == cudaSuccess) return true;
  g_cuda.get_last_error();
  note_error(e);
  p->start = p->stop = nullptr;
  spare(p);
  return false;
}

// Records `p`'s start or stop event; under the CUPTI clock with t_event_ids set, so that CUPTI's
// callback notes the call's correlation ids in the pair.
cudaError_t GpuEvents::record(Pair* p, bool start, cudaStream_t stream) noexcept {
  if (!p->cupti_clock) return g_cuda.event_record(start ? p->start : p->stop, stream);
  EventIds& ids = start ? p->start_ids : p->stop_ids;
  ids = {};
  t_event_ids = &ids;
  const cudaError_t e = g_cuda.event_record(start ? p->start : p->stop, stream);
  t_event_ids = nullptr;
  return e;
}

bool GpuEvents::begin(std::uint32_t depth, cudaStream_t stream) noexcept {
  if (!events_allowed_on(stream)) return false;  // by design: GPU time comes from CUPTI's span
  if (capturing(stream)) {
    in_capture.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  const int device = device_of(stream);
  Pair* p = device >= 0 && device < kMaxDevices ? acquire(device) : nullptr;
  if (p == nullptr || !record_start(p, device, stream)) {
    fail();
    return false;
  }
  p->stream = stream;
  open_[depth - 1] = p;
  return true;
}

void GpuEvents::end(std::uint32_t depth, model::Node* node) noexcept {
  Pair* p = open_[depth - 1];
  open_[depth - 1] = nullptr;
  if (p == nullptr) return;
  if (capturing(p->stream)) {  // a capture began inside the scope: its stop cannot be recorded
    in_capture.fetch_add(1, std::memory_order_relaxed);
    spare(p);
    return;
  }
  if (const cudaError_t e = record(p, false, p->stream); e != cudaSuccess) {
    g_cuda.get_last_error();
    note_error(e);
    p->start = p->stop = nullptr;  // dead handles are made afresh on the pair's next use
    spare(p);
    fail();
    return;
  }
  p->node = node;
  if (!pending_.push(p)) {
    spare(p);
    fail();
  }
}

void GpuEvents::abandon(std::uint32_t depth) noexcept {
  Pair* p = open_[depth - 1];
  open_[depth - 1] = nullptr;
  if (p != nullptr) spare(p);
}

void GpuEvents::drop(std::uint32_t depth) noexcept {
  if (depth == 0 || depth > model::kHardMaxDepth || open_[depth - 1] == nullptr) return;
  abandon(depth);
  across_waits.fetch_add(1, std::memory_order_relaxed);
}

bool GpuEvents::resolve() noexcept {
  for (Pair* p = nullptr; pending_.pop(p);) waiting_.push_back(p);
  // Streams met unfinished in this pass: their later pairs cannot have finished either.
  constexpr std::size_t kBlockedMax = 64;
  cudaStream_t blocked[kBlockedMax];
  std::size_t n_blocked = 0;
  std::size_t kept = 0;
  for (Pair* p : waiting_) {
    const bool skip = std::find(blocked, blocked + n_blocked, p->stream) != blocked + n_blocked;
    const cudaError_t q = skip ? cudaErrorNotReady : g_cuda.event_query(p->stop);
    if (q == cudaErrorNotReady) {
      if (!skip) {
        g_cuda.get_last_error();
        if (n_blocked < kBlockedMax) blocked[n_blocked++] = p->stream;
      }
      waiting_[kept++] = p;
      continue;
    }
    float ms = 0.0f;
    if (q == cudaSuccess && p->cupti_clock) {
      // Timed below, with every pair that waits for its timestamps; made before the clock was given
      // up, it fails there at once unless its timestamps have come (a false alarm's held-back records).
      await(p);
    } else if (q == cudaSuccess && g_cuda.event_elapsed_time(&ms, p->start, p->stop) == cudaSuccess &&
               ms >= 0.0f) {
      add_time(p->node, static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6));
    } else {
      // A broken pair (its context was reset, say) is made afresh on its next use, not reused.
      g_cuda.get_last_error();
      if (q != cudaSuccess) note_error(q);
      p->start = p->stop = nullptr;
      fail(unreadable);
    }
    free_.push(p);
  }
  waiting_.resize(kept);
  const bool none_awaiting = resolve_awaiting(waiting_.empty());
  return waiting_.empty() && none_awaiting;
}

void GpuEvents::give_up() noexcept {
  std::uint64_t pending = waiting_.size();
  const std::uint64_t timestamps = awaiting_.size();
  for (Pair* p : waiting_) free_.push(p);
  for (Pair* p = nullptr; pending_.pop(p); ++pending) free_.push(p);
  waiting_.clear();
  awaiting_.clear();
  pending_at_end.fetch_add(pending, std::memory_order_relaxed);
  no_timestamps.fetch_add(timestamps, std::memory_order_relaxed);
  failures.fetch_add(pending + timestamps, std::memory_order_relaxed);
}

void GpuEvents::add_time(model::Node* node, std::uint64_t ns) noexcept {
  node->gpu.add(ns);
  if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->gpu_time(node, ns);
}

// A finished pair of the CUPTI clock: its time, when both timestamps have come.
bool GpuEvents::take_device_times(model::Node* node, const EventIds& start, const EventIds& stop) noexcept {
  std::uint64_t start_ns = 0;
  std::uint64_t stop_ns = 0;
  if (!event_timestamps().take_pair(start, stop, start_ns, stop_ns)) return false;
  if (stop_ns >= start_ns) {
    add_time(node, stop_ns - start_ns);
  } else {
    fail(reversed);
  }
  return true;
}

// A finished pair of the CUPTI clock waits for its timestamps apart, its events back in the pool
// (a pool held until CUPTI's next delivery would run dry under a fast loop of scopes). At the
// bound it is timed now if its timestamps have come, else counted as a failure.
void GpuEvents::await(const Pair* p) noexcept {
  if (awaiting_.size() >= kMaxAwaiting) {
    if (!take_device_times(p->node, p->start_ids, p->stop_ids)) fail_without_timestamps();
    return;
  }
  try {
    awaiting_.push_back({p->node, p->start_ids, p->stop_ids, event_timestamps().generation()});
  } catch (...) {  // no memory for the list: this time is lost, counted
    fail();
  }
}

// Finished pairs still waiting for CUPTI's timestamps: timed when both have come; counted as
// failures once kMaxDeliveries deliveries came without them while `gpu_caught_up` (none of this
// pool's pairs unfinished), or kMaxDeliveriesBehind in all. Deliveries while the GPU runs behind
// this thread count only toward the second: CUPTI's normal flush keeps back a buffer with an
// incomplete record in it (a later event or kernel not yet run), the finished pairs' records with
// it (the likely cause of the 99 pairs an H200 failed on 2026-11-27, of a thread that queued 1 ms
// kernels faster than they ran). True when none waits.
bool GpuEvents::resolve_awaiting(bool gpu_caught_up) noexcept {
  const std::uint64_t now = event_timestamps().generation();
  std::size_t kept = 0;
  for (Awaiting& a : awaiting_) {
    if (take_device_times(a.node, a.start_ids, a.stop_ids)) continue;
    if (gpu_caught_up) a.waited += now - a.seen;
    a.seen = now;
    if (a.waited >= kMaxDeliveries || now - a.finished >= kMaxDeliveriesBehind || cupti_clock_given_up()) {
      fail_without_timestamps();
      continue;
    }
    awaiting_[kept++] = a;
  }
  awaiting_.resize(kept);
  return awaiting_.empty();
}

// A pair whose timestamps did not come, counted; and if CUPTI has delivered no CUDA_EVENT record with
// a device timestamp since the clock was set on, the clock given up for CUDA's: the pairs made from now on are
// made with timing (acquire() remakes a pool's pairs of the other clock), so one failed pair costs
// the rest of the session nothing. A false alarm (the first records held back past the wait by a
// long kernel of the same thread on another stream) costs CUDA's dearer records, and the pairs made
// before whose held-back records have not come by the next resolve (resolve_awaiting()).
void GpuEvents::fail_without_timestamps() noexcept {
  fail(no_timestamps);
  if (timestamped_records() != g_records_at_clock_start.load(std::memory_order_relaxed)) return;
  if (!g_cupti_clock.exchange(false, std::memory_order_acq_rel)) return;  // given up already, or off
  g_cupti_clock_given_up.store(true, std::memory_order_release);
  warn_once(std::string(kCuptiClockGivenUpNote));
}

void EventFailureCauses::add(const GpuEvents& pool) noexcept {
  failures += pool.failures.load(std::memory_order_relaxed);
  refused += pool.refused.load(std::memory_order_relaxed);
  unreadable += pool.unreadable.load(std::memory_order_relaxed);
  no_timestamps += pool.no_timestamps.load(std::memory_order_relaxed);
  reversed += pool.reversed.load(std::memory_order_relaxed);
  pending_at_end += pool.pending_at_end.load(std::memory_order_relaxed);
  if (first_error == 0) first_error = pool.first_error.load(std::memory_order_relaxed);
}

std::string across_waits_note(std::uint64_t n) {
  if (n == 0) return {};
  return fmt::format(
      "{}{} scope{} open across a wait between step windows (or recording switched off): a pair of CUDA "
      "events would have counted the GPU work in between in {} GPU time (docs/options.md, the step window)",
      kEventsAcrossWaitsNote, n, n == 1 ? "" : "s", n == 1 ? "its" : "their");
}

// What a CUPTI-timed pair's missing timestamps need to be told apart (docs/cupti-event-clock.md):
// records that never came at all, records without a device timestamp, or records held back.
std::string EventFailureCauses::describe() const {
  if (failures == 0) return {};
  const std::uint64_t named = refused + unreadable + no_timestamps + reversed + pending_at_end;
  const std::uint64_t not_recorded = failures > named ? failures - named : 0;
  std::vector<std::string> parts;
  if (not_recorded != 0)
    parts.push_back(fmt::format("{} not recorded (no pair made, or CUDA refused a record)", not_recorded));
  if (refused != 0)
    parts.push_back(
        fmt::format("{} refused a pair at the thread's bound of {}", refused, GpuEvents::kMaxPairs));
  if (unreadable != 0) parts.push_back(fmt::format("{} unreadable (cudaEventQuery or cudaEventElapsedTime failed)", unreadable));
  if (no_timestamps != 0) {
    const EventTimestamps& t = event_timestamps();
    parts.push_back(fmt::format(
        "{} without CUPTI's timestamps ({} CUDA_EVENT records came in this process, {} of them without a "
        "device timestamp)",
        no_timestamps, t.records(), t.records_without_timestamp()));
  }
  if (reversed != 0)
    parts.push_back(fmt::format("{} with the stop's device timestamp before the start's", reversed));
  if (pending_at_end != 0)
    parts.push_back(fmt::format("{} still pending on the GPU when the session ended", pending_at_end));
  std::string line = fmt::format("{}{}): {}", kEventFailuresNote, failures, fmt::join(parts, "; "));
  if (first_error != 0)
    line += fmt::format("; first CUDA error {}", cudaGetErrorName(static_cast<cudaError_t>(first_error)));
  return line;
}

}  // namespace cuscope::inline v0::detail

// producers/cupti/adapter.cpp — see adapter.hpp.
#include "producers/cupti/adapter.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "producers/clock.hpp"
#include "producers/cupti/activity_kinds.hpp"
#include "producers/cupti/adapter_state.hpp"
#include "producers/cupti/buffer_pool.hpp"
#include "producers/cupti/decode.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/cupti/traced_calls.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/gpu_events.hpp"
#include "producers/launch_notes.hpp"
#include "producers/log.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {

State& state() {
  static State* s = new State();  // leaked: CUPTI may call back until the process ends
  return *s;
}

std::string refusal(const char* what, CUptiResult r) { return cupti_refusal(what, static_cast<int>(r)); }

namespace {

std::atomic<std::uint32_t> g_fake_version{0};  // tests: a libcupti of another API version

std::uint64_t CUPTIAPI timestamp() { return now_ns(); }

// CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, as cuscope found it when it set it (restored when
// tracing ends), and whether cuscope set it.
std::uint8_t g_zeroed_found = 0;
bool g_zeroed_set = false;

// Tells CUPTI that the buffers it gets come zeroed (buffer_pool.hpp); refused, CUPTI zeroes them
// as by default, the pool's zeroing is spare, and one note says so.
void tell_buffers_zeroed() noexcept {
  std::size_t size = sizeof(g_zeroed_found);
  if (cuptiActivityGetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &g_zeroed_found) !=
      CUPTI_SUCCESS)
    g_zeroed_found = 0;
  std::uint8_t value = 1;
  size = sizeof(value);
  const CUptiResult r =
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &value);
  g_zeroed_set = r == CUPTI_SUCCESS;
  if (!g_zeroed_set)
    warn_once(fmt::format("{}: CUPTI zeroes each activity buffer on the thread that asks for it",
                          refusal("cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)", r)));
}

// The attribute back as cuscope found it (for a client after this session).
void restore_buffers_zeroed() noexcept {
  if (!g_zeroed_set) return;
  call_cupti("cuptiActivitySetAttribute(ZEROED_OUT_ACTIVITY_BUFFER)", [] {
    std::size_t size = sizeof(g_zeroed_found);
    return cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &g_zeroed_found);
  });
  g_zeroed_set = false;
}

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  *buffer = state().buffers.take(size);  // zeroed: CUPTI is told not to zero it (start_activity_tracing)
}

// Launch attribution (CUSCOPE_ATTRIBUTION=launch): the launch notes made so far, into the model
// (the caller holds its lock), and what could not be noted.
void take_launch_notes(Sink& sink) noexcept {
  if (!sink.launch_attributed.load(std::memory_order_acquire)) return;
  drain_launches(sink);
  count_lost_launch_notes(sink);
}

// Runs `work` (the caller holds the aggregator's lock) and counts it as cuscope's own processing,
// with `buffers` more buffers: the time of the work, not of the wait for the lock.
template <class Work>
void own_processing(Sink& sink, std::uint64_t buffers, Work&& work) {
  const std::uint64_t start = now_ns();
  work();
  sink.aggregator.add_processing(buffers, model::elapsed_ns(start, now_ns()));
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                               std::size_t size, std::size_t valid) {
  State& s = state();
  std::size_t dropped = 0;
  // Not from inside cuptiFinalize (a buffer it delivers): no CUPTI call once the finalize is armed.
  if (!cupti_callable() || cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS)
    dropped = 0;  // no lock held
  if (Sink* target = s.target.load(std::memory_order_acquire)) take_buffer(*target, buffer, valid, dropped);
  s.buffers.give_back(buffer, size, valid);  // zeroed where its records were, on this thread
}

}  // namespace

void take_buffer(Sink& sink, std::uint8_t* buffer, std::size_t valid, std::size_t dropped) noexcept {
  std::lock_guard lock(sink.aggregator_mutex);
  own_processing(sink, 1, [&] {
    take_launch_notes(sink);  // before the records of the launches they name
    consume_buffer(buffer, valid, dropped, sink.aggregator);
    sink.aggregator.add_refused_buffers(state().buffers.take_refused());
  });
}

namespace {

// The external correlation hooks. A thread that read a hook just before a detach cleared it may call
// it after the finalize was armed: then no CUPTI call (it would attach CUPTI again).
void push_correlation(std::uint64_t instance) noexcept {
  if (cupti_callable())
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, instance);
}

void pop_correlation() noexcept {
  std::uint64_t last = 0;
  if (cupti_callable()) cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

// CUSCOPE_EVENT_TIMESTAMPS=cupti: CUDA_EVENT records with device timestamps, and the callbacks
// that note cuscope's own records (subscribe() turned them on). Where any part is refused, CUDA
// events time themselves, with a note saying why.
void start_event_clock(State& s, Sink& sink, const Subscribed& sub) {
  set_event_timestamps_from_cupti(false);
  if (!wants_cupti_event_clock(sink.options)) return;
  std::string why;
  if (!sub.event_records) {
    why = sub.why_not.empty() ? "no CUPTI subscriber" : sub.why_not;
  } else if (CUptiResult r = s.kinds.enable_event_records(); r != CUPTI_SUCCESS) {
    why = refusal("cuptiActivityEnable(CUDA_EVENT)", r);
  } else {
    if (CUptiResult t = cuptiActivityEnableCudaEventDeviceTimestamps(1); t != CUPTI_SUCCESS)
      why = refusal("cuptiActivityEnableCudaEventDeviceTimestamps", t);
    else
      s.device_timestamps_on = true;
  }
  if (why.empty()) {
    set_event_timestamps_from_cupti(true);
  } else {
    warn_once(fmt::format("CUSCOPE_EVENT_TIMESTAMPS=cupti: {}; CUDA events time themselves", why));
  }
}

std::atomic<void (*)(bool)> g_pause_hook{nullptr};  // tests: stands for CUPTI in pause_activity_tracing()
bool g_hook_paused = false;

std::uint32_t loaded_version() {
  if (std::uint32_t fake = g_fake_version.load(std::memory_order_relaxed)) return fake;
  std::uint32_t v = 0;
  return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

}  // namespace

// cuptiActivityFlushAll, one call at a time: cuscope's threads (the collector's polls, flush(), a
// counter window's end, shutdown()) never flush together. Two first calls at once race inside libcupti
// (ThreadSanitizer saw one allocate what the other locked), and two flushes at once gain nothing.
// Taken with no other cuscope lock held; CUPTI calls buffer_completed under it, which takes the
// aggregator's (so: this lock, then that one, never the other way).
// The same lock arms a detach (detach_now()): a flush checks for it under the lock, so that none runs
// into the finalize.
std::mutex& flush_mutex() {
  static auto* one_at_a_time = new std::mutex;  // leaked, as the state: a flush may run at exit
  return *one_at_a_time;
}

namespace {

void flush_cupti(std::uint32_t flags) {
  std::lock_guard lock(flush_mutex());
  call_cupti(flags == 0 ? "cuptiActivityFlushAll(0)" : "cuptiActivityFlushAll(FORCED)",
             [flags] { return cuptiActivityFlushAll(flags); });
}

}  // namespace

// Delivers buffers CUPTI has completed (`flags` 0), or every buffer, incomplete records included
// (FORCED), then retries and ages the records waiting for their correlation.
void deliver(std::uint32_t flags) {
  // One more delivery for the pairs waiting for their event timestamps (a forced flush is not
  // counted: the resolver after shutdown's flushes still waits for what they bring).
  if (flags == 0) event_timestamps().count_delivery();
  flush_cupti(flags);  // no cuscope lock held: CUPTI calls buffer_completed from here
  if (Sink* target = state().target.load(std::memory_order_acquire)) {
    // Spare buffers for the next threads that launch, made here, off the launching threads (only
    // for a session CUPTI traces for: fake CUPTI in tests has none).
    if (flags == 0 && cupti_callable()) state().buffers.keep_spares(kSpareBuffers);
    std::lock_guard lock(target->aggregator_mutex);
    own_processing(*target, 0, [&] {
      take_launch_notes(*target);
      target->aggregator.settle();
    });
  }
}

namespace {

// What start_event_clock turned on, off: decided by its own record of the call, not by the clock's
// flags, which the resolver may be changing now (a give-up: event_timestamps_from_cupti() false,
// then cupti_clock_given_up() true).
void event_timestamps_off(State& s) {
  if (s.device_timestamps_on)
    call_cupti("cuptiActivityEnableCudaEventDeviceTimestamps(0)",
               [] { return cuptiActivityEnableCudaEventDeviceTimestamps(0); });
  s.device_timestamps_on = false;
  set_event_timestamps_from_cupti(false);
}

}  // namespace

// The last of a session's records, then its kinds off, as the stop at exit and the detach both end:
// what a forced flush hands back incomplete was still running (counted apart), the event timestamps
// and every kind off, one more forced flush, the buffers' attribute as cuscope found it.
void last_records_and_kinds_off(State& s, Sink& target) {
  {
    std::lock_guard lock(target.aggregator_mutex);
    target.aggregator.set_final_flush(true);
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->final_flush();
  }
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  event_timestamps_off(s);
  s.kinds.off();
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  restore_buffers_zeroed();  // CUPTI as found, for a client after this session
}

void set_cupti_version_for_testing(std::uint32_t version) noexcept {
  g_fake_version.store(version, std::memory_order_relaxed);
}

std::string start_activity_tracing(Sink& sink) noexcept {
  try {
    State& s = state();
    // A session after a detached one attaches CUPTI again; not while a finalize is still under way.
    if (!wait_out_finalize())
      return "CUPTI tracing could not start: the last session's cuptiFinalize is still under way";
    reclaim_kept_buffers(s);  // the first attach since cuscope's finalize: what CUPTI never handed back
    set_detach_stage(DetachStage::none);
    const std::uint32_t version = loaded_version();
    const LayoutCheck layouts = check_layouts(version, CUPTI_API_VERSION);
    if (!layouts.refusal.empty()) return layouts.refusal;
    if (!layouts.note.empty()) warn_once(layouts.note);
    set_walk(layouts.walk);
    // The timestamp callback must come before any kind is enabled: every record is then on the
    // clock of the host scopes.
    CUptiResult r = cuptiActivityRegisterTimestampCallback(&timestamp);
    if (r != CUPTI_SUCCESS) return refusal("cuptiActivityRegisterTimestampCallback", r);
    r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
    if (r != CUPTI_SUCCESS) return refusal("cuptiActivityRegisterCallbacks", r);
    // Buffers come zeroed (buffer_pool.hpp): CUPTI need not zero each one on the launching thread
    // that asks for it. Before any kind is on, so before CUPTI asks for its first buffer.
    tell_buffers_zeroed();
    s.buffers.keep_spares(kSpareBuffers);
    s.target.store(&sink, std::memory_order_release);
    // The subscriber first: whether launches are noted by callbacks decides what else is enabled.
    const bool wants_launches = sink.options.attribution == Attribution::launch;
    const Subscribed sub = subscribe(sink, wants_launches);
    if (wants_launches && !sub.launches)
      warn_once(
          fmt::format("CUSCOPE_ATTRIBUTION=launch: launch callbacks off ({}); scopes push external "
                      "correlation ids instead",
                      sub.why_not));
    const RecordChoice want = record_choice(sink.options);
    if (std::string why = s.kinds.start(want, sub.launches); !why.empty()) {
      s.kinds.off();
      restore_buffers_zeroed();
      unsubscribe();
      s.target.store(nullptr, std::memory_order_release);
      return why;
    }
    s.paused = s.pause_refused = false;
    start_event_clock(s, sink, sub);
    sink.forest.record_instances.store(true, std::memory_order_relaxed);
    sink.launch_attributed.store(sub.launches, std::memory_order_release);
    // With launch notes the hooks only mark cuscope's own calls (the collector's event queries):
    // scopes call them only when they push correlation ids (kCorrelation, off then).
    g_pop_correlation.store(sub.launches ? &own_calls_end : &pop_correlation, std::memory_order_release);
    g_push_correlation.store(sub.launches ? &own_calls_begin : &push_correlation, std::memory_order_release);
    sink.tracing.store(true, std::memory_order_release);
    return tracing_status(want, sub.launches);
  } catch (const std::exception& e) {
    restore_buffers_zeroed();
    return fmt::format("CUPTI tracing could not start: {}", e.what());
  }
}

void pause_activity_tracing(bool paused) noexcept {
  if (void (*hook)(bool) = g_pause_hook.load(std::memory_order_acquire)) {
    if (paused != g_hook_paused) hook(paused);
    g_hook_paused = paused;
    return;
  }
  State& s = state();
  Sink* target = s.target.load(std::memory_order_acquire);
  if (target == nullptr || paused == s.paused || s.pause_refused || !cupti_callable()) return;
  try {
    const std::string why = paused ? s.kinds.pause() : s.kinds.resume();
    if (why.empty()) {
      s.paused = paused;
      return;
    }
    s.pause_refused = true;
    if (paused) {
      const std::string back = s.kinds.resume();  // tracing on, as without windows
      warn_once(
          back.empty()
              ? fmt::format("CUPTI tracing cannot pause between step windows ({}); it traces on, and what "
                            "it records outside the window is counted as such",
                            why)
              : fmt::format("CUPTI tracing cannot pause between step windows ({}) nor resume ({}): GPU "
                            "work is no longer recorded",
                            why, back));
      s.paused = !back.empty();
    } else {
      warn_once(
          fmt::format("CUPTI tracing could not resume after a pause between step windows ({}): later "
                      "windows' GPU work is not recorded",
                      why));
    }
  } catch (...) {  // out of memory saying why: as it is
    s.pause_refused = true;
  }
}

void set_pause_hook_for_testing(void (*hook)(bool paused)) noexcept {
  g_pause_hook.store(hook, std::memory_order_release);
  g_hook_paused = false;
}

void trace_kinds_with_fake_cupti_for_testing(Sink& sink, const std::vector<CUpti_ActivityKind>& kinds,
                                             CUptiResult (*fake)(CUpti_ActivityKind kind, bool on)) noexcept {
  State& s = state();
  try {
    s.kinds.fake_for_testing(kinds, fake);
  } catch (...) {  // out of memory: none
    s.kinds.fake_for_testing({}, fake);
  }
  s.paused = s.pause_refused = false;
  set_detach_stage(DetachStage::none);
  s.target.store(&sink, std::memory_order_release);
  sink.tracing.store(true, std::memory_order_release);
}

void flush_activity() noexcept { deliver(0); }

void flush_activity_forced() noexcept { deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

std::uint64_t activity_buffers_written_past_valid() noexcept { return state().buffers.written_past_valid(); }

void poll_activity() noexcept { deliver(0); }

void drain_launch_notes(Sink& sink) noexcept {
  if (!sink.launch_attributed.load(std::memory_order_acquire)) return;
  std::lock_guard lock(sink.aggregator_mutex);
  own_processing(sink, 0, [&] { take_launch_notes(sink); });
}

void deliver_after_counters() noexcept {
  Sink* target = state().target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  flush_cupti(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // no cuscope lock held
  std::lock_guard lock(target->aggregator_mutex);
  target->aggregator.settle(model::Aggregator::kMaxAge, false);  // retries without aging
}

void stop_activity_tracing() noexcept {
  g_hook_paused = false;
  State& s = state();
  Sink* target = s.target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  target->tracing.store(false, std::memory_order_release);
  g_push_correlation.store(nullptr, std::memory_order_release);
  g_pop_correlation.store(nullptr, std::memory_order_release);
  if (settle_detach_for_stop()) {
    deliver(0);  // everything that finished, complete
    last_records_and_kinds_off(s, *target);
  } else {
    // Detached, or a thread inside cuptiFinalize: no CUPTI call (detach_now() delivered everything,
    // and the subscriber went with CUPTI), only cuscope's side.
    set_event_timestamps_from_cupti(false);
    s.device_timestamps_on = false;  // gone with CUPTI's detach: no call
    s.kinds.off();  // empty since the detach: no call
  }
  s.paused = false;
  unsubscribe();  // no cuscope lock held; no CUPTI call after a detach
  target->launch_attributed.store(false, std::memory_order_release);
  s.target.store(nullptr, std::memory_order_release);
  // Not cuptiFinalize: from an exit handler it can race CUDA's own teardown and other tools'
  // CUPTI use. Disabled kinds and a detached target leave CUPTI nothing to call cuscope for.
}

}  // namespace cuscope::inline v0::detail

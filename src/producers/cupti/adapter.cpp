// producers/cupti/adapter.cpp — see adapter.hpp.
#include "producers/cupti/adapter.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "producers/clock.hpp"
#include "producers/cupti/buffer_pool.hpp"
#include "producers/cupti/decode.hpp"
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
namespace {

// The activity buffers (buffer_pool.hpp): 4 MiB while 32 are out, then 256 KiB until 256 MiB in all,
// then none (CUPTI drops records and counts them; cuscope counts the refusals too).
constexpr BufferPool::Limits kBufferLimits{4u << 20, 256u << 10, 128u << 20, 256u << 20};
// Zeroed buffers kept ready for the next threads that launch (made on the collector's thread).
constexpr std::size_t kSpareBuffers = 2;

constexpr std::array kKinds = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // not KERNEL, which serializes kernels
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,  // peer-to-peer copies
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,  // launches CUDA makes for the program (their API records)
};

struct State {
  std::atomic<Sink*> target{nullptr};
  BufferPool buffers{kBufferLimits};
  std::vector<CUpti_ActivityKind> enabled;  // kinds to disable at stop
  // Between step windows (pause_activity_tracing): the kinds disabled, in the order they were on.
  std::vector<CUpti_ActivityKind> paused_kinds;
  bool paused = false;
  bool pause_refused = false;  // a pause or resume was refused: tracing stays as it is from then on
  bool launch_notes = false;   // the launch callbacks are on (what a pause turns off too)
};

State& state() {
  static State* s = new State();  // leaked: CUPTI may call back until the process ends
  return *s;
}

std::atomic<std::uint32_t> g_fake_version{0};  // tests: a libcupti of another API version

std::string refusal(const char* what, CUptiResult r) { return cupti_refusal(what, static_cast<int>(r)); }

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
  std::size_t size = sizeof(g_zeroed_found);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &g_zeroed_found);
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
  sink.aggregator.add_lost_launch_notes(take_lost_launch_notes());
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
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS)
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

void push_correlation(std::uint64_t instance) noexcept {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, instance);
}

void pop_correlation() noexcept {
  std::uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

// Enables API records for the calls that launch work, and only those; returns the first refusal.
// The whole kind first, then every other call turned off: on an H100 (CUDA 13.0, driver 580),
// turning single calls on (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 1)) without the kind gave
// no API records at all, nor external correlations, for a context made before CUPTI was first
// used (a program that called CUDA before its first scope): no kernel could be tied to a scope.
// The kind, then calls turned off, gave exactly the wanted records for both (docs/cupti.md).
CUptiResult trace_calls(State& s, RecordChoice want) {
  struct Domain {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId size;
    CUpti_ActivityKind kind;
  };
  const Domain domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_RUNTIME},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_DRIVER}};
  for (const Domain& d : domains) {
    CUptiResult r = cuptiActivityEnable(d.kind);
    if (r != CUPTI_SUCCESS) return r;
    s.enabled.push_back(d.kind);
    for (CUpti_CallbackId cbid = 1; cbid < d.size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (traced_call(name, d.domain == CUPTI_CB_DOMAIN_DRIVER_API, want)) continue;
      r = d.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 0)
                                                  : cuptiActivityEnableDriverApi(cbid, 0);
      if (r != CUPTI_SUCCESS) return r;
    }
  }
  return CUPTI_SUCCESS;
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
  } else if (CUptiResult r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT); r != CUPTI_SUCCESS) {
    why = refusal("cuptiActivityEnable(CUDA_EVENT)", r);
  } else {
    s.enabled.push_back(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
    if (CUptiResult t = cuptiActivityEnableCudaEventDeviceTimestamps(1); t != CUPTI_SUCCESS)
      why = refusal("cuptiActivityEnableCudaEventDeviceTimestamps", t);
  }
  if (why.empty()) {
    set_event_timestamps_from_cupti(true);
  } else {
    warn_once(fmt::format("CUSCOPE_EVENT_TIMESTAMPS=cupti: {}; CUDA events time themselves", why));
  }
}

// Tests: stands for cuptiActivityEnable (`on`) and cuptiActivityDisable in pauses, resumes and
// stop (trace_kinds_with_fake_cupti_for_testing()).
std::atomic<CUptiResult (*)(CUpti_ActivityKind, bool)> g_fake_switch{nullptr};

CUptiResult switch_kind(CUpti_ActivityKind kind, bool on) {
  if (auto* fake = g_fake_switch.load(std::memory_order_acquire)) return fake(kind, on);
  return on ? cuptiActivityEnable(kind) : cuptiActivityDisable(kind);
}

// Disabling a kind ends its calls' records too; the calls turned off stay off until the kind is
// enabled again, which turns every call back on (CUPTI: the kind overrides per-call settings made
// before it).
void disable_all(State& s) {
  for (CUpti_ActivityKind kind : s.enabled) switch_kind(kind, false);
  s.enabled.clear();
}

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "cuptiActivityEnable(CONCURRENT_KERNEL)";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "cuptiActivityEnable(MEMCPY)";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "cuptiActivityEnable(MEMSET)";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "cuptiActivityEnable(MEMORY2)";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "cuptiActivityEnable(SYNCHRONIZATION)";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "cuptiActivityEnable(EXTERNAL_CORRELATION)";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "cuptiActivityEnable(OVERHEAD)";
    default:
      return "cuptiActivityEnable";
  }
}

std::atomic<void (*)(bool)> g_pause_hook{nullptr};  // tests: stands for CUPTI in pause_activity_tracing()
bool g_hook_paused = false;

// The kinds and callbacks off, the kinds of launches first; "" or why not (what was paused by then
// stays in paused_kinds, for resume()).
std::string pause(State& s) {
  std::vector<CUpti_ActivityKind> kept;  // still on: CUDA_EVENT, and from a refusal on, the rest
  for (std::size_t i = 0; i < s.enabled.size(); ++i) {
    const CUpti_ActivityKind kind = s.enabled[i];
    if (kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT) {
      kept.push_back(kind);
    } else if (CUptiResult r = switch_kind(kind, false); r != CUPTI_SUCCESS) {
      kept.insert(kept.end(), s.enabled.begin() + static_cast<std::ptrdiff_t>(i), s.enabled.end());
      s.enabled = std::move(kept);
      return refusal("cuptiActivityDisable", r);
    } else {
      s.paused_kinds.push_back(kind);
    }
  }
  s.enabled = std::move(kept);
  return s.launch_notes ? pause_launch_callbacks(true) : std::string{};
}

// The callbacks on, then the kinds in the reverse order: API records (with external correlation)
// before the records that need them, and the kinds of launches last; "" or why not.
std::string resume(State& s, Sink& sink) {
  if (s.launch_notes) {
    if (std::string why = pause_launch_callbacks(false); !why.empty()) return why;
  }
  const bool api = std::find(s.paused_kinds.begin(), s.paused_kinds.end(), CUPTI_ACTIVITY_KIND_RUNTIME) !=
                   s.paused_kinds.end();
  std::erase_if(s.paused_kinds, [](CUpti_ActivityKind k) {
    return k == CUPTI_ACTIVITY_KIND_RUNTIME || k == CUPTI_ACTIVITY_KIND_DRIVER;
  });
  if (api) {
    // The kind turns every call's records back on: trace_calls() turns the others off again.
    if (CUptiResult r = trace_calls(s, record_choice(sink.options)); r != CUPTI_SUCCESS)
      return refusal("cuptiActivityEnable(RUNTIME/DRIVER)", r);
  }
  while (!s.paused_kinds.empty()) {
    const CUpti_ActivityKind kind = s.paused_kinds.back();
    if (CUptiResult r = switch_kind(kind, true); r != CUPTI_SUCCESS) return refusal(kind_name(kind), r);
    // Back in the order they were on (the API kinds after them, as trace_calls() put them at
    // start): the next pause turns them off in the same order, the kernels first.
    s.enabled.insert(s.enabled.begin(), kind);
    s.paused_kinds.pop_back();
  }
  cuptiActivityEnableAllSyncRecords(0);  // as start_activity_tracing() left it
  return {};
}

std::uint32_t loaded_version() {
  if (std::uint32_t fake = g_fake_version.load(std::memory_order_relaxed)) return fake;
  std::uint32_t v = 0;
  return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

// cuptiActivityFlushAll, one call at a time: cuscope's threads (the collector's polls, flush(), a
// counter window's end, shutdown()) never flush together. Two first calls at once race inside libcupti
// (ThreadSanitizer saw one allocate what the other locked), and two flushes at once gain nothing.
// Taken with no other cuscope lock held; CUPTI calls buffer_completed under it, which takes the
// aggregator's (so: this lock, then that one, never the other way).
void flush_cupti(std::uint32_t flags) {
  static auto* one_at_a_time = new std::mutex;  // leaked, as the state: a flush may run at exit
  std::lock_guard lock(*one_at_a_time);
  cuptiActivityFlushAll(flags);
}

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
    if (flags == 0) state().buffers.keep_spares(kSpareBuffers);
    std::lock_guard lock(target->aggregator_mutex);
    own_processing(*target, 0, [&] {
      take_launch_notes(*target);
      target->aggregator.settle();
    });
  }
}

}  // namespace

std::vector<CUpti_ActivityKind> activity_kinds(RecordChoice want, bool launch_notes) {
  std::vector<CUpti_ActivityKind> kinds;
  for (CUpti_ActivityKind kind : kKinds) {
    // Launch notes stand for external correlations and the API records they ride on.
    if (launch_notes &&
        (kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION || kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API))
      continue;
    if ((!want.syncs && kind == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) ||
        (!want.memory && kind == CUPTI_ACTIVITY_KIND_MEMORY2))
      continue;
    kinds.push_back(kind);
  }
  return kinds;
}

void set_cupti_version_for_testing(std::uint32_t version) noexcept {
  g_fake_version.store(version, std::memory_order_relaxed);
}

std::string start_activity_tracing(Sink& sink) noexcept {
  try {
    State& s = state();
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
    const auto fail = [&](const std::string& why) {
      disable_all(s);
      restore_buffers_zeroed();
      unsubscribe();
      s.target.store(nullptr, std::memory_order_release);
      return why;
    };
    const RecordChoice want = record_choice(sink.options);
    for (CUpti_ActivityKind kind : activity_kinds(want, sub.launches)) {
      r = cuptiActivityEnable(kind);
      if (r != CUPTI_SUCCESS) return fail(refusal(kind_name(kind), r));
      s.enabled.push_back(kind);
    }
    // Queries of events and streams whose work has not finished yet say nothing about waiting;
    // without this every poll of a running event would be a record.
    cuptiActivityEnableAllSyncRecords(0);
    if (!sub.launches) {
      r = trace_calls(s, want);
      if (r != CUPTI_SUCCESS) return fail(refusal("cuptiActivityEnable(RUNTIME/DRIVER)", r));
    }
    s.launch_notes = sub.launches;
    s.paused = s.pause_refused = false;
    s.paused_kinds.clear();
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
  if (target == nullptr || paused == s.paused || s.pause_refused) return;
  try {
    const std::string why = paused ? pause(s) : resume(s, *target);
    if (why.empty()) {
      s.paused = paused;
      return;
    }
    s.pause_refused = true;
    if (paused) {
      const std::string back = resume(s, *target);  // tracing on, as without windows
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
  g_fake_switch.store(fake, std::memory_order_release);
  try {
    s.enabled = kinds;
  } catch (...) {  // out of memory: none
    s.enabled.clear();
  }
  s.paused_kinds.clear();
  s.paused = s.pause_refused = s.launch_notes = false;
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
  deliver(0);  // everything that finished, complete
  {
    // What a forced flush hands back with zero timestamps was still running: counted apart.
    std::lock_guard lock(target->aggregator_mutex);
    target->aggregator.set_final_flush(true);
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->final_flush();
  }
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (event_timestamps_from_cupti()) cuptiActivityEnableCudaEventDeviceTimestamps(0);
  set_event_timestamps_from_cupti(false);
  disable_all(s);
  g_fake_switch.store(nullptr, std::memory_order_release);  // the next session's kinds are CUPTI's
  s.paused_kinds.clear();                                   // off already
  s.paused = false;
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  restore_buffers_zeroed();  // CUPTI as found, for a client after this session
  unsubscribe();             // no cuscope lock held
  target->launch_attributed.store(false, std::memory_order_release);
  s.target.store(nullptr, std::memory_order_release);
  // Not cuptiFinalize: from an exit handler it can race CUDA's own teardown and other tools'
  // CUPTI use. Disabled kinds and a detached target leave CUPTI nothing to call cuscope for.
}

}  // namespace cuscope::inline v0::detail

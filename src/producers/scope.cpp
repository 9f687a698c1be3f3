// producers/scope.cpp — the hot path: a scope's enter and exit.
//
// Steady state per scope: one relaxed load of the session flags, a thread-local pointer, an NVTX
// push/pop (skipped without a tool), two clock reads and the range tree update; plus two
// cudaEventRecord calls when GPU timing is on and a correlation push/pop when CUPTI traces.
// Never here: locks, allocation, string copies or hashing (those happen on a call site's first
// visit only), device synchronization. The common cases (host times only; trace mode; CUPTI
// tracing, whose defaults record no CUDA events) are enter_common() and exit_owned_inline():
// straight code with no call but the correlation hooks and a final tail call; the rest is out of
// line. A range's host time leaves out cuscope's own CUDA and CUPTI calls at its entry (its clock
// is read again after them) and at its exit (the clock is read before them).
//
// What a scope needs from the session is declared on the producers' side (producers/scope_state.hpp,
// sink.hpp, engine.hpp) and implemented by the session: nothing here includes the session.
#include <cuscope/scope.hpp>

#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/counted_root.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/engine.hpp"
#include "producers/hot_tls.hpp"
#include "producers/nvtx_domain.hpp"
#include "producers/outside_scopes.hpp"
#include "producers/scope_state.hpp"
#include "producers/scope_token.hpp"
#include "producers/sink.hpp"
#include "producers/suspended_frames.hpp"
#include "producers/window_edges.hpp"
#include "trace/writer.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {

std::atomic<int> g_state{kNotStarted};
std::atomic<std::uint32_t> g_flags{0};
std::atomic<std::uint32_t> g_event_sample_every{0};
std::atomic<CorrelationHook> g_push_correlation{nullptr};
std::atomic<CorrelationPopHook> g_pop_correlation{nullptr};
std::atomic<bool> g_nvtx_quiet{false};
CUSCOPE_HOT_TLS thread_local ThreadState* t_state = nullptr;  // read by the NVTX injection too

model::NameTable& process_names() {
  static model::NameTable* names = new model::NameTable();  // leaked, like the session
  return *names;
}

namespace {

nvtxStringHandle_t nvtx_handle(std::uint32_t id) {
  return static_cast<nvtxStringHandle_t>(current_sink().forest.names.tag(id).load(std::memory_order_acquire));
}

void ensure_nvtx(std::uint32_t id) {
  auto& tag = current_sink().forest.names.tag(id);
  if (tag.load(std::memory_order_acquire) != nullptr) return;
  void* expected = nullptr;
  tag.compare_exchange_strong(expected,
                              static_cast<void*>(nvtx_register(current_sink().forest.names.name(id))),
                              std::memory_order_acq_rel);
}

std::uint32_t intern_site(Site& site) {
  const std::uint32_t id = current_sink().forest.names.intern(site.name);
  ensure_nvtx(id);
  site.nvtx.store(nvtx_handle(id), std::memory_order_relaxed);  // published by the store of `id`
  site.id.store(id, std::memory_order_release);
  return id;
}

[[gnu::always_inline]] inline std::uint32_t push_correlation(std::uint64_t instance) {
  CorrelationHook push = g_push_correlation.load(std::memory_order_acquire);
  if (push == nullptr) return 0;
  push(instance);
  return kPushed;
}

void pop_correlation() {
  if (CorrelationPopHook pop = g_pop_correlation.load(std::memory_order_acquire)) pop();
}

// Closes, on their own thread, the entries that other threads ended: the correlation id and the
// NVTX range they pushed here are popped here, in order, once each is the innermost.
void settle_remote(ThreadState* ts) noexcept {
  model::ThreadTree::RemoteEnd r{};
  while (ts->tree->close_remote(&r)) {
    if ((r.bits & model::ThreadTree::kRemoteGpu) && ts->gpu) ts->gpu->abandon(r.depth);
    if (r.bits & model::ThreadTree::kRemotePushed) pop_correlation();
    if (!g_nvtx_quiet.load(std::memory_order_relaxed)) nvtx_pop();
  }
}

// exit() on a thread that is not the scope's: only the owner may touch its stacks, so the end
// is posted to the owner, which closes it at its next scope boundary.
void end_elsewhere(ThreadState* ts, std::uint32_t token, std::uint64_t now) noexcept {
  current_sink().cross_thread_ends.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t bits = 0;
  if (token & kPushed) bits |= model::ThreadTree::kRemotePushed;
  if (token & kTimedGpu) bits |= model::ThreadTree::kRemoteGpu;
  if (token & kOutside) end_outside_elsewhere(ts, token);
  const std::uint32_t depth = token & kDepthMask;
  if (!(token & kRecorded) || depth == kOverflow) {
    ts->tree->post_remote_unframed((token & kRecorded) != 0, bits);
  } else {
    ts->tree->post_remote_end(depth, token >> kTagShift, bits, now);
  }
}

// The calling thread's state, attached on its first scope or count (nullptr past the thread limit).
ThreadState* this_thread() noexcept {
  if (t_state == nullptr) t_state = attach_thread();
  return t_state;
}

// A recorded entry from its clock reading on: the token it returns.
[[gnu::noinline]] std::uint32_t record_entry(ThreadState* ts, std::uint32_t id, std::uint64_t now,
                                             std::uint32_t flags, cudaStream_t stream) noexcept {
  if (ts->suspended_at != 0) resume_frames(ts, now);  // the first since a window closed over them
  if ((flags & kCounters) && ts->tree->open_depth() == 0) open_counted_root(ts, now, flags);
  if (waiting_to_open(ts->outside.get())) open_outside(ts, flags, now);  // the window opened inside them
  model::ThreadTree::Token b{};
  const bool common =
      (flags & kInstances) ? ts->tree->begin_common<true>(id, now, &b) : ts->tree->begin_common(id, now, &b);
  if (!common) b = ts->tree->begin(id, now);
  if (b.depth == 0) return 0;  // out of memory on a first visit: not recorded (the tree counted it)
  const bool overflow = b.depth == model::ThreadTree::kOverflowDepth;
  std::uint32_t tok = kRecorded | (overflow ? kOverflow : b.depth) | (b.tag << kTagShift);
  if (flags & kCorrelation) tok |= push_correlation(b.instance);
  const bool framed = !overflow && !b.reentry;  // a re-entry keeps its frame's timers
  if ((flags & kCounters) && framed) counters_on_enter(ts->tree->innermost());
  if ((flags & kGpuEvents) && framed && ts->gpu &&
      event_sampled(ts->tree->innermost()->calls.get(),
                    g_event_sample_every.load(std::memory_order_relaxed)) &&
      ts->gpu->begin(b.depth, stream))
    tok |= kTimedGpu;
  // The range's host time starts after cuscope's own CUDA and CUPTI calls (exit reads the clock
  // before its own): the trace gets the same start.
  if (framed && (tok & (kPushed | kTimedGpu))) {
    now = now_ns();
    ts->tree->restart(b.depth, now);
  }
  if (flags & kTrace) {
    trace::record(trace::ScopeKind::Enter, ts->tree->slot(), id, now, b.instance);
    tok |= kTraced;
  }
  return tok;
}

// Whether a scope pushes no NVTX range of its own: cuscope is the NVTX tool (quiet), or no tool is
// attached. NVTX's function pointers are null once it has looked for a tool and found none; until
// it has looked they lead to its initialization, so the first scopes take the general path.
bool nvtx_push_off() noexcept {
  return NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePushEx_impl_fnptr == nullptr ||
         g_nvtx_quiet.load(std::memory_order_relaxed);
}
bool nvtx_pop_off() noexcept {
  return NVTX_VERSIONED_IDENTIFIER(nvtxGlobals).nvtxDomainRangePop_impl_fnptr == nullptr ||
         g_nvtx_quiet.load(std::memory_order_relaxed);
}

// The entry past the common path's checks, with its clock read: what enter_id() does from there.
// `flags`: the common path's (kRecording, with kTrace in trace mode).
[[gnu::noinline]] ThreadState* enter_recording(ThreadState* ts, std::uint32_t id, std::uint64_t now,
                                               cudaStream_t stream, std::uint32_t& token,
                                               std::uint32_t flags) noexcept {
  if (ts->tree->has_remote_ends()) settle_remote(ts);
  token = record_entry(ts, id, now, flags, stream);
  return ts;
}

// The common paths: a session recording host times only (Plain); the same in trace mode (Traced:
// one more event into the thread's ring, trace/writer.hpp); while CUPTI traces, with no CUDA events
// (as CUSCOPE_EVENTS=auto has it there), the instance id published for the decoder and either
// pushed as the external correlation id and popped at exit (Correlated) or left to the launch
// callbacks to read (Noted, CUSCOPE_ATTRIBUTION=launch). enter() inlines Plain and takes the others
// one hop out of line, in Plain's general().
enum class Common { Plain, Traced, Correlated, Noted };
template <Common kMode>
inline constexpr std::uint32_t kCommonFlags = kMode == Common::Plain        ? kRecording
                                              : kMode == Common::Traced     ? kRecording | kTrace
                                              : kMode == Common::Correlated ? kRecording | kInstances | kCorrelation
                                                                            : kRecording | kInstances;
// What a scope's token holds when it took the common path of kMode.
template <Common kMode>
inline constexpr std::uint32_t kCommonBits = kMode == Common::Traced       ? kRecorded | kTraced
                                             : kMode == Common::Correlated ? kRecorded | kPushed
                                                                           : kRecorded;

// The common entry, one straight path with no call but its last: a started session with the
// flags of kMode (no counters, GPU events, or trace unless Traced), the counter clock calibrated,
// no NVTX range to push, the thread attached, no end posted from another thread (and the tree's
// own common case, which declines while scopes kept from before the window wait to open in it:
// producers/outside_scopes.hpp); otherwise it
// returns general(), having done nothing (a tail call, so the common path saves no register).
// Here, and in exit(), the clock is the counter's: CLOCK_MONOTONIC (calibrating, or no invariant
// counter) takes the general path.
template <Common kMode, class General>
[[gnu::always_inline]] inline ThreadState* enter_common(ThreadState* ts, std::uint32_t id,
                                                        cudaStream_t stream, std::uint32_t& token,
                                                        General general) noexcept {
  constexpr std::uint32_t kFlags = kCommonFlags<kMode>;
  // The flags first: another mode leaves this path at its first test.
  if (g_flags.load(std::memory_order_relaxed) != kFlags || ts == nullptr ||
      g_state.load(std::memory_order_relaxed) != kOn || ts->tree->remote_posted() || !nvtx_push_off())
    return general();
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock == nullptr) return general();
  std::uint64_t now = clock->to_ns(cycle_counter());
  constexpr bool kPublish = kMode == Common::Correlated || kMode == Common::Noted;
  if (model::ThreadTree::Token b{}; ts->tree->begin_common<kPublish>(id, now, &b)) {
    token = kRecorded | b.depth | (b.tag << kTagShift);
    if constexpr (kMode == Common::Traced) {
      trace::record(trace::ScopeKind::Enter, ts->tree->slot(), id, now, b.instance);
      token |= kTraced;
    }
    if constexpr (kMode == Common::Correlated) {
      if (const std::uint32_t pushed = push_correlation(b.instance)) {
        token |= pushed;
        ts->tree->restart(b.depth, clock->to_ns(cycle_counter()));  // after cuscope's own call
      }
    }
    return ts;
  }
  return enter_recording(ts, id, now, stream, token, kFlags);  // recursion, overflow, another child, ...
}

[[gnu::noinline]] ThreadState* enter_id(std::uint32_t id, nvtxStringHandle_t nvtx, cudaStream_t stream,
                                        std::uint32_t& token) noexcept {
  ThreadState* ts = this_thread();
  if (ts == nullptr) {
    if (g_flags.load(std::memory_order_relaxed) & kRecording)
      current_sink().forest.unrecorded_scopes.fetch_add(1, std::memory_order_relaxed);
    return nullptr;
  }
  if (ts->tree->has_remote_ends()) settle_remote(ts);
  if (!g_nvtx_quiet.load(std::memory_order_relaxed)) nvtx_push(nvtx);
  const std::uint32_t flags = g_flags.load(std::memory_order_relaxed);
  std::uint32_t tok = 0;
  if (flags & kRecording) {
    tok = record_entry(ts, id, now_ns(), flags, stream);
  } else {
    ts->outside_window.add(1);  // left out: counted, so a window never reached is visible
    if (ts->outside && ts->outside->opened != 0) close_kept_at_window_end(ts);  // a window closed over them
    if (may_suspend(ts)) suspend_open_frames(ts);                               // and over these
    if (flags & kCorrelation) tok |= push_correlation(model::kOutsideWindow);
    tok |= ts->outside ? keep_outside(*ts->outside, *ts->tree, id) : keep_first_outside(ts, id);
  }
  token = tok;
  return ts;
}

bool started() noexcept { return g_state.load(std::memory_order_relaxed) == kOn || start_from_scope(); }

}  // namespace

ThreadState* current_thread_state() noexcept { return t_state; }

ThreadState* this_thread_state() noexcept { return this_thread(); }

std::uint32_t site_id(Site& site) noexcept {
  const std::uint32_t id = site.id.load(std::memory_order_acquire);
  return id != 0 ? id : intern_site(site);
}

void forget_this_thread() noexcept {
  t_state = nullptr;
  forget_thread_pushes();
}

bool scope_streams_used() noexcept {
  if (!started()) return forwarding() != nullptr;  // another copy's session: its events not known here
  return (g_flags.load(std::memory_order_relaxed) & kGpuEvents) != 0;
}

namespace {

// enter() past its common path.
[[gnu::noinline]] ThreadState* enter_general(Site& site, cudaStream_t stream, std::uint32_t& depth) noexcept {
  if (!started()) {
    const Engine* e = forwarding();  // decided by the start() that started() attempted
    return e != nullptr ? e->enter(site, stream, depth) : nullptr;
  }
  const std::uint32_t id = site_id(site);
  return enter_id(id, static_cast<nvtxStringHandle_t>(site.nvtx.load(std::memory_order_relaxed)), stream,
                  depth);
}

// The common exit, one straight path: the innermost frame, entered once and recorded with
// nothing else to undo but what kMode's entry did (trace mode's event, the correlation pushed), no
// counters, no NVTX range to pop; false having done nothing.
template <Common kMode>
[[gnu::always_inline]] inline bool exit_common(ThreadState* ts, std::uint32_t token,
                                               std::uint64_t now) noexcept {
  model::ThreadTree& tree = *ts->tree;
  if ((token & kTokenBits) != kCommonBits<kMode> || tree.exits_decline() ||
      (g_flags.load(std::memory_order_relaxed) & kCounters) != 0 || !nvtx_pop_off() ||
      !tree.end_common(token & kDepthMask, now))
    return false;
  if constexpr (kMode == Common::Traced) trace::record(trace::ScopeKind::Exit, tree.slot(), token & kDepthMask, now);
  if constexpr (kMode == Common::Correlated) pop_correlation();
  if (tree.remote_posted()) settle_remote(ts);  // an entry below, ended elsewhere, is innermost now
  return true;
}

// exit_owned_general() past the common exits of trace mode, correlation and kept scopes: apart, so
// that those do not pay for its registers.
[[gnu::noinline]] void exit_owned_slow(ThreadState* ts, std::uint32_t token, std::uint64_t now) noexcept {
  model::ThreadTree& tree = *ts->tree;
  if (tree.has_remote_ends()) settle_remote(ts);
  // A frame a window closed over (suspended_frames.hpp): the thread's first exit since catches its
  // frames up, a kept scope's too (a window opened its frame); in a later window they count again
  // first; outside one, it closes at the last window's end. In or outside as the windows' edges
  // have it, which the catch-up reads too (not the flags, which follow them).
  const bool closed_since = (token & (kRecorded | kOutside)) && window_closed_since(ts);
  const bool recording = (closed_since || ts->suspended_at != 0) && window_open();  // read where it counts
  if (closed_since) after_window_closed(ts, recording, now);
  const bool suspended = ts->suspended_at != 0 && (token & kRecorded);
  if (suspended) {
    if (recording) {
      resume_frames(ts, now);
    } else {
      now = suspended_until(ts, now);
    }
  }
  if (token & kRecorded) {
    const std::uint32_t depth = token & kDepthMask;
    const bool innermost = depth != kOverflow && tree.open_depth() == depth;
    const bool framed = innermost && tree.reentries(depth) == 0;  // this entry owns the frame
    if (token & kTimedGpu) {
      if (framed) {
        ts->gpu->end(depth, tree.innermost());
      } else {
        ts->gpu->abandon(depth);
      }
    }
    if ((g_flags.load(std::memory_order_relaxed) & kCounters) && framed)
      counters_on_exit(tree.innermost(), depth > 1 ? tree.open_node(depth - 1) : nullptr);
    const std::uint32_t tree_depth = depth == kOverflow ? model::ThreadTree::kOverflowDepth : depth;
    if (!tree.end_common(tree_depth, now)) tree.end(tree_depth, now);
    if (token & kTraced) trace::record(trace::ScopeKind::Exit, tree.slot(), tree_depth, now);
    if (ts->counted_root && tree.open_depth() <= 1) close_counted_root(ts, now);
  } else if (token & kOutside) {
    exit_outside(ts, token, now);
  }
  if (token & kPushed) pop_correlation();
  if (!g_nvtx_quiet.load(std::memory_order_relaxed)) nvtx_pop();
  if (tree.has_remote_ends()) settle_remote(ts);  // an entry below, ended elsewhere, is innermost now
  if ((suspended || (token & kOutside)) && ts->suspended_at != 0) after_suspended_exit(ts);
}

// exit_owned() past its common path.
[[gnu::noinline]] void exit_owned_general(ThreadState* ts, std::uint32_t token, std::uint64_t now) noexcept {
  if ((token & kTraced) && exit_common<Common::Traced>(ts, token, now)) return;
  if ((token & kPushed) && exit_common<Common::Correlated>(ts, token, now)) return;
  // A scope kept outside the window (enter_outside()), its common exit.
  if ((token & kTokenBits) == kOutside && !ts->tree->has_remote_ends() && nvtx_pop_off() && ts->outside &&
      pop_outside(*ts->outside, token))
    return;
  exit_owned_slow(ts, token, now);
}

[[gnu::always_inline]] inline void exit_owned_inline(ThreadState* ts, std::uint32_t token,
                                                     std::uint64_t now) noexcept {
  if (!exit_common<Common::Plain>(ts, token, now)) exit_owned_general(ts, token, now);
}

// exit() past its common path.
[[gnu::noinline]] void exit_general(ThreadState* ts, std::uint32_t token) noexcept {
  const std::uint64_t now = now_ns();
  if (ts != t_state) {
    if (const Engine* e = forwarding()) {
      e->exit(ts, token);  // a forwarded scope: the state is the engine's
      return;
    }
    end_elsewhere(ts, token, now);
    return;
  }
  exit_owned_inline(ts, token, now);
}

// The common path of CUPTI tracing that the session's flags take, else general().
template <class General>
[[gnu::always_inline]] inline ThreadState* enter_traced_by_cupti(std::uint32_t id, cudaStream_t stream,
                                                                 std::uint32_t& token, General general) noexcept {
  if (g_flags.load(std::memory_order_relaxed) == kCommonFlags<Common::Correlated>)
    return enter_common<Common::Correlated>(t_state, id, stream, token, general);
  return enter_common<Common::Noted>(t_state, id, stream, token, general);
}

// enter() past its common path while CUPTI traces (kInstances): its common path, else the general one.
[[gnu::noinline]] ThreadState* enter_cupti(Site& site, std::uint32_t id, cudaStream_t stream,
                                           std::uint32_t& depth) noexcept {
  return enter_traced_by_cupti(id, stream, depth, [&] { return enter_general(site, stream, depth); });
}

// The common path of a scope outside the step window (a wait step, or after the last window: no
// flag set): counted as left out and kept for a window that opens inside it; otherwise general().
template <class General>
[[gnu::always_inline]] inline ThreadState* enter_outside(std::uint32_t id, std::uint32_t& token,
                                                         General general) noexcept {
  ThreadState* ts = t_state;
  if (ts == nullptr || ts->outside == nullptr || g_state.load(std::memory_order_relaxed) != kOn ||
      g_flags.load(std::memory_order_relaxed) != 0 || ts->outside->opened != 0 || may_suspend(ts) ||
      ts->tree->has_remote_ends() || !nvtx_push_off())
    return general();
  ts->outside_window.add(1);
  token = keep_outside(*ts->outside, *ts->tree, id);
  return ts;
}

// enter() past its common path outside the window.
[[gnu::noinline]] ThreadState* enter_waiting(Site& site, std::uint32_t id, cudaStream_t stream,
                                             std::uint32_t& depth) noexcept {
  return enter_outside(id, depth, [&] { return enter_general(site, stream, depth); });
}

// enter() past its common path otherwise: trace mode's common path, else the general one.
[[gnu::noinline]] ThreadState* enter_traced(Site& site, std::uint32_t id, cudaStream_t stream,
                                            std::uint32_t& depth) noexcept {
  return enter_common<Common::Traced>(t_state, id, stream, depth, [&] { return enter_general(site, stream, depth); });
}

}  // namespace

ThreadState* enter(Site& site, cudaStream_t stream, std::uint32_t& depth) noexcept {
  const std::uint32_t id = site.id.load(std::memory_order_acquire);
  if (id == 0) return enter_general(site, stream, depth);  // the call site's first visit
  return enter_common<Common::Plain>(t_state, id, stream, depth, [&] {
    const std::uint32_t flags = g_flags.load(std::memory_order_relaxed);
    if (flags & kInstances) return enter_cupti(site, id, stream, depth);
    return flags == 0 ? enter_waiting(site, id, stream, depth) : enter_traced(site, id, stream, depth);
  });
}

ThreadState* enter_named(std::string_view name, cudaStream_t stream, std::uint32_t& depth) noexcept {
  if (!started()) {
    const Engine* e = forwarding();
    return e != nullptr ? e->enter_named(name, stream, depth) : nullptr;
  }
  const std::uint32_t id = current_sink().forest.names.intern(name);
  ensure_nvtx(id);
  return enter_id(id, nvtx_handle(id), stream, depth);
}

ThreadState* enter_interned(std::uint32_t id, std::uint32_t& token) noexcept {
  const auto general = [&]() -> ThreadState* {
    if (!started()) return nullptr;
    return enter_id(id, nullptr, nullptr, token);
  };
  return enter_common<Common::Plain>(t_state, id, nullptr, token, [&] {
    if (g_flags.load(std::memory_order_relaxed) == 0) return enter_outside(id, token, general);
    return enter_traced_by_cupti(id, nullptr, token, general);
  });
}

bool recording() noexcept { return started() && (g_flags.load(std::memory_order_relaxed) & kRecording) != 0; }

void exit(ThreadState* ts, std::uint32_t token) noexcept {
  // The counter clock (see enter_common()) and the calling thread's own scope: the common path.
  if (const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
      clock != nullptr && ts == t_state) {
    exit_owned_inline(ts, token, clock->to_ns(cycle_counter()));
    return;
  }
  exit_general(ts, token);
}

void exit_elsewhere(ThreadState* ts, std::uint32_t token) noexcept {
  if (const Engine* e = forwarding()) return e->exit_elsewhere(ts, token);  // the state is the engine's
  end_elsewhere(ts, token, now_ns());
}

void exit_owned(ThreadState* ts, std::uint32_t token, std::uint64_t now) noexcept {
  exit_owned_inline(ts, token, now);
}

std::uint32_t owned_token(std::uint32_t depth) noexcept { return kRecorded | depth; }

void settle_remote_ends(ThreadState* ts) noexcept { settle_remote(ts); }

}  // namespace detail

}  // namespace v0
}  // namespace cuscope

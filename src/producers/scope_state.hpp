// producers/scope_state.hpp — what a scope reads on its hot path, and the calls between the scope
// (producers/scope.cpp) and whoever runs it: the session sets the flags and the correlation hooks,
// attaches a thread's state on its first scope and starts itself from a scope; the NVTX injection
// opens and closes ranges with the scope's own functions.
//
// Never here: anything that locks or allocates on the hot path; anything of the session's beyond
// the calls below (a scope is handed its state, it does not look the session up).
#pragma once

#include <atomic>
#include <cstdint>
#include <cuscope/scope.hpp>
#include <cuscope/session.hpp>  // first: detail:: below extends cuscope::v0::detail
#include <memory>

#include "model/range_tree.hpp"
#include "producers/gpu_events.hpp"
#include "producers/hot_tls.hpp"
#include "producers/outside_scopes.hpp"

namespace cuscope::inline v0::detail {

/// What a scope does, read once per scope entry (one relaxed load).
enum Flags : std::uint32_t {
  kRecording = 1u << 0,    ///< inside the active window: scopes build the range tree
  kGpuEvents = 1u << 1,    ///< record CUDA events around recorded scopes
  kCorrelation = 1u << 2,  ///< push external correlation ids for CUPTI
  kCounters = 1u << 3,     ///< hardware counters may be collected: scope boundaries call the profiler
  kTrace = 1u << 4,        ///< trace mode: recorded scopes also go to the trace writer
  kInstances = 1u << 5,    ///< CUPTI traces: recorded entries publish their instance ids
};
extern std::atomic<std::uint32_t> g_flags;
/// CUSCOPE_EVENTS=sampled:N: N (a recorded call of a range is timed by CUDA events when it is one
/// of its first kFirstTimedCalls on its thread, or every N-th after); 0: every call kGpuEvents
/// covers. Set by the session at start.
extern std::atomic<std::uint32_t> g_event_sample_every;
/// Whether CUDA events time a call of a range of which its thread completed `done` calls, under
/// sampled:`every` (0: every call): the first kFirstTimedCalls, then one in `every`.
constexpr bool event_sampled(std::uint64_t done, std::uint32_t every) {
  return every == 0 || done < kFirstTimedCalls || (done - kFirstTimedCalls) % every == every - 1;
}

/// Hooks the CUPTI adapter installs while it traces (null otherwise).
using CorrelationHook = void (*)(std::uint64_t instance) noexcept;
using CorrelationPopHook = void (*)() noexcept;
extern std::atomic<CorrelationHook> g_push_correlation;
extern std::atomic<CorrelationPopHook> g_pop_correlation;

/// A thread's producer state: its range tree and its CUDA-event pool.
struct Sink;
struct ThreadState {
  Sink* owner = nullptr;  // the session that attached it
  model::ThreadTree* tree = nullptr;
  std::unique_ptr<GpuEvents> gpu;
  model::SoloCounter outside_window;  // scopes entered outside the step window (left out)
  std::unique_ptr<OutsideScopes> outside;  // those still open, kept for the window (made on the first)
  bool counted_root = false;          // owner only: a "(counted steps)" frame is open at depth 1
  bool counted_root_traced = false;   // owner only: and trace mode recorded its entry
  // Owner only: the step window's end its open frames were suspended at (suspended_frames.hpp), 0:
  // none are.
  std::uint64_t suspended_at = 0;
  // Owner only: up to when the stretches between windows are out of its open frames' times (0: none
  // taken out yet): a frame that began before counts from there.
  std::uint64_t accounted_ns = 0;
};

/// The producers' bits of the tree's attention byte (ThreadTree::set_attention()), with which the
/// common exits decline: kSlowExitBit, the owner's while a "(counted steps)" frame is open or frames
/// are suspended (settle_slow_exit()); kWindowClosedBit, set by the step's end that closes a window
/// (any thread) and taken by the owner's next recorded exit, resume or suspension
/// (suspended_frames.hpp).
inline constexpr std::uint8_t kSlowExitBit = 2, kWindowClosedBit = 4;
static_assert(((kSlowExitBit | kWindowClosedBit) & model::ThreadTree::kRemotePostedBit) == 0);

/// kSlowExitBit from what it stands for: call after changing counted_root or suspended_at.
inline void settle_slow_exit(ThreadState* ts) noexcept {
  const bool slow = ts->counted_root || ts->suspended_at != 0;
  if (slow == ((ts->tree->attention() & kSlowExitBit) != 0)) return;
  if (slow) {
    ts->tree->set_attention(kSlowExitBit);
  } else {
    ts->tree->take_attention(kSlowExitBit);
  }
}

// What a scope needs from the session that runs it (the session implements these).

/// Starts the session from a scope (options from the environment); true if scopes record.
bool start_from_scope() noexcept;
/// A state for the calling thread (first scope on the thread), or nullptr past the thread limit.
ThreadState* attach_thread() noexcept;

// What the scope offers the session and the NVTX injection (producers/scope.cpp).

/// Forgets the calling thread's state, used when the thread is released and by reset_for_testing().
void forget_this_thread() noexcept;
/// Empties the calling thread's push()/pop() stack (push_pop.cpp), for forget_this_thread().
void forget_thread_pushes() noexcept;
/// A range by interned name id, for producers other than Scope (the NVTX injection): what enter()
/// does, without an NVTX range of its own and without a stream. nullptr when it records nothing.
ThreadState* enter_interned(std::uint32_t id, std::uint32_t& token) noexcept;
/// exit() of a scope known to have begun on the calling thread (its state is the thread's own), at
/// `now_ns`: what exit() does after checking that.
void exit_owned(ThreadState* ts, std::uint32_t token, std::uint64_t now_ns) noexcept;
/// The calling thread's state if it has one (no attaching).
ThreadState* current_thread_state() noexcept;
/// The calling thread's state, attached on its first scope or count (nullptr past the thread limit).
ThreadState* this_thread_state() noexcept;
/// The name id of a call site, interned (with its NVTX string) on its first visit.
std::uint32_t site_id(Site& site) noexcept;
/// The calling thread's state (scope.cpp), for the NVTX injection's own common path: it opens and
/// closes frames with ThreadTree::begin_common()/end_common() as the scope's common path does.
CUSCOPE_HOT_TLS extern constinit thread_local ThreadState* t_state;
/// The token exit_owned() takes for a frame that begin_common() opened at `depth` on this thread.
std::uint32_t owned_token(std::uint32_t depth) noexcept;
/// Closes what other threads ended on `ts` (the calling thread's): after an end_common() that found
/// remote_posted(), as the scope's common exit does.
void settle_remote_ends(ThreadState* ts) noexcept;
/// Whether the session (started on demand) records now: inside the step window.
bool recording() noexcept;
/// Set by the NVTX injection: scopes push no NVTX range of their own (NVTX goes to cuscope itself).
extern std::atomic<bool> g_nvtx_quiet;

}  // namespace cuscope::inline v0::detail

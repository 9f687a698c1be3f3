// producers/suspended_frames.hpp — a thread's recorded scopes still open when the step window
// closes (`main` entered in CUSCOPE_WHOLE_MS's whole start, a `train` scope around every window):
// from the thread's first scope after the window's end they are suspended, so that the time until
// the next window is not in their host time. The thread's first recorded scope (or such a scope's
// exit) in the next window resumes them, their starts moved past the stretch between (a trace
// records the move: ScopeKind::Shift); one that exits before it closes at the window's end. Each
// stays one call, of its recorded time; its pair of CUDA events, if any, is forgotten at the
// suspension (GpuEvents::drop_open(): the pair would time the waits' GPU work too). A thread that enters no
// scope between two windows keeps that stretch in them, as kept scopes do (producers/outside_scopes.hpp).
//
// Never here: a lock, an allocation, a look at another thread's frames.
#pragma once

#include <atomic>
#include <cstdint>

#include "producers/scope_state.hpp"

namespace cuscope::inline v0::detail {

/// When the step window last opened (a recorded step after one that was not; window.cpp): where
/// suspended frames count again. Written before the scope flags that open it.
inline std::atomic<std::uint64_t> g_window_opened_ns{0};

/// Whether the thread has open frames not suspended: an entry outside the window must take the way
/// that may suspend them (suspend_open_frames()).
inline bool may_suspend(const ThreadState* ts) noexcept {
  return ts->suspended_at == 0 && ts->tree->open_depth() != 0;
}
/// Outside the window, at the thread's scope entry: its open frames, where the innermost began
/// before the window's last end (g_window_closed_ns), stop counting from that end. Not with a
/// "(counted steps)" frame open (hardware counters' steps keep their own frames).
void suspend_open_frames(ThreadState* ts) noexcept;
/// In a window, at the thread's first recorded entry or exit since it suspended them: its open frames
/// count again, their starts moved past the stretch from the suspension to the window's start (trace
/// mode records it, with `flags` & kTrace), at `now_ns`.
void resume_frames(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept;
/// After an exit while suspended: none left open ends the suspension; else the next entry must take
/// the way that resumes them (the new innermost frame's common entry declines).
void after_suspended_exit(ThreadState* ts) noexcept;

}  // namespace cuscope::inline v0::detail

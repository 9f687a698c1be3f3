// producers/suspended_frames.hpp — a thread's recorded scopes still open when the step window
// closes (`main` entered in CUSCOPE_WHOLE_MS's whole start, a `train` scope around every window)
// count only their time in windows: the stretches between windows are taken out of them. Recording
// switched off counts as a window's end, and on again as its start (producers/window_edges.hpp).
//
// - From the thread's first scope after the window's end (or its first exit there) they are
//   suspended at that end; the thread's first recorded scope (or such a scope's exit) in a later
//   window resumes them, their starts moved past the stretches between (a trace records each move:
//   ScopeKind::Shift); one that exits outside a window closes at the last window's end.
// - A thread that does nothing between windows is caught up at its first recorded exit (or exit of
//   a kept scope a window opened, producers/outside_scopes.hpp) after the window closed: the
//   step's end that closes a window marks every thread (kWindowClosedBit), so that exit declines
//   the common path. Windows it does nothing in count in its frames.
// - Each frame stays one call, of its time in windows; its pair of CUDA events, if any, is forgotten
//   at the suspension (GpuEvents::drop_open(): the pair would time the waits' GPU work too).
//
// The catch-up: the thread's accounting point (ThreadState::accounted_ns) says up to when the
// stretches are out of its frames; a frame that began before counts from there, one that began
// after from its start, each up to the catch-up's point (producers/window_edges.hpp).
//
// Never here: a lock, an allocation, a look at another thread's frames.
#pragma once

#include <cstdint>

#include "producers/scope_state.hpp"

namespace cuscope::inline v0::detail {

/// Whether the thread has open frames not suspended: an entry outside the window must take the way
/// that may suspend them (suspend_open_frames()).
inline bool may_suspend(const ThreadState* ts) noexcept {
  return ts->suspended_at == 0 && ts->tree->open_depth() != 0;
}
/// Outside the window, at the thread's scope entry (or first recorded exit): its open frames, where
/// the innermost began before the window's last end (g_window_closed_ns), are caught up to that end
/// and stop counting from it. Not with a "(counted steps)" frame open (hardware counters' steps keep
/// their own frames).
void suspend_open_frames(ThreadState* ts) noexcept;
/// In a window, at the thread's first recorded entry or exit since it suspended them: its open frames
/// count again, caught up to `now_ns`.
void resume_frames(ThreadState* ts, std::uint64_t now_ns) noexcept;
/// Outside a window, at a suspended frame's exit: the suspension moved on to the window's last end
/// (windows since it, where the thread entered no scope, count in the open frames), which it returns:
/// where the exit closes the frame.
std::uint64_t suspended_until(ThreadState* ts, std::uint64_t now_ns) noexcept;
/// After an exit while suspended: none left open ends the suspension; else the next entry must take
/// the way that resumes them (the new innermost frame's common entry declines).
void after_suspended_exit(ThreadState* ts) noexcept;
/// At a recorded exit with kWindowClosedBit set (a window closed since the thread's last catch-up),
/// not suspended: in a window (`recording`) its open frames are caught up to `now_ns`; outside one
/// they are suspended (suspend_open_frames()).
void after_window_closed(ThreadState* ts, bool recording, std::uint64_t now_ns) noexcept;
/// Every thread of `threads` marked: a window closed (the step's end or recording switched off,
/// after note_window_edges()).
template <class Threads>
void mark_window_closed(const Threads& threads) noexcept {
  for (const auto& ts : threads) ts->tree->set_attention(kWindowClosedBit);
}
/// Whether a window closed since the thread's frames were last caught up.
inline bool window_closed_since(const ThreadState* ts) noexcept {
  return (ts->tree->attention() & kWindowClosedBit) != 0;
}

}  // namespace cuscope::inline v0::detail

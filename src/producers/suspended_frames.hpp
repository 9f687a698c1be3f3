// producers/suspended_frames.hpp — a thread's recorded scopes still open when the step window
// closes (`main` entered in CUSCOPE_WHOLE_MS's whole start, a `train` scope around every window):
// from the thread's first scope after the window's end they are suspended, so that the time until
// the next window is not in their host time. The thread's first recorded scope (or such a scope's
// exit) in the next window resumes them, their starts moved past the stretch between (a trace
// records the move: ScopeKind::Shift); one that exits before it closes at the window's end. Each
// stays one call, of its recorded time (a window in between where the thread entered no scope
// counts in it); its pair of CUDA events, if any, is forgotten at the
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

/// The step window's edges as suspended frames read them, one consistent set: when it last closed
/// and opened, and the windows' recorded time (the lengths of those closed so far, summed), so that
/// frames suspended across several windows take out only the stretches between them.
struct WindowEdges {
  std::uint64_t closed_ns = 0, opened_ns = 0, recorded_ns = 0;
};
/// The step's end (window.cpp, one at a time, under the session's lifecycle lock, before the flags
/// that close or open the window): the window closed and/or opened `at_ns`. Publishes
/// g_window_closed_ns and g_window_opened_ns too.
void note_window_edges(std::uint64_t at_ns, bool closed, bool opened) noexcept;
/// The edges as the last step's end left them (a step's end that runs meanwhile is waited out).
WindowEdges window_edges() noexcept;

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
/// count again, their starts moved past the stretches between windows since the suspension (trace
/// mode records it, with `flags` & kTrace), at `now_ns`. Windows the thread entered no scope in
/// count in them.
void resume_frames(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept;
/// Outside a window, at a suspended frame's exit: the suspension moved on to the window's last end
/// (windows since it, where the thread entered no scope, count in the open frames; trace mode records
/// the move, with `flags` & kTrace), which it returns: where the exit closes the frame.
std::uint64_t suspended_until(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept;
/// After an exit while suspended: none left open ends the suspension; else the next entry must take
/// the way that resumes them (the new innermost frame's common entry declines).
void after_suspended_exit(ThreadState* ts) noexcept;

}  // namespace cuscope::inline v0::detail

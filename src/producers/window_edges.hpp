// producers/window_edges.hpp — the step window's edges as the scopes' slow paths read them: the
// recorded time before any moment of the session (the windows' lengths, summed: exact over the
// last kWindowHistory windows, and further back within the windows between two that a coarser
// history keeps, one in 64 for 262,144 windows, one in 4,096 for 16.8 million), so that a thread's
// frames open across windows take out the stretches between them (producers/suspended_frames.hpp);
// and when the window last closed (g_window_closed_ns, producers/outside_scopes.hpp).
// A window here is a stretch that records: a step window's recorded steps with recording switched
// on (cuscope::set_enabled()). Written by the step's end and the program's switch
// (session/window.cpp, one at a time under the session's lifecycle lock) and the session's start;
// read under a sequence count, so a reader never mixes two steps' ends.
//
// Never here: a lock, an allocation, a read on a scope's common path.
#pragma once

#include <cstddef>
#include <cstdint>

namespace cuscope::inline v0::detail {

/// Windows a reader looks back over exactly, and each coarser history keeps: a moment in a window
/// none keeps counts a share of the windows between two kept ones, in proportion to the time; one
/// older than every history counts as the oldest kept window's start.
inline constexpr std::size_t kWindowHistory = 4096;

/// The session's start: the last session's windows forgotten; the first window opens at `start_ns`
/// where the session starts recording (a whole start, or no wait step first).
void start_window_edges(std::uint64_t start_ns, bool recording) noexcept;
/// The step's end or the program's switch: the window closed and/or opened `at_ns`, before the
/// flags (or the switch's state) that close or open it.
/// Publishes g_window_closed_ns too (producers/outside_scopes.hpp).
void note_window_edges(std::uint64_t at_ns, bool closed, bool opened) noexcept;
/// Whether a window is open now, as its edges have it: what the paths that close frames go by (a
/// scope's slow exit, producers/suspended_frames.hpp), so that a thread between a step's end (or the
/// program's switch) and the flags (or switch state) that follow it reads one answer with the
/// windows' edges its catch-up reads.
bool window_open() noexcept;
/// The time in windows before `t_ns`: the lengths of the windows closed before it, and the part of
/// the one open at it.
std::uint64_t recorded_before(std::uint64_t t_ns) noexcept;
/// The stretches between windows from `from_ns` to `to_ns`: that time less its windows' time.
inline std::uint64_t between_windows(std::uint64_t from_ns, std::uint64_t to_ns) noexcept {
  if (to_ns <= from_ns) return 0;
  const std::uint64_t in_windows = recorded_before(to_ns) - recorded_before(from_ns);
  return to_ns - from_ns > in_windows ? to_ns - from_ns - in_windows : 0;
}

}  // namespace cuscope::inline v0::detail

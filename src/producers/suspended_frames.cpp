// producers/suspended_frames.cpp — see producers/suspended_frames.hpp.
//
// Never here: a lock, an allocation, a look at another thread's frames.
#include "producers/suspended_frames.hpp"

#include <algorithm>
#include <thread>

#include "producers/outside_scopes.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

void end_suspension(ThreadState* ts) noexcept {
  ts->suspended_at = 0;
  settle_slow_exit(ts);
}

// WindowEdges under a sequence count: odd while a step's end writes them.
std::atomic<std::uint64_t> g_edges_sequence{0};
std::atomic<std::uint64_t> g_windows_recorded_ns{0};

// Moves the thread's open frames' starts `shift_ns` later (trace mode records it).
void shift_frames(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns,
                  std::uint64_t shift_ns) noexcept {
  model::ThreadTree& tree = *ts->tree;
  if (shift_ns == 0 || tree.open_depth() == 0) return;
  tree.shift_open(shift_ns);
  if (flags & kTrace) trace::record(trace::ScopeKind::Shift, tree.slot(), 0, now_ns, shift_ns);
}

// The stretches between windows from the suspension to `to_ns` (a window's edge after it), whose
// windows' recorded time then was `recorded_ns`: that stretch less the windows in it.
std::uint64_t between_windows(const ThreadState* ts, std::uint64_t to_ns,
                              std::uint64_t recorded_ns) noexcept {
  const std::uint64_t stretch = to_ns - ts->suspended_at;
  const std::uint64_t windows = recorded_ns - ts->suspended_recorded;
  return stretch > windows ? stretch - windows : 0;
}

}  // namespace

void note_window_edges(std::uint64_t at_ns, bool closed, bool opened) noexcept {
  if (!closed && !opened) return;
  const std::uint64_t sequence = g_edges_sequence.load(std::memory_order_relaxed);
  g_edges_sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  if (closed) {
    const std::uint64_t began = g_window_opened_ns.load(std::memory_order_relaxed);
    g_windows_recorded_ns.store(g_windows_recorded_ns.load(std::memory_order_relaxed) + (at_ns - began),
                                std::memory_order_relaxed);
    g_window_closed_ns.store(at_ns, std::memory_order_release);
  }
  if (opened) g_window_opened_ns.store(at_ns, std::memory_order_release);
  g_edges_sequence.store(sequence + 2, std::memory_order_release);
}

WindowEdges window_edges() noexcept {
  for (;;) {
    const std::uint64_t before = g_edges_sequence.load(std::memory_order_acquire);
    WindowEdges e;
    e.closed_ns = g_window_closed_ns.load(std::memory_order_relaxed);
    e.opened_ns = g_window_opened_ns.load(std::memory_order_relaxed);
    e.recorded_ns = g_windows_recorded_ns.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && g_edges_sequence.load(std::memory_order_relaxed) == before) return e;
    std::this_thread::yield();  // a step's end is writing them: a few stores
  }
}

void suspend_open_frames(ThreadState* ts) noexcept {
  model::ThreadTree& tree = *ts->tree;
  const std::uint32_t depth = tree.open_depth();
  const WindowEdges edges = window_edges();
  const std::uint64_t closed = edges.closed_ns;
  // Only frames a window closed over, once a window: an end they were suspended at already, or one
  // older than the innermost frame's start (recording switched off by set_enabled(), which moves no
  // window's end), suspends nothing.
  if (!may_suspend(ts) || ts->counted_root || closed == 0 || closed == ts->suspended_last ||
      tree.open_start(depth) >= closed)
    return;
  ts->suspended_at = closed;
  ts->suspended_last = closed;
  ts->suspended_recorded = edges.recorded_ns;
  if (ts->gpu) ts->gpu->drop_open(depth);  // a pair would time the wait's GPU work too
  settle_slow_exit(ts);
  tree.decline_next_common();  // the next recorded entry resumes them (record_entry())
}

void resume_frames(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept {
  const WindowEdges edges = window_edges();
  const std::uint64_t from = ts->suspended_at;
  // The windows closed since (edges.closed_ns after `from`) count; the window open now from its start.
  const std::uint64_t shift =
      edges.opened_ns > from ? between_windows(ts, std::min(edges.opened_ns, now_ns), edges.recorded_ns) : 0;
  end_suspension(ts);  // no window opened since (recording switched on by set_enabled()): no shift
  shift_frames(ts, flags, now_ns, shift);
}

std::uint64_t suspended_until(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept {
  const WindowEdges edges = window_edges();
  if (edges.closed_ns > ts->suspended_at) {  // windows since, with no scope of this thread's in them
    shift_frames(ts, flags, now_ns, between_windows(ts, edges.closed_ns, edges.recorded_ns));
    ts->suspended_at = edges.closed_ns;
    ts->suspended_last = edges.closed_ns;
    ts->suspended_recorded = edges.recorded_ns;
  }
  return std::min(now_ns, ts->suspended_at);
}

void after_suspended_exit(ThreadState* ts) noexcept {
  if (ts->tree->open_depth() == 0) {
    end_suspension(ts);
  } else {
    ts->tree->decline_next_common();
  }
}

}  // namespace cuscope::inline v0::detail

// producers/suspended_frames.cpp — see producers/suspended_frames.hpp.
//
// Never here: a lock, an allocation, a look at another thread's frames.
#include "producers/suspended_frames.hpp"

#include <algorithm>

#include "producers/outside_scopes.hpp"
#include "producers/window_edges.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

void end_suspension(ThreadState* ts) noexcept {
  ts->suspended_at = 0;
  settle_slow_exit(ts);
}

// Takes kWindowClosedBit: g_window_closed_ns read after it is the window's end that set it, or later.
void take_window_closed(ThreadState* ts) noexcept { ts->tree->take_attention(kWindowClosedBit); }

// Takes the stretches between windows up to `to_ns` out of the thread's open frames: each from the
// accounting point or its start, the later (trace mode records each move, at `to_ns`).
void catch_up(ThreadState* ts, std::uint64_t to_ns) noexcept {
  const std::uint64_t accounted = ts->accounted_ns;
  if (to_ns <= accounted) return;
  model::ThreadTree& tree = *ts->tree;
  const std::uint32_t depth = tree.open_depth();
  std::uint64_t from_accounted = 0;  // the stretches from the accounting point, once computed
  bool have_from_accounted = false;
  for (std::uint32_t d = 1; d <= depth; ++d) {
    const std::uint64_t start = tree.open_start(d);
    std::uint64_t shift = 0;
    if (accounted != 0 && start <= accounted) {
      if (!have_from_accounted) from_accounted = between_windows(accounted, to_ns);
      have_from_accounted = true;
      shift = from_accounted;
    } else {
      shift = between_windows(start, to_ns);
    }
    // A frame's stretches begin no earlier than its parent's: none in this one, none in those within.
    if (shift == 0) break;
    tree.shift_frame(d, shift);
    if (ts->gpu) ts->gpu->drop(d);  // its pair would time the stretch's GPU work too
    trace::record(trace::ScopeKind::Shift, tree.slot(), d, to_ns, shift);
  }
  ts->accounted_ns = to_ns;
}

}  // namespace

void suspend_open_frames(ThreadState* ts) noexcept {
  take_window_closed(ts);
  model::ThreadTree& tree = *ts->tree;
  const std::uint32_t depth = tree.open_depth();
  const std::uint64_t closed = g_window_closed_ns.load(std::memory_order_acquire);
  // Only frames a window closed over, once a window: an end they are accounted past already
  // (suspended there, or caught up in a later window), or one older than the innermost frame's start
  // (a frame entered after the window's end, before the flags that followed it), suspends nothing.
  if (!may_suspend(ts) || ts->counted_root || closed <= ts->accounted_ns || tree.open_start(depth) >= closed)
    return;
  catch_up(ts, closed);
  ts->suspended_at = closed;
  settle_slow_exit(ts);
  if (ts->gpu) ts->gpu->drop_open(depth);  // a pair would time the wait's GPU work too
  tree.decline_next_common();              // the next recorded entry resumes them (record_entry())
}

void resume_frames(ThreadState* ts, std::uint64_t now_ns) noexcept {
  take_window_closed(ts);
  catch_up(ts, now_ns);
  end_suspension(ts);
}

std::uint64_t suspended_until(ThreadState* ts, std::uint64_t now_ns) noexcept {
  take_window_closed(ts);
  const std::uint64_t closed = g_window_closed_ns.load(std::memory_order_acquire);
  if (closed > ts->suspended_at) {  // windows since, with no scope of this thread's in them
    catch_up(ts, closed);
    ts->suspended_at = closed;
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

void after_window_closed(ThreadState* ts, bool recording, std::uint64_t now_ns) noexcept {
  if (ts->suspended_at != 0 || ts->counted_root) {
    take_window_closed(ts);  // the suspension's catch-ups take those windows out
    return;
  }
  if (recording) {
    take_window_closed(ts);
    catch_up(ts, now_ns);
  } else {
    suspend_open_frames(ts);
  }
}

}  // namespace cuscope::inline v0::detail

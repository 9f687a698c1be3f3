// producers/suspended_frames.cpp — see producers/suspended_frames.hpp.
//
// Never here: a lock, an allocation, a look at another thread's frames.
#include "producers/suspended_frames.hpp"

#include <algorithm>

#include "producers/outside_scopes.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

void end_suspension(ThreadState* ts) noexcept {
  ts->suspended_at = 0;
  settle_slow_exit(ts);
}

}  // namespace

void suspend_open_frames(ThreadState* ts) noexcept {
  model::ThreadTree& tree = *ts->tree;
  const std::uint32_t depth = tree.open_depth();
  const std::uint64_t closed = g_window_closed_ns.load(std::memory_order_acquire);
  // Only frames a window closed over, once a window: an end they were suspended at already, or one
  // older than the innermost frame's start (recording switched off by set_enabled(), which moves no
  // window's end), suspends nothing.
  if (!may_suspend(ts) || ts->counted_root || closed == 0 || closed == ts->suspended_last ||
      tree.open_start(depth) >= closed)
    return;
  ts->suspended_at = closed;
  ts->suspended_last = closed;
  if (ts->gpu) ts->gpu->drop_open(depth);  // a pair would time the wait's GPU work too
  settle_slow_exit(ts);
  tree.decline_next_common();  // the next recorded entry resumes them (record_entry())
}

void resume_frames(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept {
  const std::uint64_t opened = g_window_opened_ns.load(std::memory_order_acquire);
  const std::uint64_t from = ts->suspended_at;
  end_suspension(ts);
  if (opened <= from) return;  // no window opened since (recording switched on by set_enabled())
  const std::uint64_t shift = std::min(opened, now_ns) - from;
  model::ThreadTree& tree = *ts->tree;
  if (shift == 0 || tree.open_depth() == 0) return;
  tree.shift_open(shift);
  if (flags & kTrace) trace::record(trace::ScopeKind::Shift, tree.slot(), 0, now_ns, shift);
}

void after_suspended_exit(ThreadState* ts) noexcept {
  if (ts->tree->open_depth() == 0) {
    end_suspension(ts);
  } else {
    ts->tree->decline_next_common();
  }
}

}  // namespace cuscope::inline v0::detail

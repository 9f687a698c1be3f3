// producers/outside_scopes.cpp — a thread's scopes that began outside the step window and are
// still open (producers/outside_scopes.hpp): kept at their entry, opened in the range tree under
// the window's first recorded scope, closed at its end or at their exit.
//
// Never here: a lock; an allocation but the stack's, made at the thread's first kept scope; a write
// to another thread's stack but the ended mark of one of its entries.
#include "producers/outside_scopes.hpp"

#include <new>

#include "producers/counted_root.hpp"
#include "producers/scope_state.hpp"
#include "producers/window_edges.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Closes the frame the window opened for entry `e` at `now_ns` (trace mode records it, where it
// recorded the opening).
void close_frame(ThreadState* ts, const OutsideScopes::Entry& e, std::uint64_t now_ns) noexcept {
  ts->tree->end(e.depth, now_ns);
  if (e.traced) trace::record(trace::ScopeKind::Exit, ts->tree->slot(), e.depth, now_ns);
}

// The ended entries innermost on the stack leave it, their frames closed at `now_ns` (a frame the
// tree closed already, as unbalanced, is counted there). True when a frame closed.
bool pop_ended(ThreadState* ts, OutsideScopes& o, std::uint64_t now_ns) noexcept {
  bool closed = false;
  while (o.open > 0) {
    OutsideScopes::Entry& e = o.entries[o.open - 1];
    if ((e.word.load(std::memory_order_acquire) & OutsideScopes::kEnded) == 0) break;
    if (o.open <= o.opened && e.depth != 0) {
      close_frame(ts, e, now_ns);
      closed = true;
    }
    --o.open;  // its word keeps its tag|kEnded: the next entry made there writes its own tag
  }
  if (o.opened > o.open) o.opened = o.open;
  return closed;
}

// Marks the entry of `token` ended, if it is still the one the token names.
void mark_ended(OutsideScopes& o, std::uint32_t token) noexcept {
  const std::uint32_t index = (token & kOutsideIndexMask) - 1;
  if (index >= OutsideScopes::kMax) return;  // a token's index is below kMax: never so
  std::uint32_t tag = (token >> kOutsideTagShift) & kOutsideTagMask;
  o.entries[index].word.compare_exchange_strong(tag, tag | OutsideScopes::kEnded, std::memory_order_acq_rel);
}

}  // namespace

std::uint32_t keep_first_outside(ThreadState* ts, std::uint32_t id) noexcept {
  auto* o = new (std::nothrow) OutsideScopes();
  if (o == nullptr) return 0;
  ts->outside.reset(o);
  return keep_outside(*o, *ts->tree, id);
}

void close_kept_at_window_end(ThreadState* ts) noexcept {
  OutsideScopes& o = *ts->outside;
  model::ThreadTree& tree = *ts->tree;
  std::uint32_t innermost = 0;  // the tree depth of the innermost opened entry with a frame
  for (std::uint32_t i = o.opened; i-- > 0 && innermost == 0;) innermost = o.entries[i].depth;
  if (innermost != 0 && tree.open_depth() != innermost) return;  // a recorded scope open above: they go on
  const std::uint64_t closed = g_window_closed_ns.load(std::memory_order_acquire);
  std::uint32_t waiting = 0;  // to open again: left out until then
  for (std::uint32_t i = o.opened; i-- > 0;) {
    OutsideScopes::Entry& e = o.entries[i];
    if (e.depth != 0) {
      close_frame(ts, e, closed);  // a close before the frame's start (a step's end raced) times 0
      if ((e.word.load(std::memory_order_acquire) & OutsideScopes::kEnded) == 0) ++waiting;
    }
    e.depth = 0;
    e.traced = false;
  }
  o.opened = 0;
  if (waiting == 0) return;
  ts->outside_window.add(waiting);
  tree.decline_next_common();  // the next window's first recorded entry opens them (record_entry())
  if (ts->counted_root && tree.open_depth() <= 1) close_counted_root(ts, closed);
}

void open_outside(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept {
  OutsideScopes& o = *ts->outside;
  pop_ended(ts, o, now_ns);
  for (; o.opened < o.open; ++o.opened) {
    OutsideScopes::Entry& e = o.entries[o.opened];
    e.depth = 0;  // what keep_outside() leaves as the entry's last user left it
    e.traced = false;
    if (e.word.load(std::memory_order_acquire) & OutsideScopes::kEnded) continue;  // ended elsewhere: skipped
    const model::ThreadTree::Token b = ts->tree->begin(e.id, now_ns);
    e.depth = b.depth;
    if (b.depth == 0) continue;  // out of memory on a first visit (the tree counted it)
    ts->outside_window.sub(1);   // a call of its range now, no longer left out
    if (flags & kTrace) {
      trace::record(trace::ScopeKind::Enter, ts->tree->slot(), e.id, now_ns, b.instance);
      e.traced = true;
    }
  }
}

void exit_outside(ThreadState* ts, std::uint32_t token, std::uint64_t now_ns) noexcept {
  OutsideScopes* o = ts->outside.get();
  if (o == nullptr) return;
  // Outside the window (or with recording switched off: no window open, as its edges have it), a
  // call the last window opened ends at its end, this exit's included.
  if (o->opened != 0 && !window_open()) close_kept_at_window_end(ts);
  if (pop_outside(*o, token)) return;
  mark_ended(*o, token);
  // A frame the window opened for it, the last under "(counted steps)": that frame closes too.
  if (pop_ended(ts, *o, now_ns) && ts->counted_root && ts->tree->open_depth() <= 1)
    close_counted_root(ts, now_ns);
}

void end_outside_elsewhere(ThreadState* ts, std::uint32_t token) noexcept {
  if (OutsideScopes* o = ts->outside.get()) mark_ended(*o, token);
}

void forget_outside(ThreadState* ts) noexcept {
  OutsideScopes* o = ts->outside.get();
  if (o == nullptr) return;
  for (std::uint32_t i = 0; i < o->open; ++i) o->entries[i].word.store(0, std::memory_order_relaxed);
  o->open = o->opened = 0;
}

}  // namespace cuscope::inline v0::detail

// inject/open_ranges.hpp — a thread's open NVTX push ranges, of every counted domain, innermost
// last, and how a range is opened in and closed from the thread's range tree; start/end ranges,
// which need not nest, go to the span table instead.
//
// Hot path: the stack and the common entry and exit are inline here, for the NVTX callbacks to
// flatten into their straight code. They must never lock or allocate once the thread's stack is
// made, and never touch a thread state that is no longer the calling thread's.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <array>
#include <cstdint>

#include "inject/domains.hpp"
#include "inject/message_cache.hpp"
#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/hot_tls.hpp"
#include "session/session.hpp"

#pragma GCC visibility push(hidden)  // private to libcuscope_inject.so: direct access, no GOT
namespace cuscope::inline v0::detail::inject {

// A thread's open NVTX push ranges, of every counted domain, innermost last.
struct OpenRanges {
  static constexpr std::uint32_t kMax = 2 * model::kHardMaxDepth;
  static constexpr std::uint32_t kFrame = 1u << 16;   // the range named after the domain, under its first
  static constexpr std::uint32_t kCommon = 1u << 17;  // opened by enter_common(): token is the tree depth
  struct Entry {
    ThreadState* ts;      // non-null: the range was entered on ts, which must close it
    std::uint32_t token;  // exit_owned()'s token; the tree depth when kCommon
    std::uint32_t kind;   // Domain::index (0 for the default domain) | kFrame | kCommon
    [[nodiscard]] std::uint16_t domain() const { return static_cast<std::uint16_t>(kind); }
    [[nodiscard]] bool frame() const { return (kind & kFrame) != 0; }
    [[nodiscard]] bool common() const { return (kind & kCommon) != 0; }
  };
  std::array<Entry, kMax> entries;
  std::uint32_t depth = 0;
  std::uint32_t skipped = 0;  // pushes past kMax: their pops undo nothing
  std::array<std::uint16_t, kMaxDomains> open_in{};
  MessageCache names;
};

// The hot path reads one pointer (producers/hot_tls.hpp). The state
// behind it is made on the thread's first range and freed at its exit.
CUSCOPE_HOT_TLS extern constinit thread_local OpenRanges* t_open;

// The calling thread's ranges, or nullptr when they cannot be had (out of memory): then a push
// records nothing and its pop undoes nothing.
inline OpenRanges* open_ranges() {
  OpenRanges* o = t_open;
  return o != nullptr ? o : make_thread_owned(t_open);
}

// The scope's common entry (scope.cpp, enter_common()) for a range of this library, straight into
// the thread's tree: a started session recording host times only, the counter clock, the thread
// attached, no end posted from another thread, and the tree's own common case. No NVTX range of its
// own to push: this library is the NVTX tool. False having done nothing: enter_interned() does it.
[[gnu::always_inline]] inline bool enter_common(std::uint32_t name_id, OpenRanges::Entry& e) {
  ThreadState* ts = t_state;
  if (ts == nullptr || g_state.load(std::memory_order_relaxed) != kOn ||
      g_flags.load(std::memory_order_relaxed) != kRecording || ts->tree->remote_posted())
    return false;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock == nullptr) return false;
  // The entry is written first (what begin_common() will make of it: the frame above the tree's
  // innermost), so that nothing stays live across the tree's entry; unused when it declines.
  e.ts = ts;
  e.token = ts->tree->open_depth() + 1;
  model::ThreadTree::Token b{};
  return ts->tree->begin_common(name_id, clock->to_ns(cycle_counter()), &b);
}

// The scope's common exit (exit_owned_inline()) for a range enter_common() opened: the innermost
// frame with nothing else to undo; otherwise exit_owned() with the token it takes.
[[gnu::always_inline]] inline void exit_common(ThreadState* ts, std::uint32_t depth) {
  model::ThreadTree& tree = *ts->tree;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock != nullptr && !tree.exits_decline() &&
      (g_flags.load(std::memory_order_relaxed) & kCounters) == 0 &&
      tree.end_common(depth, clock->to_ns(cycle_counter()))) {
    if (tree.remote_posted()) settle_remote_ends(ts);  // an entry below, ended elsewhere, is innermost now
    return;
  }
  exit_owned(ts, owned_token(depth), now_ns());
}

// Closes an entry's range. Only on the thread that entered it: a state that is no longer the
// thread's (a child of fork(), where cuscope is off, or a state released at thread exit and
// maybe handed to another thread) is not touched; its open ranges were counted when it let go.
[[gnu::always_inline]] inline void close_range(const OpenRanges::Entry& e) {
  if (e.ts == nullptr || e.ts != t_state) return;
  if (e.common()) {
    exit_common(e.ts, e.token);
  } else {
    exit_owned(e.ts, e.token, now_ns());
  }
}

[[gnu::always_inline]] inline int open_range(OpenRanges& o, std::uint32_t name_id, std::uint16_t domain,
                                             bool frame) {
  if (o.depth == OpenRanges::kMax) {
    ++o.skipped;
    return static_cast<int>(o.depth);
  }
  OpenRanges::Entry& e = o.entries[o.depth];
  e.kind = domain | (frame ? OpenRanges::kFrame : 0);
  if (enter_common(name_id, e)) {
    e.kind |= OpenRanges::kCommon;
  } else {
    e.ts = enter_interned(name_id, e.token);
  }
  if (domain != 0) ++o.open_in[domain];
  return static_cast<int>(o.depth++);
}

// Opens `name_id` in domain `d` (nullptr: the default domain), under the range named after the
// domain when none of the domain's ranges is open. Returns its level.
[[gnu::always_inline]] inline int push_range(OpenRanges& o, const Domain* d, std::uint32_t name_id) {
  if (d != nullptr && d->index != kSharedDomain && o.open_in[d->index] == 0 && o.depth < OpenRanges::kMax)
    open_range(o, d->name_id, d->index, true);
  return open_range(o, name_id, d != nullptr ? d->index : 0, false);
}

// Pops the innermost open range of the domain (ranges of other domains opened after it stay open
// here; the tree closes them as unbalanced, counted). Returns its level, or -1 when none is open.
[[gnu::noinline]] int pop_range_slow(OpenRanges& o, std::uint16_t index);

// The common case inline: the innermost open range is the domain's own (not its frame).
[[gnu::always_inline]] inline int pop_range(OpenRanges& o, const Domain* d) {
  const std::uint16_t index = d != nullptr ? d->index : 0;
  if (o.skipped == 0 && o.depth > 0) {
    const OpenRanges::Entry& top = o.entries[o.depth - 1];
    const bool frame_left = index != 0 && o.open_in[index] == 2;  // this range and the frame under it
    if (top.domain() == index && !top.frame() && !frame_left) {
      --o.depth;
      if (index != 0) --o.open_in[index];
      close_range(top);
      return static_cast<int>(o.depth);
    }
  }
  return pop_range_slow(o, index);
}

// ---- start/end -----------------------------------------------------------------------------

/// Starts a span named `name_id` in domain `d` (nullptr: the default domain) in the session's span
/// table; 0 (which end_span() ignores) when the session is not recording.
nvtxRangeId_t start_span(const Domain* d, std::uint32_t name_id);
/// Ends the span, on whichever thread.
void end_span(nvtxRangeId_t id);

}  // namespace cuscope::inline v0::detail::inject
#pragma GCC visibility pop

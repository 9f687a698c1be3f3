// producers/outside_scopes.hpp — a thread's scopes that began outside the step window (wait or
// warm-up steps, the steps after the last window) and are still open, innermost last: when the
// window opens while they are, the first scope the thread enters in it is recorded under their
// path ("main/step"), not at the top ("step"), and they are opened in the range tree at that
// scope's entry, counted from there (a call clipped to the window, as a profiler's capture range
// clips one). When that window closes with nothing recorded open above them, their frames close at
// its end (at the thread's next scope outside the window: close_kept_at_window_end()), and the next
// window opens them again: a call per window, none of the time between.
//
// Never here: a lock, or an allocation but the thread's first such scope's (its stack); a look at
// another thread's stack but to mark one of its entries ended (a scope ended on another thread).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>

#include "model/range_tree.hpp"

namespace cuscope::inline v0::detail {

struct ThreadState;

/// A token bit of a scope entered outside the window and kept here; the token's depth bits hold its
/// entry's index + 1 and its tag bits the entry's tag (producers/scope.cpp lays the token out).
inline constexpr std::uint32_t kOutside = 1u << 31;

/// A thread's scopes entered outside the window and still open, innermost last. The owner thread
/// writes it; another thread only marks an entry ended (end_outside_elsewhere()).
struct OutsideScopes {
  static constexpr std::uint32_t kMax = model::kHardMaxDepth;
  static constexpr std::uint32_t kEnded = 1u << 16;  // in Entry::word, above the tag
  struct Entry {
    std::uint32_t id = 0;                // the scope's name id
    std::uint32_t depth = 0;             // once opened (open_outside() sets it): its tree depth, 0: none
    std::atomic<std::uint32_t> word{0};  // its tag, | kEnded once it ended
    bool traced = false;                 // once opened: trace mode recorded its entry
  };
  std::array<Entry, kMax> entries;
  std::uint32_t open = 0;    // entries in use: [0, open)
  std::uint32_t opened = 0;  // entries [0, opened) were opened in the tree (or skipped there)
  std::uint32_t next_tag = 0;
};

/// The token's layout (producers/scope.cpp): the entry's index + 1 in the depth bits, below 10; its
/// tag from bit 14.
inline constexpr std::uint32_t kOutsideIndexMask = 0x3FF;
inline constexpr unsigned kOutsideTagShift = 14;
inline constexpr std::uint32_t kOutsideTagMask = (1u << 13) - 1;
static_assert(OutsideScopes::kMax < kOutsideIndexMask && kOutsideTagMask < OutsideScopes::kEnded);

/// When the step window last closed (its last recorded step's end, window.cpp): where the kept
/// scopes a window opened end their call. Written before the scope flags that close it.
inline std::atomic<std::uint64_t> g_window_closed_ns{0};

/// Whether some of the kept scopes are not opened in the tree yet (`o`: null before the first).
inline bool waiting_to_open(const OutsideScopes* o) noexcept { return o != nullptr && o->open > o->opened; }
/// Keeps scope `id` on the calling thread's stack `o` (`tree`: its tree, whose next common entry
/// then declines, so that the entry that comes in a window opens the kept scopes first): the token
/// bits for its exit, or 0 where the stack is full.
inline std::uint32_t keep_outside(OutsideScopes& o, model::ThreadTree& tree, std::uint32_t id) noexcept {
  if (o.open == OutsideScopes::kMax) return 0;
  const std::uint32_t tag = o.next_tag == kOutsideTagMask ? 1 : o.next_tag + 1;
  o.next_tag = tag;
  OutsideScopes::Entry& e = o.entries[o.open];
  e.id = id;
  e.word.store(tag, std::memory_order_release);
  if (o.open == o.opened) tree.decline_next_common();  // no frame opens before the entry that opens them
  return kOutside | ++o.open | (tag << kOutsideTagShift);
}
/// keep_outside() of the thread's first such scope: its stack made first (0 where it cannot be).
std::uint32_t keep_first_outside(ThreadState* ts, std::uint32_t id) noexcept;
/// The common exit of a kept scope, on its own thread: the innermost entry, never opened in the
/// tree, with no entry ended elsewhere under it, leaves the stack; true. False having done nothing:
/// exit_outside() does it. Its word keeps its tag: a late mark finds an entry out of use, and the
/// next entry made there writes its own tag.
inline bool pop_outside(OutsideScopes& o, std::uint32_t token) noexcept {
  const std::uint32_t index = (token & kOutsideIndexMask) - 1;
  if (index + 1 != o.open || index < o.opened ||
      (index != 0 && (o.entries[index - 1].word.load(std::memory_order_acquire) & OutsideScopes::kEnded)))
    return false;
  o.open = index;
  return true;
}
/// Opens the kept scopes not yet opened in the thread's tree, at `now_ns`, before the first scope
/// recorded in the window is (trace mode records their entries, with `flags` & kTrace).
void open_outside(ThreadState* ts, std::uint32_t flags, std::uint64_t now_ns) noexcept;
/// Outside the window, on the thread's next scope entry or kept scope's exit: the kept scopes that a
/// window opened, with nothing recorded open above them, close their frames at the window's end
/// (g_window_closed_ns; trace mode records it) and wait to open again at the next window's first
/// recorded scope (counted as left out until then). Where a recorded scope is still open above them
/// they go on, their call counting whole.
void close_kept_at_window_end(ThreadState* ts) noexcept;
/// The exit of the kept scope of `token` on its own thread, at `now_ns`: it and every entry ended
/// elsewhere that is innermost then leave the stack, their frames closed (and the "(counted steps)"
/// frame, where it was the last under it).
void exit_outside(ThreadState* ts, std::uint32_t token, std::uint64_t now_ns) noexcept;
/// The exit of a kept scope on another thread: its entry is marked ended, for its own thread to
/// close at its next kept scope's exit or opening.
void end_outside_elsewhere(ThreadState* ts, std::uint32_t token) noexcept;
/// Forgets the stack (the state passes to a new thread: the old one left its scopes open).
void forget_outside(ThreadState* ts) noexcept;

}  // namespace cuscope::inline v0::detail

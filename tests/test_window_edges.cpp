// The step window's edges (producers/window_edges.hpp), driven with made-up times and no session:
// whether a window is open, and the recorded time before any moment, exact over the last 4,096
// windows and within the recorded time of the windows between two kept ones further back (one in
// 64, then one in 4,096), never going backwards.
// Never here: a session or a scope (the history is the process's; a session's start resets it).
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "producers/window_edges.hpp"

using cuscope::detail::between_windows;
using cuscope::detail::kWindowHistory;
using cuscope::detail::note_window_edges;
using cuscope::detail::recorded_before;
using cuscope::detail::start_window_edges;

namespace {

// Windows of uneven lengths and gaps: window i opens in [1000 i, 1000 i + 300) and lasts 50 to 449
// ns, so that no two share a length pattern a proportional share would guess right.
struct Windows {
  std::vector<std::uint64_t> opened, closed, before;
  explicit Windows(std::uint64_t count) {
    std::uint64_t sum = 0;
    for (std::uint64_t i = 0; i < count; ++i) {
      opened.push_back(1'000 * i + (i * 7'919) % 300);
      closed.push_back(opened.back() + 50 + (i * 104'729) % 400);
      before.push_back(sum);
      sum += closed.back() - opened.back();
    }
  }
  // Fed to the history as the step's ends would: every window closed, but the last if `last_open`.
  void feed(bool last_open) const {
    start_window_edges(opened[0], true);
    for (std::size_t i = 0; i < opened.size(); ++i) {
      if (i != 0) note_window_edges(opened[i], false, true);
      if (i + 1 != opened.size() || !last_open) note_window_edges(closed[i], true, false);
    }
  }
  // The windows' time before t, counted one by one.
  [[nodiscard]] std::uint64_t exact(std::uint64_t t, bool last_open) const {
    std::uint64_t sum = 0;
    for (std::size_t i = 0; i < opened.size() && opened[i] <= t; ++i) {
      const bool open = last_open && i + 1 == opened.size();
      sum += (open || t <= closed[i] ? t : closed[i]) - opened[i];
    }
    return sum;
  }
  // The most a window's time may be off at t: the recorded time of the windows strictly between
  // the kept ones of stride `stride` around it.
  [[nodiscard]] std::uint64_t bound(std::uint64_t t, std::uint64_t stride) const {
    std::uint64_t i = 0;
    while (i + 1 < opened.size() && opened[i + 1] <= t) ++i;
    const std::uint64_t low = i - i % stride, high = low + stride;
    if (high >= opened.size()) return 0;
    return before[high] - before[low + 1];
  }
};

}  // namespace

TEST_CASE("the recorded time before a moment is exact over the last 4,096 windows", "[window][edges]") {
  const bool last_open = GENERATE(false, true);
  const Windows w(kWindowHistory + 100);
  w.feed(last_open);
  const std::size_t first_kept = w.opened.size() - kWindowHistory;
  for (std::size_t i = first_kept; i < w.opened.size(); i += 37) {
    for (const std::uint64_t t :
         {w.opened[i], w.opened[i] + 20, w.closed[i], w.closed[i] + 1, w.opened[i] - 1}) {
      if (t < w.opened[first_kept]) continue;
      INFO("window " << i << ", t " << t);
      CHECK(recorded_before(t) == w.exact(t, last_open));
    }
  }
  const std::uint64_t end = w.closed.back() + 5'000;
  CHECK(recorded_before(end) == w.exact(end, last_open));
  // A stretch between windows: its time less the windows' in it.
  const std::uint64_t from = w.closed[first_kept + 3] + 1, to = w.opened[first_kept + 9] + 10;
  CHECK(between_windows(from, to) == (to - from) - (w.exact(to, false) - w.exact(from, false)));
  CHECK(between_windows(to, from) == 0);
}

TEST_CASE(
    "the recorded time before a moment further back is off by at most the windows between two kept ones",
    "[window][edges]") {
  // Past level 1's reach (64 x 4,096 windows): the first windows count at level 2.
  const Windows w(64 * kWindowHistory + 20'000);
  w.feed(false);
  const std::uint64_t n = w.opened.size();
  // The first window each level keeps: every one of the last 4,096; one in 64 of the last 4,096 such.
  const std::uint64_t first_every = n - kWindowHistory, first_64th = ((n + 63) / 64 - kWindowHistory) * 64;
  std::uint64_t previous = 0;
  std::uint64_t inexact = 0;  // moments read off by some nanoseconds: a share, not a count
  for (std::uint64_t i = 0; i < n; i += 997) {
    const std::uint64_t stride = i >= first_every ? 1 : i >= first_64th ? 64 : 4'096;
    for (const std::uint64_t t : {w.opened[i] + 1, w.closed[i] + 100}) {
      const std::uint64_t got = recorded_before(t), want = w.exact(t, false);
      const std::uint64_t off = got > want ? got - want : want - got;
      INFO("window " << i << " (kept one in " << stride << "), t " << t << ": " << got << " against "
                     << want);
      CHECK(off <= w.bound(t, stride));
      CHECK(got >= previous);  // never backwards: a stretch between windows is never negative
      previous = got;
      if (off != 0) ++inexact;
      // In a kept window itself, exact.
      if (i % stride == 0 && t <= w.closed[i]) CHECK(off == 0);
    }
  }
  CHECK(inexact != 0);  // the case reaches the shared-out moments it is about
}

TEST_CASE("the recorded time before a moment never goes backwards where a coarser history takes over",
          "[window][edges]") {
  const Windows w(64 * kWindowHistory + 20'000);
  w.feed(false);
  const std::uint64_t n = w.opened.size();
  const std::uint64_t first_every = n - kWindowHistory, first_64th = ((n + 63) / 64 - kWindowHistory) * 64;
  for (const std::uint64_t first : {first_every, first_64th}) {
    // Every window's start and end from one coarse stride before the finer history's first to it.
    const std::uint64_t from = first - (first == first_every ? 64 : 4'096);
    std::uint64_t previous = recorded_before(w.opened[from]);
    for (std::uint64_t i = from; i <= first; ++i) {
      for (const std::uint64_t t : {w.opened[i], w.closed[i], w.closed[i] + 200}) {
        const std::uint64_t got = recorded_before(t);
        INFO("window " << i << " (the finer history from " << first << "), t " << t);
        CHECK(got >= previous);
        CHECK(got <= w.exact(t, false) + w.bound(t, first == first_every ? 64 : 4'096));
        previous = got;
      }
    }
    CHECK(recorded_before(w.opened[first]) == w.exact(w.opened[first], false));  // kept there: exact
  }
}

TEST_CASE("a window is open as the edges last noted it", "[window][edges]") {
  using cuscope::detail::window_open;
  start_window_edges(1'000, false);  // a session that starts outside the window (a wait, or off)
  CHECK_FALSE(window_open());
  CHECK(recorded_before(5'000) == 0);
  note_window_edges(2'000, false, true);
  CHECK(window_open());
  CHECK(recorded_before(2'500) == 500);
  note_window_edges(3'000, true, false);
  CHECK_FALSE(window_open());
  CHECK(recorded_before(9'000) == 1'000);
  note_window_edges(4'000, false, true);  // the next window (or recording switched on again)
  CHECK(window_open());
  CHECK(recorded_before(3'500) == 1'000);  // between the two: the first window's time
  CHECK(recorded_before(5'000) == 2'000);
  start_window_edges(10'000, true);  // a new session recording from its start: the last one forgotten
  CHECK(window_open());
  CHECK(recorded_before(10'400) == 400);
  CHECK(recorded_before(9'000) == 0);
}

// producers/window_edges.cpp — see producers/window_edges.hpp.
//
// Never here: a lock, an allocation, a read on a scope's common path.
#include "producers/window_edges.hpp"

#include <atomic>
#include <thread>

#include "producers/outside_scopes.hpp"

namespace cuscope::inline v0::detail {
namespace {

// A kept window: when it opened, when it closed (0 while open), and the windows' time before it.
struct Window {
  std::atomic<std::uint64_t> opened{0}, closed{0}, before{0};
};
// Level l keeps the windows whose index (counting from the session's first) is a multiple of
// stride(l) = 64^l, the last kWindowHistory of them: level 0 every window, level 1 one in 64
// (262,144 windows back), level 2 one in 4,096 (16.8 million back). Window i of level l is at
// (i / stride(l)) % kWindowHistory.
constexpr unsigned kLevels = 3;
constexpr unsigned kStrideShift = 6;  // one in 64
constexpr unsigned shift(unsigned level) noexcept { return level * kStrideShift; }
constexpr std::uint64_t stride(unsigned level) noexcept { return std::uint64_t{1} << shift(level); }
Window g_levels[kLevels][kWindowHistory];
std::atomic<std::uint64_t> g_opened_windows{0};  // windows opened in the session
std::atomic<std::uint64_t> g_sequence{0};        // odd while a writer writes

// The one writer's section: readers that overlap it read again.
template <class Write>
void write(Write w) noexcept {
  const std::uint64_t sequence = g_sequence.load(std::memory_order_relaxed);
  g_sequence.store(sequence + 1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_release);
  w();
  g_sequence.store(sequence + 2, std::memory_order_release);
}

// `r()` read with no writer between.
template <class Read>
auto read(Read r) noexcept {
  for (;;) {
    const std::uint64_t before = g_sequence.load(std::memory_order_acquire);
    const auto value = r();
    std::atomic_thread_fence(std::memory_order_acquire);
    if ((before & 1) == 0 && g_sequence.load(std::memory_order_relaxed) == before) return value;
    std::this_thread::yield();  // a step's end is writing: a few stores
  }
}

std::uint64_t load(const std::atomic<std::uint64_t>& a) noexcept { return a.load(std::memory_order_relaxed); }
void store(std::atomic<std::uint64_t>& a, std::uint64_t v) noexcept { a.store(v, std::memory_order_relaxed); }

// Entry k of level `level` (window k * stride(level)).
Window& entry(unsigned level, std::uint64_t k) noexcept { return g_levels[level][k % kWindowHistory]; }
// Whether window i is kept at `level`.
bool kept_at(unsigned level, std::uint64_t i) noexcept { return (i & (stride(level) - 1)) == 0; }
// The entries level `level` has made when n windows opened.
std::uint64_t entries(unsigned level, std::uint64_t n) noexcept {
  return (n + stride(level) - 1) >> shift(level);
}

void open_window(std::uint64_t at_ns) noexcept {
  const std::uint64_t n = load(g_opened_windows);
  std::uint64_t before = 0;
  if (n != 0) {
    const Window& last = entry(0, n - 1);
    before = load(last.before) + (load(last.closed) - load(last.opened));
  }
  const auto keep = [&](Window& w) {
    store(w.opened, at_ns);
    store(w.closed, 0);
    store(w.before, before);
  };
  keep(entry(0, n));
  for (unsigned l = 1; l < kLevels && kept_at(l, n); ++l) keep(entry(l, n >> shift(l)));
  store(g_opened_windows, n + 1);
}

void close_window(std::uint64_t at_ns) noexcept {
  const std::uint64_t n = load(g_opened_windows);
  if (n == 0) return;
  store(entry(0, n - 1).closed, at_ns);
  for (unsigned l = 1; l < kLevels && kept_at(l, n - 1); ++l)
    store(entry(l, (n - 1) >> shift(l)).closed, at_ns);
}

// Window `w`'s part up to t (all of it once it closed before t), on top of the windows' time before
// it: the windows' time before t where w is the last window opened at or before t.
std::uint64_t through(const Window& w, std::uint64_t t_ns) noexcept {
  const std::uint64_t opened = load(w.opened), closed = load(w.closed);
  return load(w.before) + ((closed == 0 || t_ns <= closed ? t_ns : closed) - opened);
}

// The finer level's oldest kept window, where t is before it: when it opened, and the windows' time
// before it. A coarser level's share stops there.
struct Finer {
  std::uint64_t opened = ~std::uint64_t{0}, before = 0;
};

// The windows' time before t from level `level`, whose entries [oldest, count) are kept and the
// oldest opened at or before t: exact where t falls in a kept window or between two consecutive
// windows (level 0); between two kept windows of a coarser level (or that one and the finer level's
// oldest, where it comes first), what their gap holds, shared out in proportion to the time: off by
// at most the recorded time of the windows between them, and never more than a later moment's.
std::uint64_t recorded_at_level(unsigned level, std::uint64_t oldest, std::uint64_t count, std::uint64_t t_ns,
                                Finer finer) noexcept {
  // The last kept window that opened at or before t, by bisection over [oldest, count).
  std::uint64_t lo = oldest + 1, hi = count;
  while (lo < hi) {
    const std::uint64_t mid = lo + (hi - lo) / 2;
    if (load(entry(level, mid).opened) <= t_ns) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const Window& w = entry(level, lo - 1);
  const std::uint64_t after = through(w, t_ns), closed = load(w.closed);
  // In it; or after it, with no window between (every window kept, or none opened since).
  if (closed == 0 || t_ns <= closed || level == 0 || lo == count) return after;
  const Window& next = entry(level, lo);
  std::uint64_t next_opened = load(next.opened), next_before = load(next.before);
  if (finer.opened < next_opened) {
    next_opened = finer.opened;
    next_before = finer.before;
  }
  if (next_before <= after || next_opened <= closed) return after;
  const double share = static_cast<double>(t_ns - closed) / static_cast<double>(next_opened - closed);
  return after + static_cast<std::uint64_t>(share * static_cast<double>(next_before - after));
}

}  // namespace

void start_window_edges(std::uint64_t start_ns, bool recording) noexcept {
  write([&] {
    store(g_opened_windows, 0);
    if (recording) open_window(start_ns);
  });
}

void note_window_edges(std::uint64_t at_ns, bool closed, bool opened) noexcept {
  if (!closed && !opened) return;
  write([&] {
    if (closed) {
      close_window(at_ns);
      g_window_closed_ns.store(at_ns, std::memory_order_release);
    }
    if (opened) open_window(at_ns);
  });
}

bool window_open() noexcept {
  return read([] {
    const std::uint64_t n = load(g_opened_windows);
    return n != 0 && load(entry(0, n - 1).closed) == 0;
  });
}

std::uint64_t recorded_before(std::uint64_t t_ns) noexcept {
  return read([t_ns] {
    const std::uint64_t n = load(g_opened_windows);
    if (n == 0) return std::uint64_t{0};
    // t in or after the latest window (as for a frame that began in the window open now): no search.
    if (const Window& latest = entry(0, n - 1); load(latest.opened) <= t_ns) return through(latest, t_ns);
    // Else the finest level that keeps a window opened at or before t.
    Finer finer;
    for (unsigned l = 0; l < kLevels; ++l) {
      const std::uint64_t count = entries(l, n);
      const std::uint64_t oldest = count > kWindowHistory ? count - kWindowHistory : 0;
      const Window& first = entry(l, oldest);
      if (load(first.opened) <= t_ns) return recorded_at_level(l, oldest, count, t_ns, finer);
      if (oldest == 0) return std::uint64_t{0};  // before the session's first window
      finer = {load(first.opened), load(first.before)};
    }
    // Older than every level keeps: counted as the oldest kept window's start.
    return load(entry(kLevels - 1, entries(kLevels - 1, n) - kWindowHistory).before);
  });
}

}  // namespace cuscope::inline v0::detail

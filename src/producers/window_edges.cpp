// producers/window_edges.cpp — see producers/window_edges.hpp.
//
// Never here: a lock, an allocation, a read on a scope's common path.
#include "producers/window_edges.hpp"

#include <atomic>
#include <thread>

#include "producers/outside_scopes.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Window i (counting from the session's first) at i % kWindowHistory: when it opened, when it
// closed (0 while open), and the windows' time before it.
struct Window {
  std::atomic<std::uint64_t> opened{0}, closed{0}, before{0};
};
Window g_windows[kWindowHistory];
std::atomic<std::uint64_t> g_opened_windows{0};  // windows opened in the session
std::atomic<std::uint64_t> g_sequence{0};  // odd while a writer writes

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

void open_window(std::uint64_t at_ns) noexcept {
  const std::uint64_t n = load(g_opened_windows);
  std::uint64_t before = 0;
  if (n != 0) {
    const Window& last = g_windows[(n - 1) % kWindowHistory];
    before = load(last.before) + (load(last.closed) - load(last.opened));
  }
  Window& w = g_windows[n % kWindowHistory];
  store(w.opened, at_ns);
  store(w.closed, 0);
  store(w.before, before);
  store(g_opened_windows, n + 1);
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
    const std::uint64_t n = load(g_opened_windows);
    if (closed && n != 0) store(g_windows[(n - 1) % kWindowHistory].closed, at_ns);
    if (closed) g_window_closed_ns.store(at_ns, std::memory_order_release);
    if (opened) open_window(at_ns);
  });
}

std::uint64_t recorded_before(std::uint64_t t_ns) noexcept {
  return read([t_ns] {
    const std::uint64_t n = load(g_opened_windows);
    const std::uint64_t oldest = n > kWindowHistory ? n - kWindowHistory : 0;
    // The last window kept that opened at or before t: the latest one (t in or after it, as for a
    // frame that began in the window open now), else by bisection over [oldest, n).
    std::uint64_t lo = oldest, hi = n;
    if (n != 0 && load(g_windows[(n - 1) % kWindowHistory].opened) <= t_ns) lo = n;
    while (lo < hi) {
      const std::uint64_t mid = lo + (hi - lo) / 2;
      if (load(g_windows[mid % kWindowHistory].opened) <= t_ns) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo == oldest) return n == 0 ? std::uint64_t{0} : load(g_windows[oldest % kWindowHistory].before);
    const Window& w = g_windows[(lo - 1) % kWindowHistory];
    const std::uint64_t opened = load(w.opened), closed = load(w.closed);
    const std::uint64_t end = closed != 0 && closed < t_ns ? closed : t_ns;
    return load(w.before) + (end - opened);
  });
}

}  // namespace cuscope::inline v0::detail

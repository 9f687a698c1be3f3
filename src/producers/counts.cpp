// producers/counts.cpp — user counters (cuscope::count, CUSCOPE_COUNT): an amount added to the
// calling thread's innermost scope while the session records, and to trace mode's file.
//
// Never here: a lock, or an allocation but a (range, counter) pair's first count's; an inf or NaN
// amount added (it would poison every total above it: refused and counted instead).
#include <bit>
#include <cmath>
#include <cuscope/scope.hpp>

#include "producers/clock.hpp"
#include "producers/engine.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "trace/writer.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

// Adds to the counter `id` of the calling thread's innermost scope. An inf or NaN amount would
// poison every total above it: it is refused and counted instead.
void count_id(std::uint32_t id, double amount) noexcept {
  if (!std::isfinite(amount)) {
    current_sink().rejected_counts.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadState* ts = this_thread_state();
  if (ts == nullptr) return;
  try {
    ts->tree->count(id, amount);
    if (g_flags.load(std::memory_order_relaxed) & kTrace)
      trace::record(trace::ScopeKind::Count, ts->tree->slot(), id, now_ns(),
                    std::bit_cast<std::uint64_t>(amount));
  } catch (...) {  // out of memory on a first count: the count is lost, the program goes on
  }
}

}  // namespace

void count(Site& site, double amount) noexcept {
  if (!recording()) {
    if (const Engine* e = forwarding()) e->count_site(site, amount);
    return;
  }
  count_id(site_id(site), amount);
}

}  // namespace detail

void count(std::string_view name, double amount) noexcept {
  if (!detail::recording()) {
    if (const detail::Engine* e = detail::forwarding()) e->count_name(name, amount);
    return;
  }
  detail::count_id(detail::current_sink().forest.names.intern(name), amount);
}

}  // namespace v0
}  // namespace cuscope

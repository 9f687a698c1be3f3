// inject/open_ranges.cpp — the slow half of a thread's open push ranges: a pop that is not of the
// innermost range (or finds none), and start/end ranges, handed to the session's span table.
//
// Runs off the hot path. It must never close a range of another thread's state, and a pop that
// matches nothing is counted, never ignored.
#include "inject/open_ranges.hpp"

#include "model/spans.hpp"

namespace cuscope::inline v0::detail::inject {

CUSCOPE_HOT_TLS constinit thread_local OpenRanges* t_open = nullptr;

namespace {

void close_entry(OpenRanges& o, std::uint32_t at) {
  const OpenRanges::Entry e = o.entries[at];
  for (std::uint32_t i = at; i + 1 < o.depth; ++i) o.entries[i] = o.entries[i + 1];
  --o.depth;
  if (e.domain() != 0) --o.open_in[e.domain()];
  close_range(e);
}

std::uint64_t thread_key() {
  static thread_local char marker;
  return reinterpret_cast<std::uintptr_t>(&marker);
}

}  // namespace

int pop_range_slow(OpenRanges& o, std::uint16_t index) {
  if (o.skipped > 0) {
    --o.skipped;
    return static_cast<int>(o.depth + o.skipped);
  }
  for (std::uint32_t i = o.depth; i-- > 0;) {
    const OpenRanges::Entry& e = o.entries[i];
    if (e.domain() != index || e.frame()) continue;
    close_entry(o, i);
    if (index != 0 && o.open_in[index] == 1) {  // only the domain's frame is left: close it too
      for (std::uint32_t j = i; j-- > 0;) {
        if (o.entries[j].domain() == index && o.entries[j].frame()) {
          close_entry(o, j);
          break;
        }
      }
    }
    return static_cast<int>(i);
  }
  session().stray_pops.fetch_add(1, std::memory_order_relaxed);  // as unmatched_end(): a trace carries it
  return -1;
}

nvtxRangeId_t start_span(const Domain* d, std::uint32_t name_id) {
  if (!recording()) return 0;
  return session().spans.start(d != nullptr ? d->name_id : 0, name_id, thread_key(), now_ns());
}

void end_span(nvtxRangeId_t id) {
  if (id == 0 || g_state.load(std::memory_order_relaxed) != kOn) return;  // left out at its start
  session().spans.end(id, thread_key(), now_ns());
}

}  // namespace cuscope::inline v0::detail::inject

// model/gpu_intervals.cpp — busy unions and span hulls of a call, its ancestors and the report.
#include "model/gpu_intervals.hpp"

#include <algorithm>

namespace cuscope::model {
namespace {

// Grows [start, end) to cover [s, e) and returns by how much its length grew. A record that ends
// before it starts is the instant [s, s), as elapsed_ns() gives it 0 ns: never a hull run backwards.
std::uint64_t extend_hull(std::uint64_t& start, std::uint64_t& end, std::uint64_t s, std::uint64_t e) {
  e = std::max(e, s);
  if (start == 0 && end == 0) {
    start = s;
    end = e;
    return e - s;
  }
  std::uint64_t grown = 0;
  if (e > end) {  // the common case: a later kernel
    grown += e - end;
    end = e;
  }
  if (s < start) {
    grown += start - s;
    start = s;
  }
  return grown;
}

// Where a step window was ever set: extends hull [start, end) of a call to cover [s, e), but never
// across an unrecorded stretch, and returns by how much it grew. After a recording window began since
// the hull's end (Attribution::window_began()), the hull, of the window before, closes (its length
// added to `*closed`, where given) and the record begins a new one; a record of an earlier window
// than the hull's, come late, leaves the hull as it is (its span not counted: at most its own length
// short).
[[gnu::noinline]] std::uint64_t extend_in_window(const Attribution& a, std::uint64_t& start,
                                                 std::uint64_t& end, std::uint64_t s, std::uint64_t e,
                                                 std::uint64_t* closed) {
  if (a.window_began(end, s)) {
    if (closed != nullptr) *closed += end - start;
    start = end = 0;
  }
  return a.window_began(s, start) ? 0 : extend_hull(start, end, s, e);
}

}  // namespace

void GpuIntervals::spread(const Target& t, std::uint64_t start, std::uint64_t end) {
  if (t.where == Where::Unscoped) {
    activities_.all_busy().add(start, end);
    activities_.unscoped().total_busy.add(start, end);
    return;
  }
  spread_in_range(t.instance, start, end);
}

template <bool kBusy>
void GpuIntervals::spread_up(Instance* inst, std::uint64_t start, std::uint64_t end) {
  RangeActivity& own = *inst->activity;
  if constexpr (kBusy) {
    activities_.all_busy().add(start, end);
    if (own.has_descendant_kernels) own.self_busy.add(start, end);
    own.total_busy.add(start, end);
  }
  bool lost = attribution_.late(inst);
  const bool windowed = attribution_.windowed();
  if (!lost && windowed) {
    own.self.gpu_span_ns +=
        extend_in_window(attribution_, inst->self_start, inst->self_end, start, end, nullptr);
    own.total_span_ns +=
        extend_in_window(attribution_, inst->total_start, inst->total_end, start, end, &inst->closed_span);
  } else if (!lost) {
    own.self.gpu_span_ns += extend_hull(inst->self_start, inst->self_end, start, end);
    own.total_span_ns += extend_hull(inst->total_start, inst->total_end, start, end);
  }
  if (inst->parent != kNoInstance)
    lost |= spread_to_ancestors<kBusy>(inst->parent, own, windowed, start, end);
  if (lost) diag_.gpu_span_records_lost += 1;
}

template <bool kBusy>
bool GpuIntervals::spread_to_ancestors(std::uint64_t parent, const RangeActivity& own, bool windowed,
                                       std::uint64_t start, std::uint64_t end) {
  bool lost = false;
  for (std::uint64_t up = parent; up != kNoInstance;) {
    Instance* inst = attribution_.instance(up);
    if (inst == nullptr) break;  // an ancestor aged out: its span stays as it was
    RangeActivity& a = *inst->activity;
    if constexpr (kBusy) {
      if (&a != &own && !a.has_descendant_kernels) {
        a.self_busy = a.total_busy;  // everything so far was its own
        a.has_descendant_kernels = true;
      }
      a.total_busy.add(start, end);
    }
    if (attribution_.late(inst)) {
      lost = true;
    } else {
      a.total_span_ns += windowed ? extend_in_window(attribution_, inst->total_start, inst->total_end, start,
                                                     end, &inst->closed_span)
                                  : extend_hull(inst->total_start, inst->total_end, start, end);
    }
    up = inst->parent;
  }
  return lost;
}

template void GpuIntervals::spread_up<true>(Instance*, std::uint64_t, std::uint64_t);
template void GpuIntervals::spread_up<false>(Instance*, std::uint64_t, std::uint64_t);

}  // namespace cuscope::model

// producers/counted_root.cpp — the "(counted steps)" frame of a step with hardware counters
// (producers/counted_root.hpp).
//
// Never here: a lock or an allocation but the tree's own on the frame's first visit.
#include "producers/counted_root.hpp"

#include "model/names.hpp"
#include "producers/scope_state.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {

void open_counted_root(ThreadState* ts, std::uint64_t now, std::uint32_t flags) noexcept {
  const model::ThreadTree::Token b = ts->tree->begin(model::NameTable::kCountedStepsId, now);
  if (b.depth == 0) return;  // out of memory (counted): the scope goes at the top, not under it
  ts->counted_root = true;
  settle_slow_exit(ts);
  ts->counted_root_traced = (flags & kTrace) != 0;
  if (ts->counted_root_traced)
    trace::record(trace::ScopeKind::Enter, ts->tree->slot(), model::NameTable::kCountedStepsId, now,
                  b.instance);
}

// Closes the "(counted steps)" frame once the top-level scope under it has closed.
void close_counted_root(ThreadState* ts, std::uint64_t now) noexcept {
  ts->counted_root = false;
  settle_slow_exit(ts);
  const model::Node* top = ts->tree->open_depth() == 1 ? ts->tree->open_node(1) : nullptr;
  if (top == nullptr || top->name_id != model::NameTable::kCountedStepsId) return;
  ts->tree->end(1, now);
  if (ts->counted_root_traced) trace::record(trace::ScopeKind::Exit, ts->tree->slot(), 1, now);
}

}  // namespace cuscope::inline v0::detail

// producers/counted_root.hpp — a step with hardware counters (CUSCOPE_METRICS): its top-level
// scopes go under one "(counted steps)" frame, apart from the steps without, whose host times the
// kernel replay does not inflate. Opened by a thread's first recorded scope of such a step, closed
// once its last top-level scope has.
//
// Never here: a lock or an allocation but the tree's own on the frame's first visit.
#pragma once

#include <cstdint>

namespace cuscope::inline v0::detail {

struct ThreadState;

/// Opens the "(counted steps)" frame at `now` on the calling thread's tree (`ts` is its own; trace
/// mode records it, with `flags` & kTrace).
void open_counted_root(ThreadState* ts, std::uint64_t now, std::uint32_t flags) noexcept;
/// Closes the "(counted steps)" frame once the top-level scope under it has closed.
void close_counted_root(ThreadState* ts, std::uint64_t now) noexcept;

}  // namespace cuscope::inline v0::detail

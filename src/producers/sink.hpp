// producers/sink.hpp — what the producers record into: the range forest, the aggregator of GPU
// activity, and the counts of what they could not record. The producers define it, the session
// owns one (Session derives from Sink) and hands it to them: the CUPTI adapter and the range
// profiler take it when they start, a scope finds it through current_sink().
//
// Never here: the session's lifecycle (start, the step window, exit), its threads or its views.
// A producer that needs more from the session gets it added here, never by including the session.
#pragma once

#include <atomic>
#include <cstdint>
#include <cuscope/session.hpp>
#include <mutex>

#include "model/aggregator.hpp"
#include "model/range_tree.hpp"

namespace cuscope::inline v0::detail {

/// The process's name table: outlives sessions, since call sites cache its ids.
model::NameTable& process_names();

struct Sink {
  Options options;  ///< the session's: the adapter reads graphs, the range profiler metric_ranges
  model::Forest forest{&process_names()};

  std::mutex aggregator_mutex;
  model::Aggregator aggregator{forest};  // guarded by aggregator_mutex

  std::atomic<bool> tracing{false};  // CUPTI traces: scopes push correlation ids
  // CUPTI traces with launch callbacks (CUSCOPE_ATTRIBUTION=launch): scopes push nothing.
  std::atomic<bool> launch_attributed{false};

  // Launch and call notes refused for this session (a full ring or call queue, or no memory),
  // not yet in its model: counted per session, so that a refusal near a stop (after the last drain,
  // once launch_attributed is off) is still this session's, in its final report, and never the
  // next session's.
  std::atomic<std::uint64_t> launch_notes_lost{0};

  std::atomic<std::uint64_t> cross_thread_ends{0};
  // Ends with nothing to end (unmatched_end(): a pop() with no push(), a Python scope's exit with no
  // entry, an NVTX pop with no range open): one session count, which a trace's summary carries.
  std::atomic<std::uint64_t> stray_pops{0};
  std::atomic<std::uint64_t> rejected_counts{0};  // count() amounts that were inf or NaN
};

/// The current session's sink, made on first use (the session implements it). For a scope, which
/// is handed nothing but its call site: it asks off the hot path only (first visits, counts of
/// what went wrong).
Sink& current_sink();

}  // namespace cuscope::inline v0::detail

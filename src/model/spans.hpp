// model/spans.hpp — NVTX start/end ranges ("spans"): nvtxRangeStart/nvtxRangeEnd in zero-code mode.
//
// A span may end on another thread than it began and need not nest, so it cannot live in a
// thread's range tree: spans are kept apart, one row per (domain, name), host time only.
//
// Memory is bounded: a closed span adds to its (domain, name) row and is forgotten, so rows grow
// with distinct names (themselves bounded by the NameTable), never with calls; open spans are at
// most kMaxOpen, and a start past that is refused and counted. Start/end ranges are rare next to
// push/pop ranges, so one mutex guards the table; it is held across fork() (pthread_atfork) so a
// child forked while another thread starts or ends a span finds it free.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <mutex>

#include "model/names.hpp"

namespace cuscope::model {

class SpanTable {
 public:
  static constexpr std::size_t kMaxOpen = 1u << 16;  // open at once; past it, start() is refused

  SpanTable();
  ~SpanTable();
  SpanTable(const SpanTable&) = delete;
  SpanTable& operator=(const SpanTable&) = delete;

  /// Opens a span of (domain_id, name_id) -- ids from the process NameTable (domain_id 0 = the
  /// default domain, no domain) -- begun by thread `thread` at `now_ns`. Returns its id, never 0;
  /// returns 0 when kMaxOpen spans are open (counted in spans_dropped).
  std::uint64_t start(std::uint32_t domain_id, std::uint32_t name_id, std::uint64_t thread,
                      std::uint64_t now_ns);
  /// Ends span `id` on thread `thread`. An id that is not open (never started, already ended, 0,
  /// or refused) is counted in unmatched_span_ends and returns false.
  bool end(std::uint64_t id, std::uint64_t thread, std::uint64_t now_ns);
  /// Fills report.spans (sorted by host total, longest first; ties by domain then name) and
  /// report.diagnostics.unmatched_span_ends / spans_dropped; open spans are counted per
  /// (domain, name) in SpanStats::open.
  void build(const NameTable& names, Report& report) const;
  /// Leaves the tables fork() holds: for a table no thread uses again but that stays allocated (a
  /// session retired by reset_for_testing(), kept reachable). Without it every retired table's lock
  /// is taken at each fork, and past 64 of them ThreadSanitizer's deadlock detector aborts the fork.
  void retire() noexcept;
  /// Tables whose locks fork() holds now (tests).
  static std::size_t held_at_fork_for_testing() noexcept;

 private:
  struct Open {
    std::uint64_t key;  // domain_id << 32 | name_id
    std::uint64_t thread;
    std::uint64_t start_ns;
  };
  struct Row {
    DurationStats host;
    std::uint64_t cross_thread = 0;
  };

  static void fork_prepare() noexcept;
  static void fork_release() noexcept;

  mutable std::mutex mutex_;
  std::uint64_t next_id_ = 1;                      // guarded by mutex_; ids are never reused
  absl::flat_hash_map<std::uint64_t, Open> open_;  // by span id; guarded by mutex_
  absl::flat_hash_map<std::uint64_t, Row> rows_;   // closed spans by key; guarded by mutex_
  std::uint64_t unmatched_ends_ = 0;               // guarded by mutex_
  std::uint64_t dropped_ = 0;                      // guarded by mutex_
};

}  // namespace cuscope::model

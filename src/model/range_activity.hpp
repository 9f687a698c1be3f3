// model/range_activity.hpp — what one range (a node of one thread's tree) accumulated from the
// GPU: kernel rows by launch shape, copies, sets, syncs, allocations, hardware counters, kernel
// time per stream, busy time; and the table of them by node.
//
// Plain accumulation. It never decides which range a record belongs to (attribution.hpp does),
// never spreads GPU intervals to ancestors (gpu_intervals.hpp does) and never builds a Report
// (report_builder.hpp does). Not thread-safe: the aggregator's one consumer at a time.
#pragma once

#include <absl/container/node_hash_map.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cuscope/report.hpp>
#include <memory>
#include <string>
#include <vector>

#include "model/events.hpp"
#include "model/interval_union.hpp"
#include "model/range_tree.hpp"

namespace cuscope::model {

/// Streams whose kernel time a range keeps apart, per thread (ActivityStats::kernel_streams).
inline constexpr std::size_t kStreamsTracked = 4;

/// A kernel's launch shape: a range keeps one row per distinct key.
struct KernelKey {
  std::uint32_t name;  // a KernelNames id
  std::array<std::uint32_t, 3> grid, block;
  std::uint32_t device;
  bool operator==(const KernelKey&) const = default;
  template <typename H>
  friend H AbslHashValue(H h, const KernelKey& k) {
    return H::combine(std::move(h), k.name, k.grid, k.block, k.device);
  }
};

/// One launch shape's statistics.
struct KernelAgg {
  std::uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
  std::uint32_t registers = 0, static_shared = 0, dynamic_shared = 0;

  void count(std::uint64_t ns, std::uint32_t registers_per_thread, std::uint32_t static_shared_bytes,
             std::uint32_t dynamic_shared_bytes) {
    calls += 1;
    total_ns += ns;
    min_ns = std::min(min_ns, ns);
    max_ns = std::max(max_ns, ns);
    registers = registers_per_thread;
    static_shared = static_shared_bytes;
    dynamic_shared = dynamic_shared_bytes;
  }
  void merge(const KernelAgg& other) {
    calls += other.calls;
    total_ns += other.total_ns;
    min_ns = std::min(min_ns, other.min_ns);
    max_ns = std::max(max_ns, other.max_ns);
    registers = other.registers;
    static_shared = other.static_shared;
    dynamic_shared = other.dynamic_shared;
  }
};

/// A range's statistics for one launch shape, and a guess at its next launch: a step loop
/// launches the same kernels in the same order every step, so the row that followed this one last
/// time is checked before any hashing or name lookup.
struct KernelRow {
  KernelKey key;
  KernelAgg agg;
  const char* name_ptr = nullptr;  // the producer's pointer for key.name last seen here
  std::uint64_t name_batch = 0;    // the KernelNames batch in which name_ptr was last checked
  KernelRow* next = nullptr;       // the row launched after this one last time, in this range
  [[nodiscard]] bool matches(const KernelActivity& k) const {
    const std::uint32_t differ = (key.grid[0] ^ k.grid[0]) | (key.grid[1] ^ k.grid[1]) |
                                 (key.grid[2] ^ k.grid[2]) | (key.block[0] ^ k.block[0]) |
                                 (key.block[1] ^ k.block[1]) | (key.block[2] ^ k.block[2]) |
                                 (key.device ^ k.device);
    return name_ptr == k.name && differ == 0;
  }
};

/// Kernel time of a few streams (by stream_key()), the rest summed as one.
struct StreamTimes {
  std::array<std::uint64_t, kStreamsTracked> key{}, ns{};
  std::uint32_t count = 0;
  std::uint64_t other_ns = 0;
  void add(std::uint64_t k, std::uint64_t t) {
    for (std::uint32_t i = 0; i < count; ++i) {
      if (key[i] == k) {
        ns[i] += t;
        return;
      }
    }
    if (count < kStreamsTracked) {
      key[count] = k;
      ns[count++] = t;
      return;
    }
    other_ns += t;
  }
};

/// Device and stream as one number, in one load from the record's bytes (`stream` follows
/// `device`); shifting the two fields together costs 3 instructions more per kernel.
template <class K>
std::uint64_t stream_key(const K& k) {
  static_assert(offsetof(K, stream) == offsetof(K, device) + sizeof(std::uint32_t));
  std::uint64_t key;
  std::memcpy(&key, reinterpret_cast<const unsigned char*>(&k) + offsetof(K, device), sizeof key);
  return key;
}

/// A range's graph kernels by the range their node was created in. Node maps: rows never move,
/// so the graph kernels' cache (graph_kernels.hpp) may point into them.
struct GraphBreakdown {
  struct Row {
    std::uint64_t calls = 0, ns = 0;
    IntervalUnion busy;
    absl::node_hash_map<KernelKey, KernelAgg> kernels;
  };
  absl::node_hash_map<const Node*, Row> known;  // nullptr: created outside every range
  Row unknown;
};

/// The hardware metrics that counter values follow, in order. Percentages and rates (`weighted`)
/// combine as means weighted by kernel duration (gpu__time_duration.sum when in the plan, else
/// equal weights); everything else is summed.
struct CounterPlan {
  std::vector<std::string> names, labels, units;
  std::vector<bool> weighted;
  std::size_t duration_index = SIZE_MAX;
};

/// One thread's node's GPU statistics.
struct RangeActivity {
  ActivityStats self;
  // Until a descendant's kernel arrives, the range's own kernels are all of its subtree's: only
  // total_busy is kept, and self_busy starts as a copy of it when the first descendant's comes.
  IntervalUnion self_busy, total_busy;
  bool has_descendant_kernels = false;
  std::uint64_t total_span_ns = 0;
  // The projected span (total hull) of each call that left the instance table; the calls still in
  // it are added when a report is built.
  DurationStats evicted_call_spans;
  std::int64_t self_live = 0, total_live = 0;
  std::uint64_t total_peak = 0;
  absl::node_hash_map<KernelKey, KernelRow> kernels;  // node map: rows never move
  KernelRow* last = nullptr;                          // the row of the last kernel
  std::uint64_t profiled_kernels = 0;
  std::vector<double> metric_sum, metric_weight;  // per plan metric
  // Kernel time per stream, for the serialized-streams finding. Kernels of one stream come in
  // runs: the current run's time is summed apart (one compare per kernel) and goes to its
  // stream's row when another stream's kernel comes.
  StreamTimes streams;
  std::uint64_t run_key = UINT64_MAX;  // stream_key() of the current run
  std::uint64_t run_ns = 0;
  std::unique_ptr<GraphBreakdown> graph;  // graph kernels by capture-time range

  [[nodiscard]] std::uint64_t self_busy_ns() const {
    return has_descendant_kernels ? self_busy.measure() : total_busy.measure();
  }
  /// The row of `key`, the predicted one (after the last kernel's) when it matches.
  KernelRow& kernel_row(const KernelKey& key);
  void count_stream(std::uint64_t key, std::uint64_t ns) {
    if (run_key == key) {
      run_ns += ns;
      return;
    }
    new_stream_run(key, ns);
  }
  /// Every stream's kernel time, the current run included.
  [[nodiscard]] StreamTimes stream_times() const;
  /// One replayed kernel's metric values, in the plan's order.
  void add_counters(const CounterPlan& plan, const std::vector<double>& values);

 private:
  [[gnu::noinline]] void new_stream_run(std::uint64_t key, std::uint64_t ns);
};

/// Every node's RangeActivity (made on first use), "(unscoped)"'s, and the union of every interval
/// attributed: the GPU busy time of the whole report (its root), which no sum of the top-level
/// ranges gives when they overlap on the GPU.
class RangeActivities {
 public:
  RangeActivity& of(const Node* node);  // nullptr: unscoped
  [[nodiscard]] const RangeActivity* find(const Node* node) const {
    return node->id < by_node_.size() ? by_node_[node->id].get() : nullptr;
  }
  [[nodiscard]] RangeActivity& unscoped() { return unscoped_; }
  [[nodiscard]] const RangeActivity& unscoped() const { return unscoped_; }
  [[nodiscard]] IntervalUnion& all_busy() { return all_busy_; }
  [[nodiscard]] const IntervalUnion& all_busy() const { return all_busy_; }

 private:
  std::vector<std::unique_ptr<RangeActivity>> by_node_;  // index = Node::id
  RangeActivity unscoped_;
  IntervalUnion all_busy_;
};

/// One more duration into `d`.
inline void add_call(DurationStats& d, std::uint64_t ns) {
  d.min_ns = d.count == 0 ? ns : std::min(d.min_ns, ns);
  d.max_ns = std::max(d.max_ns, ns);
  d.count += 1;
  d.total_ns += ns;
}

/// end - start, or 0 for an interval that does not run forward.
inline std::uint64_t elapsed_ns(std::uint64_t start, std::uint64_t end) {
  return end > start ? end - start : 0;
}

}  // namespace cuscope::model

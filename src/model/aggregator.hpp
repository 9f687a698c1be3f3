// model/aggregator.hpp — folds GPU activities into per-range statistics, and builds Reports.
//
// Attribution is by correlation, not by time: an activity carries the correlation id of the API
// call that launched it; an ExternalCorrelation record ties that call to the scope instance that
// was innermost on the launching thread. Records whose correlation is not known yet wait (bounded)
// until it is; an API call seen without an external correlation means work launched outside
// every scope, which goes to "(unscoped)". Records that never resolve are counted.
//
// Memory is bounded by what is distinct: per range, one row per distinct kernel launch shape;
// the correlation and instance maps are bounded and age out old entries.
//
// Not thread-safe: one consumer at a time (the session serializes producers and snapshots).
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/node_hash_map.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cuscope/report.hpp>
#include <deque>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "model/events.hpp"
#include "model/graphs.hpp"
#include "model/interval_union.hpp"
#include "model/range_tree.hpp"

namespace cuscope::model {

class Aggregator {
 public:
  /// Records waiting for their correlation. When full, the oldest waiting record makes room
  /// (counted as unresolved): a record that never resolves can delay, never block, the others.
  static constexpr std::size_t kMaxPending = 1u << 16;
  /// Settles a waiting record survives before it counts as unresolved. The collector settles
  /// after each periodic poll (100 ms), flush() once more: about a second of patience.
  static constexpr unsigned kMaxAge = 10;
  /// Correlations remembered: CUPTI's ids are dense and increasing, so a direct-mapped table of the
  /// last 2^18 API calls needs no hashing and never grows.
  static constexpr std::size_t kCorrelationSlots = 1u << 18;
  static constexpr std::size_t kInstanceSlots = 1u << 16;
  static constexpr std::size_t kMaxLiveAllocations = 1u << 18;
  /// Streams whose kernel time a range keeps apart, per thread (ActivityStats::kernel_streams).
  static constexpr std::size_t kStreamsTracked = 4;

  explicit Aggregator(const Forest& forest);
  ~Aggregator();
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  void on(const ApiCall& a);
  void on(const ExternalCorrelation& e);
  void on(const KernelActivity& k);
  void on(const MemcpyActivity& m);
  void on(const MemsetActivity& m);
  void on(const SyncActivity& s);
  void on(const MemoryActivity& m);
  void on(const OverheadActivity& o);
  /// Graph nodes (README, "CUDA graphs"): these two take no aggregator lock (graph_nodes() has its
  /// own), so producers may call them from the capturing thread while another holds it.
  void on(const GraphNodeCreated& e) { graph_nodes_.on(e); }
  void on(const GraphNodeCloned& e) { graph_nodes_.on(e); }
  void on(const GraphExecNodes& e) { graph_nodes_.on(e); }
  void on(const GraphExecUpdated& e) { graph_nodes_.on(e); }
  [[nodiscard]] GraphNodeMap& graph_nodes() { return graph_nodes_; }
  /// Off: graph kernels count in their launching range only, with no breakdown by capture-time
  /// range and nothing counted as of an unknown node (no callbacks, so no node is known).
  void set_graph_breakdown(bool on) { graph_breakdown_ = on; }
  [[nodiscard]] bool graph_breakdown() const { return graph_breakdown_; }
  void add_dropped(std::uint64_t n) { diag_.dropped_records += n; }
  void add_dropped_counter_ranges(std::uint64_t n) { diag_.counter_ranges_dropped += n; }

  /// The hardware metrics that add_counters() values follow, in order. Percentages and rates
  /// (`weighted`) combine as means weighted by kernel duration (gpu__time_duration.sum when in the
  /// plan, else equal weights); everything else is summed.
  void set_counter_plan(std::vector<std::string> names, std::vector<std::string> labels,
                        std::vector<std::string> units, std::vector<bool> weighted);
  /// One replayed kernel's metric values, for the range `node` (the innermost when it ran).
  void add_counters(const Node* node, const std::vector<double>& values);
  void add_unknown(std::uint64_t n) { diag_.unknown_records += n; }
  void add_refused_buffers(std::uint64_t n) { diag_.activity_buffers_refused += n; }
  /// From now on a record with a zero timestamp is work that was still running when the session
  /// ended (the forced flush at shutdown), counted as incomplete_at_exit.
  void set_final_flush(bool final_flush) { final_flush_ = final_flush; }
  void add_zero_timestamp(std::uint64_t n) { diag_.zero_timestamp_records += n; }

  /// Retries waiting records. With `age`, each one still waiting grows one older, and those
  /// `max_age` old are counted as unresolved and dropped. Producers retry after each batch of
  /// records without aging, and age at each full flush (correlations can come batches later).
  void settle(unsigned max_age = kMaxAge, bool age = true);

  /// The step window: work launched outside every scope counts only while recording. Before the
  /// first call, everything records.
  void set_recording(bool recording, std::uint64_t now_ns);

  /// Fills `report.ranges` (the merged range tree with host, CUDA-event and activity statistics)
  /// and the activity counters of `report.diagnostics`.
  void build(Report& report) const;

  [[nodiscard]] const Diagnostics& diagnostics() const { return diag_; }
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  struct KernelKey {
    std::uint32_t name;
    std::array<std::uint32_t, 3> grid, block;
    std::uint32_t device;
    bool operator==(const KernelKey&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const KernelKey& k) {
      return H::combine(std::move(h), k.name, k.grid, k.block, k.device);
    }
  };
  struct KernelAgg {
    std::uint64_t calls = 0, total_ns = 0, min_ns = UINT64_MAX, max_ns = 0;
    std::uint32_t registers = 0, static_shared = 0, dynamic_shared = 0;
  };
  // A range's statistics for one launch shape, and a guess at its next launch: a step loop
  // launches the same kernels in the same order every step, so the row that followed this one
  // last time is checked before any hashing or name lookup.
  struct KernelRow {
    KernelKey key;
    KernelAgg agg;
    const char* name_ptr = nullptr;  // the producer's pointer for key.name last seen here
    KernelRow* next = nullptr;       // the row launched after this one last time, in this range
    [[nodiscard]] bool matches(const KernelActivity& k) const {
      const std::uint32_t differ = (key.grid[0] ^ k.grid[0]) | (key.grid[1] ^ k.grid[1]) |
                                   (key.grid[2] ^ k.grid[2]) | (key.block[0] ^ k.block[0]) |
                                   (key.block[1] ^ k.block[1]) | (key.block[2] ^ k.block[2]) |
                                   (key.device ^ k.device);
      return name_ptr == k.name && differ == 0;
    }
  };
  // Kernel time of a few streams (by stream_key()), the rest summed as one.
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
  // A range's graph kernels by the range their node was created in. Node maps: rows never move,
  // so the last hits (graph_hits_) may point into them.
  struct GraphBreakdown {
    struct Row {
      std::uint64_t calls = 0, ns = 0;
      IntervalUnion busy;
      absl::node_hash_map<KernelKey, KernelAgg> kernels;
    };
    absl::node_hash_map<const Node*, Row> known;  // nullptr: created outside every range
    Row unknown;
  };
  struct RangeActivity {
    ActivityStats self;
    // Until a descendant's kernel arrives, the range's own kernels are all of its subtree's: only
    // total_busy is kept, and self_busy starts as a copy of it when the first descendant's comes.
    IntervalUnion self_busy, total_busy;
    bool has_descendant_kernels = false;
    [[nodiscard]] std::uint64_t self_busy_ns() const {
      return has_descendant_kernels ? self_busy.measure() : total_busy.measure();
    }
    std::uint64_t total_span_ns = 0;
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
  };
  struct CounterPlan {
    std::vector<std::string> names, labels, units;
    std::vector<bool> weighted;
    std::size_t duration_index = SIZE_MAX;
  };
  struct Instance {
    std::uint64_t id = 0;  // 0: an empty slot
    Node* node = nullptr;
    RangeActivity* activity = nullptr;  // activity(node), looked up once
    std::uint64_t parent = 0;
    std::uint64_t self_start = 0, self_end = 0;
    std::uint64_t total_start = 0, total_end = 0;
  };
  enum class Where : std::uint8_t { Range, Unscoped, Outside, Own, Unknown, Unresolved };
  struct Target {
    Where where;
    Instance* instance;  // Where::Range: the innermost instance, valid until the next lookup
  };
  struct Correlation {
    std::uint64_t correlation = 0;  // the id held; 0: an empty slot
    std::uint64_t instance = 0;     // kNoInstance: an API call outside every scope
    std::uint64_t api_start_ns = 0;
  };
  struct Kernel {
    std::uint64_t correlation, start_ns, end_ns;
    std::uint32_t name;
    std::array<std::uint32_t, 3> grid, block;
    std::uint32_t registers, static_shared, dynamic_shared, device;
    std::uint32_t stream;
    std::uint64_t graph_node_id;
  };
  using Record = std::variant<Kernel, MemcpyActivity, MemsetActivity, SyncActivity, MemoryActivity>;
  struct Pending {
    Record record;
    unsigned age;
  };
  struct Allocation {
    Node* node;  // nullptr: unscoped
    std::uint64_t bytes;
  };

  Target locate(std::uint64_t correlation);
  Instance* instance(std::uint64_t id);
  Instance* resolve(Instance& slot, std::uint64_t id);
  Correlation& correlation_slot(std::uint64_t correlation) {
    return correlations_[correlation & (kCorrelationSlots - 1)];
  }
  RangeActivity& activity(const Node* node);  // nullptr: unscoped
  std::uint32_t kernel_name(const char* name);
  bool in_window(std::uint64_t t) const;

  // Returns false when the record must wait for its correlation.
  bool apply(const Record& r);
  void apply_kernel(const Kernel& k, const Target& t);
  // Whether kernels launched in `node` were replayed for hardware counters.
  static bool replayed_for_counters(const Node* node);
  KernelRow& kernel_row(RangeActivity& a, const KernelKey& key);
  static void count_kernel(KernelAgg& agg, std::uint64_t ns, std::uint32_t registers,
                           std::uint32_t static_shared, std::uint32_t dynamic_shared) {
    agg.calls += 1;
    agg.total_ns += ns;
    agg.min_ns = std::min(agg.min_ns, ns);
    agg.max_ns = std::max(agg.max_ns, ns);
    agg.registers = registers;
    agg.static_shared = static_shared;
    agg.dynamic_shared = dynamic_shared;
  }
  void on_kernel(const KernelActivity& k);  // on(KernelActivity) for every case
  void handle_kernel(const KernelActivity& k);  // handle() of its Kernel: to wait, or to be counted apart
  // Device and stream as one number, in one load from the record's bytes (`stream` follows
  // `device`); shifting the two fields together costs 3 instructions more per kernel.
  template <class K>
  static std::uint64_t stream_key(const K& k) {
    static_assert(offsetof(K, stream) == offsetof(K, device) + sizeof(std::uint32_t));
    std::uint64_t key;
    std::memcpy(&key, reinterpret_cast<const unsigned char*>(&k) + offsetof(K, device), sizeof key);
    return key;
  }
  static void count_stream(RangeActivity& a, std::uint64_t key, std::uint64_t ns) {
    if (a.run_key == key) {
      a.run_ns += ns;
      return;
    }
    new_stream_run(a, key, ns);
  }
  [[gnu::noinline]] static void new_stream_run(RangeActivity& a, std::uint64_t key, std::uint64_t ns);
  // A kernel of a graph launched in `a`: also added to a's breakdown by its node's range.
  void add_graph_kernel(RangeActivity& a, std::uint64_t node_id, std::uint64_t correlation,
                        const KernelKey& key, std::uint64_t start, std::uint64_t end, std::uint32_t registers,
                        std::uint32_t static_shared, std::uint32_t dynamic_shared);
  void apply_memory(const MemoryActivity& m, const Target& t);
  void spread_interval(const Target& t, std::uint64_t start, std::uint64_t end);
  void spread_in_range(Instance* inst, std::uint64_t start, std::uint64_t end);
  [[gnu::noinline]] void spread_to_ancestors(std::uint64_t parent, const RangeActivity& own,
                                             std::uint64_t start, std::uint64_t end);
  template <class R>
  void handle(const R& r);
  template <class R>
  void apply_at(const R& r, const Target& t);
  template <class R>
  void handle_timed(const R& r);  // drops and counts records with a zero timestamp
  void count_zero_timestamp();
  void roll_up_metrics(std::size_t i, RangeStats& r, const std::vector<RangeStats>& ranges,
                       std::vector<std::vector<double>>& sum, std::vector<std::vector<double>>& weight) const;

  const Forest& forest_;
  Diagnostics diag_;
  std::vector<Correlation> correlations_;  // direct-mapped by correlation id, kCorrelationSlots
  std::vector<Instance> instances_;        // direct-mapped by instance id, kInstanceSlots
  const Node* last_node_ = nullptr;        // resolve()'s last node, and its activity
  RangeActivity* last_activity_ = nullptr;
  std::deque<Pending> pending_;
  std::vector<std::unique_ptr<RangeActivity>> by_node_;  // index = Node::id
  RangeActivity unscoped_;
  // Every interval attributed, to a range or (unscoped): the GPU busy time of the whole report (its
  // root), which no sum of the top-level ranges gives when they overlap on the GPU.
  IntervalUnion all_busy_;
  absl::flat_hash_map<std::uint64_t, Allocation> live_;
  absl::flat_hash_map<const char*, std::uint32_t> kernel_name_by_ptr_;
  struct RecentName {
    const char* name = nullptr;
    std::uint32_t id = 0;
  };
  std::array<RecentName, 64> recent_names_{};  // direct-mapped in front of kernel_name_by_ptr_
  absl::flat_hash_map<std::string, std::uint32_t> kernel_name_by_text_;
  std::vector<std::string> kernel_names_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> windows_;  // recording intervals
  bool windowed_ = false;
  bool final_flush_ = false;
  bool recording_ = true;
  CounterPlan plan_;
  GraphNodeMap graph_nodes_;
  bool graph_breakdown_ = true;
  // The last graph kernel of each node id (direct-mapped): a replay runs the same nodes in the same
  // ranges, so most kernels skip the node map's lock and the hashing. Valid while the map's
  // version is the one recorded (no node created, cloned, updated or evicted since), for launches
  // after the node's last exec update.
  struct GraphHit {
    std::uint64_t node_id = 0;
    std::uint64_t version = 0;
    const RangeActivity* activity = nullptr;
    GraphBreakdown::Row* row = nullptr;
    bool unknown = false;
    bool after_update = false;
    std::uint64_t fence = 0;  // the node's last exec update: the hit holds for launches above it
    KernelKey key{};
    KernelAgg* agg = nullptr;
  };
  static constexpr std::size_t kGraphHits = 4096;
  std::vector<GraphHit> graph_hits_;  // kGraphHits once the first graph kernel came
};

// Inline: the producer's decode loop calls these once per launch.

inline void Aggregator::on(const ApiCall& a) {
  if (a.correlation == 0) return;  // CUPTI's "no correlation": nothing can point at it
  Correlation& slot = correlation_slot(a.correlation);
  if (slot.correlation == a.correlation) return;  // scoped: its external correlation came first
  slot = Correlation{a.correlation, kNoInstance, a.start_ns};
}

inline void Aggregator::on(const ExternalCorrelation& e) {
  if (e.correlation == 0) return;
  correlation_slot(e.correlation) = Correlation{e.correlation, e.instance, 0};
  if (e.instance > kCuscopeInternal) instance(e.instance);  // resolve while its ring slot is fresh
}

inline void Aggregator::on(const KernelActivity& k) {
  // The common case inline: a kernel launched inside a scope instance still in the table, of the
  // row its range predicted (same name pointer and launch shape). Everything else: on_kernel().
  const Correlation& c = correlation_slot(k.correlation);
  if (k.start_ns != 0 && k.end_ns > k.start_ns && k.name != nullptr && c.correlation == k.correlation &&
      c.instance > kCuscopeInternal && k.correlation != 0 && k.graph_node_id == 0) {
    Instance* inst = instance(c.instance);
    RangeActivity* a = inst != nullptr ? inst->activity : nullptr;
    KernelRow* row = a != nullptr && a->last != nullptr ? a->last->next : nullptr;
    if (row != nullptr && row->matches(k)) {
      const std::uint64_t ns = k.end_ns - k.start_ns;
      a->self.kernel_calls += 1;
      a->self.kernel_ns += ns;
      a->last = row;
      count_kernel(row->agg, ns, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes);
      count_stream(*a, stream_key(k), ns);
      spread_in_range(inst, k.start_ns, k.end_ns);
      return;
    }
  }
  on_kernel(k);
}

inline Aggregator::Instance* Aggregator::instance(std::uint64_t id) {
  // A thread's instances take consecutive slots (its sequence numbers are consecutive), from an
  // offset per thread slot: a new instance lands next to the last one, in a warm cache line, and
  // replaces the thread's oldest instead of a random, possibly still running, one.
  const std::uint64_t thread_offset = (id >> kInstanceSeqBits) * 0x9E3779B97F4A7C15ull >> 40;
  Instance& slot = instances_[(id + thread_offset) & (kInstanceSlots - 1)];
  if (slot.id == id) return &slot;
  return resolve(slot, id);
}

/// Demangles a C++ symbol ("_Z6kernelPf" -> "kernel(float*)"); returns it unchanged otherwise.
std::string demangle(const char* name);

}  // namespace cuscope::model

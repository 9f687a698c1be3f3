// model/aggregator.hpp — the model's front door for GPU activity: producers hand it records, it
// routes each to the range that launched it and counts it there, and it builds Reports.
//
// Each job has its own room; this façade only routes and keeps waiting records:
//   attribution.hpp     correlation id -> scope instance -> range, and the step window;
//   range_activity.hpp  per-range accumulation: kernel rows, copies, sets, syncs, counters;
//   gpu_intervals.hpp   busy unions and span hulls of a range and its ancestors;
//   kernel_names.hpp    kernel names (by text) -> demangled ids;
//   graph_kernels.hpp   graph kernels by the range their node was captured in;
//   live_memory.hpp     allocations, frees and live-memory peaks;
//   report_builder.hpp  the forest and the activity -> a Report.
// Records whose correlation is not known yet wait (bounded) until it is; records that never
// resolve are counted, never dropped silently.
//
// Memory is bounded by what is distinct: per range, one row per distinct kernel launch shape;
// the correlation and instance tables are bounded and age out old entries.
//
// Not thread-safe: one consumer at a time (the session serializes producers and snapshots).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <deque>
#include <string>
#include <variant>
#include <vector>

#include "model/attribution.hpp"
#include "model/events.hpp"
#include "model/gpu_intervals.hpp"
#include "model/graph_kernels.hpp"
#include "model/kernel_names.hpp"
#include "model/live_memory.hpp"
#include "model/range_activity.hpp"
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
  static constexpr std::size_t kCorrelationSlots = Attribution::kCorrelationSlots;

  explicit Aggregator(const Forest& forest);
  Aggregator(const Aggregator&) = delete;
  Aggregator& operator=(const Aggregator&) = delete;

  void on(const ApiCall& a) { attribution_.on(a); }
  void on(const ExternalCorrelation& e) { attribution_.on(e); }
  void on(const KernelActivity& k);
  void on(const MemcpyActivity& m);
  void on(const MemsetActivity& m);
  void on(const SyncActivity& s);
  void on(const MemoryActivity& m);
  void on(const OverheadActivity& o);
  /// Graph nodes (docs/cuda-graphs.md): these take no aggregator lock (graph_nodes() has its
  /// own), so producers may call them from the capturing thread while another holds it.
  void on(const GraphNodeCreated& e) { graphs_.nodes().on(e); }
  void on(const GraphNodeCloned& e) { graphs_.nodes().on(e); }
  void on(const GraphExecNodes& e) { graphs_.nodes().on(e); }
  void on(const GraphExecUpdated& e) { graphs_.nodes().on(e); }
  [[nodiscard]] GraphNodeMap& graph_nodes() { return graphs_.nodes(); }
  /// Off: graph kernels count in their launching range only, with no breakdown by capture-time
  /// range and nothing counted as of an unknown node (no callbacks, so no node is known).
  void set_graph_breakdown(bool on) { graphs_.set_breakdown(on); }
  [[nodiscard]] bool graph_breakdown() const { return graphs_.breakdown(); }
  void add_dropped(std::uint64_t n) { diag_.dropped_records += n; }
  void add_dropped_counter_ranges(std::uint64_t n) { diag_.counter_ranges_dropped += n; }

  /// The hardware metrics that add_counters() values follow, in order (CounterPlan).
  void set_counter_plan(std::vector<std::string> names, std::vector<std::string> labels,
                        std::vector<std::string> units, std::vector<bool> weighted);
  /// One replayed kernel's metric values, for the range `node` (the innermost when it ran).
  void add_counters(const Node* node, const std::vector<double>& values);
  void add_unknown(std::uint64_t n) { diag_.unknown_records += n; }
  void add_refused_buffers(std::uint64_t n) { diag_.activity_buffers_refused += n; }
  void add_lost_launch_notes(std::uint64_t n) { diag_.launch_notes_lost += n; }
  /// cuscope's own processing of activity (live sessions): `buffers` more decoded, in `ns`.
  void add_processing(std::uint64_t buffers, std::uint64_t ns) {
    diag_.activity_buffers += buffers;
    diag_.activity_processing_ns += ns;
  }
  /// From now on a record with a zero timestamp is work that was still running when the session
  /// ended (the forced flush at shutdown), counted as incomplete_at_exit.
  void set_final_flush(bool final_flush) { final_flush_ = final_flush; }
  void add_zero_timestamp(std::uint64_t n) { diag_.zero_timestamp_records += n; }
  /// CUPTI attached again after a detach between step windows (docs/cupti-windows.md): its
  /// correlation ids (and graph node ids) start again, so every book keyed by them is emptied. The
  /// records still waiting for their correlation count as unresolved, the API calls, external
  /// correlations and graph nodes known so far are forgotten (graph_nodes().forget()), and a record
  /// with a zero timestamp is again one CUPTI gave no time (the detach's forced flushes had made it
  /// work running at exit).
  void reattached();

  /// Retries waiting records. With `age`, each one still waiting grows one older, and those
  /// `max_age` old are counted as unresolved and dropped. Producers retry after each batch of
  /// records without aging, and age at each full flush (correlations can come batches later).
  /// It also ends the batch: kernel name pointers seen so far are checked again before trusted.
  void settle(unsigned max_age = kMaxAge, bool age = true);

  /// The step window: work launched outside every scope counts only while recording. Before the
  /// first call, everything records.
  void set_recording(bool recording, std::uint64_t now_ns) { attribution_.set_recording(recording, now_ns); }

  /// Fills `report.ranges` (the merged range tree with host, CUDA-event and activity statistics)
  /// and the activity counters of `report.diagnostics`.
  void build(Report& report) const;

  [[nodiscard]] const Diagnostics& diagnostics() const { return diag_; }
  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

 private:
  // A kernel as it waits for its correlation: the name already an id (the producer's pointer may
  // not outlive the batch).
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

  // Returns false when the record must wait for its correlation.
  bool apply(const Record& r);
  void apply_kernel(const Kernel& k, const Target& t);
  // Whether kernels launched in `node` were replayed for hardware counters.
  static bool replayed_for_counters(const Node* node);
  void on_kernel(const KernelActivity& k);           // on(KernelActivity) for every case
  bool names_row(KernelRow& row, const char* name);  // the predicted row's pointer checked
  void handle_kernel(const KernelActivity& k);  // handle() of its Kernel: to wait, or to be counted apart
  template <class R>
  void handle(const R& r);
  template <class R>
  void apply_at(const R& r, const Target& t);
  template <class R>
  void handle_timed(const R& r);  // drops and counts records with a zero timestamp
  void count_zero_timestamp();

  const Forest& forest_;
  Diagnostics diag_;
  RangeActivities activities_;
  Attribution attribution_{forest_, activities_};
  GpuIntervals intervals_{attribution_, activities_, diag_};
  KernelNames kernel_names_;
  GraphKernels graphs_;
  LiveMemory memory_;
  CounterPlan plan_;
  std::deque<Pending> pending_;
  bool final_flush_ = false;
};

// Inline: the producer's decode loop calls this once per launch.
inline void Aggregator::on(const KernelActivity& k) {
  // The common case inline: a kernel launched inside a scope instance still in the table, of the
  // row its range predicted (same name pointer and launch shape). Everything else: on_kernel().
  const std::uint64_t scoped = attribution_.scoped_instance(k.correlation);
  if (k.start_ns != 0 && k.end_ns > k.start_ns && k.name != nullptr && scoped != 0 && k.graph_node_id == 0) {
    Instance* inst = attribution_.instance(scoped);
    RangeActivity* a = inst != nullptr ? inst->activity : nullptr;
    KernelRow* row = a != nullptr && a->last != nullptr ? a->last->next : nullptr;
    if (row != nullptr && row->matches(k)) {
      const std::uint64_t ns = k.end_ns - k.start_ns;
      a->self.kernel_calls += 1;
      a->self.kernel_ns += ns;
      a->last = row;
      row->agg.count(ns, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes);
      a->count_stream(stream_key(k), ns);
      intervals_.spread_in_range(inst, k.start_ns, k.end_ns);
      return;
    }
  }
  on_kernel(k);
}

}  // namespace cuscope::model

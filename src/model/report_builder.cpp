// model/report_builder.cpp — the forest and the ranges' activity, merged by path into a Report.
#include "model/report_builder.hpp"

#include <absl/container/flat_hash_map.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "model/diagnostic_fields.hpp"

namespace cuscope::model {
namespace {

// One thread's durations into the range's. `max_call` (0: not known) is the ordinal of the call
// that took the thread's max; the range keeps that of the thread with the longest, the first on a tie.
void add_duration(DurationStats& d, std::uint64_t count, std::uint64_t total, std::uint64_t min,
                  std::uint64_t max, std::uint64_t max_call) {
  if (count == 0) return;
  if (d.count == 0 || max > d.max_ns) d.max_call = max_call;
  d.min_ns = d.count == 0 ? min : std::min(d.min_ns, min);
  d.max_ns = std::max(d.max_ns, max);
  d.count += count;
  d.total_ns += total;
}

void add_durations(DurationStats& d, const DurationStats& more) {
  add_duration(d, more.count, more.total_ns, more.min_ns, more.max_ns, 0);
}

void add_solo(DurationStats& d, const SoloDurations& s, std::uint64_t max_call = 0) {
  add_duration(d, s.count.get(), s.total_ns.get(), s.min_ns.get(), s.max_ns.get(), max_call);
}

void add_activity(ActivityStats& into, const ActivityStats& a) {
  into.kernel_calls += a.kernel_calls;
  into.kernel_ns += a.kernel_ns;
  for (std::size_t i = 0; i < kCopyKinds; ++i) {
    into.memcpy[i].count += a.memcpy[i].count;
    into.memcpy[i].bytes += a.memcpy[i].bytes;
    into.memcpy[i].total_ns += a.memcpy[i].total_ns;
  }
  into.memset_count += a.memset_count;
  into.memset_bytes += a.memset_bytes;
  into.memset_ns += a.memset_ns;
  into.sync_count += a.sync_count;
  into.sync_ns += a.sync_ns;
  into.alloc_count += a.alloc_count;
  into.alloc_bytes += a.alloc_bytes;
  into.free_count += a.free_count;
  into.free_bytes += a.free_bytes;
  into.pageable_copies += a.pageable_copies;
  into.pageable_bytes += a.pageable_bytes;
  into.blocking_copies += a.blocking_copies;
  into.blocking_bytes += a.blocking_bytes;
  into.kernel_streams = std::max(into.kernel_streams, a.kernel_streams);
  into.busiest_stream_ns += a.busiest_stream_ns;
}

CountStats& count_named(std::vector<CountStats>& counts, const std::string& name) {
  for (CountStats& c : counts) {
    if (c.name == name) return c;
  }
  counts.push_back(CountStats{name});
  return counts.back();
}

void add_counts(std::vector<CountStats>& into, const Node& node, const NameTable& names) {
  for (const NodeCount* c = node.first_count.load(std::memory_order_acquire); c != nullptr;
       c = c->next.load(std::memory_order_acquire)) {
    count_named(into, names.name(c->name_id)).self += c->value.load(std::memory_order_relaxed);
  }
}

// Totals over the subtree and rates, children before parents.
void roll_up_counts(RangeStats& r, const std::vector<RangeStats>& ranges) {
  for (CountStats& c : r.counts) c.total = c.self;
  for (std::size_t child : r.children) {
    for (const CountStats& c : ranges[child].counts) count_named(r.counts, c.name).total += c.total;
  }
  const double host_s = double(r.host.total_ns) / 1e9;
  // Per second of the range's GPU time, as the table's GPU total: the projected span where CUPTI
  // traced its work, else the CUDA-event time; a range with neither (the root), its GPU busy time.
  const DurationStats& gpu = r.gpu_time();
  const std::uint64_t gpu_ns = gpu.count ? gpu.total_ns : r.total.gpu_busy_ns;
  for (CountStats& c : r.counts) {
    c.per_host_second = host_s > 0 ? c.total / host_s : 0;
    c.per_gpu_second = gpu_ns > 0 ? c.total / (double(gpu_ns) / 1e9) : 0;
  }
  std::sort(r.counts.begin(), r.counts.end(),
            [](const CountStats& a, const CountStats& b) { return a.name < b.name; });
}

void sort_kernels(std::vector<KernelStats>& ks) {
  std::sort(ks.begin(), ks.end(), [](const KernelStats& a, const KernelStats& b) {
    if (a.duration.total_ns != b.duration.total_ns) return a.duration.total_ns > b.duration.total_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.grid < b.grid || (a.grid == b.grid && a.block < b.block);
  });
}

bool used(const RangeActivity& a) {
  return a.self.kernel_calls || a.self.memset_count || a.self.sync_count || a.self.alloc_count ||
         a.self.free_count || std::any_of(a.self.memcpy.begin(), a.self.memcpy.end(), [](const CopyStats& c) {
           return c.count > 0;
         });
}

// Walks the forest, merging threads' nodes of one path into one RangeStats, then rolls up.
class ReportBuilder {
 public:
  ReportBuilder(const ReportSources& in, Report& report) : in_(in), report_(report), ranges_(report.ranges) {}

  void build() {
    ranges_.clear();
    ranges_.emplace_back();  // the root
    sides_.assign(1, Side{});
    in_.attribution.for_each_spanned(
        [&](const Instance& i) { add_call(resident_spans_[i.activity], i.span()); });
    in_.forest.for_each_tree([&](const ThreadTree& tree) { add_tree(tree); });
    if (used(in_.activities.unscoped()))
      merge_activity(range_for(0, NameTable::kUnscopedId), in_.activities.unscoped());
    for (std::size_t i = ranges_.size(); i-- > 0;) roll_up(i);  // children have larger indices
    roll_up_root();
    add_diagnostics();
  }

 private:
  struct GraphAcc {
    std::uint64_t calls = 0, ns = 0, busy_ns = 0;
    absl::flat_hash_map<KernelKey, KernelAgg> kernels;
  };
  // What a report range gathers from its threads' nodes before the roll-up.
  struct Side {
    std::uint64_t host_children = 0, total_busy = 0, total_span = 0, total_peak = 0;
    absl::flat_hash_map<KernelKey, KernelAgg> kernels;
    absl::flat_hash_map<std::string, GraphAcc> graphs;  // by capture-time path
    std::vector<double> metric_sum, metric_weight;      // empty, or one per plan metric
    std::vector<std::uint64_t> stream_keys;             // distinct streams of its threads' kernels
    bool more_streams = false;                          // a thread saw more than it tracks
  };

  std::size_t range_for(std::size_t parent, std::uint32_t name_id) {
    auto [it, inserted] = index_.try_emplace(std::pair{parent, name_id}, ranges_.size());
    if (inserted) {
      RangeStats r;
      r.name = in_.forest.names.name(name_id);
      r.path = parent == 0 ? r.name : ranges_[parent].path + "/" + r.name;
      r.parent = parent;
      r.depth = ranges_[parent].depth + 1;
      ranges_.push_back(std::move(r));
      ranges_[parent].children.push_back(it->second);
      sides_.emplace_back();
    }
    return it->second;
  }

  void add_tree(const ThreadTree& tree) {
    add_counts(ranges_[0].counts, tree.root(), in_.forest.names);
    Diagnostics& diag = report_.diagnostics;
    const std::uint32_t open_depth = tree.open_depth();
    diag.open_scopes += open_depth;
    for (std::uint32_t d = 1; d <= open_depth; ++d) diag.open_scopes += tree.reentries(d);
    diag.depth_overflows += tree.depth_overflows.get();
    diag.unbalanced_ends += tree.unbalanced_ends.get();
    std::vector<std::pair<const Node*, std::size_t>> stack;
    for (const Node* c = tree.root().first_child.load(std::memory_order_acquire); c != nullptr;
         c = c->next_sibling.load(std::memory_order_acquire)) {
      stack.emplace_back(c, 0);
    }
    std::reverse(stack.begin(), stack.end());
    while (!stack.empty()) {
      auto [node, parent] = stack.back();
      stack.pop_back();
      const std::size_t idx = add_node(*node, parent);
      const std::size_t mark = stack.size();
      for (const Node* c = node->first_child.load(std::memory_order_acquire); c != nullptr;
           c = c->next_sibling.load(std::memory_order_acquire)) {
        stack.emplace_back(c, idx);
      }
      std::reverse(stack.begin() + static_cast<std::ptrdiff_t>(mark), stack.end());
    }
    for (std::uint32_t d = 1; d <= open_depth; ++d) {
      // A node created after the walk above (racing owner) is not in the index: skip it.
      if (auto it = node_index_.find(tree.open_node(d)); it != node_index_.end())
        ranges_[it->second].open += 1 + tree.reentries(d);
    }
  }

  std::size_t add_node(const Node& node, std::size_t parent) {
    const std::size_t idx = range_for(parent, node.name_id);
    node_index_[&node] = idx;
    RangeStats& r = ranges_[idx];
    r.calls += node.calls.get();
    r.recursive_calls += node.recursive_calls.get();
    r.threads += static_cast<std::uint32_t>(node.threads.get());
    add_solo(r.host, node.host, node.host_max_call.get());
    sides_[idx].host_children += node.host_children_ns.get();
    add_solo(r.gpu, node.gpu);
    add_counts(r.counts, node, in_.forest.names);
    if (const RangeActivity* a = in_.activities.find(&node)) merge_activity(idx, *a);
    return idx;
  }

  void merge_activity(std::size_t idx, const RangeActivity& a) {
    RangeStats& r = ranges_[idx];
    Side& side = sides_[idx];
    const std::size_t n_metrics = in_.counter_plan.names.size();
    r.profiled_kernels += a.profiled_kernels;
    for (std::size_t i = 0; i < a.metric_sum.size() && i < n_metrics; ++i) {
      side.metric_sum.resize(n_metrics, 0.0);
      side.metric_weight.resize(n_metrics, 0.0);
      side.metric_sum[i] += a.metric_sum[i];
      side.metric_weight[i] += a.metric_weight[i];
    }
    add_activity(r.self, a.self);
    r.self.gpu_busy_ns += a.self_busy_ns();
    r.self.gpu_span_ns += a.self.gpu_span_ns;
    r.self.peak_bytes = std::max(r.self.peak_bytes, a.self.peak_bytes);
    add_durations(r.gpu_projected, a.evicted_call_spans);
    if (auto it = resident_spans_.find(&a); it != resident_spans_.end())
      add_durations(r.gpu_projected, it->second);
    side.total_busy += a.total_busy.measure();
    side.total_span += a.total_span_ns;
    side.total_peak = std::max(side.total_peak, a.total_peak);
    // The busiest stream of this thread's range; when it saw more streams than it tracks, their
    // sum may be one stream's: taking it keeps the work that could overlap a lower bound.
    const StreamTimes streams = a.stream_times();
    std::uint64_t busiest = streams.other_ns;
    for (std::uint32_t s = 0; s < streams.count; ++s) {
      busiest = std::max(busiest, streams.ns[s]);
      auto& keys = side.stream_keys;
      if (std::find(keys.begin(), keys.end(), streams.key[s]) == keys.end()) keys.push_back(streams.key[s]);
    }
    r.self.busiest_stream_ns += busiest;
    if (streams.other_ns > 0) side.more_streams = true;
    r.self.kernel_streams =
        static_cast<std::uint32_t>(side.stream_keys.size()) + (side.more_streams ? 1u : 0u);
    for (const auto& [key, row] : a.kernels) side.kernels[key].merge(row.agg);
    if (a.graph) merge_graph(side, *a.graph);
  }

  void merge_graph(Side& side, const GraphBreakdown& g) {
    auto add_row = [&](const std::string& path, const GraphBreakdown::Row& row) {
      GraphAcc& acc = side.graphs[path];
      acc.calls += row.calls;
      acc.ns += row.ns;
      acc.busy_ns += row.busy.measure();
      for (const auto& [key, agg] : row.kernels) acc.kernels[key].merge(agg);
    };
    for (const auto& [node, row] : g.known) add_row(capture_path(node), row);
    if (g.unknown.calls != 0) add_row(std::string(kUnknownGraphNodeName), g.unknown);
  }

  // The path of the range a graph node was created in, as the report names it.
  const std::string& capture_path(const Node* node) {
    auto [it, inserted] = capture_paths_.try_emplace(node);
    if (!inserted) return it->second;
    if (node == nullptr) {
      it->second = std::string(kUnscopedName);
      return it->second;
    }
    std::vector<const Node*> chain;
    for (const Node* n = node; n != nullptr && n->id != 0; n = n->parent) chain.push_back(n);
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      if (!it->second.empty()) it->second += '/';
      it->second += in_.forest.names.name((*c)->name_id);
    }
    return it->second;
  }

  KernelStats kernel_stats(const KernelKey& key, const KernelAgg& agg) const {
    KernelStats k;
    k.name = in_.kernel_names.text(key.name);
    k.duration = {agg.calls, agg.total_ns, agg.min_ns, agg.max_ns};
    k.grid = key.grid;
    k.block = key.block;
    k.registers_per_thread = agg.registers;
    k.static_shared_bytes = agg.static_shared;
    k.dynamic_shared_bytes = agg.dynamic_shared;
    k.device = key.device;
    return k;
  }

  // Inclusive totals of range i, whose children are already rolled up.
  void roll_up(std::size_t i) {
    RangeStats& r = ranges_[i];
    const Side& side = sides_[i];
    r.host_self_ns = r.host.total_ns - std::min(r.host.total_ns, side.host_children);
    ActivityStats total = r.self;
    for (std::size_t c : r.children) add_activity(total, ranges_[c].total);
    total.gpu_busy_ns = side.total_busy;
    total.gpu_span_ns = side.total_span;
    total.peak_bytes = std::max(side.total_peak, r.self.peak_bytes);
    r.total = total;
    for (const auto& [key, agg] : side.kernels) r.kernels.push_back(kernel_stats(key, agg));
    sort_kernels(r.kernels);
    for (const auto& [path, acc] : side.graphs) {
      GraphPathStats g;
      g.path = path;
      g.kernel_calls = acc.calls;
      g.kernel_ns = acc.ns;
      g.gpu_busy_ns = acc.busy_ns;
      for (const auto& [key, agg] : acc.kernels) g.kernels.push_back(kernel_stats(key, agg));
      sort_kernels(g.kernels);
      r.graph.push_back(std::move(g));
    }
    std::sort(r.graph.begin(), r.graph.end(), [](const GraphPathStats& a, const GraphPathStats& b) {
      if (a.kernel_ns != b.kernel_ns) return a.kernel_ns > b.kernel_ns;
      return a.path < b.path;
    });
    if (i == 0) return;
    roll_up_counts(r, ranges_);
    roll_up_metrics(i);
  }

  // Counter values over the subtree: sums, or duration-weighted means (CounterPlan).
  void roll_up_metrics(std::size_t i) {
    RangeStats& r = ranges_[i];
    const CounterPlan& plan = in_.counter_plan;
    const std::size_t n = plan.names.size();
    std::vector<double>& sum = sides_[i].metric_sum;
    std::vector<double>& weight = sides_[i].metric_weight;
    for (std::size_t c : r.children) {
      r.profiled_kernels += ranges_[c].profiled_kernels;
      const Side& child = sides_[c];
      if (child.metric_sum.empty()) continue;
      sum.resize(n, 0.0);
      weight.resize(n, 0.0);
      for (std::size_t m = 0; m < n; ++m) {
        sum[m] += child.metric_sum[m];
        weight[m] += child.metric_weight[m];
      }
    }
    if (sum.empty()) return;
    for (std::size_t m = 0; m < n; ++m) {
      const double value = plan.weighted[m] ? (weight[m] > 0 ? sum[m] / weight[m] : 0.0) : sum[m];
      r.metrics.push_back(MetricValue{plan.names[m], plan.labels[m], plan.units[m], value});
    }
  }

  // The root's own totals are the sums over its children. Its busy time is the union over
  // everything (the table's "total" line): top-level ranges of several threads may overlap on the
  // GPU, so no sum of theirs gives it.
  void roll_up_root() {
    RangeStats& root = ranges_[0];
    root.total = {};
    for (std::size_t c : root.children) add_activity(root.total, ranges_[c].total);
    root.total.gpu_busy_ns = in_.activities.all_busy().measure();
    roll_up_counts(root, ranges_);
  }

  // The model's counters (every one the aggregator and its rooms keep; the others stay 0 there and
  // are filled in by the session or the replay), then those kept by the forest, the names, the
  // graph node map and the kernel-name cache.
  void add_diagnostics() {
    Diagnostics& out = report_.diagnostics;
    model::add_diagnostics(out, in_.diagnostics);
    out.adjusted_names += in_.forest.names.adjusted();
    out.name_table_full += in_.forest.names.overflowed();
    out.unrecorded_scopes += in_.forest.unrecorded_scopes.load(std::memory_order_relaxed);
    out.graph_nodes_evicted += in_.graph_nodes.evicted();
    out.graph_exec_updates_unmapped += in_.graph_nodes.updates_unmapped();
    out.kernel_names_uncached += in_.kernel_names.uncached();
  }

  const ReportSources& in_;
  Report& report_;
  std::vector<RangeStats>& ranges_;
  std::vector<Side> sides_;                                                        // per report range
  absl::flat_hash_map<std::pair<std::size_t, std::uint32_t>, std::size_t> index_;  // (parent, name) -> range
  absl::flat_hash_map<const Node*, std::size_t> node_index_;
  absl::flat_hash_map<const Node*, std::string> capture_paths_;
  absl::flat_hash_map<const RangeActivity*, DurationStats> resident_spans_;  // calls still in the table
};

}  // namespace

void build_report(const ReportSources& sources, Report& report) { ReportBuilder(sources, report).build(); }

}  // namespace cuscope::model

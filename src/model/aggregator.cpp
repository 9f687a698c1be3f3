// model/aggregator.cpp — attribution of GPU activities to ranges, and the merge into a Report.
#include "model/aggregator.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

namespace cuscope::model {
namespace {

// Grows [start, end) to cover [s, e) and returns by how much its length grew.
std::uint64_t extend_hull(std::uint64_t& start, std::uint64_t& end, std::uint64_t s, std::uint64_t e) {
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
  into.kernel_streams = std::max(into.kernel_streams, a.kernel_streams);
  into.busiest_stream_ns += a.busiest_stream_ns;
}

std::uint64_t duration(std::uint64_t start, std::uint64_t end) { return end > start ? end - start : 0; }

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
  const std::uint64_t gpu_ns = r.gpu.count ? r.gpu.total_ns : r.total.gpu_busy_ns;
  for (CountStats& c : r.counts) {
    c.per_host_second = host_s > 0 ? c.total / host_s : 0;
    c.per_gpu_second = gpu_ns > 0 ? c.total / (double(gpu_ns) / 1e9) : 0;
  }
  std::sort(r.counts.begin(), r.counts.end(),
            [](const CountStats& a, const CountStats& b) { return a.name < b.name; });
}

}  // namespace

std::string demangle(const char* name) {
  if (name == nullptr) return "(unknown kernel)";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string result(out);
  std::free(out);
  return result;
}

Aggregator::Aggregator(const Forest& forest)
    : forest_(forest), correlations_(kCorrelationSlots), instances_(kInstanceSlots) {}
Aggregator::~Aggregator() = default;

void Aggregator::set_recording(bool recording, std::uint64_t now_ns) {
  if (!windowed_) {
    windowed_ = true;
    if (recording_) windows_.emplace_back(0, UINT64_MAX);
  }
  if (recording == recording_) return;
  recording_ = recording;
  if (recording) {
    windows_.emplace_back(now_ns, UINT64_MAX);
  } else if (!windows_.empty()) {
    windows_.back().second = now_ns;
  }
}

bool Aggregator::in_window(std::uint64_t t) const {
  if (!windowed_) return true;
  auto it = std::upper_bound(windows_.begin(), windows_.end(), t,
                             [](std::uint64_t v, const auto& w) { return v < w.first; });
  if (it == windows_.begin()) return false;
  --it;
  return t < it->second;
}

Aggregator::Instance* Aggregator::resolve(Instance& slot, std::uint64_t id) {
  Node* node = nullptr;
  std::uint64_t parent = 0;
  if (!forest_.resolve_instance(id, &node, &parent)) return nullptr;
  // Many instances of few ranges: the last range's activity is the likely one.
  if (node != last_node_ || last_activity_ == nullptr) {
    last_activity_ = &activity(node);
    last_node_ = node;
  }
  slot = Instance{id, node, last_activity_, parent};  // an evicted instance restarts its span hulls
  return &slot;
}

Aggregator::Target Aggregator::locate(std::uint64_t correlation) {
  // Correlation 0 is CUPTI's "none": such a record can never be tied to an API call.
  if (correlation == 0) return {Where::Unresolved, nullptr};
  const Correlation& c = correlation_slot(correlation);
  if (c.correlation != correlation) return {Where::Unknown, nullptr};
  if (c.instance == kOutsideWindow) return {Where::Outside, nullptr};
  if (c.instance == kCuscopeInternal) return {Where::Own, nullptr};
  if (c.instance == kNoInstance)
    return {in_window(c.api_start_ns) ? Where::Unscoped : Where::Outside, nullptr};
  Instance* inst = instance(c.instance);
  if (inst == nullptr) return {Where::Unresolved, nullptr};
  return {Where::Range, inst};
}

bool Aggregator::replayed_for_counters(const Node* node) {
  // Counters run in the chosen ranges (counters_choice 1) of counted steps, and in every range
  // inside a chosen one: a chosen range on the way up, under "(counted steps)" at the top.
  bool chosen = false;
  for (; node != nullptr && node->id != 0; node = node->parent) {
    chosen = chosen || node->counters_choice.load(std::memory_order_relaxed) == 1;
    if (node->parent == nullptr || node->parent->id == 0)
      return chosen && node->name_id == NameTable::kCountedStepsId;
  }
  return false;
}

Aggregator::RangeActivity& Aggregator::activity(const Node* node) {
  if (node == nullptr) return unscoped_;
  if (node->id >= by_node_.size()) by_node_.resize(node->id + 1);
  auto& slot = by_node_[node->id];
  if (!slot) slot = std::make_unique<RangeActivity>();
  return *slot;
}

std::uint32_t Aggregator::kernel_name(const char* name) {
  RecentName& recent = recent_names_[(reinterpret_cast<std::uintptr_t>(name) >> 3) % recent_names_.size()];
  if (recent.name == name && name != nullptr) return recent.id;
  if (auto it = kernel_name_by_ptr_.find(name); it != kernel_name_by_ptr_.end()) {
    recent = {name, it->second};
    return it->second;
  }
  std::string text = demangle(name);
  auto [it, inserted] =
      kernel_name_by_text_.try_emplace(text, static_cast<std::uint32_t>(kernel_names_.size()));
  if (inserted) kernel_names_.push_back(std::move(text));
  kernel_name_by_ptr_.emplace(name, it->second);
  return it->second;
}

void Aggregator::spread_interval(const Target& t, std::uint64_t start, std::uint64_t end) {
  if (t.where == Where::Unscoped) {
    all_busy_.add(start, end);
    unscoped_.total_busy.add(start, end);
    return;
  }
  spread_in_range(t.instance, start, end);
}

void Aggregator::spread_in_range(Instance* inst, std::uint64_t start, std::uint64_t end) {
  all_busy_.add(start, end);
  RangeActivity& own = *inst->activity;
  if (own.has_descendant_kernels) own.self_busy.add(start, end);
  own.self.gpu_span_ns += extend_hull(inst->self_start, inst->self_end, start, end);
  own.total_busy.add(start, end);
  own.total_span_ns += extend_hull(inst->total_start, inst->total_end, start, end);
  if (inst->parent != kNoInstance) spread_to_ancestors(inst->parent, own, start, end);
}

void Aggregator::spread_to_ancestors(std::uint64_t parent, const RangeActivity& own, std::uint64_t start,
                                     std::uint64_t end) {
  for (std::uint64_t up = parent; up != kNoInstance;) {
    Instance* inst = instance(up);
    if (inst == nullptr) break;  // an ancestor aged out: its span stays as it was
    RangeActivity& a = *inst->activity;
    if (&a != &own && !a.has_descendant_kernels) {
      a.self_busy = a.total_busy;  // everything so far was its own
      a.has_descendant_kernels = true;
    }
    a.total_busy.add(start, end);
    a.total_span_ns += extend_hull(inst->total_start, inst->total_end, start, end);
    up = inst->parent;
  }
}

Aggregator::KernelRow& Aggregator::kernel_row(RangeActivity& a, const KernelKey& key) {
  KernelRow* row = a.last != nullptr ? a.last->next : nullptr;
  if (row == nullptr || !(row->key == key)) {
    auto [it, inserted] = a.kernels.try_emplace(key);
    row = &it->second;
    if (inserted) row->key = key;
    if (a.last != nullptr) a.last->next = row;
  }
  a.last = row;
  return *row;
}

void Aggregator::add_graph_kernel(RangeActivity& a, std::uint64_t node_id, std::uint64_t correlation,
                                  const KernelKey& key, std::uint64_t start, std::uint64_t end,
                                  std::uint32_t registers, std::uint32_t static_shared,
                                  std::uint32_t dynamic_shared) {
  if (!graph_breakdown_) return;
  if (graph_hits_.empty()) graph_hits_.resize(kGraphHits);
  GraphHit& cached = graph_hits_[node_id & (kGraphHits - 1)];
  GraphHit* hit = &cached;
  GraphHit once;  // a launch at or before the node's last update: answered, not cached
  const std::uint64_t version = graph_nodes_.version();
  if (cached.node_id != node_id || cached.version != version || cached.activity != &a ||
      (cached.fence != 0 && correlation <= cached.fence)) {
    if (!a.graph) a.graph = std::make_unique<GraphBreakdown>();
    const GraphNodeMap::Lookup l = graph_nodes_.find(node_id, correlation);
    GraphBreakdown::Row& row = l.known ? a.graph->known[l.range] : a.graph->unknown;
    if (!l.current) hit = &once;
    *hit = GraphHit{node_id, version, &a, &row, !l.known, l.after_update, l.fence, key, &row.kernels[key]};
  } else if (!(cached.key == key)) {
    cached.key = key;
    cached.agg = &cached.row->kernels[key];
  }
  if (hit->unknown) diag_.graph_kernels_unknown_node += 1;
  if (hit->after_update) diag_.graph_kernels_after_update += 1;
  const std::uint64_t ns = duration(start, end);
  GraphBreakdown::Row& row = *hit->row;
  row.calls += 1;
  row.ns += ns;
  row.busy.add(start, end);
  count_kernel(*hit->agg, ns, registers, static_shared, dynamic_shared);
}

void Aggregator::apply_kernel(const Kernel& k, const Target& t) {
  if (k.start_ns == 0 || k.end_ns == 0) {  // only while counters are planned: see on_kernel()
    if (t.where == Where::Range && replayed_for_counters(t.instance->node)) {
      diag_.counted_kernels_untimed += 1;
    } else {
      count_zero_timestamp();
    }
    return;
  }
  RangeActivity& a = t.where == Where::Range ? *t.instance->activity : unscoped_;
  const std::uint64_t ns = duration(k.start_ns, k.end_ns);
  a.self.kernel_calls += 1;
  a.self.kernel_ns += ns;
  KernelRow& row = kernel_row(a, KernelKey{k.name, k.grid, k.block, k.device});
  count_kernel(row.agg, ns, k.registers, k.static_shared, k.dynamic_shared);
  count_stream(a, stream_key(k), ns);
  if (k.graph_node_id != 0)
    add_graph_kernel(a, k.graph_node_id, k.correlation, row.key, k.start_ns, k.end_ns, k.registers,
                     k.static_shared, k.dynamic_shared);
  spread_interval(t, k.start_ns, k.end_ns);  // last: it may move the instance table
}

void Aggregator::apply_memory(const MemoryActivity& m, const Target& t) {
  Node* node = t.where == Where::Range ? t.instance->node : nullptr;
  RangeActivity& a = activity(node);
  if (m.is_alloc) {
    a.self.alloc_count += 1;
    a.self.alloc_bytes += m.bytes;
    if (live_.size() < kMaxLiveAllocations) live_.insert_or_assign(m.address, Allocation{node, m.bytes});
    a.self_live += static_cast<std::int64_t>(m.bytes);
    a.self.peak_bytes = std::max<std::uint64_t>(
        a.self.peak_bytes, static_cast<std::uint64_t>(std::max<std::int64_t>(a.self_live, 0)));
    for (Node* n = node; n != nullptr && n->id != 0; n = n->parent) {
      RangeActivity& up = activity(n);
      up.total_live += static_cast<std::int64_t>(m.bytes);
      up.total_peak = std::max<std::uint64_t>(
          up.total_peak, static_cast<std::uint64_t>(std::max<std::int64_t>(up.total_live, 0)));
    }
    if (node == nullptr) unscoped_.total_peak = unscoped_.self.peak_bytes;
    return;
  }
  a.self.free_count += 1;
  a.self.free_bytes += m.bytes;
  auto it = live_.find(m.address);
  if (it == live_.end()) return;  // allocated before tracing, or past the bound
  const Allocation alloc = it->second;
  live_.erase(it);
  RangeActivity& owner = activity(alloc.node);
  owner.self_live -= static_cast<std::int64_t>(alloc.bytes);
  for (Node* n = alloc.node; n != nullptr && n->id != 0; n = n->parent) {
    activity(n).total_live -= static_cast<std::int64_t>(alloc.bytes);
  }
}

bool Aggregator::apply(const Record& r) {
  const Target t = locate(std::visit([](const auto& x) { return x.correlation; }, r));
  if (t.where == Where::Unknown) return false;
  std::visit([&](const auto& x) { apply_at(x, t); }, r);
  return true;
}

template <class R>
void Aggregator::apply_at(const R& r, const Target& t) {
  if (t.where == Where::Outside) {
    diag_.outside_window_records += 1;
    return;
  }
  if (t.where == Where::Own) return;  // cuscope's own calls (event queries): not the program's work
  if (t.where == Where::Unresolved) {
    diag_.unresolved_records += 1;
    return;
  }
  if constexpr (std::is_same_v<R, Kernel>) {
    apply_kernel(r, t);
  } else if constexpr (std::is_same_v<R, MemoryActivity>) {
    apply_memory(r, t);
  } else {
    ActivityStats& s = (t.where == Where::Range ? *t.instance->activity : unscoped_).self;
    if constexpr (std::is_same_v<R, MemcpyActivity>) {
      CopyStats& c = s.memcpy[static_cast<std::size_t>(r.kind)];
      c.count += 1;
      c.bytes += r.bytes;
      c.total_ns += duration(r.start_ns, r.end_ns);
      if (r.pageable()) {
        s.pageable_copies += 1;
        s.pageable_bytes += r.bytes;
      }
    } else if constexpr (std::is_same_v<R, MemsetActivity>) {
      s.memset_count += 1;
      s.memset_bytes += r.bytes;
      s.memset_ns += duration(r.start_ns, r.end_ns);
    } else {
      s.sync_count += 1;
      s.sync_ns += duration(r.start_ns, r.end_ns);
    }
  }
}

template <class R>
void Aggregator::handle(const R& r) {
  const Target t = locate(r.correlation);
  if (t.where != Where::Unknown) {
    apply_at(r, t);  // the common case: the correlation is known, nothing is copied
    return;
  }
  if (pending_.size() >= kMaxPending) {
    // The oldest waiting record is the least likely to resolve: it makes room for this one.
    diag_.unresolved_records += 1;
    pending_.pop_front();
  }
  pending_.push_back(Pending{Record{r}, 0});
}

void Aggregator::count_zero_timestamp() {
  if (final_flush_) {
    diag_.incomplete_at_exit += 1;
  } else {
    diag_.zero_timestamp_records += 1;
  }
}

template <class R>
void Aggregator::handle_timed(const R& r) {
  if (r.start_ns == 0 || r.end_ns == 0) {
    count_zero_timestamp();
    return;
  }
  handle(r);
}

void Aggregator::handle_kernel(const KernelActivity& k) {
  handle(Kernel{k.correlation, k.start_ns, k.end_ns, kernel_name(k.name), k.grid, k.block, k.registers_per_thread,
                k.static_shared_bytes, k.dynamic_shared_bytes, k.device, k.stream, k.graph_node_id});
}

void Aggregator::on_kernel(const KernelActivity& k) {
  if (k.start_ns == 0 || k.end_ns == 0) {
    // With counters, a kernel replayed for them has no timestamps (CUPTI does not time kernel
    // replay): its range tells it apart from work cut off at exit, so it waits for its correlation.
    if (plan_.names.empty()) {
      count_zero_timestamp();
    } else {
      handle_kernel(k);
    }
    return;
  }
  // Counted whatever its correlation resolves to: what a device launch carries is not the host's.
  if (k.device_launched) diag_.graph_kernels_device_launched += 1;
  // A graph's kernel whose record names no launch (a conditional node's body on an H100, CUDA 13):
  // no API call ties it to a scope. Counted as such, not as a record not matched to a scope.
  if (k.correlation == 0 && (k.graph_node_id != 0 || k.graph_id != 0)) {
    diag_.graph_kernels_no_launch += 1;
    return;
  }
  // locate(), its common case first: an API call made inside a scope instance still in the table.
  const Correlation& c = correlation_slot(k.correlation);
  Instance* inst = c.correlation == k.correlation && c.instance > kCuscopeInternal && k.correlation != 0
                       ? instance(c.instance)
                       : nullptr;
  const Target t = inst != nullptr ? Target{Where::Range, inst} : locate(k.correlation);
  if (t.where != Where::Range && t.where != Where::Unscoped) {  // to wait, or to be counted apart
    handle_kernel(k);
    return;
  }
  // The common case, apply_kernel without a name lookup when the predicted row is the one.
  RangeActivity& a = t.where == Where::Range ? *t.instance->activity : unscoped_;
  const std::uint64_t ns = duration(k.start_ns, k.end_ns);
  a.self.kernel_calls += 1;
  a.self.kernel_ns += ns;
  KernelRow* row = a.last != nullptr ? a.last->next : nullptr;
  if (row != nullptr && k.name != nullptr && row->matches(k)) {
    a.last = row;
  } else {
    row = &kernel_row(a, KernelKey{kernel_name(k.name), k.grid, k.block, k.device});
    row->name_ptr = k.name;
  }
  count_kernel(row->agg, ns, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes);
  count_stream(a, stream_key(k), ns);
  if (k.graph_node_id != 0)
    add_graph_kernel(a, k.graph_node_id, k.correlation, row->key, k.start_ns, k.end_ns,
                     k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes);
  spread_interval(t, k.start_ns, k.end_ns);
}

void Aggregator::new_stream_run(RangeActivity& a, std::uint64_t key, std::uint64_t ns) {
  if (a.run_key != UINT64_MAX) a.streams.add(a.run_key, a.run_ns);
  a.run_key = key;
  a.run_ns = ns;
}

void Aggregator::on(const MemcpyActivity& m) { handle_timed(m); }
void Aggregator::on(const MemsetActivity& m) { handle_timed(m); }
void Aggregator::on(const SyncActivity& s) { handle_timed(s); }

void Aggregator::on(const MemoryActivity& m) {
  if (m.timestamp_ns == 0) {
    count_zero_timestamp();
    return;
  }
  handle(m);
}

void Aggregator::set_counter_plan(std::vector<std::string> names, std::vector<std::string> labels,
                                  std::vector<std::string> units, std::vector<bool> weighted) {
  plan_ = CounterPlan{std::move(names), std::move(labels), std::move(units), std::move(weighted), SIZE_MAX};
  for (std::size_t i = 0; i < plan_.names.size(); ++i) {
    if (plan_.names[i] == "gpu__time_duration.sum") plan_.duration_index = i;
  }
}

void Aggregator::add_counters(const Node* node, const std::vector<double>& values) {
  if (values.size() != plan_.names.size()) return;
  RangeActivity& a = activity(node);
  a.metric_sum.resize(values.size(), 0.0);
  a.metric_weight.resize(values.size(), 0.0);
  const double weight = plan_.duration_index < values.size() ? values[plan_.duration_index] : 1.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (plan_.weighted[i]) {
      a.metric_sum[i] += values[i] * weight;
      a.metric_weight[i] += weight;
    } else {
      a.metric_sum[i] += values[i];
    }
  }
  a.profiled_kernels += 1;
}

void Aggregator::on(const OverheadActivity& o) {
  diag_.overhead_records += 1;
  diag_.overhead_ns += duration(o.start_ns, o.end_ns);
}

void Aggregator::settle(unsigned max_age, bool age) {
  const std::size_t n = pending_.size();
  for (std::size_t i = 0; i < n; ++i) {
    Pending p = std::move(pending_.front());
    pending_.pop_front();
    if (apply(p.record)) continue;
    if (age && ++p.age >= max_age) {
      diag_.unresolved_records += 1;
    } else {
      pending_.push_back(std::move(p));
    }
  }
}

void Aggregator::roll_up_metrics(std::size_t i, RangeStats& r, const std::vector<RangeStats>& ranges,
                                 std::vector<std::vector<double>>& sum,
                                 std::vector<std::vector<double>>& weight) const {
  const std::size_t n = plan_.names.size();
  for (std::size_t c : r.children) {
    r.profiled_kernels += ranges[c].profiled_kernels;
    if (sum[c].empty()) continue;
    sum[i].resize(n, 0.0);
    weight[i].resize(n, 0.0);
    for (std::size_t m = 0; m < n; ++m) {
      sum[i][m] += sum[c][m];
      weight[i][m] += weight[c][m];
    }
  }
  if (sum[i].empty()) return;
  for (std::size_t m = 0; m < n; ++m) {
    const double value = plan_.weighted[m] ? (weight[i][m] > 0 ? sum[i][m] / weight[i][m] : 0.0) : sum[i][m];
    r.metrics.push_back(MetricValue{plan_.names[m], plan_.labels[m], plan_.units[m], value});
  }
}

void Aggregator::build(Report& report) const {
  report.ranges.clear();
  report.ranges.emplace_back();  // the root
  absl::flat_hash_map<std::pair<std::size_t, std::uint32_t>, std::size_t> index;
  std::vector<std::uint64_t> host_children(1, 0);
  std::vector<std::uint64_t> total_busy(1, 0), total_span(1, 0), total_peak(1, 0);

  auto range_for = [&](std::size_t parent, std::uint32_t name_id) {
    auto [it, inserted] = index.try_emplace(std::pair{parent, name_id}, report.ranges.size());
    if (inserted) {
      RangeStats r;
      r.name = forest_.names.name(name_id);
      r.path = parent == 0 ? r.name : report.ranges[parent].path + "/" + r.name;
      r.parent = parent;
      r.depth = report.ranges[parent].depth + 1;
      report.ranges.push_back(std::move(r));
      report.ranges[parent].children.push_back(it->second);
      host_children.push_back(0);
      total_busy.push_back(0);
      total_span.push_back(0);
      total_peak.push_back(0);
    }
    return it->second;
  };
  std::vector<absl::flat_hash_map<KernelKey, KernelAgg>> kernels(1);
  auto add_kernel_agg = [](KernelAgg& into, const KernelAgg& agg) {
    into.calls += agg.calls;
    into.total_ns += agg.total_ns;
    into.min_ns = std::min(into.min_ns, agg.min_ns);
    into.max_ns = std::max(into.max_ns, agg.max_ns);
    into.registers = agg.registers;
    into.static_shared = agg.static_shared;
    into.dynamic_shared = agg.dynamic_shared;
  };
  // Graph breakdowns per report range, by capture-time path (threads' nodes of one path merge).
  struct GraphAcc {
    std::uint64_t calls = 0, ns = 0, busy_ns = 0;
    absl::flat_hash_map<KernelKey, KernelAgg> kernels;
  };
  std::vector<absl::flat_hash_map<std::string, GraphAcc>> graphs(1);
  absl::flat_hash_map<const Node*, std::string> capture_paths;
  auto capture_path = [&](const Node* node) -> const std::string& {
    auto [it, inserted] = capture_paths.try_emplace(node);
    if (!inserted) return it->second;
    if (node == nullptr) {
      it->second = std::string(kUnscopedName);
      return it->second;
    }
    std::vector<const Node*> chain;
    for (const Node* n = node; n != nullptr && n->id != 0; n = n->parent) chain.push_back(n);
    for (auto c = chain.rbegin(); c != chain.rend(); ++c) {
      if (!it->second.empty()) it->second += '/';
      it->second += forest_.names.name((*c)->name_id);
    }
    return it->second;
  };
  auto merge_graph = [&](std::size_t idx, const GraphBreakdown& g) {
    if (graphs.size() < report.ranges.size()) graphs.resize(report.ranges.size());
    auto add_row = [&](const std::string& path, const GraphBreakdown::Row& row) {
      GraphAcc& acc = graphs[idx][path];
      acc.calls += row.calls;
      acc.ns += row.ns;
      acc.busy_ns += row.busy.measure();
      for (const auto& [key, agg] : row.kernels) add_kernel_agg(acc.kernels[key], agg);
    };
    for (const auto& [node, row] : g.known) add_row(capture_path(node), row);
    if (g.unknown.calls != 0) add_row(std::string(kUnknownGraphNodeName), g.unknown);
  };
  const std::size_t n_metrics = plan_.names.size();
  std::vector<std::vector<double>> metric_sum(1), metric_weight(1);
  // Per range, the distinct streams its threads' ranges ran kernels on, and whether any had more.
  std::vector<std::vector<std::uint64_t>> stream_keys(1);
  std::vector<bool> more_streams(1, false);
  auto merge_activity = [&](std::size_t idx, const RangeActivity& a) {
    RangeStats& r = report.ranges[idx];
    if (metric_sum.size() < report.ranges.size()) {
      metric_sum.resize(report.ranges.size());
      metric_weight.resize(report.ranges.size());
    }
    r.profiled_kernels += a.profiled_kernels;
    for (std::size_t i = 0; i < a.metric_sum.size() && i < n_metrics; ++i) {
      metric_sum[idx].resize(n_metrics, 0.0);
      metric_weight[idx].resize(n_metrics, 0.0);
      metric_sum[idx][i] += a.metric_sum[i];
      metric_weight[idx][i] += a.metric_weight[i];
    }
    add_activity(r.self, a.self);
    r.self.gpu_busy_ns += a.self_busy_ns();
    r.self.gpu_span_ns += a.self.gpu_span_ns;
    r.self.peak_bytes = std::max(r.self.peak_bytes, a.self.peak_bytes);
    total_busy[idx] += a.total_busy.measure();
    total_span[idx] += a.total_span_ns;
    total_peak[idx] = std::max(total_peak[idx], a.total_peak);
    if (stream_keys.size() < report.ranges.size()) {
      stream_keys.resize(report.ranges.size());
      more_streams.resize(report.ranges.size(), false);
    }
    // The busiest stream of this thread's range; when it saw more streams than it tracks, their
    // sum may be one stream's: taking it keeps the work that could overlap a lower bound.
    StreamTimes streams = a.streams;
    if (a.run_key != UINT64_MAX) streams.add(a.run_key, a.run_ns);
    std::uint64_t busiest = streams.other_ns;
    for (std::uint32_t s = 0; s < streams.count; ++s) {
      busiest = std::max(busiest, streams.ns[s]);
      auto& keys = stream_keys[idx];
      if (std::find(keys.begin(), keys.end(), streams.key[s]) == keys.end()) keys.push_back(streams.key[s]);
    }
    r.self.busiest_stream_ns += busiest;
    if (streams.other_ns > 0) more_streams[idx] = true;
    r.self.kernel_streams =
        static_cast<std::uint32_t>(stream_keys[idx].size()) + (more_streams[idx] ? 1u : 0u);
    if (kernels.size() < report.ranges.size()) kernels.resize(report.ranges.size());
    for (const auto& [key, row] : a.kernels) {
      const KernelAgg& agg = row.agg;
      KernelAgg& into = kernels[idx][key];
      into.calls += agg.calls;
      into.total_ns += agg.total_ns;
      into.min_ns = std::min(into.min_ns, agg.min_ns);
      into.max_ns = std::max(into.max_ns, agg.max_ns);
      into.registers = agg.registers;
      into.static_shared = agg.static_shared;
      into.dynamic_shared = agg.dynamic_shared;
    }
    if (a.graph) merge_graph(idx, *a.graph);
  };

  absl::flat_hash_map<const Node*, std::size_t> node_index;
  forest_.for_each_tree([&](const ThreadTree& tree) {
    add_counts(report.ranges[0].counts, tree.root(), forest_.names);
    const std::uint32_t open_depth = tree.open_depth();
    report.diagnostics.open_scopes += open_depth;
    for (std::uint32_t d = 1; d <= open_depth; ++d) report.diagnostics.open_scopes += tree.reentries(d);
    report.diagnostics.depth_overflows += tree.depth_overflows.get();
    report.diagnostics.unbalanced_ends += tree.unbalanced_ends.get();
    std::vector<std::pair<const Node*, std::size_t>> stack;
    for (const Node* c = tree.root().first_child.load(std::memory_order_acquire); c != nullptr;
         c = c->next_sibling.load(std::memory_order_acquire)) {
      stack.emplace_back(c, 0);
    }
    std::reverse(stack.begin(), stack.end());
    while (!stack.empty()) {
      auto [node, parent] = stack.back();
      stack.pop_back();
      const std::size_t idx = range_for(parent, node->name_id);
      node_index[node] = idx;
      RangeStats& r = report.ranges[idx];
      const std::uint64_t calls = node->calls.get();
      r.calls += calls;
      r.recursive_calls += node->recursive_calls.get();
      r.threads += static_cast<std::uint32_t>(node->threads.get());
      add_solo(r.host, node->host, node->host_max_call.get());
      host_children[idx] += node->host_children_ns.get();
      add_solo(r.gpu, node->gpu);
      add_counts(r.counts, *node, forest_.names);
      if (node->id < by_node_.size() && by_node_[node->id]) merge_activity(idx, *by_node_[node->id]);
      const std::size_t mark = stack.size();
      for (const Node* c = node->first_child.load(std::memory_order_acquire); c != nullptr;
           c = c->next_sibling.load(std::memory_order_acquire)) {
        stack.emplace_back(c, idx);
      }
      std::reverse(stack.begin() + static_cast<std::ptrdiff_t>(mark), stack.end());
    }
    for (std::uint32_t d = 1; d <= open_depth; ++d) {
      // A node created after the walk above (racing owner) is not in the index: skip it.
      if (auto it = node_index.find(tree.open_node(d)); it != node_index.end())
        report.ranges[it->second].open += 1 + tree.reentries(d);
    }
  });

  const bool unscoped_used = unscoped_.self.kernel_calls || unscoped_.self.memset_count ||
                             unscoped_.self.sync_count || unscoped_.self.alloc_count ||
                             unscoped_.self.free_count ||
                             std::any_of(unscoped_.self.memcpy.begin(), unscoped_.self.memcpy.end(),
                                         [](const CopyStats& c) { return c.count > 0; });
  if (unscoped_used) merge_activity(range_for(0, NameTable::kUnscopedId), unscoped_);
  kernels.resize(report.ranges.size());
  graphs.resize(report.ranges.size());
  metric_sum.resize(report.ranges.size());
  metric_weight.resize(report.ranges.size());

  auto kernel_stats = [&](const KernelKey& key, const KernelAgg& agg) {
    KernelStats k;
    k.name = kernel_names_[key.name];
    k.duration = {agg.calls, agg.total_ns, agg.min_ns, agg.max_ns};
    k.grid = key.grid;
    k.block = key.block;
    k.registers_per_thread = agg.registers;
    k.static_shared_bytes = agg.static_shared;
    k.dynamic_shared_bytes = agg.dynamic_shared;
    k.device = key.device;
    return k;
  };
  auto sort_kernels = [](std::vector<KernelStats>& ks) {
    std::sort(ks.begin(), ks.end(), [](const KernelStats& a, const KernelStats& b) {
      if (a.duration.total_ns != b.duration.total_ns) return a.duration.total_ns > b.duration.total_ns;
      if (a.name != b.name) return a.name < b.name;
      return a.grid < b.grid || (a.grid == b.grid && a.block < b.block);
    });
  };

  // Post-order (children have larger indices than parents): inclusive roll-ups.
  for (std::size_t i = report.ranges.size(); i-- > 0;) {
    RangeStats& r = report.ranges[i];
    r.host_self_ns = r.host.total_ns - std::min(r.host.total_ns, host_children[i]);
    ActivityStats total = r.self;
    for (std::size_t c : r.children) add_activity(total, report.ranges[c].total);
    total.gpu_busy_ns = total_busy[i];
    total.gpu_span_ns = total_span[i];
    total.peak_bytes = std::max(total_peak[i], r.self.peak_bytes);
    r.total = total;
    for (const auto& [key, agg] : kernels[i]) r.kernels.push_back(kernel_stats(key, agg));
    sort_kernels(r.kernels);
    for (auto& [path, acc] : graphs[i]) {
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
    if (i != 0) roll_up_counts(r, report.ranges);
    if (i != 0) roll_up_metrics(i, r, report.ranges, metric_sum, metric_weight);
  }
  // The root's own totals are the sums over its children.
  RangeStats& root = report.ranges[0];
  root.total = {};
  for (std::size_t c : root.children) add_activity(root.total, report.ranges[c].total);
  // Its busy time is the union over everything (the table's "total" line): top-level ranges of
  // several threads may overlap on the GPU, so no sum of theirs gives it.
  root.total.gpu_busy_ns = all_busy_.measure();
  roll_up_counts(root, report.ranges);

  const Diagnostics& d = diag_;
  Diagnostics& out = report.diagnostics;
  out.dropped_records += d.dropped_records;
  out.zero_timestamp_records += d.zero_timestamp_records;
  out.unresolved_records += d.unresolved_records;
  out.unknown_records += d.unknown_records;
  out.outside_window_records += d.outside_window_records;
  out.overhead_records += d.overhead_records;
  out.overhead_ns += d.overhead_ns;
  out.counter_ranges_dropped += d.counter_ranges_dropped;
  out.incomplete_at_exit += d.incomplete_at_exit;
  out.activity_buffers_refused += d.activity_buffers_refused;
  out.adjusted_names += forest_.names.adjusted();
  out.name_table_full += forest_.names.overflowed();
  out.unrecorded_scopes += forest_.unrecorded_scopes.load(std::memory_order_relaxed);
  out.graph_nodes_evicted += graph_nodes_.evicted();
  out.graph_kernels_unknown_node += d.graph_kernels_unknown_node;
  out.graph_kernels_device_launched += d.graph_kernels_device_launched;
  out.counted_kernels_untimed += d.counted_kernels_untimed;
  out.graph_kernels_no_launch += d.graph_kernels_no_launch;
  out.graph_kernels_after_update += d.graph_kernels_after_update;
  out.graph_exec_updates_unmapped += graph_nodes_.updates_unmapped();
}

}  // namespace cuscope::model

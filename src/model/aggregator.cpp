// model/aggregator.cpp — routes each GPU record to its range's statistics, keeps the records whose
// correlation has not come yet, and hands the Report to the builder. Counting lives in the rooms
// named in aggregator.hpp; this file only decides which room and when.
#include "model/aggregator.hpp"

#include <type_traits>
#include <utility>

#include "model/report_builder.hpp"

namespace cuscope::model {

Aggregator::Aggregator(const Forest& forest) : forest_(forest) {}

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

void Aggregator::apply_kernel(const Kernel& k, const Target& t) {
  if (k.start_ns == 0 || k.end_ns == 0) {  // only while counters are planned: see on_kernel()
    if (t.where == Where::Range && replayed_for_counters(t.instance->node)) {
      diag_.counted_kernels_untimed += 1;
    } else {
      count_zero_timestamp();
    }
    return;
  }
  RangeActivity& a = t.where == Where::Range ? *t.instance->activity : activities_.unscoped();
  const std::uint64_t ns = elapsed_ns(k.start_ns, k.end_ns);
  a.self.kernel_calls += 1;
  a.self.kernel_ns += ns;
  KernelRow& row = a.kernel_row(KernelKey{k.name, k.grid, k.block, k.device});
  row.agg.count(ns, k.registers, k.static_shared, k.dynamic_shared);
  a.count_stream(stream_key(k), ns);
  if (k.graph_node_id != 0)
    graphs_.add(a, k.graph_node_id, k.correlation, row.key, k.start_ns, k.end_ns, k.registers,
                k.static_shared, k.dynamic_shared, diag_);
  intervals_.spread(t, k.start_ns, k.end_ns);  // last: it may move the instance table
}

bool Aggregator::apply(const Record& r) {
  const Target t = attribution_.locate(std::visit([](const auto& x) { return x.correlation; }, r));
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
    memory_.apply(r, t.where == Where::Range ? t.instance->node : nullptr, activities_, diag_);
  } else {
    ActivityStats& s = (t.where == Where::Range ? *t.instance->activity : activities_.unscoped()).self;
    if constexpr (!std::is_same_v<R, SyncActivity>) intervals_.extend_spans(t, r.start_ns, r.end_ns);
    if constexpr (std::is_same_v<R, MemcpyActivity>) {
      CopyStats& c = s.memcpy[static_cast<std::size_t>(r.kind)];
      c.count += 1;
      c.bytes += r.bytes;
      c.total_ns += elapsed_ns(r.start_ns, r.end_ns);
      if (r.pageable()) {
        s.pageable_copies += 1;
        s.pageable_bytes += r.bytes;
      }
      if (r.blocking) {
        s.blocking_copies += 1;
        s.blocking_bytes += r.bytes;
      }
    } else if constexpr (std::is_same_v<R, MemsetActivity>) {
      s.memset_count += 1;
      s.memset_bytes += r.bytes;
      s.memset_ns += elapsed_ns(r.start_ns, r.end_ns);
    } else {
      s.sync_count += 1;
      s.sync_ns += elapsed_ns(r.start_ns, r.end_ns);
    }
  }
}

template <class R>
void Aggregator::handle(const R& r) {
  const Target t = attribution_.locate(r.correlation);
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
  handle(Kernel{k.correlation, k.start_ns, k.end_ns, kernel_names_.id(k.name), k.grid, k.block,
                k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes, k.device, k.stream,
                k.graph_node_id});
}

// Whether `name`, the pointer `row` saw last, still names its kernel: checked once a batch (an
// address may hold another name in a later batch, after a module unload).
bool Aggregator::names_row(KernelRow& row, const char* name) {
  if (row.name_batch == kernel_names_.batch()) return true;
  if (kernel_names_.id(name) != row.key.name) return false;
  row.name_batch = kernel_names_.batch();
  return true;
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
  const std::uint64_t scoped = attribution_.scoped_instance(k.correlation);
  Instance* inst = scoped != 0 ? attribution_.instance(scoped) : nullptr;
  const Target t = inst != nullptr ? Target{Where::Range, inst} : attribution_.locate(k.correlation);
  if (t.where != Where::Range && t.where != Where::Unscoped) {  // to wait, or to be counted apart
    handle_kernel(k);
    return;
  }
  // The common case, apply_kernel without a name lookup when the predicted row is the one.
  RangeActivity& a = t.where == Where::Range ? *t.instance->activity : activities_.unscoped();
  const std::uint64_t ns = elapsed_ns(k.start_ns, k.end_ns);
  a.self.kernel_calls += 1;
  a.self.kernel_ns += ns;
  KernelRow* row = a.last != nullptr ? a.last->next : nullptr;
  if (row != nullptr && k.name != nullptr && row->matches(k) && names_row(*row, k.name)) {
    a.last = row;
  } else {
    row = &a.kernel_row(KernelKey{kernel_names_.id(k.name), k.grid, k.block, k.device});
    row->name_ptr = k.name;
    row->name_batch = kernel_names_.batch();
  }
  row->agg.count(ns, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes);
  a.count_stream(stream_key(k), ns);
  if (k.graph_node_id != 0)
    graphs_.add(a, k.graph_node_id, k.correlation, row->key, k.start_ns, k.end_ns, k.registers_per_thread,
                k.static_shared_bytes, k.dynamic_shared_bytes, diag_);
  intervals_.spread(t, k.start_ns, k.end_ns);
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

void Aggregator::on(const OverheadActivity& o) {
  diag_.overhead_records += 1;
  diag_.overhead_ns += elapsed_ns(o.start_ns, o.end_ns);
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
  activities_.of(node).add_counters(plan_, values);
}

void Aggregator::settle(unsigned max_age, bool age) {
  kernel_names_.end_batch();  // a batch of records ends here: its name pointers may be reused
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

void Aggregator::reattached() {
  kernel_names_.end_batch();
  diag_.unresolved_records += pending_.size();
  pending_.clear();
  attribution_.forget_correlations();
  graphs_.nodes().forget();
  final_flush_ = false;
}

void Aggregator::build(Report& report) const {
  build_report(
      ReportSources{forest_, activities_, attribution_, kernel_names_, plan_, graphs_.nodes(), diag_},
      report);
}

}  // namespace cuscope::model

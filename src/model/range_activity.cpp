// model/range_activity.cpp — a range's GPU statistics: kernel rows, stream runs, counters, and the
// table of ranges by node. Accumulation only: no attribution, no Report.
#include "model/range_activity.hpp"

namespace cuscope::model {

KernelRow& RangeActivity::kernel_row(const KernelKey& key) {
  KernelRow* row = last != nullptr ? last->next : nullptr;
  if (row == nullptr || !(row->key == key)) {
    auto [it, inserted] = kernels.try_emplace(key);
    row = &it->second;
    if (inserted) row->key = key;
    if (last != nullptr) last->next = row;
  }
  last = row;
  return *row;
}

void RangeActivity::new_stream_run(std::uint64_t key, std::uint64_t ns) {
  if (run_key != UINT64_MAX) streams.add(run_key, run_ns);
  run_key = key;
  run_ns = ns;
}

StreamTimes RangeActivity::stream_times() const {
  StreamTimes all = streams;
  if (run_key != UINT64_MAX) all.add(run_key, run_ns);
  return all;
}

void RangeActivity::add_counters(const CounterPlan& plan, const std::vector<double>& values) {
  metric_sum.resize(values.size(), 0.0);
  metric_weight.resize(values.size(), 0.0);
  const double weight = plan.duration_index < values.size() ? values[plan.duration_index] : 1.0;
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (plan.weighted[i]) {
      metric_sum[i] += values[i] * weight;
      metric_weight[i] += weight;
    } else {
      metric_sum[i] += values[i];
    }
  }
  profiled_kernels += 1;
}

RangeActivity& RangeActivities::of(const Node* node) {
  if (node == nullptr) return unscoped_;
  if (node->id >= by_node_.size()) by_node_.resize(node->id + 1);
  auto& slot = by_node_[node->id];
  if (!slot) slot = std::make_unique<RangeActivity>();
  return *slot;
}

}  // namespace cuscope::model

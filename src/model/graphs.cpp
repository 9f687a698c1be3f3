// model/graphs.cpp — see graphs.hpp.
#include "model/graphs.hpp"

#include <cstdint>
#include <vector>

namespace cuscope::model {

void GraphNodeMap::put(std::uint64_t node_id, Entry entry, bool overwrite) {
  auto [it, inserted] = nodes_.try_emplace(node_id, entry);
  if (!inserted) {
    if (!overwrite) return;
    version_.fetch_add(1, std::memory_order_release);
    it->second = entry;
    return;
  }
  version_.fetch_add(1, std::memory_order_release);
  order_.push_back(node_id);
  while (order_.size() > max_nodes_) {
    nodes_.erase(order_.front());
    order_.pop_front();
    ++evicted_;
  }
}

void GraphNodeMap::on(const GraphNodeCreated& e) {
  if (e.node_id == 0) return;
  std::lock_guard lock(mutex_);
  Entry entry;
  entry.now = Side{e.range, true, false};
  put(e.node_id, entry, false);
}

void GraphNodeMap::on(const GraphNodeCloned& e) {
  if (e.node_id == 0) return;
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(e.original_node_id);
  if (it != nodes_.end()) {
    Entry entry;
    entry.now = it->second.now;  // the original's range, not its exec or updates
    entry.exec = e.exec_id;
    put(e.node_id, entry, true);
    return;
  }
  // Unknown original: the node's creation at instantiation (reported first) must not stand.
  auto own = nodes_.find(e.node_id);
  if (own == nodes_.end()) return;
  if (e.exec_id != 0) own->second.exec = e.exec_id;
  if (!own->second.now.known) return;
  version_.fetch_add(1, std::memory_order_release);
  own->second.now = Side{nullptr, false, false};
}

void GraphNodeMap::on(const GraphExecNodes& e) {
  if (e.exec_id == 0) return;
  std::lock_guard lock(mutex_);
  for (std::uint64_t id : e.node_ids) {
    auto it = nodes_.find(id);
    if (it != nodes_.end()) it->second.exec = e.exec_id;
  }
}

void GraphNodeMap::on(const GraphExecUpdated& e) {
  if (e.exec_id == 0) return;
  std::lock_guard lock(mutex_);
  // The exec's nodes: a walk of the map (bounded by kMaxNodes), once per update.
  std::vector<Entry*> members;
  for (auto& [id, entry] : nodes_) {
    if (entry.exec == e.exec_id) members.push_back(&entry);
  }
  if (members.empty()) {
    ++updates_unmapped_;
    return;
  }
  // Re-mapped only when no pairing is needed: the new graph's nodes all known, all of one range,
  // as many as the exec's.
  Side target{nullptr, false, true};
  bool uniform = !e.graph_node_ids.empty() && e.graph_node_ids.size() == members.size();
  const Side* first = nullptr;
  for (std::size_t i = 0; uniform && i < e.graph_node_ids.size(); ++i) {
    auto it = nodes_.find(e.graph_node_ids[i]);
    if (it == nodes_.end() || !it->second.now.known) {
      uniform = false;
    } else if (first == nullptr) {
      first = &it->second.now;
    } else if (first->range != it->second.now.range) {
      uniform = false;
    }
  }
  if (uniform && first != nullptr) target = Side{first->range, true, false};
  for (Entry* m : members) {
    m->prev_fence = m->fence;
    m->before = m->now;
    m->fence = e.correlation;
    m->now = target;
  }
  version_.fetch_add(1, std::memory_order_release);
}

bool GraphNodeMap::find(std::uint64_t node_id, const Node** range) const {
  const Lookup l = find(node_id, UINT64_MAX);  // a launch after every update: the node's range now
  if (!l.known) return false;
  *range = l.range;
  return true;
}

GraphNodeMap::Lookup GraphNodeMap::find(std::uint64_t node_id, std::uint64_t correlation) const {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end()) return {};
  const Entry& e = it->second;
  if (e.fence == 0 || correlation > e.fence)
    return Lookup{e.now.known, e.now.range, e.now.after_update, e.fence, true};
  if (correlation > e.prev_fence)
    return Lookup{e.before.known, e.before.range, e.before.after_update, e.fence, false};
  return Lookup{false, nullptr, true, e.fence, false};  // launched before an earlier update
}

std::uint64_t GraphNodeMap::updates_unmapped() const {
  std::lock_guard lock(mutex_);
  return updates_unmapped_;
}

void GraphNodeMap::forget() {
  std::lock_guard lock(mutex_);
  evicted_ += nodes_.size();
  nodes_.clear();
  order_.clear();
  version_.fetch_add(1, std::memory_order_release);
}

std::uint64_t GraphNodeMap::evicted() const {
  std::lock_guard lock(mutex_);
  return evicted_;
}

std::size_t GraphNodeMap::size() const {
  std::lock_guard lock(mutex_);
  return nodes_.size();
}

}  // namespace cuscope::model

// model/graphs.cpp — see graphs.hpp.
#include "model/graphs.hpp"

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
  put(e.node_id, Entry{e.range, true}, false);
}

void GraphNodeMap::on(const GraphNodeCloned& e) {
  if (e.node_id == 0) return;
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(e.original_node_id);
  if (it != nodes_.end()) {
    put(e.node_id, it->second, true);
    return;
  }
  // Unknown original: the node's creation at instantiation (reported first) must not stand.
  auto own = nodes_.find(e.node_id);
  if (own == nodes_.end() || !own->second.known) return;
  version_.fetch_add(1, std::memory_order_release);
  own->second = Entry{nullptr, false};
}

bool GraphNodeMap::find(std::uint64_t node_id, const Node** range) const {
  std::lock_guard lock(mutex_);
  auto it = nodes_.find(node_id);
  if (it == nodes_.end() || !it->second.known) return false;
  *range = it->second.range;
  return true;
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

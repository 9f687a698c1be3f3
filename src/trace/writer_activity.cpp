// trace/writer_activity.cpp — trace mode's activity stream (see writer.hpp): how each record the
// CUPTI decoder, the graph callbacks, the GPU timer and step() hand the writer is encoded into the
// locked activity chunk that the writer thread moves to the file. Field order here is the file
// format (format.hpp); reader.cpp reads it back in the same order. Runs on the decoder's or the
// caller's thread under the activity lock, which scopes never take: nothing here may touch a
// thread's ring or do I/O.
#include <absl/strings/string_view.h>

#include <cstring>

#include "trace/writer.hpp"

namespace cuscope::trace {

std::size_t Writer::begin_activity(RecordType t) {
  Encoder e(activity_);
  return e.begin(t);
}

void Writer::end_activity(std::size_t at) {
  Encoder(activity_).finish(at);
  ++activity_records_;
  if (activity_.size() > kMaxPendingActivityBytes) {
    // The writer thread is far behind: the newest record goes, counted, and memory stays bounded.
    activity_.resize(at - kRecordHeaderBytes);
    --activity_records_;
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

void Writer::on(const model::ApiCall& a) {
  put_activity(RecordType::ApiCall, a.correlation, a.start_ns, a.end_ns);
}

void Writer::on(const model::ExternalCorrelation& x) {
  put_activity(RecordType::External, x.correlation, x.instance);
}

void Writer::on(const model::KernelActivity& k) {
  std::lock_guard lock(activity_mutex_);
  const std::string_view name = k.name != nullptr ? std::string_view(k.name) : std::string_view();
  std::uint32_t id = 0;
  if (auto it = kernel_names_.find(absl::string_view(name.data(), name.size())); it != kernel_names_.end()) {
    id = it->second;
  } else {
    id = static_cast<std::uint32_t>(kernel_names_.size() + 1);
    kernel_names_.emplace(std::string(name), id);
    const std::size_t at = begin_activity(RecordType::KernelName);
    Encoder e(activity_);
    e.put(id);
    e.str(name.substr(0, kMaxRecordBytes / 2));
    end_activity(at);
  }
  const std::size_t at = begin_activity(RecordType::Kernel);
  Encoder e(activity_);
  e.put(k.correlation);
  e.put(k.start_ns);
  e.put(k.end_ns);
  e.put(id);
  for (std::uint32_t v : k.grid) e.put(v);
  for (std::uint32_t v : k.block) e.put(v);
  e.put(k.registers_per_thread);
  e.put(k.static_shared_bytes);
  e.put(k.dynamic_shared_bytes);
  e.put(k.device);
  e.put(k.stream);
  // The tail only graph kernels carry: other traces read as before.
  if (k.graph_node_id != 0 || k.device_launched) {
    e.put(k.graph_node_id);
    e.put(k.graph_id);
    if (k.device_launched) e.put(std::uint8_t{1});  // and a device-launched graph's, one byte more
  }
  end_activity(at);
}

void Writer::on(const model::GraphNodeCloned& c) {
  put_activity(RecordType::GraphClone, c.node_id, c.original_node_id, c.exec_id);
}

void Writer::unscoped_graph_node(std::uint32_t graph_id, std::uint64_t node_id) {
  std::lock_guard lock(activity_mutex_);
  const std::size_t at = begin_activity(RecordType::ScopeEvents);
  Encoder e(activity_);
  e.put(std::uint32_t{1});
  const ScopeEvent ev{event_word(ScopeKind::GraphNode, 0), graph_id, 0, node_id};
  char bytes[kScopeEventBytes];
  std::memcpy(bytes, &ev, kScopeEventBytes);
  activity_.append(bytes, kScopeEventBytes);
  end_activity(at);
}

void Writer::put_graph_ids(const std::vector<std::uint64_t>& ids) {
  Encoder e(activity_);
  if (ids.size() > kMaxGraphIds) {  // none rather than some: see format.hpp
    e.put(std::uint32_t{0});
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  e.put(static_cast<std::uint32_t>(ids.size()));
  for (std::uint64_t id : ids) e.put(id);
}

void Writer::on(const model::GraphExecNodes& n) {
  std::lock_guard lock(activity_mutex_);
  const std::size_t at = begin_activity(RecordType::GraphExecNodes);
  Encoder(activity_).put(n.exec_id);
  put_graph_ids(n.node_ids);
  end_activity(at);
}

void Writer::on(const model::GraphExecUpdated& u) {
  std::lock_guard lock(activity_mutex_);
  const std::size_t at = begin_activity(RecordType::GraphExecUpdate);
  Encoder e(activity_);
  e.put(u.exec_id);
  e.put(u.correlation);
  put_graph_ids(u.graph_node_ids);
  end_activity(at);
}

void Writer::on(const model::MemcpyActivity& m) {
  put_activity(RecordType::Memcpy, m.correlation, m.start_ns, m.end_ns, m.bytes,
               static_cast<std::uint8_t>(m.kind), m.device, m.stream, static_cast<std::uint8_t>(m.src_kind),
               static_cast<std::uint8_t>(m.dst_kind), m.blocking ? kCopyBlocking : std::uint8_t{0});
}

void Writer::on(const model::MemsetActivity& m) {
  put_activity(RecordType::Memset, m.correlation, m.start_ns, m.end_ns, m.bytes, m.device, m.stream);
}

void Writer::on(const model::SyncActivity& s) {
  put_activity(RecordType::Sync, s.correlation, s.start_ns, s.end_ns);
}

void Writer::on(const model::MemoryActivity& m) {
  put_activity(RecordType::Memory, m.correlation, m.timestamp_ns, m.address, m.bytes,
               static_cast<std::uint8_t>(m.is_alloc ? 1 : 0), m.device);
}

void Writer::on(const model::OverheadActivity& o) {
  put_activity(RecordType::Overhead, o.start_ns, o.end_ns);
}

void Writer::buffer_end(std::uint64_t dropped, std::uint64_t unknown) {
  put_activity(RecordType::BufferEnd, dropped, unknown);
}

void Writer::gpu_time(const model::Node* node, std::uint64_t ns) {
  std::uint32_t path[model::kHardMaxDepth];
  std::uint32_t n = 0;
  for (const model::Node* x = node; x != nullptr && x->parent != nullptr && n < model::kHardMaxDepth;
       x = x->parent)
    path[n++] = x->name_id;
  std::lock_guard lock(activity_mutex_);
  const std::size_t at = begin_activity(RecordType::GpuTime);
  Encoder e(activity_);
  e.put(ns);
  e.put(n);
  for (std::uint32_t i = n; i > 0; --i) e.put(path[i - 1]);  // from the top-level range down
  end_activity(at);
}

void Writer::final_flush() { put_activity(RecordType::FinalFlush); }

void Writer::step(std::uint64_t now_ns, std::uint64_t step, bool recording) {
  put_activity(RecordType::Step, now_ns, step, static_cast<std::uint8_t>(recording ? 1 : 0));
}

void Writer::reattached(std::uint64_t now_ns) { put_activity(RecordType::Reattach, now_ns); }

void Writer::recording(std::uint64_t now_ns, bool on) {
  put_activity(RecordType::Recording, now_ns, static_cast<std::uint8_t>(on ? 1 : 0));
}

}  // namespace cuscope::trace

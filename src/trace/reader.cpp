// trace/reader.cpp — the trace file, checked as it is read (see reader.hpp). Every length comes
// from the file and is checked against what is left before it is used.
#include "trace/reader.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

#include "trace/summary_record.hpp"

namespace cuscope::trace {

namespace {

// Names and kernel names are ids the writer hands out densely; more than this is not a trace.
constexpr std::uint32_t kMaxNameIds = 1u << 24;

}  // namespace

std::string describe(RecordType t) {
  switch (t) {
    case RecordType::Meta:
      return "metadata";
    case RecordType::Name:
      return "name";
    case RecordType::ScopeEvents:
      return "scope events";
    case RecordType::KernelName:
      return "kernel name";
    case RecordType::Kernel:
      return "kernel";
    case RecordType::Memcpy:
      return "memcpy";
    case RecordType::Memset:
      return "memset";
    case RecordType::Sync:
      return "synchronization";
    case RecordType::Memory:
      return "memory";
    case RecordType::Overhead:
      return "overhead";
    case RecordType::ApiCall:
      return "API call";
    case RecordType::External:
      return "external correlation";
    case RecordType::BufferEnd:
      return "buffer end";
    case RecordType::FinalFlush:
      return "final flush";
    case RecordType::Step:
      return "step";
    case RecordType::Summary:
      return "summary";
    case RecordType::End:
      return "end";
    case RecordType::GraphClone:
      return "graph node clone";
    case RecordType::GpuTime:
      return "GPU time";
    case RecordType::GraphExecNodes:
      return "graph exec's nodes";
    case RecordType::GraphExecUpdate:
      return "graph exec update";
    case RecordType::Recording:
      return "recording switch";
    case RecordType::Reattach:
      return "re-attach";
  }
  return "unknown";
}

namespace {

// A graph record's tail: u32 n, then n u64 ids, exactly to the record's end.
bool graph_ids(Decoder& d, std::vector<std::uint64_t>& ids) {
  const auto n = d.get<std::uint32_t>();
  if (d.failed() || n > kMaxGraphIds || d.left() != std::uint64_t{n} * 8) return false;
  ids.resize(n);
  for (std::uint64_t& id : ids) id = d.get<std::uint64_t>();
  return d.done();
}

std::string a(RecordType t) {
  const std::string d = describe(t);
  return (std::string_view("aeiou").find(d[0]) != std::string_view::npos ? "an " : "a ") + d;
}

}  // namespace

Reader::~Reader() {
  if (file_ != nullptr) std::fclose(file_);
}

bool Reader::open(const std::string& path, std::string* error) {
  file_ = std::fopen(path.c_str(), "rb");
  if (file_ == nullptr) {
    *error = fmt::format("cannot open '{}': {}", path, std::strerror(errno));
    return false;
  }
  return check_header(error);
}

bool Reader::open_memory(const std::uint8_t* data, std::size_t size, std::string* error) {
  mem_ = data;
  mem_size_ = size;
  return check_header(error);
}

std::size_t Reader::fill(char* out, std::size_t n) {
  std::size_t got = 0;
  if (file_ != nullptr) {
    got = std::fread(out, 1, n, file_);
  } else {
    got = std::min(n, mem_size_ - mem_at_);
    if (got > 0) std::memcpy(out, mem_ + mem_at_, got);
    mem_at_ += got;
  }
  offset_ += got;
  return got;
}

bool Reader::check_header(std::string* error) {
  char h[kHeaderBytes];
  const std::size_t got = fill(h, kHeaderBytes);
  if (got < sizeof(kMagic) || std::memcmp(h, kMagic, sizeof(kMagic)) != 0) {
    *error = "not a cuscope trace (no CUSCOPE-TRACE header)";
    return false;
  }
  if (got < kHeaderBytes) {
    *error = "truncated: the file ends inside its header";
    return false;
  }
  Decoder d(h + sizeof(kMagic), kHeaderBytes - sizeof(kMagic));
  const auto version = d.get<std::uint32_t>();
  const auto header = d.get<std::uint32_t>();
  if (version != kVersion) {
    *error = fmt::format("trace format version {} is not supported (this cuscope reads version {})", version,
                         kVersion);
    return false;
  }
  if (header != kHeaderBytes) {
    *error = fmt::format("malformed header (header size {}, expected {})", header, kHeaderBytes);
    return false;
  }
  return true;
}

bool Reader::stop_at_cut(std::string message, std::string* error) {
  if (!accept_cut_) {
    *error = std::move(message);
    return false;
  }
  cut_ = std::move(message);
  error->clear();
  return true;
}

bool Reader::read(Visitor& v, std::string* error) {
  cut_.clear();
  for (;;) {
    error->clear();
    const std::uint64_t at = offset_;
    char h[kRecordHeaderBytes];
    const std::size_t got = fill(h, kRecordHeaderBytes);
    if (got == 0) {
      return stop_at_cut(
          fmt::format("truncated: no end record after byte {} (the program did not finish the trace)", at),
          error);
    }
    if (got < kRecordHeaderBytes)
      return stop_at_cut(fmt::format("truncated: the file ends inside a record header at byte {}", at),
                         error);
    Decoder hd(h, kRecordHeaderBytes);
    const auto raw_type = hd.get<std::uint32_t>();
    const auto size = hd.get<std::uint32_t>();
    if (raw_type < static_cast<std::uint32_t>(RecordType::Meta) ||
        raw_type > static_cast<std::uint32_t>(kLastRecordType)) {
      *error = fmt::format("malformed: unknown record type {} at byte {}", raw_type, at);
      return false;
    }
    const auto type = static_cast<RecordType>(raw_type);
    if (size > kMaxRecordBytes) {
      *error = fmt::format("malformed: {} record of {} bytes at byte {} (at most {})", a(type), size, at,
                           kMaxRecordBytes);
      return false;
    }
    payload_.resize(size);
    if (fill(payload_.data(), size) != size)
      return stop_at_cut(fmt::format("truncated: the file ends inside {} record at byte {}", a(type), at),
                         error);
    Decoder d(payload_.data(), size);
    if (!dispatch(type, d, v, error)) {
      const std::string detail = *error;
      *error =
          fmt::format("malformed: {} record at byte {}{}", a(type), at, detail.empty() ? "" : ": " + detail);
      return false;
    }
    if (type == RecordType::End) {
      char extra = 0;
      if (fill(&extra, 1) != 0) {
        *error = fmt::format("malformed: data after the end record at byte {}", offset_ - 1);
        return false;
      }
      return true;
    }
  }
}

bool Reader::dispatch(RecordType type, Decoder& d, Visitor& v, std::string* error) {
  switch (type) {
    case RecordType::Meta: {
      const std::string_view key = d.str();
      const std::string_view value = d.str();
      if (!d.done()) return false;
      v.meta(key, value);
      return true;
    }
    case RecordType::Name: {
      const auto id = d.get<std::uint32_t>();
      const std::string_view text = d.str();
      if (!d.done() || id == 0 || id >= kMaxNameIds) return false;
      if (id >= names_.size()) names_.resize(id + 1, false);
      names_[id] = true;
      v.name(id, text);
      return true;
    }
    case RecordType::ScopeEvents: {
      const auto n = d.get<std::uint32_t>();
      if (d.failed() || d.left() != std::uint64_t{n} * kScopeEventBytes) return false;
      for (std::uint32_t i = 0; i < n; ++i) {
        ScopeEvent e;
        std::memcpy(&e, d.at(), kScopeEventBytes);
        d.skip(kScopeEventBytes);
        const auto k = static_cast<std::uint8_t>(kind_of(e));
        if (k < static_cast<std::uint8_t>(ScopeKind::Attach) ||
            k > static_cast<std::uint8_t>(ScopeKind::Shift)) {
          *error = fmt::format("event {} has unknown kind {}", i, k);
          return false;
        }
        if (slot_of(e) == 0 &&
            kind_of(e) != ScopeKind::GraphNode) {  // a node may come from no thread's scopes
          *error = fmt::format("event {} has no thread", i);
          return false;
        }
        const ScopeKind kind = kind_of(e);
        if ((kind == ScopeKind::Enter || kind == ScopeKind::Count) &&
            (e.arg >= names_.size() || !names_[e.arg])) {
          *error = fmt::format("event {} uses name {} before its name record", i, e.arg);
          return false;
        }
        v.scope(e);
      }
      return true;
    }
    case RecordType::KernelName: {
      const auto id = d.get<std::uint32_t>();
      const std::string_view text = d.str();
      if (!d.done()) return false;
      if (id != kernel_names_.size() + 1) {
        *error = fmt::format("kernel name id {} out of order (expected {})", id, kernel_names_.size() + 1);
        return false;
      }
      if (kernel_names_.size() >= kMaxNameIds) return false;
      kernel_names_.emplace_back(text);
      return true;
    }
    case RecordType::Kernel: {
      model::KernelActivity k;
      k.correlation = d.get<std::uint64_t>();
      k.start_ns = d.get<std::uint64_t>();
      k.end_ns = d.get<std::uint64_t>();
      const auto name = d.get<std::uint32_t>();
      for (auto& g : k.grid) g = d.get<std::uint32_t>();
      for (auto& b : k.block) b = d.get<std::uint32_t>();
      k.registers_per_thread = d.get<std::uint32_t>();
      k.static_shared_bytes = d.get<std::uint32_t>();
      k.dynamic_shared_bytes = d.get<std::uint32_t>();
      k.device = d.get<std::uint32_t>();
      k.stream = d.get<std::uint32_t>();
      if (!d.failed() && d.left() > 0) {  // a graph kernel's tail
        k.graph_node_id = d.get<std::uint64_t>();
        k.graph_id = d.get<std::uint32_t>();
        if (!d.failed() && d.left() > 0) k.device_launched = d.get<std::uint8_t>() != 0;
      }
      if (!d.done()) return false;
      if (name == 0 || name > kernel_names_.size()) {
        *error = fmt::format("kernel uses name {} before its name record", name);
        return false;
      }
      k.name = kernel_names_[name - 1].c_str();
      v.on(k);
      return true;
    }
    case RecordType::Memcpy: {
      model::MemcpyActivity m;
      m.correlation = d.get<std::uint64_t>();
      m.start_ns = d.get<std::uint64_t>();
      m.end_ns = d.get<std::uint64_t>();
      m.bytes = d.get<std::uint64_t>();
      const auto kind = d.get<std::uint8_t>();
      m.device = d.get<std::uint32_t>();
      m.stream = d.get<std::uint32_t>();
      if (!d.failed() && d.left() > 0) {  // the memory kinds' tail (absent in older files: unknown)
        const auto src = d.get<std::uint8_t>();
        const auto dst = d.get<std::uint8_t>();
        if (src >= model::kMemoryKinds || dst >= model::kMemoryKinds) return false;
        m.src_kind = static_cast<model::MemoryKind>(src);
        m.dst_kind = static_cast<model::MemoryKind>(dst);
      }
      if (!d.failed() && d.left() > 0) {  // the flags' tail (absent before 2026-11-27: not blocking)
        const auto flags = d.get<std::uint8_t>();
        if ((flags & ~kCopyBlocking) != 0) return false;
        m.blocking = (flags & kCopyBlocking) != 0;
      }
      if (!d.done() || kind >= kCopyKinds) return false;
      m.kind = static_cast<CopyKind>(kind);
      v.on(m);
      return true;
    }
    case RecordType::Memset: {
      model::MemsetActivity m;
      m.correlation = d.get<std::uint64_t>();
      m.start_ns = d.get<std::uint64_t>();
      m.end_ns = d.get<std::uint64_t>();
      m.bytes = d.get<std::uint64_t>();
      m.device = d.get<std::uint32_t>();
      m.stream = d.get<std::uint32_t>();
      if (!d.done()) return false;
      v.on(m);
      return true;
    }
    case RecordType::Sync: {
      model::SyncActivity s;
      s.correlation = d.get<std::uint64_t>();
      s.start_ns = d.get<std::uint64_t>();
      s.end_ns = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.on(s);
      return true;
    }
    case RecordType::Memory: {
      model::MemoryActivity m;
      m.correlation = d.get<std::uint64_t>();
      m.timestamp_ns = d.get<std::uint64_t>();
      m.address = d.get<std::uint64_t>();
      m.bytes = d.get<std::uint64_t>();
      const auto alloc = d.get<std::uint8_t>();
      m.device = d.get<std::uint32_t>();
      if (!d.done() || alloc > 1) return false;
      m.is_alloc = alloc == 1;
      v.on(m);
      return true;
    }
    case RecordType::Overhead: {
      model::OverheadActivity o;
      o.start_ns = d.get<std::uint64_t>();
      o.end_ns = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.on(o);
      return true;
    }
    case RecordType::ApiCall: {
      model::ApiCall a;
      a.correlation = d.get<std::uint64_t>();
      a.start_ns = d.get<std::uint64_t>();
      a.end_ns = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.on(a);
      return true;
    }
    case RecordType::GraphClone: {
      model::GraphNodeCloned c;
      c.node_id = d.get<std::uint64_t>();
      c.original_node_id = d.get<std::uint64_t>();
      if (!d.failed() && d.left() > 0)
        c.exec_id = d.get<std::uint32_t>();  // files before exec updates lack it
      if (!d.done()) return false;
      v.on(c);
      return true;
    }
    case RecordType::GraphExecNodes: {
      exec_nodes_.exec_id = d.get<std::uint32_t>();
      if (!graph_ids(d, exec_nodes_.node_ids)) return false;
      v.on(exec_nodes_);
      return true;
    }
    case RecordType::GraphExecUpdate: {
      exec_update_.exec_id = d.get<std::uint32_t>();
      exec_update_.correlation = d.get<std::uint64_t>();
      if (!graph_ids(d, exec_update_.graph_node_ids)) return false;
      v.on(exec_update_);
      return true;
    }
    case RecordType::External: {
      model::ExternalCorrelation e;
      e.correlation = d.get<std::uint64_t>();
      e.instance = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.on(e);
      return true;
    }
    case RecordType::BufferEnd: {
      const auto dropped = d.get<std::uint64_t>();
      const auto unknown = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.buffer_end(dropped, unknown);
      return true;
    }
    case RecordType::FinalFlush:
      if (!d.done()) return false;
      v.final_flush();
      return true;
    case RecordType::Step: {
      const auto now = d.get<std::uint64_t>();
      const auto step = d.get<std::uint64_t>();
      const auto recording = d.get<std::uint8_t>();
      if (!d.done() || recording > 1) return false;
      v.step(now, step, recording == 1);
      return true;
    }
    case RecordType::Recording: {
      const auto now = d.get<std::uint64_t>();
      const auto on = d.get<std::uint8_t>();
      if (!d.done() || on > 1) return false;
      v.recording(now, on == 1);
      return true;
    }
    case RecordType::Reattach: {
      const auto now = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.reattached(now);
      return true;
    }
    case RecordType::Summary: {
      Summary summary;
      if (!decode_summary(d, summary)) return false;
      v.summary(summary);
      return true;
    }
    case RecordType::GpuTime: {
      const auto ns = d.get<std::uint64_t>();
      const auto n = d.get<std::uint32_t>();
      if (d.failed() || n == 0 || n > kMaxPathDepth || d.left() != std::uint64_t{n} * 4) return false;
      path_.resize(n);
      for (auto& id : path_) {
        id = d.get<std::uint32_t>();
        if (id >= names_.size() || !names_[id]) {
          *error = fmt::format("uses name {} before its name record", id);
          return false;
        }
      }
      v.gpu_time(ns, path_);
      return true;
    }
    case RecordType::End: {
      const auto dropped = d.get<std::uint64_t>();
      if (!d.done()) return false;
      v.end(dropped);
      return true;
    }
  }
  return false;
}

}  // namespace cuscope::trace

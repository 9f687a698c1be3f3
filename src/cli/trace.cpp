// cli/trace.cpp — `cuscope trace TRACE -o OUT`: a trace file as a Chrome/Perfetto JSON trace in the
// shape torch.profiler (Kineto) writes, so that Perfetto, chrome://tracing and
// HolisticTraceAnalysis open it.
//
// Host: each scope instance is a complete ("X") event on its thread, nested as the scopes were;
// CUDA API calls are "cuda_runtime" events on the launching thread. Device: kernels, copies and
// sets on per-device (pid), per-stream (tid) tracks with Kineto's argument names; flow events
// ("ac2g", "s" on the launch, "f"/"e" on the work, id = correlation) join them. Perfetto drops
// complete events that partially overlap on one track, so work that overlaps goes on an extra
// lane of its track. Step marks become "ProfilerStep#N" annotations.
//
// Streaming: memory holds what is open (scope stacks), what is distinct (names, tracks) and a
// bounded window of API calls waiting for their thread and their work; never the whole trace.
#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/output.hpp"
#include "model/kernel_names.hpp"  // demangle
#include "model/range_tree.hpp"  // instance id layout, kHardMaxDepth
#include "trace/reader.hpp"
#include "views/json_text.hpp"

namespace cuscope::cli {

namespace {

const std::string kHelp =
    "usage: cuscope trace [--partial] TRACE -o OUT.json\n"
    "\n"
    "Converts the trace file TRACE (CUSCOPE_TRACE) to a Chrome/Perfetto JSON trace in the shape\n"
    "torch.profiler (Kineto) writes: open it in https://ui.perfetto.dev, chrome://tracing, or\n"
    "HolisticTraceAnalysis. Scope instances are nested complete events per thread; kernels,\n"
    "copies and sets are on per-device, per-stream tracks, joined to their launches by flow\n"
    "arrows. Memory stays bounded whatever the trace's size.\n"
    "\n"
    "  -o OUT      the JSON file to write (required)\n" +
    std::string(kPartialHelp);

constexpr std::size_t kApiWindow = 1u << 16;  // API calls waiting for their thread and work
constexpr std::size_t kMaxLanes = 32;
constexpr std::size_t kMaxStack = 4096;
constexpr std::uint64_t kHostTrackBase = 0x7FFF0000;  // tids of host tracks that are no thread
constexpr std::uint64_t kLaneStride = 1'000'000'000;  // tid of lane k = tid + k * stride

// A JSON string's contents (views/json_text.hpp): a kernel name is the producer's bytes.
std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  views::append_json_text(out, s);
  return out;
}

// A JSON number, or null where JSON has none (a user count can be NaN or infinite).
std::string number_or_null(double x) { return std::isfinite(x) ? fmt::format("{}", x) : "null"; }

class Kineto final : public trace::Visitor {
 public:
  explicit Kineto(std::FILE* out) : out_(out) {}

  void begin() {
    buf_ += "{\n  \"schemaVersion\": 1,\n";
    info_at_ = buf_.size();
    buf_ += distributed_info();
    buf_ += "  \"traceEvents\": [\n";
  }

  bool finish(std::uint64_t* dropped_out) {
    while (!order_.empty()) evict();
    for (auto& [slot, t] : threads_) open_ranges_ += t.stack.size() + t.hidden;
    event(fmt::format(
        R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": "cuscope: host"}}}})",
        host_pid()));
    buf_ += fmt::format(
        "\n  ],\n  \"displayTimeUnit\": \"ms\",\n  \"cuscope\": {{\"records_dropped\": {}, \"open_ranges\": "
        "{}}}\n}}\n",
        dropped_, open_ranges_);
    *dropped_out = dropped_;
    flush();
    return ok_;
  }

  // --- the visitor ---

  void meta(std::string_view key, std::string_view value) override {
    if (key == "start_ns") base_ns_ = number(value);
    if (key == "pid") pid_ = number(value);
    if (key == "max_depth") max_depth_ = number(value);
    if (key == "device") device_ = std::string(value);
    if (key == "rank" || key == "world_size") {
      // The trace's metadata comes first, while the header is still in the buffer: its rank goes
      // into distributedInfo, which HolisticTraceAnalysis tells ranks apart by.
      (key == "rank" ? rank_ : world_size_) = number(value);
      const std::size_t old_size = info_size_;
      const std::string info = distributed_info();
      if (!flushed_ && info_at_ + old_size <= buf_.size()) buf_.replace(info_at_, old_size, info);
    }
  }
  void name(std::uint32_t id, std::string_view text) override { names_[id] = std::string(text); }

  void scope(const trace::ScopeEvent& e) override {
    const std::uint32_t slot = trace::slot_of(e);
    Thread& t = thread(slot);
    switch (trace::kind_of(e)) {
      case trace::ScopeKind::Attach:
        open_ranges_ += t.stack.size() + t.hidden;  // left open by a thread that exited
        t.stack.clear();
        t.hidden = 0;
        t.normal = 0;
        t.tid = e.value != 0 ? e.value : slot;
        name_thread(host_pid(), t.tid, fmt::format("thread {}", t.tid));
        break;
      case trace::ScopeKind::Enter:
        enter(t, e);
        break;
      case trace::ScopeKind::Exit:
        exit(t, e);
        break;
      case trace::ScopeKind::Count: {
        double& total = counts_[e.arg];
        total += std::bit_cast<double>(e.value);
        event(fmt::format(
            R"({{"ph": "C", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "args": {{"value": {}}}}})",
            escape(names_[e.arg]), host_pid(), t.tid, ts(e.ns), number_or_null(total)));
        break;
      }
      case trace::ScopeKind::Overflow:
      case trace::ScopeKind::GraphNode:
      case trace::ScopeKind::Shift:  // the timeline keeps the ranges' real times
        break;
    }
  }

  void on(const model::KernelActivity& k) override {
    const std::uint64_t tid =
        lane(k.device, k.stream, k.start_ns, k.end_ns, fmt::format("stream {}", k.stream));
    event(fmt::format(
        R"({{"ph": "X", "cat": "kernel", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{)"
        R"("device": {}, "stream": {}, "correlation": {}, "grid": [{}, {}, {}], "block": [{}, {}, {}], )"
        R"("registers per thread": {}, "shared memory": {}, "static shared memory": {}, "dynamic shared memory": {}}}}})",
        escape(kernel_name(k.name)), k.device, tid, ts(k.start_ns), dur(k.start_ns, k.end_ns), k.device,
        k.stream, k.correlation, k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2],
        k.registers_per_thread, k.static_shared_bytes + k.dynamic_shared_bytes, k.static_shared_bytes,
        k.dynamic_shared_bytes));
    launched(k.correlation, Work::Kernel, k.device, tid, k.start_ns);
  }
  void on(const model::MemcpyActivity& m) override {
    const std::uint64_t tid =
        lane(m.device, m.stream, m.start_ns, m.end_ns, fmt::format("stream {}", m.stream));
    const std::uint64_t d = m.end_ns > m.start_ns ? m.end_ns - m.start_ns : 0;
    event(fmt::format(
        R"({{"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy {}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, "args": {{)"
        R"J("device": {}, "stream": {}, "correlation": {}, "bytes": {}, "memory bandwidth (GB/s)": {:.3f}, )J"
        R"("blocking": {}}}}})",
        to_string(m.kind), m.device, tid, ts(m.start_ns), dur(m.start_ns, m.end_ns), m.device, m.stream,
        m.correlation, m.bytes, d ? double(m.bytes) / double(d) : 0.0, m.blocking));
    launched(m.correlation, m.blocking ? Work::BlockingMemcpy : Work::Memcpy, m.device, tid, m.start_ns);
  }
  void on(const model::MemsetActivity& m) override {
    const std::uint64_t tid =
        lane(m.device, m.stream, m.start_ns, m.end_ns, fmt::format("stream {}", m.stream));
    event(fmt::format(
        R"J({{"ph": "X", "cat": "gpu_memset", "name": "Memset (Device)", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )J"
        R"("args": {{"device": {}, "stream": {}, "correlation": {}, "bytes": {}}}}})",
        m.device, tid, ts(m.start_ns), dur(m.start_ns, m.end_ns), m.device, m.stream, m.correlation,
        m.bytes));
    launched(m.correlation, Work::Memset, m.device, tid, m.start_ns);
  }
  void on(const model::SyncActivity& s) override {
    const std::uint64_t tid =
        lane(host_pid(), kHostTrackBase + 1, s.start_ns, s.end_ns, "CUDA synchronization");
    event(fmt::format(
        R"({{"ph": "X", "cat": "cuda_sync", "name": "Synchronization", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
        R"("args": {{"correlation": {}}}}})",
        host_pid(), tid, ts(s.start_ns), dur(s.start_ns, s.end_ns), s.correlation));
  }
  void on(const model::MemoryActivity& m) override {
    event(fmt::format(
        R"({{"ph": "i", "s": "p", "cat": "cuda_memory", "name": "{}", "pid": {}, "tid": {}, "ts": {}, )"
        R"("args": {{"device": {}, "correlation": {}, "bytes": {}, "address": {}}}}})",
        m.is_alloc ? "Allocate" : "Free", m.device, kHostTrackBase + 2, ts(m.timestamp_ns), m.device,
        m.correlation, m.bytes, m.address));
    name_thread(m.device, kHostTrackBase + 2, "memory");
  }
  void on(const model::OverheadActivity& o) override {
    const std::uint64_t tid = lane(host_pid(), kHostTrackBase + 3, o.start_ns, o.end_ns, "CUPTI overhead");
    event(fmt::format(
        R"({{"ph": "X", "cat": "overhead", "name": "CUPTI overhead", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})",
        host_pid(), tid, ts(o.start_ns), dur(o.start_ns, o.end_ns)));
  }
  void on(const model::ApiCall& a) override {
    Pending& p = pending(a.correlation);
    p.has_api = true;
    p.api_start = a.start_ns;
    p.api_end = a.end_ns;
  }
  void on(const model::ExternalCorrelation& e) override {
    Pending& p = pending(e.correlation);
    p.instance = e.instance;
    p.has_instance = true;
    // The launching thread as it is now: a tree taken over by another thread later has new ids.
    const std::uint64_t slot = e.instance >> model::kInstanceSeqBits;
    if (auto it = threads_.find(static_cast<std::uint32_t>(slot)); slot != 0 && it != threads_.end())
      p.tid = it->second.tid;
  }
  void step(std::uint64_t now_ns, std::uint64_t step, bool /*recording*/) override {
    if (step == 0) {
      last_step_ns_ = now_ns;
      return;
    }
    const std::uint64_t tid = lane(host_pid(), kHostTrackBase, last_step_ns_, now_ns, "steps");
    event(fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}}})",
        step - 1, host_pid(), tid, ts(last_step_ns_), dur(last_step_ns_, now_ns)));
    last_step_ns_ = now_ns;
  }
  void end(std::uint64_t dropped) override { dropped_ = dropped; }

 private:
  enum class Work : std::uint8_t { None, Kernel, Memcpy, BlockingMemcpy, Memset };
  struct Open {
    std::uint32_t name;
    std::uint64_t begin_ns;
    std::uint64_t instance;
  };
  struct Thread {
    std::uint64_t tid = 0;
    std::vector<Open> stack;
    std::uint32_t normal = 0;  // entries in the range tree (the rest are past the maximum depth)
    std::uint64_t hidden = 0;  // entries past kMaxStack, not shown
  };
  struct Pending {
    bool has_api = false, has_instance = false, has_target = false;
    Work work = Work::None;
    std::uint64_t api_start = 0, api_end = 0, instance = 0, tid = 0;
    std::uint32_t target_pid = 0;
    std::uint64_t target_tid = 0, target_ns = 0;
  };
  struct Track {
    std::vector<std::uint64_t> lane_end;
    std::string label;
  };

  static std::uint64_t number(std::string_view s) {
    std::uint64_t n = 0;
    for (char c : s) {
      if (c < '0' || c > '9') return 0;
      n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return n;
  }

  std::uint64_t host_pid() const { return pid_ != 0 ? pid_ : 4'194'304; }  // past Linux's pid_max

  // Microseconds since the session began, with nanosecond digits (Kineto's unit).
  std::string ts(std::uint64_t ns) const {
    const bool before = ns < base_ns_;
    const std::uint64_t d = before ? base_ns_ - ns : ns - base_ns_;
    return fmt::format("{}{}.{:03}", before ? "-" : "", d / 1000, d % 1000);
  }
  static std::string dur(std::uint64_t start, std::uint64_t end) {
    const std::uint64_t d = end > start ? end - start : 0;
    return fmt::format("{}.{:03}", d / 1000, d % 1000);
  }

  void event(const std::string& e) {
    if (!first_) buf_ += ",\n";
    first_ = false;
    buf_ += "    ";
    buf_ += e;
    if (buf_.size() > (1u << 20)) flush();
  }
  std::string distributed_info() {
    std::string info = fmt::format("  \"distributedInfo\": {{\"rank\": {}, \"world_size\": {}}},\n", rank_,
                                   world_size_ > 0 ? world_size_ : 1);
    info_size_ = info.size();
    return info;
  }
  void flush() {
    flushed_ = flushed_ || !buf_.empty();
    if (!buf_.empty() && std::fwrite(buf_.data(), 1, buf_.size(), out_) != buf_.size()) ok_ = false;
    buf_.clear();
  }

  void name_thread(std::uint64_t pid, std::uint64_t tid, const std::string& label) {
    if (!named_.emplace(std::pair{pid, tid}, true).second) return;
    event(
        fmt::format(R"({{"ph": "M", "name": "thread_name", "pid": {}, "tid": {}, "args": {{"name": "{}"}}}})",
                    pid, tid, escape(label)));
    if (pid != host_pid() && devices_.emplace(pid, true).second)
      event(fmt::format(
          R"({{"ph": "M", "name": "process_name", "pid": {}, "tid": 0, "args": {{"name": "GPU {}"}}}})", pid,
          pid));
  }

  // The tid of the first lane of track (pid, tid) where [start, end) overlaps nothing before it.
  std::uint64_t lane(std::uint64_t pid, std::uint64_t tid, std::uint64_t start, std::uint64_t end,
                     const std::string& label) {
    Track& t = tracks_[std::pair{pid, tid}];
    std::size_t k = 0;
    while (k < t.lane_end.size() && start < t.lane_end[k]) ++k;
    if (k == t.lane_end.size()) {
      if (k == kMaxLanes) {
        k = kMaxLanes - 1;  // past the lanes' bound: may overlap (and be hidden by the viewer)
      } else {
        t.lane_end.push_back(0);
      }
    }
    t.lane_end[k] = std::max(t.lane_end[k], end);
    const std::uint64_t lane_tid = tid + k * kLaneStride;
    name_thread(pid, lane_tid, k == 0 ? label : fmt::format("{} (overlap {})", label, k));
    return lane_tid;
  }

  Thread& thread(std::uint32_t slot) {
    auto [it, fresh] = threads_.try_emplace(slot);
    if (fresh) it->second.tid = slot;
    return it->second;
  }

  void enter(Thread& t, const trace::ScopeEvent& e) {
    if (t.stack.size() >= kMaxStack) {
      ++t.hidden;
      return;
    }
    const bool in_tree =
        t.normal == t.stack.size() && t.normal < std::min<std::uint64_t>(max_depth_, model::kHardMaxDepth);
    if (in_tree) ++t.normal;
    t.stack.push_back(Open{e.arg, e.ns, e.value});
    name_thread(host_pid(), t.tid, fmt::format("thread {}", t.tid));
  }

  void exit(Thread& t, const trace::ScopeEvent& e) {
    if (e.arg == model::ThreadTree::kOverflowDepth) {
      if (t.hidden > 0) {
        --t.hidden;
      } else if (t.stack.size() > t.normal) {
        close(t, e.ns);
      }
      return;
    }
    if (e.arg == 0 || e.arg > t.normal) return;  // unbalanced: nothing of ours to close
    t.hidden = 0;
    while (t.stack.size() >= e.arg) close(t, e.ns);
  }

  void close(Thread& t, std::uint64_t end_ns) {
    std::string path;
    for (const Open& o : t.stack) {
      if (!path.empty()) path += '/';
      path += names_[o.name];
    }
    const Open o = t.stack.back();
    t.stack.pop_back();
    if (t.normal > t.stack.size()) t.normal = static_cast<std::uint32_t>(t.stack.size());
    event(fmt::format(
        R"({{"ph": "X", "cat": "user_annotation", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
        R"("args": {{"path": "{}", "External id": {}}}}})",
        escape(names_[o.name]), host_pid(), t.tid, ts(o.begin_ns), dur(o.begin_ns, end_ns), escape(path),
        o.instance));
  }

  const std::string& kernel_name(const char* raw) {
    auto [it, fresh] = demangled_.try_emplace(raw);
    if (fresh) it->second = model::demangle(raw);
    return it->second;
  }

  Pending& pending(std::uint64_t correlation) {
    auto [it, fresh] = pending_.try_emplace(correlation);
    if (fresh) {
      order_.push_back(correlation);
      if (order_.size() > kApiWindow) {
        evict();
        return pending_[correlation];  // rehashing may have moved it
      }
    }
    return it->second;
  }

  void launched(std::uint64_t correlation, Work work, std::uint32_t pid, std::uint64_t tid,
                std::uint64_t ns) {
    Pending& p = pending(correlation);
    if (p.work == Work::None) p.work = work;
    if (p.has_target) return;  // one arrow per launch: to its first piece of work
    p.has_target = true;
    p.target_pid = pid;
    p.target_tid = tid;
    p.target_ns = ns;
  }

  // Writes the oldest waiting API call with what is known of it by now.
  void evict() {
    const std::uint64_t correlation = order_.front();
    order_.pop_front();
    auto it = pending_.find(correlation);
    if (it == pending_.end()) return;
    const Pending p = it->second;
    pending_.erase(it);
    if (!p.has_api) return;
    const bool internal = p.has_instance && p.instance == model::kCuscopeInternal;
    const std::uint64_t base = p.tid != 0 ? p.tid : kHostTrackBase + (internal ? 5 : 4);
    const std::uint64_t tid = p.tid != 0
                                  ? p.tid
                                  : lane(host_pid(), base, p.api_start, p.api_end,
                                         internal ? "cuscope's own CUDA calls" : "CUDA calls outside scopes");
    const char* name = p.work == Work::Kernel           ? "cudaLaunchKernel"
                       : p.work == Work::Memcpy         ? "cudaMemcpyAsync"
                       : p.work == Work::BlockingMemcpy ? "cudaMemcpy"
                       : p.work == Work::Memset         ? "cudaMemsetAsync"
                                                        : "CUDA API call";
    event(fmt::format(
        R"({{"ph": "X", "cat": "cuda_runtime", "name": "{}", "pid": {}, "tid": {}, "ts": {}, "dur": {}, )"
        R"("args": {{"correlation": {}, "External id": {}}}}})",
        name, host_pid(), tid, ts(p.api_start), dur(p.api_start, p.api_end), correlation, p.instance));
    if (!p.has_target) return;
    event(fmt::format(
        R"({{"ph": "s", "cat": "ac2g", "name": "ac2g", "id": {}, "pid": {}, "tid": {}, "ts": {}}})",
        correlation, host_pid(), tid, ts(p.api_start)));
    event(fmt::format(
        R"({{"ph": "f", "bp": "e", "cat": "ac2g", "name": "ac2g", "id": {}, "pid": {}, "tid": {}, "ts": {}}})",
        correlation, p.target_pid, p.target_tid, ts(p.target_ns)));
  }

  std::FILE* out_;
  std::string buf_;
  bool first_ = true;
  std::size_t info_at_ = 0, info_size_ = 0;  // where distributedInfo is in buf_
  bool flushed_ = false;
  std::uint64_t rank_ = 0, world_size_ = 0;
  bool ok_ = true;
  std::uint64_t base_ns_ = 0, pid_ = 0, max_depth_ = 64, last_step_ns_ = 0;
  std::uint64_t dropped_ = 0, open_ranges_ = 0;
  std::string device_;
  absl::flat_hash_map<std::uint32_t, std::string> names_;
  absl::flat_hash_map<std::uint32_t, double> counts_;
  absl::flat_hash_map<std::uint32_t, Thread> threads_;
  absl::flat_hash_map<const char*, std::string> demangled_;
  absl::flat_hash_map<std::pair<std::uint64_t, std::uint64_t>, Track> tracks_;
  absl::flat_hash_map<std::pair<std::uint64_t, std::uint64_t>, bool> named_;
  absl::flat_hash_map<std::uint64_t, bool> devices_;
  absl::flat_hash_map<std::uint64_t, Pending> pending_;
  std::deque<std::uint64_t> order_;
};

}  // namespace

int trace(const Args& args) {
  std::string path, out;
  bool partial = false;
  const auto extra = [&partial](CommandLine& cl) { return cl.flag("--partial") && (partial = true); };
  if (const int status = parse_file_and_output("trace", kHelp.c_str(), args, true, &path, &out, extra);
      status >= 0)
    return status;
  trace::Reader reader;
  reader.accept_cut(partial);
  std::string error;
  if (!reader.open(path, &error)) return fail("trace", path + ": " + error);
  OutputFile file;  // OUT as it was until the new one is whole (never half a JSON file)
  if (!file.open(out, &error)) return fail("trace", error);
  Kineto k(file.file());
  k.begin();
  if (!reader.read(k, &error)) return fail("trace", path + ": " + error);
  std::uint64_t dropped = 0;
  const bool written = k.finish(&dropped);
  const bool committed = file.commit(&error);  // a write that failed fails it too, with why
  if (!committed || !written) return fail("trace", committed ? "cannot write '" + out + "'" : error);
  say_cut("trace", path, reader.cut());
  if (dropped > 0)
    std::fprintf(stderr, "cuscope trace: %s is truncated: %llu records did not fit (CUSCOPE_TRACE_LIMIT)\n",
                 path.c_str(), static_cast<unsigned long long>(dropped));
  return 0;
}

}  // namespace cuscope::cli

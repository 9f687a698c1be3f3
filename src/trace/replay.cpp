// trace/replay.cpp — feeds a trace's events to a Forest and an Aggregator, as the session did.
//
// Thread slots are the live session's; replayed trees get their own slots, and instance ids
// (slot << 48 | sequence) are translated when external correlations name them. Sequences match
// because each tree sees the same begin() calls in the same order.
#include "trace/replay.hpp"

#include <absl/container/flat_hash_map.h>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>
#include <string_view>
#include <vector>

#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "session/hardware.hpp"

namespace cuscope::trace {

namespace {

// `text` as a decimal number of 1 to `max_digits` digits (at most 18: no overflow); nullopt when
// it is not one.
std::optional<std::uint64_t> decimal(std::string_view text, std::size_t max_digits) {
  if (text.empty() || text.size() > max_digits) return std::nullopt;
  std::uint64_t n = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n;
}

// The whole number after `key` ("wait=") in the first of the options line's space-separated
// fields that starts with it; 0 when there is none or it is not one.
std::uint64_t option_field(std::string_view line, std::string_view key) {
  while (!line.empty()) {
    const std::size_t end = std::min(line.find(' '), line.size());
    const std::string_view field = line.substr(0, end);
    if (field.starts_with(key)) return decimal(field.substr(key.size()), 18).value_or(0);
    line.remove_prefix(std::min(end + 1, line.size()));
  }
  return 0;
}

class Replay final : public Visitor {
 public:
  Replay() { forest_.record_instances.store(true, std::memory_order_relaxed); }

  void meta(std::string_view key, std::string_view value) override {
    if (key == "rank" || key == "world_size" || key == "pid") {
      // A value that is not a small decimal number leaves the field unknown.
      if (const std::optional<std::uint64_t> n = decimal(value, 9))
        (key == "rank" ? rank_ : key == "world_size" ? world_size_ : pid_) = static_cast<std::int64_t>(*n);
      return;
    }
    if (key == "options") window_start_ = option_field(value, "wait=") + option_field(value, "warmup=");
    if (key == "host") host_ = std::string(value);
    if (key == "device") device_ = std::string(value);
    if (key != "max_depth") return;
    std::uint32_t depth = 0;
    for (char c : value) {
      if (c < '0' || c > '9' || depth > model::kHardMaxDepth) return;
      depth = depth * 10 + static_cast<std::uint32_t>(c - '0');
    }
    if (depth == 0 || depth > model::kHardMaxDepth) return;
    forest_.max_depth.store(depth, std::memory_order_relaxed);
  }

  void name(std::uint32_t id, std::string_view text) override { names_[id] = forest_.names.intern(text); }

  void scope(const ScopeEvent& e) override {
    if (slot_of(e) == 0) {  // a thread with no scope state: only graph nodes, with no range
      if (kind_of(e) == ScopeKind::GraphNode) agg_.on(model::GraphNodeCreated{e.value, e.arg, nullptr});
      return;
    }
    model::ThreadTree* tree = tree_for(slot_of(e));
    if (tree == nullptr) {  // past the forest's threads: only a crafted trace has more than a session could
      ++no_tree_;
      return;
    }
    switch (kind_of(e)) {
      case ScopeKind::Attach:  // another thread: what was open is abandoned, and it counts anew
        tree->abandon_open();
        tree->new_owner();
        break;
      case ScopeKind::Enter:
        tree->begin(names_[e.arg], e.ns);
        break;
      case ScopeKind::Exit:
        tree->end(e.arg, e.ns);
        break;
      case ScopeKind::Count:
        tree->count(names_[e.arg], std::bit_cast<double>(e.value));
        break;
      case ScopeKind::Overflow:
        tree->depth_overflows.add(1);
        break;
      case ScopeKind::GraphNode:
        agg_.on(model::GraphNodeCreated{e.value, e.arg, tree->innermost()});
        break;
      case ScopeKind::Shift:  // arg: the frame's depth, or 0 for every open frame (files before 2026-11-28)
        if (e.arg == 0) {
          tree->shift_open(e.value);
        } else {
          tree->shift_frame(e.arg, e.value);
        }
        break;
    }
  }

  void on(const model::KernelActivity& k) override { agg_.on(k); }
  void on(const model::ApiCall& a) override { agg_.on(a); }
  void on(const model::ExternalCorrelation& e) override {
    agg_.on(model::ExternalCorrelation{e.correlation, translate(e.instance)});
  }
  void on(const model::MemcpyActivity& m) override { agg_.on(m); }
  void on(const model::MemsetActivity& m) override { agg_.on(m); }
  void on(const model::SyncActivity& s) override { agg_.on(s); }
  void on(const model::MemoryActivity& m) override { agg_.on(m); }
  void on(const model::OverheadActivity& o) override { agg_.on(o); }
  void on(const model::GraphNodeCloned& c) override { agg_.on(c); }
  void on(const model::GraphExecNodes& n) override { agg_.on(n); }
  void on(const model::GraphExecUpdated& u) override { agg_.on(u); }
  // What consume_buffer does after each buffer.
  void buffer_end(std::uint64_t dropped, std::uint64_t unknown) override {
    agg_.add_unknown(unknown);
    agg_.add_dropped(dropped);
    agg_.settle(2, false);
  }
  void final_flush() override { agg_.set_final_flush(true); }
  // Ranges merge by path across threads: the first tree that holds the path takes the time.
  void gpu_time(std::uint64_t ns, const std::vector<std::uint32_t>& path) override {
    for (const auto& [slot, tree] : trees_) {
      if (tree == nullptr) continue;
      const model::Node* node = &tree->root();
      for (std::uint32_t live_id : path) {
        const std::uint32_t id = names_[live_id];
        const model::Node* c = node->first_child.load(std::memory_order_acquire);
        while (c != nullptr && c->name_id != id) c = c->next_sibling.load(std::memory_order_acquire);
        node = c;
        if (node == nullptr) break;
      }
      if (node != nullptr) {
        const_cast<model::Node*>(node)->gpu.add(ns);
        return;
      }
    }
  }
  // Mark k ends step k (1-based); its flag says whether the steps after it are in the window.
  void step(std::uint64_t now_ns, std::uint64_t step, bool in_window) override {
    if (step != 0) {
      marked_steps_ = step;
      if (in_window_) ++marked_recorded_;
    }
    in_window_ = in_window;
    follow(now_ns);
  }
  // CUPTI attached again: the books keyed by its ids forgotten, as live.
  void reattached(std::uint64_t /*now_ns*/) override { agg_.reattached(); }
  // The program switched recording on or off (set_enabled()).
  void recording(std::uint64_t now_ns, bool on) override {
    on_ = on;
    follow(now_ns);
  }
  void summary(const Summary& s) override {
    summary_ = s;
    has_summary_ = true;
  }
  void end(std::uint64_t dropped) override { dropped_ = dropped; }

  void build(Report& r, const std::string& cut) {
    agg_.settle(1);  // as at shutdown: what still waits never resolves
    agg_.build(r);
    if (!has_summary_) {  // cut before the session wrote its summary: what it would have said is unknown
      summary_.device = device_;
      summary_.gpu_timing = summary_.activity_status = "not known: the trace was cut before its summary";
      summary_.steps = marked_steps_;  // the step marks say what the summary would have
      summary_.recorded_steps = marked_recorded_;
      summary_.window_start_step = window_start_;
    }
    if (!cut.empty()) {
      summary_.notes.push_back(
          fmt::format("this trace was cut short ({}): the program was killed, crashed or still runs; the "
                      "report holds what the file held before the cut, and how many records the session "
                      "dropped at the trace's size limit is not known (the end record counts them)",
                      cut));
    }
    const Summary& s = summary_;
    r.device = s.device;
    r.gpu_timing = s.gpu_timing;
    r.activity_status = s.activity_status;
    r.counters_status = s.counters_status;
    r.clock = s.clock;
    r.window_start_step = s.window_start_step;
    r.notes = s.notes;
    r.steps = s.steps;
    r.recorded_steps = s.recorded_steps;
    r.clock_steps = s.clock_steps;
    r.step_ms = s.step_ms;
    r.wall_ns = s.wall_ns;
    r.final = has_summary_ && cut.empty();  // the session's end is in the file
    r.rank = rank_;
    r.world_size = world_size_;
    r.pid = pid_;
    r.host = host_;
    Diagnostics& d = r.diagnostics;
    d.cross_thread_ends = s.cross_thread_ends;
    d.unbalanced_ends += s.stray_pops;
    d.gpu_event_failures = s.gpu_event_failures;
    d.scopes_in_capture = s.scopes_in_capture;
    d.outside_window_scopes = s.outside_window_scopes;
    d.rejected_counts = s.rejected_counts;
    d.unrecorded_scopes = s.unrecorded_scopes;
    // The live name table is the process's: its adjustments are the program's, not the replay's.
    d.adjusted_names = s.adjusted_names;
    d.name_table_full = s.name_table_full;
    d.activity_buffers_refused += s.refused_buffers;
    // The live session's own processing: a replay does none of its own that a report should show.
    d.activity_buffers = s.activity_buffers;
    d.activity_processing_ns = s.activity_processing_ns;
    d.trace_records_dropped = dropped_ + s.spans_cut + no_tree_;
    r.spans = s.spans;
    d.unmatched_span_ends = s.unmatched_span_ends;
    d.spans_dropped = s.spans_dropped;
    model::DevicePeaks peaks;
    peaks.dram_bytes_per_s = s.dram_bytes_per_s;
    peaks.fp64_flops_per_s = s.fp64_flop_per_s;
    peaks.fp32_flops_per_s = s.fp32_flop_per_s;
    peaks.fp16_flops_per_s = s.fp16_flop_per_s;
    peaks.source = s.peaks_source;
    detail::apply_verdicts(r, peaks, {});  // sets r.peaks too
  }

 private:
  model::ThreadTree* tree_for(std::uint32_t live_slot) {
    if (auto it = trees_.find(live_slot); it != trees_.end()) return it->second;
    model::ThreadTree* t = forest_.make_tree();
    trees_.emplace(live_slot, t);
    return t;
  }
  std::uint64_t translate(std::uint64_t instance) const {
    const std::uint64_t live_slot = instance >> model::kInstanceSeqBits;
    if (live_slot == 0) return instance;  // kNoInstance, kOutsideWindow, kCuscopeInternal
    auto it = trees_.find(static_cast<std::uint32_t>(live_slot));
    // A thread the trace never saw: an instance no tree holds, so it counts as unresolved.
    const std::uint64_t slot = it != trees_.end() && it->second ? it->second->slot() : 0xFFFF;
    return (slot << model::kInstanceSeqBits) | (instance & model::kInstanceSeqMask);
  }

  model::Forest forest_;
  model::Aggregator agg_{forest_};
  absl::flat_hash_map<std::uint32_t, std::uint32_t> names_;  // live name id -> replay id
  absl::flat_hash_map<std::uint32_t, model::ThreadTree*> trees_;
  // The model records work outside every scope in the window while recording is on, as live
  // (session/window.cpp: records()).
  void follow(std::uint64_t now_ns) {
    if ((in_window_ && on_) == recording_) return;
    recording_ = in_window_ && on_;
    agg_.set_recording(recording_, now_ns);
  }
  bool in_window_ = true, on_ = true, recording_ = true;
  // For a trace cut before its summary: the steps its marks count, and wait + warm-up from its options.
  std::uint64_t marked_steps_ = 0, marked_recorded_ = 0, window_start_ = 0;
  Summary summary_;
  bool has_summary_ = false;
  std::string device_;  // from the trace's metadata, for a trace cut before its summary
  std::uint64_t dropped_ = 0;
  std::uint64_t no_tree_ = 0;                          // scope records of threads past the forest's, dropped
  std::int64_t rank_ = -1, world_size_ = 0, pid_ = 0;  // from the trace's metadata; unknown in older files
  std::string host_;
};

}  // namespace

bool replay(Reader& reader, Report* out, std::string* error) {
  // The model holds what is distinct (paths, kernels); on the heap, it is large (direct-mapped tables).
  auto r = std::make_unique<Replay>();
  if (!reader.read(*r, error)) return false;
  r->build(*out, reader.cut());
  return true;
}

bool replay_file(const std::string& path, Report* out, std::string* error, bool partial, std::string* cut) {
  Reader reader;
  reader.accept_cut(partial);
  if (!reader.open(path, error) || !replay(reader, out, error)) return false;
  if (cut != nullptr) *cut = reader.cut();
  return true;
}

}  // namespace cuscope::trace

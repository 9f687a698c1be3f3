// cuscope/report.hpp — the in-memory report: a snapshot of the range tree.
//
// A Report is a plain value: taking one copies what was aggregated so far, and
// nothing in it points back into the live session. Every time is in
// nanoseconds (`_ns`), every size in bytes (`_bytes`).
//
// Example:
//   cuscope::Report r = cuscope::snapshot();
//   const cuscope::RangeStats* step = r.find("step");
//   const cuscope::RangeStats* mlp = r.find("step/mlp");
//   if (step && mlp && step->host.total_ns > 0) {
//     double share = double(mlp->host.total_ns) / double(step->host.total_ns);
//     std::printf("MLP: %.1f%% of the step, %zu kernels\n", 100 * share, mlp->kernels.size());
//   }
//   std::fputs(cuscope::format_table(r).c_str(), stdout);
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope {
inline namespace v0 {

/// Count, total, min and max of a set of durations. `min_ns`/`max_ns` are 0 when count is 0.
struct DurationStats {
  std::uint64_t count = 0;
  std::uint64_t total_ns = 0;
  std::uint64_t min_ns = 0;
  std::uint64_t max_ns = 0;
  /// Which call took `max_ns`, 1-based, among the calls of the thread that made it (the first of
  /// equal maxima; over several threads, that of the thread with the longest): the 1st points to
  /// first-time work, a later one to a hiccup. Range `host` times only; 0 = unknown (other
  /// durations, a report that did not record it, or calls that all took 0 ns).
  std::uint64_t max_call = 0;
  [[nodiscard]] double mean_ns() const { return count ? double(total_ns) / double(count) : 0.0; }
};

/// One kernel (by demangled name and launch shape) as launched inside one range.
struct KernelStats {
  std::string name;  ///< demangled
  DurationStats duration;
  std::array<std::uint32_t, 3> grid{};
  std::array<std::uint32_t, 3> block{};
  std::uint32_t registers_per_thread = 0;
  std::uint32_t static_shared_bytes = 0;
  std::uint32_t dynamic_shared_bytes = 0;
  std::uint32_t device = 0;
};

/// Direction of a memory copy, as CUPTI names it (host = pageable or pinned host memory).
enum class CopyKind : std::uint8_t { HtoD, DtoH, DtoD, HtoH, PtoP, Other };
inline constexpr std::size_t kCopyKinds = 6;
[[nodiscard]] std::string_view to_string(CopyKind k);

struct CopyStats {
  std::uint64_t count = 0;
  std::uint64_t bytes = 0;
  std::uint64_t total_ns = 0;
  /// Achieved bandwidth in bytes per second of copy time (0 when no time was measured).
  [[nodiscard]] double bytes_per_s() const { return total_ns ? double(bytes) * 1e9 / double(total_ns) : 0.0; }
};

/// Everything the GPU did on behalf of a range (its own work, or its subtree's for `total`).
struct ActivityStats {
  std::uint64_t kernel_calls = 0;
  std::uint64_t kernel_ns = 0;    ///< sum of kernel durations (overlapping kernels count twice)
  std::uint64_t gpu_busy_ns = 0;  ///< union of kernel intervals: time at least one kernel ran
  std::uint64_t gpu_span_ns = 0;  ///< per call, first kernel/copy/set start to last end, summed
  std::array<CopyStats, kCopyKinds> memcpy{};
  std::uint64_t memset_count = 0;
  std::uint64_t memset_bytes = 0;
  std::uint64_t memset_ns = 0;
  /// Waits: with synchronization records, every one CUPTI records (synchronizes, queries of finished
  /// work, stream waits); without them (the defaults), the context, stream and event synchronizes,
  /// timed on the host from entry to exit. Report::activity_status says which.
  std::uint64_t sync_count = 0;
  std::uint64_t sync_ns = 0;
  /// Device and managed allocations and frees; without memory records a free's bytes are those its
  /// allocation was booked with.
  std::uint64_t alloc_count = 0;
  std::uint64_t alloc_bytes = 0;
  std::uint64_t free_count = 0;
  std::uint64_t free_bytes = 0;
  /// Highest live bytes allocated by the range (in `self`) or by the range and its subtree (in
  /// `total`): an allocation is live from its alloc to its free, wherever the free happens.
  std::uint64_t peak_bytes = 0;
  /// Copies with a pageable (not pinned) host side, and their bytes: staged through a pinned
  /// buffer, and synchronous with the host. Also counted in `memcpy`.
  std::uint64_t pageable_copies = 0;
  std::uint64_t pageable_bytes = 0;
  /// Copies between host and device made by synchronous calls (cudaMemcpy, not cudaMemcpyAsync),
  /// and their bytes: the calling thread waited in each for the GPU's earlier work on the stream
  /// and for the copy. Not in `sync_count`; also counted in `memcpy`.
  std::uint64_t blocking_copies = 0;
  std::uint64_t blocking_bytes = 0;
  /// Streams the range's kernels ran on (in `total`: the most of any range of the subtree). Each
  /// thread's range tracks 4 streams; kernels on more count as one more stream.
  std::uint32_t kernel_streams = 0;
  /// Kernel time on the busiest of those streams, per thread that ran the range, summed (in
  /// `total`: over the subtree). `kernel_ns` minus this is the work that could have overlapped.
  std::uint64_t busiest_stream_ns = 0;
  /// GPU active share of the range's GPU span (the seeds' "GPU active %"), in [0, 1]. At most 1
  /// although busy time can pass the span: a record that comes after its call left the table
  /// counts in busy time but not in any call's span (`Diagnostics::gpu_span_records_lost`).
  [[nodiscard]] double busy_share() const {
    if (gpu_span_ns == 0) return 0.0;
    return gpu_busy_ns >= gpu_span_ns ? 1.0 : double(gpu_busy_ns) / double(gpu_span_ns);
  }
};

/// A user counter (cuscope::count / CUSCOPE_COUNT) of a range, with its rates.
struct CountStats {
  std::string name;
  double self = 0;             ///< counted while this range was the innermost open scope
  double total = 0;            ///< self plus every descendant's
  double per_host_second = 0;  ///< total per second of the range's host time
  double per_gpu_second = 0;   ///< total per second of its GPU time (gpu_time(), else GPU busy); 0 if none
};

/// A hardware counter of a range (CUSCOPE_METRICS), over the kernels replayed inside it.
struct MetricValue {
  std::string name;   ///< CUPTI metric name, e.g. "dram__bytes_read.sum"
  std::string label;  ///< short label for tables, e.g. "DRAM read"
  std::string unit;   ///< e.g. "byte", "percent", "nanosecond"
  double value = 0;   ///< summed (counts, bytes, durations) or duration-weighted (percentages, rates)
};

/// What limits a range, as the roofline reasoning of the profiling guides tells it.
enum class Bound : std::uint8_t { unknown, memory, compute, latency, launch };
[[nodiscard]] std::string_view to_string(Bound b);  ///< "memory-bound", ..., "unknown"

/// A range's roofline verdict: achieved rates from its counters (0 when not measured) and the
/// classification, with one line of reasoning ("DRAM at 87% of peak while SM at 12%: ...").
/// Launch-bound needs no counters (busy share, kernel count and length); the others do.
struct Verdict {
  Bound bound = Bound::unknown;
  double dram_bytes_per_s = 0;      ///< DRAM bytes over kernel time
  double flop_per_s = 0;            ///< FLOPs over kernel time
  double arithmetic_intensity = 0;  ///< FLOP per DRAM byte
  double roofline_pct = 0;          ///< achieved FLOP/s as % of the roofline ceiling at that intensity
  std::string reason;
};

/// The device's peaks the verdicts are measured against (theoretical, from its properties).
struct DevicePeaks {
  double dram_bytes_per_s = 0;
  double fp64_flop_per_s = 0;
  double fp32_flop_per_s = 0;
  double fp16_flop_per_s = 0;  ///< CUDA cores, not tensor cores
  std::string source;          ///< "device properties", or "" when unknown (no GPU)
};

/// How much a finding matters: info (worth a look) or warning (likely costs time).
enum class Severity : std::uint8_t { info, warning };
[[nodiscard]] std::string_view to_string(Severity s);  ///< "info", "warning"

/// An observation about a range, with its evidence in numbers, its likely cause and the fix
/// (docs/findings.md). `id` names the rule: "launch-bound", "gpu-idle-gaps", "small-kernels", ...
struct Finding {
  std::string id;
  Severity severity = Severity::info;
  std::string observation;  ///< e.g. "GPU busy 31% of the range's GPU span, 412 kernels averaging 4.1 µs"
  std::string cause;
  std::string fix;
};

/// Kernels of CUDA graphs launched in a range, grouped by the range each kernel's graph node was
/// created in (captured, or added by hand): docs/cuda-graphs.md. They are also in the launching
/// range's `self` and `kernels`, as any kernel it launched: this is a second view, not more work.
struct GraphPathStats {
  /// The capture-time range's path ("layer_3/attention"); kUnscopedName for nodes created outside
  /// every range, kUnknownGraphNodeName for nodes cuscope does not know.
  std::string path;
  std::uint64_t kernel_calls = 0;
  std::uint64_t kernel_ns = 0;       ///< sum of kernel durations
  std::uint64_t gpu_busy_ns = 0;     ///< union of these kernels' intervals
  std::vector<KernelStats> kernels;  ///< by total duration, longest first
};

/// GraphPathStats::path of graph kernels whose node is not known: created before tracing
/// started, evicted from the bounded node map, or in a graph launched from the device.
inline constexpr std::string_view kUnknownGraphNodeName = "(unknown node)";

/// One node of the range tree: a scope name under a given parent path.
struct RangeStats {
  std::string name;                   ///< the scope's name; "" for the root
  std::string path;                   ///< "step/forward/attention"; "" for the root
  std::size_t parent = 0;             ///< index into Report::ranges (the root is its own parent)
  std::vector<std::size_t> children;  ///< indices into Report::ranges, in order of first entry
  int depth = 0;                      ///< root 0, top-level ranges 1

  std::uint64_t calls = 0;            ///< completed entries, direct recursion included
  std::uint64_t open = 0;             ///< entries still open when the snapshot was taken
  std::uint64_t recursive_calls = 0;  ///< entries that re-entered an open range of the same name
  std::uint32_t threads = 0;          ///< distinct threads that entered this range
  DurationStats host;                 ///< inclusive host time per completed (outermost) entry
  std::uint64_t host_self_ns = 0;     ///< host time minus the time of child ranges
  /// CUDA-event time between the scope's start and stop events; `count` is the number of calls
  /// timed by events (CUSCOPE_EVENTS decides which).
  DurationStats gpu;
  /// The projected span of each call that launched GPU work (its own or its descendants'), from
  /// CUPTI: the start of its first kernel, copy or set to the end of its last one, whatever the
  /// stream (Nsight Systems' nvtx_gpu_proj_sum, Kineto's GPU user annotation). Leaves out the idle
  /// lead-in before the first operation that an event pair counts. `count`: calls with GPU work.
  DurationStats gpu_projected;
  /// The range's GPU time per call: the projected span where CUPTI traced its work, else the
  /// CUDA-event time (the table's "GPU total").
  [[nodiscard]] const DurationStats& gpu_time() const {
    return gpu_projected.count != 0 ? gpu_projected : gpu;
  }

  ActivityStats self;                  ///< work launched directly in this range
  ActivityStats total;                 ///< self plus every descendant (inclusive roll-up)
  std::vector<KernelStats> kernels;    ///< own kernels, by total duration, longest first
  std::vector<CountStats> counts;      ///< user counters, by name
  std::uint64_t profiled_kernels = 0;  ///< kernels replayed for counters, inclusive of the subtree
  std::vector<MetricValue> metrics;    ///< hardware counters, inclusive of the subtree, in plan order
  Verdict verdict;                     ///< from `total` and `metrics`
  std::vector<Finding> findings;       ///< what the rules found, warnings first (docs/findings.md)
  /// Graph kernels launched directly in this range, by capture-time path (by kernel time, longest
  /// first); empty when none, or when the breakdown is off (see Report::notes).
  std::vector<GraphPathStats> graph;
};

/// Counters of everything that was off, dropped or misused. Shown in the table header when non-zero.
struct Diagnostics {
  std::uint64_t dropped_records = 0;  ///< CUPTI activity records it could not store
  std::uint64_t zero_timestamp_records = 0;
  std::uint64_t unresolved_records = 0;      ///< correlation to a scope never resolved
  std::uint64_t unknown_records = 0;         ///< record kinds cuscope does not decode
  /// GPU work of warm-up or waiting steps, left out; also work outside every scope while recording is
  /// off (set_enabled(false)) where CUPTI could not pause
  std::uint64_t outside_window_records = 0;
  std::uint64_t open_scopes = 0;             ///< scopes still open when the snapshot was taken
  std::uint64_t unbalanced_ends = 0;         ///< ends that did not match the innermost open range
  std::uint64_t cross_thread_ends = 0;       ///< scopes ended on another thread than they began
  std::uint64_t depth_overflows = 0;         ///< entries past the maximum depth (timed to the parent)
  std::uint64_t adjusted_names = 0;          ///< names that were empty, too long or held '/' or control bytes
  std::uint64_t name_table_full = 0;         ///< entries whose name did not fit in the name table
  std::uint64_t gpu_event_failures = 0;      ///< scopes whose CUDA events could not be recorded or read,
                                             ///< or had not finished when the session ended
  std::uint64_t overhead_records = 0;        ///< CUPTI overhead records (their time is in overhead_ns)
  std::uint64_t overhead_ns = 0;
  std::uint64_t counter_ranges_dropped = 0;  ///< replayed kernels whose counters could not be read
  std::uint64_t incomplete_at_exit = 0;  ///< GPU work still running at shutdown, or at the detach after the
                                         ///< last step window (records CUPTI could not complete)
  std::uint64_t activity_buffers_refused =
      0;  ///< CUPTI buffer requests past cuscope's memory bound (records dropped)
  std::uint64_t scopes_in_capture =
      0;  ///< scopes whose stream was being captured into a CUDA graph (no CUDA-event time)
  std::uint64_t unrecorded_scopes = 0;      ///< not recorded: 65535 threads held a tree, or out of memory
  /// scope entries outside the step window, left out (one still open when the window opens, with a
  /// scope recorded inside it, counts as a call of its range instead, and as left out again from that
  /// window's end until the next window opens it)
  std::uint64_t outside_window_scopes = 0;
  std::uint64_t rejected_counts = 0;        ///< count() amounts that were inf or NaN, not added
  std::uint64_t trace_records_dropped =
      0;  ///< trace mode: records that did not fit (CUSCOPE_TRACE_LIMIT); the trace is truncated
  std::uint64_t unmatched_span_ends = 0;            ///< nvtxRangeEnd with an id no open start/end range has
  std::uint64_t spans_dropped = 0;                  ///< start/end ranges not tracked: too many open at once
  std::uint64_t graph_nodes_evicted = 0;            ///< CUDA graph nodes forgotten: the node map is bounded
  std::uint64_t graph_kernels_unknown_node = 0;     ///< graph kernels under "(unknown node)"
  std::uint64_t graph_kernels_device_launched = 0;  ///< kernels of device-launched graphs, wherever they went
  /// Kernels replayed for hardware counters: CUPTI gives their activity records no timestamps, so
  /// they are not in kernel_calls or kernel time; their range's counters (profiled_kernels, GPU time
  /// from gpu__time_duration.sum) cover them.
  std::uint64_t counted_kernels_untimed = 0;
  /// Graph kernels whose record names no launch (correlation id 0; seen for a conditional node's body
  /// kernels on an H100): counted here, in no range, rather than as records not matched to a scope.
  std::uint64_t graph_kernels_no_launch = 0;
  /// Graph kernels launched after cudaGraphExecUpdate whose node cuscope could not pair with the
  /// updating graph's: under "(unknown node)" (and counted there too), never the old graph's scope.
  std::uint64_t graph_kernels_after_update = 0;
  /// cudaGraphExecUpdate calls on an exec none of whose nodes cuscope knows (its instantiation was
  /// not seen): later replays of that exec may keep the old graph's capture scopes.
  std::uint64_t graph_exec_updates_unmapped = 0;
  /// GPU records of a call that had already left the model's bounded table of calls: counted in
  /// their range's kernels, copies and busy time, but not in its call's span (gpu_span_ns,
  /// gpu_projected), which would otherwise count the call twice. Spans are then lower bounds.
  std::uint64_t gpu_span_records_lost = 0;
  /// Device allocations whose live bytes cuscope could not follow: its table of live allocations
  /// was full, or the address was allocated again before its free was seen. Live-memory peaks
  /// (peak_bytes) are then lower bounds.
  std::uint64_t allocations_untracked = 0;
  /// Launches whose scope the launch callbacks could not note (CUSCOPE_ATTRIBUTION=launch: the
  /// launching thread's ring of notes was full, or no memory for it): their GPU work counts as
  /// not matched to a scope (unresolved_records). Also the synchronizes, allocations and frees the
  /// call callbacks could not note (their queue of 16,384 was full): those calls are missing.
  std::uint64_t launch_notes_lost = 0;
  /// Kernel name lookups past the name cache's bound (8,192 distinct names): each demangled the
  /// name anew. The names stay right; only their cost grows.
  std::uint64_t kernel_names_uncached = 0;
  /// cuscope's own processing of CUPTI's activity records in a live session (0 in a replay): the
  /// buffers it decoded and attributed, and the host time that took, on whichever thread CUPTI
  /// handed them over (its worker thread, cuscope's collector, a flush or snapshot). Not in it:
  /// the scopes' enter and exit, the launch callbacks, CUPTI's own work.
  std::uint64_t activity_buffers = 0;
  std::uint64_t activity_processing_ns = 0;
};

/// An NVTX start/end range (nvtxRangeStart/nvtxRangeEnd, zero-code mode): it may end on another
/// thread and need not nest, so it is reported apart from the range tree, by domain and name, with
/// host time only (GPU work is attributed to push/pop ranges and scopes).
///
/// Example:
///   for (const cuscope::SpanStats& s : cuscope::snapshot().spans)
///     std::printf("%s %s: %llu done, %llu open\n", s.domain.c_str(), s.name.c_str(),
///                 (unsigned long long)s.host.count, (unsigned long long)s.open);
struct SpanStats {
  std::string domain;              ///< NVTX domain name; "" for the default domain
  std::string name;                ///< the range's message
  DurationStats host;              ///< completed spans
  std::uint64_t open = 0;          ///< started, not ended when the snapshot was taken
  std::uint64_t cross_thread = 0;  ///< completed spans that ended on another thread than they began
};

/// Report::counters_status when no hardware counters were asked for.
inline constexpr std::string_view kCountersNotRequested = "not requested (CUSCOPE_METRICS)";

/// The name of the top-level range that holds GPU work launched outside every scope.
inline constexpr std::string_view kUnscopedName = "(unscoped)";

/// The top-level range under which the steps that ran with hardware counters are reported, apart
/// from the others: kernel replay serializes and re-runs their kernels, so their host, CUDA-event
/// and kernel times are not those of a normal step.
inline constexpr std::string_view kCountedStepsName = "(counted steps)";

/// A snapshot of everything cuscope knows. `ranges[0]` is the root (always present); a top-level
/// range named kUnscopedName holds GPU work launched outside every scope. The root's `total`
/// sums its children's, but its busy time is the union of every kernel interval (top-level ranges
/// of several threads may overlap on the GPU) and it has no span (gpu_span_ns 0: it has no calls).
struct Report {
  std::vector<RangeStats> ranges = std::vector<RangeStats>(1);
  std::vector<SpanStats> spans;  ///< NVTX start/end ranges, by host total, longest first
  Diagnostics diagnostics;

  std::string device;  ///< e.g. "NVIDIA H100 80GB HBM3 (sm_90)", or "no GPU"
  /// How calls' GPU time was measured: "on" (CUDA events), "on, ..." (events, with how: sampled,
  /// timed by CUPTI), "projected: ..." (no events: each call's span of the GPU work CUPTI traced),
  /// or one line saying why there is no GPU time.
  std::string gpu_timing;
  /// "on" when CUPTI traced every kind of record; "on, ..." when it traced with some kinds off
  /// (by default the synchronization and memory records: "on, synchronizes and allocations seen by
  /// callbacks, without their records (...)"); either may end ", paused outside the step window", or
  /// ", detached after the last step window" once cuscope detached CUPTI after its last window
  /// (Options::detach), or, between windows (Options::detach_between), ", detached between step
  /// windows until the next one", and once attached again "..., detached between step windows and
  /// attached again N times, paused outside the step window"; while recording is off
  /// (set_enabled(false), CUSCOPE_ENABLE=0) and no detach was asked, ", paused while recording is
  /// off (...)" follows, or, with Options::detach_between, ", detached while recording is off", and
  /// once attached again "..., detached while recording was off and attached again N times"; or one
  /// line saying why CUPTI tracing is off or not attached (a session started with recording off:
  /// "not attached yet: CUPTI attaches when recording is switched on (...)"). tracing_on() tells the
  /// two apart.
  std::string activity_status;
  std::string counters_status{kCountersNotRequested};  ///< "on: ...", or why hardware counters are off
                                                       ///< (the table prints "off — <reason>")
  std::vector<std::string> notes;                      ///< other things a reader must know (bad options, ...)
  std::string clock;  ///< what times are read from: "TSC, kept on the CLOCK_MONOTONIC basis (...)", or
                      ///< "CLOCK_MONOTONIC (why)"
  DevicePeaks peaks;

  std::uint64_t steps = 0;              ///< steps marked with cuscope::step()
  std::uint64_t recorded_steps = 0;     ///< of those, steps inside the active window
  /// Of `steps`, those cuscope's clock ended (CUSCOPE_STEP_MS, every `step_ms` milliseconds: a
  /// program that never calls step(); its first step() stops them); 0: the program's own.
  std::uint64_t clock_steps = 0;
  std::uint64_t step_ms = 0;            ///< the clock's period where clock_steps > 0, else 0
  std::uint64_t window_start_step = 0;  ///< steps before the window opens (wait + warm-up)
  std::uint64_t wall_ns = 0;            ///< session start to snapshot
  /// Built once the session had ended (the exit report, snapshot() after shutdown(), a whole
  /// trace's replay): nothing more comes. False for one built while the program ran (snapshot(),
  /// the files CUSCOPE_REPORT_EVERY rewrites, a cut trace's replay): later work is not in it. A
  /// Report made otherwise (by hand, read from a file without the field) is taken as final.
  bool final = true;
  /// This process's rank in its job, from RANK, OMPI_COMM_WORLD_RANK, PMI_RANK or SLURM_PROCID
  /// (the first set), and the job's size from its launcher (WORLD_SIZE, OMPI_COMM_WORLD_SIZE,
  /// PMI_SIZE, SLURM_NTASKS). -1 and 0 when not known.
  std::int64_t rank = -1;
  std::int64_t world_size = 0;
  /// The process that made the report and its host (gethostname()): 0 and "" when not known (a
  /// report or trace from before they were recorded). With the rank, which node a slow rank ran on.
  std::int64_t pid = 0;
  std::string host;

  /// The range at `path` ("a/b/c"; "" is the root), or nullptr.
  [[nodiscard]] const RangeStats* find(std::string_view path) const;
  /// Whether CUPTI traced this session's GPU work (activity_status "on" or "on, ..."): its kernels,
  /// copies and sets are attributed to ranges. Compare with this, not with "on": the defaults'
  /// status is "on, ...".
  [[nodiscard]] bool tracing_on() const {
    return activity_status == "on" || activity_status.rfind("on, ", 0) == 0;
  }
  /// The root's children: the top-level ranges.
  [[nodiscard]] const RangeStats& root() const { return ranges.front(); }
};

/// Which column orders the table's siblings (gpu_busy: by busy nanoseconds, not by share).
enum class SortKey : std::uint8_t { host_total, host_self, gpu_total, kernel_total, gpu_busy, calls, name };
[[nodiscard]] std::string_view to_string(SortKey k);

struct TableOptions {
  SortKey sort = SortKey::host_total;
  std::size_t max_rows = 50;     ///< ranges shown (the rest are counted in a last line); 0 = all
  std::size_t top_kernels = 3;   ///< kernels listed under each range; 0 = none
  std::size_t max_findings = 3;  ///< findings listed under each range ("!" lines); 0 = none
  bool show_zero_calls = false;  ///< also list ranges with no completed entry
};

/// The report as a human-readable table (tree-indented, units scaled for people).
[[nodiscard]] std::string format_table(const Report& report, const TableOptions& options = {});
/// The report as JSON (schema: docs/json-schema.md).
[[nodiscard]] std::string format_json(const Report& report);

}  // namespace v0
}  // namespace cuscope

// model/findings.cpp — the rules (model/findings.hpp). Words of cause and fix follow the
// profiling guides' "observation → likely cause → fix" tables.
#include "model/findings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cuscope::model {
namespace {

std::string us(double ns) {
  return ns >= 1e6 ? fmt::format("{:.1f} ms", ns / 1e6) : fmt::format("{:.1f} µs", ns / 1e3);
}

std::string pct(double share) { return fmt::format("{:.0f}%", 100.0 * share); }

std::string bytes(double b) {
  if (b >= 1024.0 * 1024.0) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

Finding make(std::string_view id, Severity s, std::string observation, std::string_view cause,
             std::string_view fix) {
  return Finding{std::string(id), s, std::move(observation), std::string(cause), std::string(fix)};
}

double mean(std::uint64_t total, std::uint64_t count) { return count ? double(total) / double(count) : 0.0; }

const MetricValue* metric(const RangeStats& r, std::string_view name) {
  for (const MetricValue& m : r.metrics) {
    if (m.name == name) return &m;
  }
  return nullptr;
}

// 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st.
std::string ordinal(std::uint64_t n) {
  const std::uint64_t last = n % 10;
  const bool teen = n % 100 / 10 == 1;
  const char* suffix = teen || last == 0 || last > 3 ? "th" : last == 1 ? "st" : last == 2 ? "nd" : "rd";
  return fmt::format("{}{}", n, suffix);
}

// A slow call's cause and fix by which call it was: the first did first-time work, a later one
// met a hiccup; 0 (not known) gives both, never a guess.
std::pair<std::string, std::string> slow_call_cause(std::uint64_t max_call) {
  constexpr std::string_view kFirstTime =
      "first-time work: JIT compilation, first allocations, lazy module loading, cache warm-up";
  constexpr std::string_view kFirstTimeFix =
      "warm-up steps before measuring (CUSCOPE_WARMUP), and a look at torch.compile's first-call cost";
  constexpr std::string_view kHiccup =
      "a hiccup in the middle of the run: a checkpoint or other I/O, garbage collection, a data-loader "
      "stall, another process on the GPU or the CPU";
  constexpr std::string_view kHiccupFix =
      "see what else ran during that call (trace mode's timeline, CUSCOPE_TRACE); save checkpoints "
      "asynchronously, gc.freeze() after setup, more DataLoader workers and prefetch_factor";
  if (max_call == 1) return {std::string(kFirstTime), std::string(kFirstTimeFix)};
  if (max_call > 1) return {std::string(kHiccup), std::string(kHiccupFix)};
  return {fmt::format("if the first call, {}; if a later one, {}", kFirstTime, kHiccup),
          fmt::format("{}; {}", kFirstTimeFix, kHiccupFix)};
}

bool is_nccl(std::string_view kernel) {
  std::string lower(kernel.substr(0, 64));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("nccl") != std::string::npos;
}

}  // namespace

std::optional<Finding> launch_bound_rule(const RangeStats& r) {
  if (r.verdict.bound != Bound::launch) return std::nullopt;
  const ActivityStats& a = r.total;
  return make(
      "launch-bound", Severity::warning,
      fmt::format("GPU busy {} of the range's GPU span, {} kernels averaging {}", pct(a.busy_share()),
                  a.kernel_calls, us(mean(a.kernel_ns, a.kernel_calls))),
      "the CPU launches kernels no faster than the GPU runs them: per-launch overhead of Python and the "
      "framework",
      "CUDA graphs (torch.compile(mode=\"reduce-overhead\")), fewer and larger kernels (fusion), larger "
      "batches");
}

std::optional<Finding> idle_gaps_rule(const RangeStats& r) {
  const ActivityStats& a = r.total;
  if (r.verdict.bound == Bound::launch || a.kernel_calls < kIdleMinKernels || a.gpu_span_ns == 0 ||
      a.busy_share() >= kIdleBusyShare)
    return std::nullopt;
  return make(
      "gpu-idle-gaps", Severity::warning,
      fmt::format("GPU busy {} of the range's GPU span: {} idle between its {} kernels", pct(a.busy_share()),
                  us(double(a.gpu_span_ns - std::min(a.gpu_busy_ns, a.gpu_span_ns))), a.kernel_calls),
      "the GPU waits on the host between kernels: data loading, host work, synchronization or "
      "communication",
      "overlap host work with GPU work (more DataLoader workers, pin_memory=True, non_blocking copies), "
      "take synchronizations out of the loop, CUDA graphs");
}

std::optional<Finding> small_kernels_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  const double m = mean(a.kernel_ns, a.kernel_calls);
  if (a.kernel_calls < kManySmallKernels || m >= double(kSmallKernelNs)) return std::nullopt;
  return make(
      "small-kernels", Severity::info,
      fmt::format("{} kernels averaging {} (under {})", a.kernel_calls, us(m), us(double(kSmallKernelNs))),
      "unfused operations, each launching a kernel of its own",
      "kernel fusion: torch.compile, fused or custom kernels");
}

std::optional<Finding> sync_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  if (a.sync_count == 0 || r.host.total_ns == 0) return std::nullopt;
  const double share = double(a.sync_ns) / double(r.host.total_ns);
  if (share < kSyncHostShare) return std::nullopt;
  return make(
      "synchronization", Severity::warning,
      fmt::format("{} synchronization{} waited {}, {} of the range's host time", a.sync_count,
                  a.sync_count == 1 ? "" : "s", us(double(a.sync_ns)), pct(share)),
      ".item(), print(tensor), .cpu() or an explicit cudaDeviceSynchronize/cudaStreamSynchronize inside "
      "the loop",
      "keep values on the GPU, synchronize once per step at most, use non_blocking copies and events");
}

std::optional<Finding> small_copies_rule(const RangeStats& r) {
  const CopyStats* worst = nullptr;
  std::size_t worst_kind = 0;
  for (std::size_t k = 0; k < kCopyKinds; ++k) {
    const CopyStats& c = r.self.memcpy[k];
    if (c.count < kManySmallCopies || mean(c.bytes, c.count) >= double(kSmallCopyBytes)) continue;
    if (worst == nullptr || c.count > worst->count) {
      worst = &c;
      worst_kind = k;
    }
  }
  if (worst == nullptr) return std::nullopt;
  return make(
      "small-copies", Severity::info,
      fmt::format("{} {} copies averaging {}", worst->count, to_string(static_cast<CopyKind>(worst_kind)),
                  bytes(mean(worst->bytes, worst->count))),
      "data moved piece by piece: each copy pays the transfer's fixed cost",
      "batch the transfers into one copy, or keep the data on the device");
}

std::optional<Finding> alloc_churn_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  if (r.calls < kChurnMinCalls || a.alloc_count + a.free_count < r.calls) return std::nullopt;
  return make(
      "allocation-churn", Severity::warning,
      fmt::format("{} allocations and {} frees in {} calls ({} allocated)", a.alloc_count, a.free_count,
                  r.calls, bytes(double(a.alloc_bytes))),
      "device memory allocated and freed inside the loop (no caching allocator, or "
      "torch.cuda.empty_cache() in the loop)",
      "allocate once before the loop, or use a caching allocator or stream-ordered pool (cudaMallocAsync)");
}

std::optional<Finding> step_variance_rule(const RangeStats& r) {
  const DurationStats& h = r.host;
  if (r.depth != 1 || h.count < kVarianceMinCalls) return std::nullopt;
  const double others = double(h.total_ns - h.max_ns) / double(h.count - 1);
  if (double(h.max_ns) <= kSlowCallFactor * others || double(h.max_ns) - others < double(kSlowCallMinNs))
    return std::nullopt;
  std::string which;  // which call it was, when the report knows: over threads, its thread's ordinal
  if (h.max_call != 0 && r.threads > 1)
    which = fmt::format(" (the {} of one of its {} threads)", ordinal(h.max_call), r.threads);
  else if (h.max_call != 0)
    which = fmt::format(" (the {} of {})", ordinal(h.max_call), h.count);
  auto [cause, fix] = slow_call_cause(h.max_call);
  return make(
      "slow-call", Severity::info,
      fmt::format("slowest call{} {}, {:.1f}x the mean of the other {} ({})", which, us(double(h.max_ns)),
                  others > 0 ? double(h.max_ns) / others : 0.0, h.count - 1, us(others)),
      cause, fix);
}

std::optional<Finding> nccl_share_rule(const RangeStats& r) {
  std::uint64_t ns = 0, calls = 0;
  for (const KernelStats& k : r.kernels) {
    if (!is_nccl(k.name)) continue;
    ns += k.duration.total_ns;
    calls += k.duration.count;
  }
  if (calls == 0 || r.self.kernel_ns == 0) return std::nullopt;
  const double share = double(ns) / double(r.self.kernel_ns);
  if (share < kNcclShare) return std::nullopt;
  return make("nccl-share", Severity::info,
              fmt::format("NCCL kernels {} of the range's kernel time ({} kernels, {})", pct(share), calls,
                          us(double(ns))),
              "communication not overlapped with computation",
              "overlap collectives with compute: gradient bucketing, asynchronous all-reduce during the next "
              "layer's work");
}

std::optional<Finding> memory_bound_rule(const RangeStats& r) {
  if (r.verdict.bound != Bound::memory) return std::nullopt;
  return make("memory-bound", Severity::info, r.verdict.reason,
              "the kernels move more bytes than they compute on: DRAM bandwidth is the limit",
              "fuse kernels to reuse data on chip, lower precision (bf16, fp8), coalesced accesses");
}

std::optional<Finding> low_tensor_pipe_rule(const RangeStats& r) {
  if (r.verdict.bound != Bound::compute) return std::nullopt;
  const MetricValue* tensor = metric(r, "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed");
  if (tensor == nullptr || tensor->value >= kLowTensorPipePct) return std::nullopt;
  // The compute side in the verdict's terms: SM throughput when collected, else the FLOP rate
  // (CUDA-core instructions: tensor-core work is not in those counts).
  const MetricValue* sm = metric(r, "sm__throughput.avg.pct_of_peak_sustained_elapsed");
  const std::string compute = sm != nullptr
                                  ? fmt::format("SM at {:.0f}% of peak", sm->value)
                                  : fmt::format("{:.3g} TFLOP/s on CUDA cores", r.verdict.flop_per_s / 1e12);
  return make(
      "low-tensor-pipe", Severity::info,
      fmt::format("compute-bound, {}, tensor pipe active {:.0f}% of peak", compute, tensor->value),
      "the math runs on CUDA cores, not tensor cores: FP32 matmuls and convolutions not allowed TF32, "
      "no bf16/fp16, or matrix dimensions that are not multiples of 8/16",
      "TF32 for FP32 matmuls (torch.set_float32_matmul_precision(\"high\") or "
      "torch.backends.cuda.matmul.allow_tf32 = True), bf16/fp16 autocast (torch.autocast), dimensions "
      "padded to multiples of 8, cuBLAS/cuDNN (cublasLt) tensor-core paths for hand-written math");
}

std::optional<Finding> occupancy_rule(const RangeStats& r) {
  const MetricValue* occ = metric(r, "sm__warps_active.avg.pct_of_peak_sustained_active");
  if (occ == nullptr || occ->value >= kLowOccupancyPct) return std::nullopt;
  std::uint32_t registers = 0, shared = 0;
  for (const KernelStats& k : r.kernels) {
    registers = std::max(registers, k.registers_per_thread);
    shared = std::max(shared, k.static_shared_bytes + k.dynamic_shared_bytes);
  }
  if (registers > kManyRegisters) {
    return make("occupancy-registers", Severity::warning,
                fmt::format("achieved occupancy {:.0f}%, kernels use up to {} registers per thread",
                            occ->value, registers),
                "register pressure limits the warps each SM can hold",
                "__launch_bounds__ or -maxrregcount, smaller tiles, fewer live values");
  }
  if (shared >= 48u * 1024u) {
    return make("occupancy-shared-memory", Severity::warning,
                fmt::format("achieved occupancy {:.0f}%, kernels use up to {} of shared memory per block",
                            occ->value, bytes(double(shared))),
                "shared memory per block limits the blocks each SM can hold",
                "smaller tiles or fewer pipeline stages, so that more blocks fit");
  }
  return std::nullopt;  // low, but the records do not say why: no guess
}

std::optional<Finding> pageable_copies_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  if (a.pageable_copies < kPageableMinCopies && a.pageable_bytes < kPageableMinBytes) return std::nullopt;
  auto count = [&](CopyKind k) { return a.memcpy[static_cast<std::size_t>(k)].count; };
  // Copies of another direction (to CUDA arrays) can have a pageable side too.
  const std::uint64_t host =
      std::max(a.pageable_copies, count(CopyKind::HtoD) + count(CopyKind::DtoH) + count(CopyKind::HtoH));
  return make("pageable-copies", Severity::warning,
              fmt::format("{} of {} host copies pageable, {}", a.pageable_copies, host,
                          bytes(double(a.pageable_bytes))),
              "pageable host memory is staged through a pinned buffer, and the copy is synchronous with "
              "the host: cudaMemcpyAsync blocks, and the copy cannot overlap GPU work",
              "pinned host memory (cudaHostAlloc / cudaMallocHost, DataLoader(pin_memory=True), "
              "tensor.pin_memory()) with asynchronous copies (non_blocking=True)");
}

std::optional<Finding> blocking_copies_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  if (r.calls < kBlockingMinCalls || a.blocking_copies < r.calls) return std::nullopt;
  return make("blocking-copies", Severity::info,
              fmt::format("{} synchronous host copies in {} calls ({}): cudaMemcpy, not cudaMemcpyAsync",
                          a.blocking_copies, r.calls, bytes(double(a.blocking_bytes))),
              "a synchronous copy between host and device makes the host wait for the GPU's earlier work "
              "on the stream and for the copy: the CPU stops launching, then the GPU idles until it "
              "catches up",
              "cudaMemcpyAsync on the work's stream (into pinned memory for copies to the host), and wait "
              "(an event, cudaStreamSynchronize) only where the host needs the value, e.g. every N steps");
}

std::optional<Finding> serialized_streams_rule(const RangeStats& r) {
  const ActivityStats& a = r.self;
  if (a.kernel_streams < 2 || a.kernel_calls < kSerialMinKernels || a.gpu_busy_ns == 0 ||
      a.busiest_stream_ns == 0 || a.busiest_stream_ns >= a.kernel_ns)
    return std::nullopt;
  const double possible = double(a.kernel_ns - a.busiest_stream_ns);
  const double overlapped = double(a.kernel_ns - std::min(a.kernel_ns, a.gpu_busy_ns));
  if (possible < kSerialMinOffBusiest * double(a.kernel_ns) || overlapped >= kSerialMaxOverlap * possible)
    return std::nullopt;
  return make(
      "serialized-streams", Severity::info,
      fmt::format("kernels on {} streams, {} of their time off the busiest stream, yet {} of that ran "
                  "alongside other kernels (concurrency {:.2f})",
                  a.kernel_streams, pct(possible / double(a.kernel_ns)), pct(overlapped / possible),
                  double(a.kernel_ns) / double(a.gpu_busy_ns)),
      "the streams wait on each other (cudaStreamWaitEvent, a synchronization between launches, the "
      "legacy default stream's implicit ordering), or each kernel fills the GPU so none can run beside it",
      "launch independent work on non-blocking streams (cudaStreamNonBlocking, per-thread default "
      "stream) without events between them; when each kernel fills the GPU, more streams will not help");
}

void apply_findings(Report& report) {
  using Rule = std::optional<Finding> (*)(const RangeStats&);
  static constexpr std::array<Rule, 14> kRules{
      &launch_bound_rule,    &idle_gaps_rule,         &sync_rule,          &alloc_churn_rule,
      &small_kernels_rule,   &small_copies_rule,      &step_variance_rule, &nccl_share_rule,
      &memory_bound_rule,    &low_tensor_pipe_rule,   &occupancy_rule,     &pageable_copies_rule,
      &blocking_copies_rule, &serialized_streams_rule};
  // Per range, the inclusive findings that hold there, said or left to an ancestor: a grandchild
  // of the range that says one must not say it again because its parent kept quiet.
  std::vector<std::vector<std::string>> holds(report.ranges.size());
  for (std::size_t i = 1; i < report.ranges.size(); ++i) {
    RangeStats& r = report.ranges[i];
    r.findings.clear();
    const std::vector<std::string>& parent_holds = holds[r.parent];
    for (Rule rule : kRules) {
      std::optional<Finding> f = rule(r);
      if (!f) continue;
      // Inclusive rules (over the subtree's work) say it once, at the outermost range of each run
      // of nested ranges they hold for. low-tensor-pipe is one: the verdict and the counters cover
      // the subtree's kernels, so a compute-bound range with an idle tensor pipe says the same of
      // its compute-bound children; their own numbers are in the table's counter columns.
      const bool inclusive = f->id == "launch-bound" || f->id == "gpu-idle-gaps" || f->id == "memory-bound" ||
                             f->id == "low-tensor-pipe";
      if (inclusive) {
        holds[i].push_back(f->id);
        if (r.parent != 0 && std::find(parent_holds.begin(), parent_holds.end(), f->id) != parent_holds.end())
          continue;
      }
      r.findings.push_back(std::move(*f));
    }
    std::stable_sort(r.findings.begin(), r.findings.end(),
                     [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  }
}

}  // namespace cuscope::model

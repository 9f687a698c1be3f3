// Findings: each rule on both sides of each of its thresholds, the silence of rules without their
// data, the order, and an inclusive finding said once along a path. The copies' rules are
// test_findings_copies.cpp's.
#include <catch2/catch.hpp>
#include <cuscope/report.hpp>
#include <string>
#include <utility>

#include "findings_kit.hpp"
#include "model/findings.hpp"

using cuscope::Bound;
using cuscope::CopyKind;
using cuscope::Finding;
using cuscope::RangeStats;
using cuscope::Severity;
using cuscope_test::kernels;
using cuscope_test::range_at;
namespace model = cuscope::model;

TEST_CASE("launch-bound follows the roofline verdict, with its numbers", "[findings]") {
  RangeStats r = range_at();
  kernels(r.total, 412, 4'100, 310, 1'000);
  CHECK_FALSE(model::launch_bound_rule(r));
  r.verdict.bound = Bound::launch;
  const auto f = model::launch_bound_rule(r);
  REQUIRE(f);
  CHECK(f->id == "launch-bound");
  CHECK(f->severity == Severity::warning);
  CHECK(f->observation == "GPU busy 31% of the range's GPU span, 412 kernels averaging 4.1 µs");
  CHECK(f->fix.find("CUDA graphs") != std::string::npos);
}

TEST_CASE("GPU idle gaps: busy under 80% of the span, with at least 10 kernels", "[findings]") {
  RangeStats r = range_at();
  kernels(r.total, 10, 100'000, 7'900'000, 10'000'000);  // 79% busy
  const auto f = model::idle_gaps_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "GPU busy 79% of the range's GPU span: 2.1 ms idle between its 10 kernels");
  kernels(r.total, 10, 100'000, 8'000'000, 10'000'000);  // 80%: not under
  CHECK_FALSE(model::idle_gaps_rule(r));
  kernels(r.total, 9, 100'000, 1'000'000, 10'000'000);  // too few kernels
  CHECK_FALSE(model::idle_gaps_rule(r));
  kernels(r.total, 10, 100'000, 1'000'000, 10'000'000);
  r.verdict.bound = Bound::launch;  // launch-bound says it better
  CHECK_FALSE(model::idle_gaps_rule(r));
}

TEST_CASE("many small kernels: at least 50 own kernels averaging under 10 µs", "[findings]") {
  RangeStats r = range_at();
  kernels(r.self, 50, 9'000, 0, 0);
  const auto f = model::small_kernels_rule(r);
  REQUIRE(f);
  CHECK(f->id == "small-kernels");
  CHECK(f->severity == Severity::info);
  CHECK(f->observation == "50 kernels averaging 9.0 µs (under 10.0 µs)");
  kernels(r.self, 49, 1'000, 0, 0);
  CHECK_FALSE(model::small_kernels_rule(r));
  kernels(r.self, 500, 10'000, 0, 0);
  CHECK_FALSE(model::small_kernels_rule(r));
}

TEST_CASE("synchronization: waits of at least 5% of the range's host time", "[findings]") {
  RangeStats r = range_at();  // 10 ms of host time
  r.self.sync_count = 7;
  r.self.sync_ns = 500'000;  // 5%
  const auto f = model::sync_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "7 synchronizations waited 500.0 µs, 5% of the range's host time");
  CHECK(f->cause.find(".item()") != std::string::npos);
  r.self.sync_ns = 499'999;
  CHECK_FALSE(model::sync_rule(r));
  r.self.sync_count = 0;
  r.self.sync_ns = 5'000'000;
  CHECK_FALSE(model::sync_rule(r));
}

TEST_CASE("allocation churn: an allocation or free per call, over at least 2 calls", "[findings]") {
  RangeStats r = range_at();  // 10 calls
  r.self.alloc_count = 5;
  r.self.free_count = 5;
  r.self.alloc_bytes = 5u << 20;
  const auto f = model::alloc_churn_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "5 allocations and 5 frees in 10 calls (5.0 MiB allocated)");
  r.self.free_count = 4;
  CHECK_FALSE(model::alloc_churn_rule(r));
  r.calls = 1;
  r.self.alloc_count = 9;
  CHECK_FALSE(model::alloc_churn_rule(r));
}

TEST_CASE("one slow call: over 2x the mean of the others, by 100 µs, top-level ranges only", "[findings]") {
  RangeStats r = range_at(1);
  r.host = {10, 9 * 1'000'000 + 2'100'000, 1'000'000, 2'100'000};  // 2.1x the other nine
  const auto f = model::step_variance_rule(r);
  REQUIRE(f);
  CHECK(f->id == "slow-call");
  CHECK(f->observation == "slowest call 2.1 ms, 2.1x the mean of the other 9 (1.0 ms)");
  r.host = {10, 9 * 1'000'000 + 2'000'000, 1'000'000, 2'000'000};  // exactly 2x: not over
  CHECK_FALSE(model::step_variance_rule(r));
  r.host = {10, 9 * 10'000 + 90'000, 10'000, 90'000};  // 9x, but only 80 µs slower
  CHECK_FALSE(model::step_variance_rule(r));
  r.host = {2, 1'000'000 + 9'000'000, 1'000'000, 9'000'000};  // two calls are too few
  CHECK_FALSE(model::step_variance_rule(r));
  RangeStats nested = range_at(2);
  nested.host = {10, 9 * 1'000'000 + 9'000'000, 1'000'000, 9'000'000};
  CHECK_FALSE(model::step_variance_rule(nested));
}

namespace {

// A top-level range of 20 calls whose slowest, the `max_call`th (0: not known), took 5.9 ms and the
// other 19 2.36 ms each.
RangeStats one_slow_call(std::uint64_t max_call, std::uint32_t threads = 1) {
  RangeStats r = range_at(1);
  r.calls = 20;
  r.threads = threads;
  r.host = {20, 19 * 2'360'000 + 5'900'000, 2'360'000, 5'900'000, max_call};
  return r;
}

}  // namespace

TEST_CASE("slow call: the first call's is first-time work", "[findings]") {
  const auto f = model::step_variance_rule(one_slow_call(1));
  REQUIRE(f);
  CHECK(f->observation == "slowest call (the 1st of 20) 5.9 ms, 2.5x the mean of the other 19 (2.4 ms)");
  CHECK(f->cause ==
        "first-time work: JIT compilation, first allocations, lazy module loading, cache warm-up");
  CHECK(f->fix.find("CUSCOPE_WARMUP") != std::string::npos);
  CHECK(f->cause.find("checkpoint") == std::string::npos);
}

TEST_CASE("slow call: a later call's is a hiccup in the middle of the run", "[findings]") {
  const auto f = model::step_variance_rule(one_slow_call(7));
  REQUIRE(f);
  CHECK(f->observation == "slowest call (the 7th of 20) 5.9 ms, 2.5x the mean of the other 19 (2.4 ms)");
  CHECK(f->cause ==
        "a hiccup in the middle of the run: a checkpoint or other I/O, garbage collection, a data-loader "
        "stall, another process on the GPU or the CPU");
  CHECK(f->fix.find("CUSCOPE_TRACE") != std::string::npos);
  CHECK(f->fix.find("CUSCOPE_WARMUP") == std::string::npos);
  CHECK(f->cause.find("first-time") == std::string::npos);
  // The 2nd is a later call too: only the very first has first-time work to do.
  CHECK(model::step_variance_rule(one_slow_call(2))->cause.find("a hiccup") == 0);
}

TEST_CASE("slow call: over several threads the ordinal is its thread's, unknown, both causes", "[findings]") {
  const auto threads = model::step_variance_rule(one_slow_call(3, 2));
  REQUIRE(threads);
  CHECK(threads->observation ==
        "slowest call (the 3rd of one of its 2 threads) 5.9 ms, 2.5x the mean of the other 19 (2.4 ms)");
  CHECK(threads->cause.find("a hiccup") == 0);
  // A report that does not say which call (read from an older JSON, or merged): no ordinal, and
  // the cause names both, without a guess.
  const auto unknown = model::step_variance_rule(one_slow_call(0));
  REQUIRE(unknown);
  CHECK(unknown->observation == "slowest call 5.9 ms, 2.5x the mean of the other 19 (2.4 ms)");
  CHECK(unknown->cause ==
        "if the first call, first-time work: JIT compilation, first allocations, lazy module loading, "
        "cache warm-up; if a later one, a hiccup in the middle of the run: a checkpoint or other I/O, "
        "garbage collection, a data-loader stall, another process on the GPU or the CPU");
  CHECK(unknown->fix.find("CUSCOPE_WARMUP") != std::string::npos);
  CHECK(unknown->fix.find("CUSCOPE_TRACE") != std::string::npos);
}

TEST_CASE("slow call: ordinals in English", "[findings]") {
  const std::pair<std::uint64_t, const char*> cases[] = {
      {2, "2nd"},     {3, "3rd"},     {4, "4th"},     {10, "10th"},    {11, "11th"},
      {12, "12th"},   {13, "13th"},   {21, "21st"},   {22, "22nd"},    {23, "23rd"},
      {101, "101st"}, {111, "111th"}, {112, "112th"}, {1001, "1001st"}};
  for (const auto& [n, text] : cases) {
    RangeStats r = one_slow_call(n);
    r.host.count = 2000;
    r.host.total_ns = 1999ull * 2'360'000 + 5'900'000;
    const auto f = model::step_variance_rule(r);
    REQUIRE(f);
    CHECK(f->observation.find(std::string("(the ") + text + " of 2000)") != std::string::npos);
  }
}

TEST_CASE("NCCL's share: its kernels at least 20% of the range's own kernel time", "[findings]") {
  RangeStats r = range_at();
  r.self.kernel_ns = 1'000'000;
  cuscope::KernelStats nccl;
  nccl.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)";
  nccl.duration = {4, 200'000, 50'000, 50'000};
  cuscope::KernelStats gemm;
  gemm.name = "sm90_gemm";
  gemm.duration = {8, 800'000, 100'000, 100'000};
  r.kernels = {gemm, nccl};
  const auto f = model::nccl_share_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "NCCL kernels 20% of the range's kernel time (4 kernels, 200.0 µs)");
  r.kernels[1].duration.total_ns = 199'999;
  CHECK_FALSE(model::nccl_share_rule(r));
  r.kernels = {gemm};
  CHECK_FALSE(model::nccl_share_rule(r));
}

TEST_CASE("counters: memory-bound from the verdict, occupancy limits only when the records say why",
          "[findings]") {
  RangeStats r = range_at();
  CHECK_FALSE(model::memory_bound_rule(r));
  CHECK_FALSE(model::occupancy_rule(r));  // no counters: silent
  r.verdict.bound = Bound::memory;
  r.verdict.reason = "DRAM at 87% of peak while SM at 12%";
  const auto m = model::memory_bound_rule(r);
  REQUIRE(m);
  CHECK(m->observation == "DRAM at 87% of peak while SM at 12%");

  r.metrics = {{"sm__warps_active.avg.pct_of_peak_sustained_active", "Occupancy %", "percent", 31.0}};
  cuscope::KernelStats k;
  k.name = "fat";
  k.registers_per_thread = 168;
  r.kernels = {k};
  const auto o = model::occupancy_rule(r);
  REQUIRE(o);
  CHECK(o->id == "occupancy-registers");
  CHECK(o->observation == "achieved occupancy 31%, kernels use up to 168 registers per thread");
  r.kernels[0].registers_per_thread = 128;
  CHECK_FALSE(model::occupancy_rule(r));  // low, no reason in the records: no guess
  r.kernels[0].dynamic_shared_bytes = 48 * 1024;
  const auto s = model::occupancy_rule(r);
  REQUIRE(s);
  CHECK(s->id == "occupancy-shared-memory");
  r.metrics[0].value = 50.0;
  CHECK_FALSE(model::occupancy_rule(r));
}

namespace {

constexpr const char* kTensorPipe = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
constexpr const char* kSmThroughput = "sm__throughput.avg.pct_of_peak_sustained_elapsed";

// A compute-bound range (by its verdict) with the tensor pipe at `tensor_pct` and SM at 78%.
RangeStats compute_bound(double tensor_pct) {
  RangeStats r = range_at();
  r.verdict.bound = Bound::compute;
  r.verdict.flop_per_s = 41.2e12;
  r.metrics = {{kSmThroughput, "SM %", "percent", 78.0}, {kTensorPipe, "Tensor %", "percent", tensor_pct}};
  return r;
}

}  // namespace

TEST_CASE("low tensor pipe: compute-bound with the tensor pipe under 60% of peak", "[findings][tensor]") {
  const auto f = model::low_tensor_pipe_rule(compute_bound(4.0));
  REQUIRE(f);
  CHECK(f->id == "low-tensor-pipe");
  CHECK(f->severity == Severity::info);
  CHECK(f->observation == "compute-bound, SM at 78% of peak, tensor pipe active 4% of peak");
  CHECK(f->cause.find("CUDA cores, not tensor cores") != std::string::npos);
  CHECK(f->cause.find("multiples of 8/16") != std::string::npos);
  CHECK(f->fix.find("torch.set_float32_matmul_precision(\"high\")") != std::string::npos);
  CHECK(f->fix.find("torch.backends.cuda.matmul.allow_tf32 = True") != std::string::npos);
  CHECK(f->fix.find("torch.autocast") != std::string::npos);
  // Both sides of the threshold.
  const auto below = model::low_tensor_pipe_rule(compute_bound(59.0));
  REQUIRE(below);
  CHECK(below->observation == "compute-bound, SM at 78% of peak, tensor pipe active 59% of peak");
  CHECK_FALSE(model::low_tensor_pipe_rule(compute_bound(model::kLowTensorPipePct)));
  CHECK_FALSE(model::low_tensor_pipe_rule(compute_bound(85.0)));
}

TEST_CASE("low tensor pipe: the FLOP rate stands for SM throughput when that was not collected",
          "[findings][tensor]") {
  RangeStats r = compute_bound(4.0);
  r.metrics.erase(r.metrics.begin());  // the "compute" set alone: FLOP counts and Tensor %
  const auto f = model::low_tensor_pipe_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "compute-bound, 41.2 TFLOP/s on CUDA cores, tensor pipe active 4% of peak");
}

TEST_CASE("low tensor pipe: silent without the tensor counter, or when not compute-bound",
          "[findings][tensor]") {
  RangeStats r = compute_bound(4.0);
  r.metrics.pop_back();  // SM % alone: nothing says what the tensor pipe did
  CHECK_FALSE(model::low_tensor_pipe_rule(r));
  for (Bound b : {Bound::unknown, Bound::memory, Bound::latency, Bound::launch}) {
    RangeStats other = compute_bound(4.0);
    other.verdict.bound = b;
    CHECK_FALSE(model::low_tensor_pipe_rule(other));
  }
}

TEST_CASE("apply_findings: low tensor pipe is said once along a path, at the outermost range",
          "[findings][tensor]") {
  cuscope::Report report;
  report.ranges.resize(4);
  report.ranges[0].children = {1};
  RangeStats& step = report.ranges[1] = compute_bound(10.0);
  step.path = step.name = "step";
  step.depth = 1;
  step.children = {2};
  RangeStats& mlp = report.ranges[2] = compute_bound(5.0);
  mlp.parent = 1;
  mlp.children = {3};
  RangeStats& gemm = report.ranges[3] = compute_bound(2.0);
  gemm.path = "step/r/gemm";
  gemm.depth = 3;
  gemm.parent = 2;
  model::apply_findings(report);
  REQUIRE(step.findings.size() == 1);
  CHECK(step.findings[0].id == "low-tensor-pipe");
  CHECK(mlp.findings.empty());
  CHECK(gemm.findings.empty());
  // A child compute-bound under a parent that is not says it itself.
  step.verdict.bound = Bound::memory;
  model::apply_findings(report);
  REQUIRE(mlp.findings.size() == 1);
  CHECK(mlp.findings[0].id == "low-tensor-pipe");
  CHECK(gemm.findings.empty());
}

TEST_CASE("apply_findings: warnings first, inclusive findings once along a path, the root left alone",
          "[findings]") {
  cuscope::Report report;
  report.ranges.resize(3);
  report.ranges[0].children = {1};
  RangeStats& step = report.ranges[1];
  step = range_at(1);
  step.path = step.name = "step";
  step.children = {2};
  RangeStats& inner = report.ranges[2];
  inner = range_at(2);
  inner.parent = 1;
  for (RangeStats* r : {&step, &inner}) {
    kernels(r->total, 100, 100'000, 1'000'000, 10'000'000);  // 10% busy: idle gaps at both
    kernels(r->self, 60, 2'000, 0, 0);                       // small kernels at both
  }
  inner.self.sync_count = 1;
  inner.self.sync_ns = 5'000'000;
  model::apply_findings(report);
  CHECK(report.ranges[0].findings.empty());
  REQUIRE(step.findings.size() == 2);
  CHECK(step.findings[0].id == "gpu-idle-gaps");
  CHECK(step.findings[1].id == "small-kernels");
  REQUIRE(inner.findings.size() == 2);  // no second gpu-idle-gaps under the step
  CHECK(inner.findings[0].id == "synchronization");
  CHECK(inner.findings[0].severity == Severity::warning);
  CHECK(inner.findings[1].id == "small-kernels");
}

TEST_CASE("apply_findings: an inclusive finding is not said again two levels down", "[findings]") {
  // step ─ mlp ─ gemm, all three memory-bound: step says it, and gemm, whose parent kept quiet
  // because step had said it, keeps quiet too. Below a range where it does not hold, it is said again.
  cuscope::Report report;
  report.ranges.resize(5);
  report.ranges[0].children = {1};
  for (std::size_t i = 1; i < 5; ++i) {
    report.ranges[i] = range_at(int(i));
    report.ranges[i].parent = i - 1;
    report.ranges[i].verdict.bound = Bound::memory;
    report.ranges[i].verdict.reason = "DRAM at 87% of peak";
  }
  report.ranges[3].verdict.bound = Bound::latency;
  model::apply_findings(report);
  REQUIRE(report.ranges[1].findings.size() == 1);
  CHECK(report.ranges[1].findings[0].id == "memory-bound");
  CHECK(report.ranges[2].findings.empty());
  CHECK(report.ranges[3].findings.empty());
  REQUIRE(report.ranges[4].findings.size() == 1);
  CHECK(report.ranges[4].findings[0].id == "memory-bound");
  report.ranges[3].verdict.bound = Bound::memory;
  model::apply_findings(report);
  CHECK(report.ranges[3].findings.empty());
  CHECK(report.ranges[4].findings.empty());
}

namespace {

// Own kernels: `calls` of them, `kernel_ns` in all, `busiest` of it on the busiest of `streams`
// streams, GPU busy `busy` (kernel_ns - busy overlapped).
RangeStats on_streams(std::uint32_t streams, std::uint64_t calls, std::uint64_t kernel_ns,
                      std::uint64_t busiest, std::uint64_t busy) {
  RangeStats r = range_at();
  r.self.kernel_calls = calls;
  r.self.kernel_ns = kernel_ns;
  r.self.kernel_streams = streams;
  r.self.busiest_stream_ns = busiest;
  r.self.gpu_busy_ns = busy;
  r.self.gpu_span_ns = busy;
  return r;
}

}  // namespace

TEST_CASE("serialized streams: several streams, work off the busiest, and almost none of it overlapped",
          "[findings][streams]") {
  // 1 ms of kernels, 400 µs off the busiest stream, 39 µs of it beside other kernels (9.75%).
  const RangeStats r = on_streams(3, 40, 1'000'000, 600'000, 961'000);
  const auto f = model::serialized_streams_rule(r);
  REQUIRE(f);
  CHECK(f->id == "serialized-streams");
  CHECK(f->severity == Severity::info);
  CHECK(f->observation ==
        "kernels on 3 streams, 40% of their time off the busiest stream, yet 10% of that ran alongside "
        "other kernels (concurrency 1.04)");
  CHECK(f->cause.find("cudaStreamWaitEvent") != std::string::npos);
  // The overlap threshold: 40 µs overlapped is 10% of the 400 µs that could have.
  CHECK_FALSE(model::serialized_streams_rule(on_streams(3, 40, 1'000'000, 600'000, 960'000)));
  CHECK(model::serialized_streams_rule(on_streams(3, 40, 1'000'000, 600'000, 960'001)));
  // Work off the busiest stream: 10% of the kernel time is enough, less is not.
  CHECK(model::serialized_streams_rule(on_streams(2, 40, 1'000'000, 900'000, 1'000'000)));
  CHECK_FALSE(model::serialized_streams_rule(on_streams(2, 40, 1'000'000, 900'001, 1'000'000)));
  // One stream, or too few kernels, or no busy time: silent.
  CHECK_FALSE(model::serialized_streams_rule(on_streams(1, 40, 1'000'000, 600'000, 1'000'000)));
  CHECK(model::serialized_streams_rule(on_streams(2, 10, 1'000'000, 600'000, 1'000'000)));
  CHECK_FALSE(model::serialized_streams_rule(on_streams(2, 9, 1'000'000, 600'000, 1'000'000)));
  CHECK_FALSE(model::serialized_streams_rule(on_streams(2, 40, 1'000'000, 600'000, 0)));
  // Streams recorded without their time (a report from before streams were recorded): silent.
  CHECK_FALSE(model::serialized_streams_rule(on_streams(2, 40, 1'000'000, 0, 1'000'000)));
}

// The roofline verdict per range: device peaks from properties, the derived rates, intensity,
// ceiling and ridge point, and the classification with its one-line reason.
#define CATCH_CONFIG_ENABLE_OPTIONAL_STRINGMAKER
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "model/roofline.hpp"

using namespace cuscope::model;

namespace {

// Round peaks, so that every derived value below is exact: ridge point 20 FLOP/B for FP32.
DevicePeaks round_peaks() {
  DevicePeaks p;
  p.dram_bytes_per_s = 2e12;
  p.fp64_flops_per_s = 20e12;
  p.fp32_flops_per_s = 40e12;
  p.fp16_flops_per_s = 80e12;
  p.source = "measured";
  return p;
}

// 1 ms of kernels, 10 of them, the GPU busy all along: no launch-bound verdict can interfere.
RangeMeasures busy_range() {
  RangeMeasures m;
  m.kernel_ns = 1'000'000;
  m.kernel_count = 10;
  m.gpu_busy_ns = 1'000'000;
  m.gpu_span_ns = 1'000'000;
  m.host_ns = 1'200'000;
  return m;
}

RangeMeasures with_sol(double dram_pct, double sm_pct) {
  RangeMeasures m = busy_range();
  m.counters.dram_pct = dram_pct;
  m.counters.sm_pct = sm_pct;
  return m;
}

RangeMeasures with_fp32(double flops, double bytes) {
  RangeMeasures m = busy_range();
  m.counters.flops = Flops{0, flops, 0};
  m.counters.dram_bytes = bytes;
  return m;
}

// 340 kernels of 3.1 µs in 4.8 ms of GPU span: the GPU is busy 22% of it, the host 5 ms.
RangeMeasures launch_range() {
  RangeMeasures m;
  m.kernel_count = 340;
  m.kernel_ns = 340 * 3'100;
  m.gpu_busy_ns = m.kernel_ns;
  m.gpu_span_ns = 4'800'000;
  m.host_ns = 5'000'000;
  return m;
}

Bound bound_of(const RangeMeasures& m) { return roofline_verdict(m, round_peaks()).bound; }

}  // namespace

TEST_CASE("peaks of an H100 SXM from its properties", "[roofline]") {
  // 132 SMs at 1.98 GHz boost; HBM3 at 2.619 GHz on a 5120-bit bus.
  const auto p = peaks_from_properties({132, 1'980'000, 2'619'000, 5120, 9, 0});
  REQUIRE(p);
  CHECK(p->dram_bytes_per_s == 3'352'320'000'000.0);   // 2 × 2.619e9 × 5120 / 8: 3.35 TB/s
  CHECK(p->fp32_flops_per_s == 66'908'160'000'000.0);  // 132 × 128 × 2 × 1.98e9: 66.9 TFLOP/s
  CHECK(p->fp64_flops_per_s == 33'454'080'000'000.0);  // half the FP32 lanes
  CHECK(p->fp16_flops_per_s == 66'908'160'000'000.0);  // half2 counted once: half of 133.8 TFLOP/s
  CHECK(p->source == "device properties");
  CHECK(p->flops_per_s(Precision::fp64) == p->fp64_flops_per_s);
}

TEST_CASE("peaks of an RTX 4090 from its properties", "[roofline]") {
  // 128 SMs at 2.52 GHz; GDDR6X at 10.501 GHz on a 384-bit bus.
  const auto p = peaks_from_properties({128, 2'520'000, 10'501'000, 384, 8, 9});
  REQUIRE(p);
  CHECK(p->dram_bytes_per_s == 1'008'096'000'000.0);
  CHECK(p->fp32_flops_per_s == 82'575'360'000'000.0);
  CHECK(p->fp64_flops_per_s == 1'290'240'000'000.0);   // 2 lanes per SM: 1/64 of FP32
  CHECK(p->fp16_flops_per_s == 41'287'680'000'000.0);  // half2 counted once: half of 82.6 TFLOP/s
}

TEST_CASE("an architecture outside the table has no peaks", "[roofline]") {
  CHECK_FALSE(peaks_from_properties({28, 1'582'000, 5'005'000, 352, 6, 1}));
}

TEST_CASE("intensity, ceiling and ridge point follow the roofline formula exactly", "[roofline]") {
  // 4 GFLOP of FP32 over 1 GB of DRAM traffic in 1 ms.
  const Verdict v = roofline_verdict(with_fp32(4e9, 1e9), round_peaks());
  CHECK(v.flops_per_s == 4e12);
  CHECK(v.dram_bytes_per_s == 1e12);
  CHECK(v.arithmetic_intensity == 4.0);
  CHECK(v.ridge_point == 20.0);          // 40 TFLOP/s ÷ 2 TB/s
  CHECK(v.ceiling_flops_per_s == 8e12);  // min(40e12, 4 × 2e12)
  CHECK(v.pct_of_ceiling == 50.0);
  CHECK(v.dram_pct == 50.0);
  CHECK(v.compute_pct == 10.0);
  CHECK(v.precision == Precision::fp32);
}

TEST_CASE("the ceiling above the ridge point is the compute peak", "[roofline]") {
  const Verdict v = roofline_verdict(with_fp32(30e9, 1e9), round_peaks());
  CHECK(v.arithmetic_intensity == 30.0);
  CHECK(v.ceiling_flops_per_s == 40e12);  // min(40e12, 30 × 2e12)
  CHECK(v.pct_of_ceiling == 75.0);
}

TEST_CASE("a range that moved no DRAM bytes is under the compute roof only", "[roofline]") {
  const Verdict v = roofline_verdict(with_fp32(20e9, 0), round_peaks());
  CHECK_FALSE(v.arithmetic_intensity);
  CHECK(v.ceiling_flops_per_s == 40e12);
  CHECK(v.pct_of_ceiling == 50.0);
}

TEST_CASE("the ridge point without FLOP counts is FP32's", "[roofline]") {
  const Verdict v = roofline_verdict(with_sol(87, 12), round_peaks());
  CHECK(v.ridge_point == 20.0);
  CHECK_FALSE(v.arithmetic_intensity);
  CHECK_FALSE(v.ceiling_flops_per_s);
  CHECK_FALSE(v.flops_per_s);
}

TEST_CASE("a mix of precisions is held to the peak at which the mix finishes", "[roofline]") {
  // 1 GFLOP at 20 TFLOP/s (50 µs) and 1 GFLOP at 40 TFLOP/s (25 µs): 2 GFLOP in 75 µs.
  CHECK(mix_peak_flops_per_s({1e9, 1e9, 0}, round_peaks()) == Approx(2e9 / 75e-6).epsilon(1e-12));
  CHECK(mix_peak_flops_per_s({0, 0, 5e9}, round_peaks()) == 80e12);
  CHECK_FALSE(mix_peak_flops_per_s({0, 0, 0}, round_peaks()));
  DevicePeaks no_fp16 = round_peaks();
  no_fp16.fp16_flops_per_s = 0;
  CHECK_FALSE(mix_peak_flops_per_s({0, 1e9, 1e9}, no_fp16));

  RangeMeasures m = busy_range();
  m.counters.flops = Flops{1e9, 3e9, 0};
  CHECK(roofline_verdict(m, round_peaks()).precision == Precision::fp32);
}

TEST_CASE("a copy-like range is memory-bound", "[roofline]") {
  const Verdict v = roofline_verdict(with_sol(87, 12), round_peaks());
  CHECK(v.bound == Bound::memory_bound);
  CHECK(v.reason ==
        "DRAM at 87% of peak while SM at 12%: memory-bound — fuse kernels, coalesce accesses or reduce "
        "bytes moved");
}

TEST_CASE("an FMA-heavy range is compute-bound", "[roofline]") {
  RangeMeasures m = with_sol(3, 91);
  m.counters.flops = Flops{0, 36e9, 0};
  m.counters.dram_bytes = 6e7;
  const Verdict v = roofline_verdict(m, round_peaks());
  CHECK(v.bound == Bound::compute_bound);
  CHECK(v.arithmetic_intensity == 600.0);
  CHECK(v.pct_of_ceiling == 90.0);
  CHECK(v.reason ==
        "SM at 91% of peak while DRAM at 3%, intensity 600 FLOP/B vs ridge 20: compute-bound — use tensor "
        "cores or a lower precision, or cut instructions");
}

TEST_CASE("a range low on both throughputs is latency-bound", "[roofline]") {
  RangeMeasures m = with_sol(23, 31);
  m.counters.occupancy_pct = 18;
  const Verdict v = roofline_verdict(m, round_peaks());
  CHECK(v.bound == Bound::latency_bound);
  CHECK(v.reason ==
        "DRAM at 23% and SM at 31% of peak: latency-bound — expose more parallelism: occupancy (achieved "
        "18%), ILP or a larger grid");
}

TEST_CASE("without throughput counters, bytes and FLOPs against the peaks decide", "[roofline]") {
  const Verdict memory = roofline_verdict(with_fp32(4e9, 1.5e9), round_peaks());
  CHECK(memory.bound == Bound::memory_bound);
  CHECK(memory.dram_pct == 75.0);
  CHECK(memory.reason ==
        "DRAM bandwidth at 75% of peak while FP32 FLOP rate at 10%, intensity 2.67 FLOP/B vs ridge 20: "
        "memory-bound — fuse kernels, coalesce accesses or reduce bytes moved");

  const Verdict compute = roofline_verdict(with_fp32(30e9, 1e9), round_peaks());
  CHECK(compute.bound == Bound::compute_bound);
  CHECK(compute.reason ==
        "FP32 FLOP rate at 75% of peak while DRAM bandwidth at 50%, intensity 30 FLOP/B vs ridge 20: "
        "compute-bound — use tensor cores or a lower precision, or cut instructions");

  const Verdict latency = roofline_verdict(with_fp32(4e9, 1e9), round_peaks());
  CHECK(latency.bound == Bound::latency_bound);
  CHECK(latency.reason ==
        "DRAM bandwidth at 50% and FP32 FLOP rate at 10% of peak: latency-bound — expose more parallelism: "
        "occupancy, ILP or a larger grid");
}

TEST_CASE("a copy kernel with FLOP counters did no FLOPs and is memory-bound", "[roofline]") {
  const Verdict v = roofline_verdict(with_fp32(0, 1.8e9), round_peaks());
  CHECK(v.bound == Bound::memory_bound);
  CHECK(v.arithmetic_intensity == 0.0);
  CHECK(v.compute_pct == 0.0);
  CHECK_FALSE(v.precision);
  CHECK_FALSE(v.pct_of_ceiling);  // the ceiling at zero intensity is zero
}

TEST_CASE("the busier side decides once either reaches 60% of peak", "[roofline]") {
  CHECK(bound_of(with_sol(60, 10)) == Bound::memory_bound);
  CHECK(bound_of(with_sol(10, 60)) == Bound::compute_bound);
  CHECK(bound_of(with_sol(70, 70)) == Bound::compute_bound);  // a tie goes to compute
  CHECK(bound_of(with_sol(95, 80)) == Bound::memory_bound);
  CHECK(bound_of(with_sol(59.9, 59.9)) == Bound::latency_bound);
}

TEST_CASE("many short kernels on a mostly idle GPU are launch-bound, even without counters", "[roofline]") {
  const Verdict v = roofline_verdict(launch_range(), round_peaks());
  CHECK(v.bound == Bound::launch_bound);
  CHECK(v.reason ==
        "GPU busy 22% of its span with 340 kernels averaging 3.1 µs: launch-bound — batch launches, fuse "
        "kernels or use CUDA graphs");

  RangeMeasures counted = launch_range();
  counted.counters.dram_pct = 87;
  counted.counters.sm_pct = 12;
  CHECK(bound_of(counted) == Bound::launch_bound);  // the gaps cost more than any kernel
}

TEST_CASE("launch-bound needs many kernels, short ones, an idle GPU and the host launching all along",
          "[roofline]") {
  RangeMeasures few = launch_range();
  few.kernel_count = kManyKernels - 1;
  few.kernel_ns = few.kernel_count * 3'100;
  few.gpu_busy_ns = few.kernel_ns;
  CHECK(bound_of(few) == Bound::unknown);

  RangeMeasures long_kernels = launch_range();
  long_kernels.kernel_ns = 340 * kShortKernelNs;
  long_kernels.gpu_busy_ns = long_kernels.kernel_ns;
  long_kernels.gpu_span_ns = 8'000'000;
  long_kernels.host_ns = 8'000'000;
  CHECK(bound_of(long_kernels) == Bound::unknown);

  RangeMeasures half_busy = launch_range();
  half_busy.gpu_span_ns = 2 * half_busy.gpu_busy_ns;
  CHECK(bound_of(half_busy) == Bound::unknown);

  RangeMeasures host_done_early = launch_range();
  host_done_early.host_ns = 3'000'000;  // below 0.8 of the 4.8 ms span
  CHECK(bound_of(host_done_early) == Bound::unknown);
  host_done_early.host_ns = 4'000'000;  // above 0.8 of it
  CHECK(bound_of(host_done_early) == Bound::launch_bound);
}

TEST_CASE("rates rest on the counters' own kernel time when no kernel record timed the range", "[roofline]") {
  // Kernels replayed for counters carry no activity timing: kernel_count and kernel_ns are 0.
  RangeMeasures m;
  m.host_ns = 5'000'000;
  m.counters.kernel_ns = 200'000;
  m.counters.dram_bytes = 4e8;
  m.counters.flops = Flops{0, 0, 0};
  m.counters.dram_pct = 85;
  m.counters.sm_pct = 4;
  const Verdict v = roofline_verdict(m, round_peaks());
  CHECK(v.bound == Bound::memory_bound);
  CHECK(v.dram_bytes_per_s == 2e12);
  CHECK(v.flops_per_s == 0.0);
  CHECK(v.reason ==
        "DRAM at 85% of peak while SM at 4%, intensity 0 FLOP/B vs ridge 20: memory-bound — fuse kernels, "
        "coalesce accesses or reduce bytes moved");
}

TEST_CASE("the counters' own kernel time wins over the activity records' for rates", "[roofline]") {
  RangeMeasures m = busy_range();  // 1 ms of kernel records
  m.counters.kernel_ns = 500'000;  // the counted kernels ran 0.5 ms
  m.counters.flops = Flops{0, 18e9, 0};
  m.counters.dram_bytes = 3e7;
  const Verdict v = roofline_verdict(m, round_peaks());
  CHECK(v.flops_per_s == 36e12);
  CHECK(v.dram_bytes_per_s == 6e10);
  CHECK(v.compute_pct == 90.0);
  CHECK(v.bound == Bound::compute_bound);
}

TEST_CASE("a range without kernels is unknown", "[roofline]") {
  RangeMeasures m;
  m.host_ns = 5'000'000;
  const Verdict v = roofline_verdict(m, round_peaks());
  CHECK(v.bound == Bound::unknown);
  CHECK(v.reason == "no kernel ran in this range");
  CHECK_FALSE(v.ridge_point);
  CHECK_FALSE(v.dram_pct);
}

TEST_CASE("missing counters leave the verdict unknown and say which set to collect", "[roofline]") {
  RangeMeasures m = busy_range();
  m.gpu_busy_ns = 950'000;
  CHECK(roofline_verdict(m, round_peaks()).reason ==
        "GPU busy 95% of its span; no throughput counters to tell memory-, compute- or latency-bound: "
        "collect the 'sol' metric set");

  RangeMeasures dram_only = busy_range();
  dram_only.counters.dram_pct = 23;
  const Verdict low = roofline_verdict(dram_only, round_peaks());
  CHECK(low.bound == Bound::unknown);
  CHECK(low.reason ==
        "DRAM at 23% of peak; no SM throughput or FLOP counts to tell compute- from latency-bound: collect "
        "the 'sol' metric set");

  RangeMeasures sm_only = busy_range();
  sm_only.counters.sm_pct = 31;
  CHECK(roofline_verdict(sm_only, round_peaks()).reason ==
        "SM at 31% of peak; no DRAM throughput or byte counts to tell memory- from latency-bound: collect "
        "the 'sol' metric set");
}

TEST_CASE("one saturated side is enough to name the bound", "[roofline]") {
  RangeMeasures dram_only = busy_range();
  dram_only.counters.dram_pct = 87;
  const Verdict memory = roofline_verdict(dram_only, round_peaks());
  CHECK(memory.bound == Bound::memory_bound);
  CHECK(memory.reason ==
        "DRAM at 87% of peak: memory-bound — fuse kernels, coalesce accesses or reduce bytes moved");

  RangeMeasures sm_only = busy_range();
  sm_only.counters.sm_pct = 80;
  CHECK(bound_of(sm_only) == Bound::compute_bound);
}

TEST_CASE("unknown peaks leave out what needs them", "[roofline]") {
  DevicePeaks none;
  const Verdict v = roofline_verdict(with_fp32(4e9, 1.5e9), none);
  CHECK(v.flops_per_s == 4e12);
  CHECK(v.arithmetic_intensity == Approx(4.0 / 1.5).epsilon(1e-15));
  CHECK_FALSE(v.ridge_point);
  CHECK_FALSE(v.ceiling_flops_per_s);
  CHECK_FALSE(v.dram_pct);
  CHECK_FALSE(v.compute_pct);
  CHECK(v.bound == Bound::unknown);
}

TEST_CASE("every reason is one non-empty line", "[roofline]") {
  RangeMeasures occupancy = with_sol(23, 31);
  occupancy.counters.occupancy_pct = 40;
  const std::vector<RangeMeasures> ranges{RangeMeasures{},  busy_range(),        launch_range(),
                                          with_sol(87, 12), with_sol(3, 91),     with_sol(23, 31),
                                          occupancy,        with_fp32(4e9, 1e9), with_fp32(0, 1.8e9)};
  for (const RangeMeasures& m : ranges) {
    const std::string reason = roofline_verdict(m, round_peaks()).reason;
    INFO(reason);
    CHECK_FALSE(reason.empty());
    CHECK(reason.find('\n') == std::string::npos);
  }
}

TEST_CASE("bounds read as the seeds write them", "[roofline]") {
  CHECK(to_string(Bound::unknown) == "unknown");
  CHECK(to_string(Bound::memory_bound) == "memory-bound");
  CHECK(to_string(Bound::compute_bound) == "compute-bound");
  CHECK(to_string(Bound::latency_bound) == "latency-bound");
  CHECK(to_string(Bound::launch_bound) == "launch-bound");
  CHECK(to_string(Precision::fp16) == "FP16");
}

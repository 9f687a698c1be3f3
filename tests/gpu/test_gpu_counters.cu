// GPU tests of hardware counters: known bytes and FLOPs come back from kernel replay, the roofline
// verdicts classify a copy and an FMA loop (on the counters' own GPU time), ranges outside the chosen
// set are not replayed, and their kernel records (and later steps') arrive before the session ends.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdio>

#include "session_fixture.hpp"

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

constexpr std::size_t kFloats = std::size_t{64} << 20;  // 256 MiB per buffer: far past the 50 MB L2
constexpr int kFmaPerChain = 4096;
constexpr int kChains = 4;
constexpr int kFmaBlocks = 264;
constexpr int kFmaThreads = 256;

__global__ void copy_kernel(const float4* __restrict__ in, float4* __restrict__ out, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t{blockDim.x} + threadIdx.x; i < n;
       i += std::size_t{gridDim.x} * blockDim.x) {
    out[i] = in[i];
  }
}

// Only FFMA in the loop: kChains independent chains of kFmaPerChain each per thread.
__global__ void fma_kernel(float* out, float b, float c) {
  float a0 = b, a1 = c, a2 = b + c, a3 = b * c;
#pragma unroll 16
  for (int i = 0; i < kFmaPerChain; ++i) {
    a0 = fmaf(a0, b, c);
    a1 = fmaf(a1, b, c);
    a2 = fmaf(a2, b, c);
    a3 = fmaf(a3, b, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a0 + a1 + a2 + a3;
}

const cuscope::RangeStats& range(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* found = r.find(path);
  REQUIRE(found != nullptr);
  return *found;
}

double metric(const cuscope::RangeStats& r, const char* name) {
  for (const auto& m : r.metrics) {
    if (m.name == name) return m.value;
  }
  FAIL("metric " << name << " missing in " << r.path);
  return 0;
}

}  // namespace

TEST_CASE("counters: bytes of a copy, FLOPs of an FMA loop, verdicts, and no replay elsewhere",
          "[gpu][metrics]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.metrics = "sol,memory,compute";
  o.metric_ranges = {"copy", "fma"};
  cuscope_test::Session session(o);
  const cuscope::Report started = cuscope::snapshot();
  INFO("counters: " << started.counters_status);
  REQUIRE(started.counters_status.rfind("on:", 0) == 0);

  float* in = nullptr;
  float* out = nullptr;
  CHECK_CUDA(cudaMalloc(&in, kFloats * sizeof(float)));
  CHECK_CUDA(cudaMalloc(&out, kFloats * sizeof(float)));
  CHECK_CUDA(cudaMemset(in, 0, kFloats * sizeof(float)));
  CHECK_CUDA(cudaDeviceSynchronize());
  const auto* in4 = reinterpret_cast<const float4*>(in);
  auto* out4 = reinterpret_cast<float4*>(out);
  {
    CUSCOPE_SCOPE("copy");
    copy_kernel<<<1024, 256>>>(in4, out4, kFloats / 4);
  }
  {
    CUSCOPE_SCOPE("fma");
    fma_kernel<<<kFmaBlocks, kFmaThreads>>>(out, 0.999f, 0.001f);
  }
  {
    CUSCOPE_SCOPE("other");  // not chosen: runs once, at full speed
    copy_kernel<<<1024, 256>>>(in4, out4, kFloats / 4);
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  INFO("the report:\n" << cuscope::format_table(r));

  // Every recorded step ran with counters (CUSCOPE_METRIC_STEPS=0): all under "(counted steps)".
  const auto& copy = range(r, "(counted steps)/copy");
  const auto& fma = range(r, "(counted steps)/fma");
  // For tests/gpu-check.sh, which prints Nsight Compute's values for the same kernels below these.
  std::printf("cuscope counters: copy_kernel dram__bytes_read.sum %.0f dram__bytes_write.sum %.0f\n",
              copy.metrics.empty() ? 0.0 : metric(copy, "dram__bytes_read.sum"),
              copy.metrics.empty() ? 0.0 : metric(copy, "dram__bytes_write.sum"));
  std::printf("cuscope counters: fma_kernel sm__sass_thread_inst_executed_op_ffma_pred_on.sum %.0f\n",
              fma.metrics.empty() ? 0.0 : metric(fma, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"));
  const double bytes = double(kFloats * sizeof(float));
  REQUIRE(copy.profiled_kernels == 1);
  CHECK(metric(copy, "dram__bytes_read.sum") == Approx(bytes).epsilon(0.05));
  CHECK(metric(copy, "dram__bytes_write.sum") == Approx(bytes).epsilon(0.05));
  CHECK(copy.verdict.bound == cuscope::Bound::memory);
  CHECK(copy.verdict.dram_bytes_per_s > 0);

  REQUIRE(fma.profiled_kernels == 1);
  const double ffma = double(kFmaPerChain) * kChains * kFmaBlocks * kFmaThreads;
  CHECK(metric(fma, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum") == ffma);
  CHECK(fma.verdict.flop_per_s > 0);
  CHECK(fma.verdict.bound == cuscope::Bound::compute);

  const auto& other = range(r, "(counted steps)/other");
  CHECK(other.profiled_kernels == 0);
  CHECK(other.metrics.empty());
  CHECK(other.self.kernel_calls == 1);  // counted once: not replayed, and timed
  CHECK(other.self.kernel_ns > 0);
  // CUPTI does not time replayed kernels: their records count apart, and their GPU time is the
  // counters' (the verdicts above rest on it).
  CHECK(copy.self.kernel_calls == 0);
  CHECK(fma.self.kernel_calls == 0);
  CHECK(r.diagnostics.counted_kernels_untimed == 2);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.counter_ranges_dropped == 0);
  cudaFree(in);
  cudaFree(out);
}

TEST_CASE("counters: a counted step is reported apart, the next step is timed normally", "[gpu][metrics]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.metrics = "sol";
  o.metric_steps = 1;
  cuscope_test::Session session(o);
  REQUIRE(cuscope::snapshot().counters_status.rfind("on:", 0) == 0);
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, kFloats * sizeof(float)));
  for (int step = 0; step < 3; ++step) {
    {
      CUSCOPE_SCOPE("step");
      fma_kernel<<<kFmaBlocks, kFmaThreads>>>(x, 0.999f, 0.001f);
    }
    cuscope::step();
  }
  CHECK_CUDA(cudaDeviceSynchronize());
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  INFO("the report:\n" << cuscope::format_table(r));
  const auto& counted = range(r, "(counted steps)/step");
  const auto& normal = range(r, "step");
  CHECK(counted.calls == 1);
  CHECK(counted.profiled_kernels == 1);
  CHECK(normal.calls == 2);
  CHECK(normal.profiled_kernels == 0);
  CHECK(normal.self.kernel_calls == 2);  // before the session ends: not held back by the counted step
  CHECK(normal.self.kernel_ns > 0);
  CHECK(counted.self.kernel_calls == 0);  // replayed: untimed by CUPTI, counted apart
  CHECK(r.diagnostics.counted_kernels_untimed == 1);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  cudaFree(x);
}

// GPU tests of scopes: CUDA-event timing without synchronization, and graph capture left intact.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <chrono>

#include "session_fixture.hpp"

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

__global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

long long cycles_for_ms(double ms) {
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  return static_cast<long long>(ms * khz);
}

}  // namespace

TEST_CASE("a scope's CUDA-event time matches the kernel it holds", "[gpu]") {
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaEvent_t a = nullptr, b = nullptr;
  CHECK_CUDA(cudaEventCreate(&a));
  CHECK_CUDA(cudaEventCreate(&b));
  const long long cycles = cycles_for_ms(5.0);
  spin<<<1, 1, 0, stream>>>(cycles);  // warm-up launch: module loading stays out
  CHECK_CUDA(cudaEventRecord(a, stream));
  spin<<<1, 1, 0, stream>>>(cycles);
  CHECK_CUDA(cudaEventRecord(b, stream));
  {
    CUSCOPE_SCOPE("one_kernel", stream);
    spin<<<1, 1, 0, stream>>>(cycles);
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  float reference_ms = 0;
  CHECK_CUDA(cudaEventElapsedTime(&reference_ms, a, b));
  cuscope::flush();
  const auto* r = cuscope::snapshot().find("one_kernel");
  REQUIRE(r != nullptr);
  REQUIRE(r->gpu.count == 1);
  const double measured_ms = double(r->gpu.total_ns) / 1e6;
  CHECK(measured_ms == Approx(reference_ms).epsilon(0.05));  // same kernel, same stream: within 5%
  cudaEventDestroy(a);
  cudaEventDestroy(b);
  cudaStreamDestroy(stream);
}

TEST_CASE("a scope never waits for the GPU", "[gpu]") {
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  spin<<<1, 1, 0, stream>>>(1000);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  {
    CUSCOPE_SCOPE("long_kernel", stream);
    spin<<<1, 1, 0, stream>>>(cycles_for_ms(100.0));
  }
  cuscope::flush();  // the kernel still runs: flush must not wait for it
  const cuscope::Report during = cuscope::snapshot();
  CHECK(during.find("long_kernel")->host.total_ns < 50'000'000);
  CHECK(during.find("long_kernel")->gpu.count == 0);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cuscope::flush();
  const auto* after = cuscope::snapshot().find("long_kernel");
  REQUIRE(after->gpu.count == 1);
  CHECK(after->gpu.total_ns > 90'000'000);
  cudaStreamDestroy(stream);
}

TEST_CASE("scopes in a stream being captured leave the graph intact and say so", "[gpu]") {
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMemsetAsync(x, 0, 1024 * sizeof(float), stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  {
    CUSCOPE_SCOPE("captured", stream);
    add_one<<<4, 256, 0, stream>>>(x, 1024);
  }
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  CHECK_CUDA(cudaGraphLaunch(exec, stream));
  CHECK_CUDA(cudaStreamSynchronize(stream));
  float first = 0;
  CHECK_CUDA(cudaMemcpy(&first, x, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(first == 1.0f);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("captured")->calls == 1);
  CHECK(r.find("captured")->gpu.count == 0);
  CHECK(r.diagnostics.gpu_event_failures == 1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  cudaStreamDestroy(stream);
}

TEST_CASE("GPU timing is on and the device is named when a GPU is present", "[gpu]") {
  cuscope_test::Session session;
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.gpu_timing == "on");
  CHECK(r.device.find("(sm_") != std::string::npos);
}

// GPU tests of scopes: CUDA-event timing without synchronization, and graph capture left intact.
#include <cuda_runtime.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

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

TEST_CASE(
    "CUSCOPE_EVENTS=auto: where CUPTI traces, scopes record no CUDA events; GPU time is the projected "
    "span",
    "[gpu]") {
  cuscope_test::Session session(cuscope_test::default_events());
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  const long long cycles = cycles_for_ms(0.2);
  spin<<<1, 1, 0, stream>>>(cycles);  // warm-up launch: module loading stays out
  for (int i = 0; i < 10; ++i) {
    CUSCOPE_SCOPE("auto_timed", stream);
    spin<<<1, 1, 0, stream>>>(cycles);
    spin<<<1, 1, 0, stream>>>(cycles);
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cuscope::flush();
  const cuscope::Report report = cuscope::snapshot();
  const auto* r = report.find("auto_timed");
  REQUIRE(r != nullptr);
  INFO("activity: " << report.activity_status << "; GPU timing: " << report.gpu_timing);
  if (report.tracing_on()) {
    CHECK(report.gpu_timing.rfind("projected: ", 0) == 0);
    CHECK(r->gpu.count == 0);
    REQUIRE(r->gpu_projected.count == 10);
    CHECK(r->total.kernel_calls == 20);
    CHECK(r->gpu_projected.total_ns >= r->total.kernel_ns);  // one stream: the kernels and any gap
    CHECK(&r->gpu_time() == &r->gpu_projected);
  } else {  // CUPTI taken by another tool: events time the scopes instead
    CHECK(report.gpu_timing == "on");
    CHECK(r->gpu.count == 10);
  }
  cudaStreamDestroy(stream);
}

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
  CHECK(r.diagnostics.gpu_event_failures == 0);  // not a failure: by design, and counted as such
  CHECK(r.diagnostics.scopes_in_capture == 1);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  cudaStreamDestroy(stream);
}

// The collector thread queries other threads' CUDA events every 10 ms. A cudaEventQuery from a
// thread in global capture mode while another thread captures in global mode invalidates that
// capture (cudaErrorStreamCaptureInvalidated at cudaStreamEndCapture).
TEST_CASE("a global-mode capture survives the collector querying another thread's scope events",
          "[gpu][global_capture]") {
  cuscope_test::Session session;
  cudaStream_t busy = nullptr;
  cudaStream_t capture = nullptr;
  CHECK_CUDA(cudaStreamCreate(&busy));
  CHECK_CUDA(cudaStreamCreate(&capture));
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, 1024 * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, 1024 * sizeof(float)));
  const long long one_ms = cycles_for_ms(1.0);
  std::atomic<bool> stop{false};
  std::atomic<int> scopes{0};
  std::thread worker([&] {
    while (!stop.load()) {
      CUSCOPE_SCOPE("worker_scope", busy);
      spin<<<1, 1, 0, busy>>>(one_ms);
      scopes.fetch_add(1);
    }
    cudaStreamSynchronize(busy);
  });
  while (scopes.load() < 20) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(capture, cudaStreamCaptureModeGlobal));
  for (int k = 0; k < 3; ++k) {
    add_one<<<4, 256, 0, capture>>>(x, 1024);
    std::this_thread::sleep_for(std::chrono::milliseconds(30));  // several collector passes
  }
  const cudaError_t ended = cudaStreamEndCapture(capture, &graph);
  stop.store(true);
  worker.join();
  REQUIRE(ended == cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  {
    CUSCOPE_SCOPE("replay", capture);
    CHECK_CUDA(cudaGraphLaunch(exec, capture));
  }
  CHECK_CUDA(cudaStreamSynchronize(capture));
  float first = 0;
  CHECK_CUDA(cudaMemcpy(&first, x, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(first == 3.0f);
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  INFO("GPU timing: " << r.gpu_timing
                      << "; notes: " << Catch::Detail::stringify(r.notes));  // the failures' causes
  CHECK(r.find("worker_scope")->gpu.count == static_cast<std::uint64_t>(scopes.load()));
  CHECK(r.find("replay")->self.kernel_calls == 3);  // the graph's kernels, at its launch
  CHECK(r.diagnostics.gpu_event_failures == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
  cudaStreamDestroy(busy);
  cudaStreamDestroy(capture);
}

TEST_CASE("a scope without a stream records no CUDA events", "[gpu]") {
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  {
    CUSCOPE_SCOPE("no_stream");
    spin<<<1, 1, 0, stream>>>(1000);
  }
  {
    cuscope::Scope legacy{std::string_view{"legacy_stream"}, cudaStreamLegacy};
    spin<<<1, 1, 0, stream>>>(1000);
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("no_stream")->gpu.count == 0);
  CHECK(r.find("legacy_stream")->gpu.count == 0);
  CHECK(r.diagnostics.gpu_event_failures == 0);
  cudaStreamDestroy(stream);
}

// Events are created on the stream's device, whatever device is current. Needs two GPUs: hidden
// unless asked for ("[.multi-gpu]"), so that a one-GPU machine neither runs nor passes it.
TEST_CASE("a scope on another device's stream is timed there", "[.multi-gpu]") {
  int count = 0;
  CHECK_CUDA(cudaGetDeviceCount(&count));
  REQUIRE(count >= 2);
  cuscope_test::Session session;
  cudaStream_t on_one = nullptr;
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaStreamCreate(&on_one));
  CHECK_CUDA(cudaSetDevice(0));
  {
    CUSCOPE_SCOPE("device_one", on_one);
    CHECK_CUDA(cudaSetDevice(1));
    spin<<<1, 1, 0, on_one>>>(1000);
    CHECK_CUDA(cudaSetDevice(0));
  }
  CHECK_CUDA(cudaStreamSynchronize(on_one));
  int current = -1;
  CHECK_CUDA(cudaGetDevice(&current));
  CHECK(current == 0);  // cuscope put the program's device back
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("device_one")->gpu.count == 1);
  CHECK(r.diagnostics.gpu_event_failures == 0);
  cudaStreamDestroy(on_one);
}

// A stream busy for long must not hold back the resolution of another stream's events. Under the
// CUPTI clock (GPU_TEST_EVENT_TIMESTAMPS=cupti) it may, by CUPTI's design: the thread's records
// share one CUPTI buffer, which a normal flush hands over only once every record in it is complete,
// so "fast" would be timed once "slow" has run (docs/cupti-event-clock.md; inferred from CUPTI's
// documentation, not yet seen on a GPU). There the count while "slow" runs is printed, not
// asserted: what the trial is to show. Both are timed, none failed, once "slow" has run, under
// either clock.
TEST_CASE("one long-running stream does not block resolving the others", "[gpu][two_streams]") {
  cuscope_test::Session session;
  cudaStream_t slow = nullptr;
  cudaStream_t fast = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&slow, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&fast, cudaStreamNonBlocking));
  {
    CUSCOPE_SCOPE("slow", slow);
    spin<<<1, 1, 0, slow>>>(cycles_for_ms(500.0));
  }
  {
    CUSCOPE_SCOPE("fast", fast);
    spin<<<1, 1, 0, fast>>>(1000);
  }
  CHECK_CUDA(cudaStreamSynchronize(fast));
  cuscope::flush();  // slow's kernel still runs
  const cuscope::Report during = cuscope::snapshot();
  const bool cupti_clock = during.gpu_timing.find("device timestamps from CUPTI") != std::string::npos;
  INFO("GPU timing: " << during.gpu_timing << "; notes: " << Catch::Detail::stringify(during.notes));
  CHECK(during.find("slow")->gpu.count == 0);
  if (cupti_clock) {
    WARN("CUPTI clock: 'fast' timed " << during.find("fast")->gpu.count << " time(s) while 'slow' ran");
  } else {
    CHECK(during.find("fast")->gpu.count == 1);
  }
  CHECK_CUDA(cudaStreamSynchronize(slow));
  cuscope::flush();
  const cuscope::Report after = cuscope::snapshot();
  CHECK(after.find("slow")->gpu.count == 1);
  CHECK(after.find("fast")->gpu.count == 1);
  CHECK(after.diagnostics.gpu_event_failures == 0);
  cudaStreamDestroy(slow);
  cudaStreamDestroy(fast);
}

TEST_CASE("GPU timing is on and the device is named when a GPU is present", "[gpu]") {
  cuscope_test::Session session;
  const cuscope::Report r = cuscope::snapshot();
  // Under the trial's CUPTI clock (GPU_TEST_EVENT_TIMESTAMPS=cupti) the timing says so.
  CHECK(r.gpu_timing == (cuscope_test::quiet_options().event_timestamps == cuscope::EventTimestamps::cupti
                             ? "on, device timestamps from CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)"
                             : "on"));
  CHECK(r.device.find("(sm_") != std::string::npos);
}

// GPU tests of scopes timed by CUDA events: each of five one-kernel scopes' event time against its
// kernel's CUPTI time, with events timed by CUDA and by CUPTI's device timestamps
// (CUSCOPE_EVENT_TIMESTAMPS=cupti).
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <thread>

#include "gpu_kit.cuh"
#include "session_fixture.hpp"

namespace {

// Five scopes of one 2 ms kernel each on a stream; the report once each scope has its event time
// (a buffer of CUPTI's comes back once all its records are complete: a few flushes, bounded).
cuscope::Report five_single_kernel_scopes() {
  warm_up();
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  // spin_kernel's own first launch, outside every scope: CUDA loads each function lazily at its
  // first launch. Without it the H100 showed 0.64 ms more between the five scopes' events than in
  // their kernels (lazy loading in the first scope being the likely cause; the INFO below tells).
  spin_kernel<<<1, 1, 0, stream>>>(0);
  CHECK_CUDA(cudaStreamSynchronize(stream));
  // A 5 ms kernel outside every scope first, so that every scope's events wait in the stream behind
  // GPU work: a host delay between a scope's start event and its launch (the 472f7e4 check, on a
  // noisy machine, had one scope 0.6 ms long) then leaves the GPU no idle time to count.
  spin_kernel<<<1, 1, 0, stream>>>(cycles_for_ms(5.0));
  for (int i = 0; i < 5; ++i) {
    CUSCOPE_SCOPE("single", stream);
    spin_kernel<<<1, 1, 0, stream>>>(cycles_for_ms(2.0));
  }
  cuscope::Report r = settled();
  for (int i = 0; i < 20 && (r.find("single") == nullptr || r.find("single")->gpu.count < 5); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    r = settled();
  }
  cudaStreamDestroy(stream);
  return r;
}

// Each of the five scopes' event times brackets its kernel: a few microseconds of launch gap per
// scope, nothing more.
void check_single_kernel_scopes(const cuscope::Report& r) {
  const auto& s = range(r, "single");
  INFO("CUDA-event failures " << r.diagnostics.gpu_event_failures);
  REQUIRE(s.gpu.count == 5);
  REQUIRE(s.self.kernel_calls == 5);
  const double event_ns = double(s.gpu.total_ns);
  const double kernel_ns = double(s.self.kernel_ns);
  INFO("CUDA-event time per scope: min " << s.gpu.min_ns << " ns, max " << s.gpu.max_ns << " ns; kernel time "
                                           << s.self.kernel_ns << " ns in " << s.self.kernel_calls << " kernels");
  CHECK(event_ns >= kernel_ns * 0.97);
  CHECK(event_ns - kernel_ns <= 0.05 * kernel_ns + 5 * 20'000.0);
  CHECK(s.self.busy_share() > 0.99);
  CHECK(r.diagnostics.gpu_event_failures == 0);
}

}  // namespace

TEST_CASE("a one-kernel scope: CUPTI kernel time and CUDA-event time agree", "[gpu][cupti]") {
  cuscope_test::Session session;
  check_single_kernel_scopes(five_single_kernel_scopes());
}

// CUSCOPE_EVENT_TIMESTAMPS=cupti (docs/cupti-event-clock.md): the same scopes with events made
// without timing, their times the device timestamps of CUPTI's CUDA_EVENT records. Not checked on a
// GPU before this case first runs: it fails, and says which, if the records or their ids do not
// come.
TEST_CASE("a one-kernel scope timed by CUPTI's event timestamps agrees with its kernel time", "[gpu][cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.event_timestamps = cuscope::EventTimestamps::cupti;
  cuscope_test::Session session(o);
  const cuscope::Report r = five_single_kernel_scopes();
  CHECK(r.gpu_timing == "on, device timestamps from CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)");
  check_single_kernel_scopes(r);
}


// Ends a traced GPU program the hard ways, for the at-exit GPU tests (tests/gpu/CMakeLists.txt):
//   inflight   returns from main while a long kernel still runs
//   reset      calls cudaDeviceReset, then times scopes on the new context, and checks both
//              the scope before the reset and the one after it got their CUDA-event time
//   attributed checks that the three scopes' kernels were attributed, though the program made
//              its CUDA context (cudaStreamCreate) before cuscope started at the first scope
// Exit 77 without a GPU (CTest: Skipped); 1 when a check fails. The summary must print.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <cuscope/cuscope.hpp>

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

namespace {

int timed_calls(const char* path) {
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  const cuscope::RangeStats* range = r.find(path);
  return range != nullptr ? static_cast<int>(range->gpu.count) : -1;
}

// The three exit_gpu_step kernels, launched by a program that used CUDA before cuscope started.
int check_attributed() {
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  const cuscope::RangeStats* range = r.find("exit_gpu_step");
  const unsigned long long kernels = range != nullptr ? range->self.kernel_calls : 0;
  std::printf("exit_gpu: activity %s; exit_gpu_step kernels %llu of 3, %llu records not matched\n",
              r.activity_status.c_str(), kernels,
              static_cast<unsigned long long>(r.diagnostics.unresolved_records));
  return r.tracing_on() && kernels == 3 && r.diagnostics.unresolved_records == 0 ? 0 : 1;
}

int reset_and_time() {
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  {
    CUSCOPE_SCOPE("before_reset", stream);
    spin<<<1, 1, 0, stream>>>(1000);
  }
  cudaStreamSynchronize(stream);
  const int before = timed_calls("before_reset");
  cudaStreamDestroy(stream);
  if (cudaDeviceReset() != cudaSuccess || cudaStreamCreate(&stream) != cudaSuccess) return 1;
  for (int i = 0; i < 2; ++i) {
    CUSCOPE_SCOPE("after_reset", stream);
    spin<<<1, 1, 0, stream>>>(1000);
  }
  cudaStreamSynchronize(stream);
  const int after = timed_calls("after_reset");
  std::printf("exit_gpu: before_reset timed %d, after_reset timed %d\n", before, after);
  return before == 1 && after == 2 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  const char* mode = argc > 1 ? argv[1] : "inflight";
  cudaStream_t stream = nullptr;
  if (cudaStreamCreate(&stream) != cudaSuccess) return 1;
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("exit_gpu_step", stream);
    spin<<<1, 1, 0, stream>>>(1000);
  }
  cudaDeviceSynchronize();
  if (std::strcmp(mode, "reset") == 0) return reset_and_time();
  if (std::strcmp(mode, "attributed") == 0) return check_attributed();
  CUSCOPE_SCOPE("inflight", stream);
  spin<<<1, 1, 0, stream>>>(2'000'000'000);  // about a second: still running when main returns
  return 0;
}

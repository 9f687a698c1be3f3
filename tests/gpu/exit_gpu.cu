// Ends a traced GPU program the hard ways, for the at-exit GPU tests (tests/gpu/CMakeLists.txt):
//   inflight   returns from main while a long kernel still runs
//   reset      calls cudaDeviceReset itself before returning
// Exit 77 without a GPU (CTest: Skipped). The summary must print and the exit code be 0.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstring>
#include <cuscope/cuscope.hpp>

__global__ void spin(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

int main(int argc, char** argv) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) return 77;
  const char* mode = argc > 1 ? argv[1] : "inflight";
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("exit_gpu_step");
    spin<<<1, 1>>>(1000);
  }
  cudaDeviceSynchronize();
  if (std::strcmp(mode, "reset") == 0) {
    {
      CUSCOPE_SCOPE("before_reset");
      spin<<<1, 1>>>(1000);
    }
    cudaDeviceReset();
  } else {
    CUSCOPE_SCOPE("inflight");
    spin<<<1, 1>>>(2'000'000'000);  // about a second: still running when main returns
  }
  return 0;
}

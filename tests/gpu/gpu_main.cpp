// The GPU suite's main: exits 77 (CTest: Skipped) when there is no CUDA device, so a GPU test
// never passes without having run.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("cuscope GPU tests: skipped, no CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
                cudaGetErrorString(err), count);
    return 77;
  }
  return Catch::Session().run(argc, argv);
}

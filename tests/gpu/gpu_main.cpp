// The GPU suite's main: exits 77 (CTest: Skipped) when there is no CUDA device, so a GPU test
// never passes without having run.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>
#include <execinfo.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>

namespace {

// A crash's call stack on stderr (addresses; tests/gpu-check.sh may resolve them with addr2line).
// Catch reports the signal first, then restores this handler and raises it again.
void print_stack(int sig) {
  void* frames[64];
  const int n = backtrace(frames, 64);
  static const char kHead[] = "cuscope GPU tests: fatal signal, call stack:\n";
  (void)!write(STDERR_FILENO, kHead, sizeof kHead - 1);
  backtrace_symbols_fd(frames, n, STDERR_FILENO);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

}  // namespace

int main(int argc, char** argv) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::printf("cuscope GPU tests: skipped, no CUDA device (cudaGetDeviceCount: %s, %d devices)\n",
                cudaGetErrorString(err), count);
    return 77;
  }
  std::signal(SIGSEGV, print_stack);
  std::signal(SIGABRT, print_stack);
  std::signal(SIGBUS, print_stack);
  return Catch::Session().run(argc, argv);
}

// The GPU suite's main: exits 77 (CTest: Skipped) when there is no CUDA device, so a GPU test
// never passes without having run. Listing the cases (--list-tests, --list-test-names-only,
// --list-tags, -l, -t) runs none and needs no device: what tests/gpu_check_specs.sh checks
// tests/gpu-check.sh's test specs against. GPU_TEST_STALL_S=N (tests/gpu-check.sh's detach sections
// and CUPTI-timed trial): each case's name on stderr as it starts, and a case running past N s gets
// every thread's stack printed (bench/watchdog.hpp: the device has no gdb), then the process exits 3.
// A run with failures exits 1, whatever their number.
#define CATCH_CONFIG_RUNNER
#include <cuda_runtime_api.h>
#include <execinfo.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "bench/watchdog.hpp"

namespace {

std::unique_ptr<cuscope_bench::Watchdog> g_watchdog;  // with GPU_TEST_STALL_S only

// Each case a part of the watchdog's: its limit counts from the case's start.
struct StallListener : Catch::TestEventListenerBase {
  using TestEventListenerBase::TestEventListenerBase;
  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    if (g_watchdog) g_watchdog->part(info.name);
  }
};
CATCH_REGISTER_LISTENER(StallListener)

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

// Whether Catch is asked only to list (cases or tags): nothing runs.
bool lists_only(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg.starts_with("--list") || arg == "-l" || arg == "-t") return true;
  }
  return false;
}

}  // namespace

int main(int argc, char** argv) {
  if (lists_only(argc, argv)) return Catch::Session().run(argc, argv);
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
  if (const char* stall_s = std::getenv("GPU_TEST_STALL_S"); stall_s != nullptr && std::atoi(stall_s) > 0)
    g_watchdog = std::make_unique<cuscope_bench::Watchdog>(std::atoi(stall_s), "cuscope_gpu_tests");
  const int failed = Catch::Session().run(argc, argv);
  g_watchdog.reset();
  // Catch 2 returns the failed assertions' count: 3 would read as the watchdog's exit, 77 as
  // Skipped. Any failure is 1.
  return failed != 0 ? 1 : 0;
}

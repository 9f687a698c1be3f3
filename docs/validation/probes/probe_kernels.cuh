// docs/validation/probes/probe_kernels.cuh — device code the probes share: a kernel that spins on
// the GPU's global timer, and one held until the host releases it, for work still running when the
// host does what a probe times. Raw CUDA:
// never cuscope, nor host code (that is probe_common.hpp's).
#pragma once

#include <cstdint>

namespace probe {
namespace {

__device__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

/// Busy-waits `ns` of the GPU's global timer.
__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = globaltimer_ns();
  while (globaltimer_ns() - t0 < ns) {
  }
}

/// Runs until the host sets `*release` (mapped host memory: cudaHostAlloc with
/// cudaHostAllocMapped), or `max_ns` of the global timer have passed, whichever comes first; then
/// writes into `*how` 1 (released) or 2 (timed out). For work that must still be running when the
/// host does something, however fast the host is: a fixed spin can end before the host gets there.
__global__ void hold_kernel(const volatile unsigned* release, volatile unsigned* how, std::uint64_t max_ns) {
  const std::uint64_t t0 = globaltimer_ns();
  while (*release == 0) {
    if (globaltimer_ns() - t0 >= max_ns) {
      *how = 2;
      return;
    }
  }
  *how = 1;
}

}  // namespace
}  // namespace probe

// docs/validation/probes/probe_kernels.cuh — device code the probes share: a kernel that spins on
// the GPU's global timer, for work still running when the host does what a probe times. Raw CUDA:
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

}  // namespace
}  // namespace probe

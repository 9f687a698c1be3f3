// producers/cuda_probe.hpp — is there a GPU to time on? Asked once at session start.
#pragma once

#include <string>

namespace cuscope::inline v0::detail {

struct GpuProbe {
  bool available = false;
  int device_count = 0;
  std::string device;  ///< "NVIDIA H100 80GB HBM3 (sm_90)", "2 GPUs: ...", or "no GPU"
  std::string
      reason;  ///< why not available, one line, e.g. "no CUDA driver (cudaGetDeviceCount: error 35: ...)"
};

/// Queries the CUDA runtime without leaving an error behind for the program to find.
GpuProbe probe_gpu() noexcept;

/// Tests and benchmarks (tests/fake_cuda.hpp): what probe_gpu() returns instead of asking CUDA
/// (nullptr: ask CUDA again). Set it before the session starts.
void set_gpu_probe_for_testing(const GpuProbe* probe) noexcept;

}  // namespace cuscope::inline v0::detail

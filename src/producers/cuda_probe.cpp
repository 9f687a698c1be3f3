// producers/cuda_probe.cpp — see cuda_probe.hpp.
#include "producers/cuda_probe.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

namespace cuscope::inline v0::detail {
namespace {

const GpuProbe* g_probe_for_testing = nullptr;

}  // namespace

void set_gpu_probe_for_testing(const GpuProbe* probe) noexcept { g_probe_for_testing = probe; }

GpuProbe probe_gpu() noexcept {
  if (g_probe_for_testing != nullptr) {
    try {
      return *g_probe_for_testing;
    } catch (...) {  // out of memory for the strings
      return {};
    }
  }
  GpuProbe p;
  p.device = "no GPU";
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    cudaGetLastError();  // leave no error for the program's own checks
    const char* what = err == cudaErrorInsufficientDriver ? "no CUDA driver"
                       : err == cudaErrorNoDevice         ? "no CUDA device"
                                                          : "CUDA unavailable";
    p.reason = fmt::format("{} (cudaGetDeviceCount: error {}: {})", what, static_cast<int>(err),
                           cudaGetErrorString(err));
    return p;
  }
  if (count == 0) {
    p.reason = "no CUDA device (cudaGetDeviceCount returned 0)";
    return p;
  }
  int current = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&current) != cudaSuccess || cudaGetDeviceProperties(&prop, current) != cudaSuccess) {
    const cudaError_t e = cudaGetLastError();
    p.reason = fmt::format("CUDA unavailable (cudaGetDeviceProperties: error {}: {})", static_cast<int>(e),
                           cudaGetErrorString(e));
    return p;
  }
  p.available = true;
  p.device_count = count;
  p.device = fmt::format("{} (sm_{}{})", prop.name, prop.major, prop.minor);
  if (count > 1) p.device = fmt::format("{} GPUs, current: {}", count, p.device);
  return p;
}

}  // namespace cuscope::inline v0::detail

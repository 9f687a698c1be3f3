// docs/validation/probes/launch_records.hpp — what the two launch probes (launch_attribution.cu,
// launch_callbacks.cu) share: the driver API looked up in libcuda, the kernel, external correlation
// and API records taken from CUPTI's buffers, the thread-local scope a launch is tied to, the
// stream and function launches go to, and every kind turned off. Raw CUDA and CUPTI: never include
// cuscope here.
#pragma once

#include <dlfcn.h>

#include <unordered_map>

#include "probe_common.hpp"

namespace launch_probe {

// ---- The driver API, looked up in libcuda after the device check: linking -lcuda would keep the
// probe from starting at all (not exit 77) on a machine without a driver.

#define PROBE_NAME(f) PROBE_NAME_OF(f)  // the name after cuda.h's macros (cuLaunchKernel_ptsz, ...)
#define PROBE_NAME_OF(f) #f

struct Driver {
  decltype(&cuLaunchKernel) launch_kernel = nullptr;
  decltype(&cuLaunchKernelEx) launch_kernel_ex = nullptr;
  decltype(&cuGetErrorString) error_string = nullptr;
};
inline Driver g_driver;

template <class F>
void look_up(void* lib, const char* name, F& f) {
  f = reinterpret_cast<F>(dlsym(lib, name));
  if (f != nullptr) return;
  std::printf("FAILED: %s not found in libcuda.so.1\n", name);
  std::exit(EXIT_FAILURE);
}

inline void load_driver() {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::printf("FAILED: dlopen(libcuda.so.1): %s\n", dlerror());
    std::exit(EXIT_FAILURE);
  }
  look_up(lib, PROBE_NAME(cuLaunchKernel), g_driver.launch_kernel);
  look_up(lib, PROBE_NAME(cuLaunchKernelEx), g_driver.launch_kernel_ex);
  look_up(lib, PROBE_NAME(cuGetErrorString), g_driver.error_string);
}

inline void cu_check(CUresult status, const char* call, int line) {
  if (status == CUDA_SUCCESS) return;
  const char* text = nullptr;
  g_driver.error_string(status, &text);
  std::printf("FAILED line %d: %s: %s\n", line, call, text != nullptr ? text : "?");
  std::exit(EXIT_FAILURE);
}
#define PROBE_CU(call) ::launch_probe::cu_check((call), #call, __LINE__)

// ---- Records the parser keeps (guarded by probe::Buffers::records_mutex()).

struct KernelRecord {
  std::uint32_t correlation;
  std::uint64_t start_ns;
};

struct Records {
  std::vector<KernelRecord> kernels;
  std::unordered_map<std::uint32_t, std::uint64_t> external;  // correlation id -> external id
  std::uint64_t api = 0;
};
inline Records g_records;

inline void parse(const CUpti_Activity* r) {
  if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
    g_records.kernels.push_back({k->correlationId, k->start});
  } else if (r->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
    const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(r);
    g_records.external[e->correlationId] = e->externalId;
  } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
    ++g_records.api;
  }
}

inline Records take_records() {
  probe::Buffers::flush_forced();
  std::lock_guard lock(probe::Buffers::records_mutex());
  Records r = std::move(g_records);
  g_records = Records{};
  return r;
}

/// The scope open on this thread: what cuscope's stack top would be when the thread launches.
inline thread_local std::uint64_t t_scope = 0;

struct Target {
  cudaStream_t stream;
  CUfunction function;  // empty_kernel, for cuLaunchKernel
};

/// The stream and function of `kernel` (from cudaGetFuncBySymbol: cuLaunchKernel takes it).
inline Target make_target(const void* kernel) {
  Target t{};
  PROBE_CUDA(cudaStreamCreate(&t.stream));
  cudaFunction_t f = nullptr;
  PROBE_CUDA(cudaGetFuncBySymbol(&f, kernel));
  t.function = reinterpret_cast<CUfunction>(f);
  return t;
}

inline void cupti_off() {
  probe::Buffers::flush_forced();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  probe::disable_api_kinds();
  probe::Buffers::flush_forced();
}

}  // namespace launch_probe

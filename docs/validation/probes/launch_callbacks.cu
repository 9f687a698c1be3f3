// docs/validation/probes/launch_callbacks.cu — issue 24: which CUPTI callbacks see a launch with the
// correlation id its kernel record carries, and so can tie the kernel to the scope open on the
// launching thread (the way Triton's Proton does, at the driver's cuLaunchKernel callback)? Raw CUDA
// and CUPTI, no cuscope; exits 77 without a CUDA device. Its cost: launch_attribution.cu.
//
// 10 empty kernels each by <<<>>>, cudaLaunchKernel, cudaLaunchKernelEx, cuLaunchKernel,
// cuLaunchKernelEx, <<<>>> on cudaStreamPerThread, and <<<>>> from a second thread, with callbacks on
// every runtime and driver call whose name holds "Launch" (listed first, with their cbids) and
// CONCURRENT_KERNEL records. A CHECK line per method: kernel records, how many a driver and a
// runtime callback saw with the same correlation id, how many got the launching thread's scope from
// the driver callback, which callbacks those were, and every launch callback the method made. The
// CONCLUSION line is computed from the data.
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line. By
// hand, on a GPU machine, from the repository root (one line):
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/launch_callbacks docs/validation/probes/launch_callbacks.cu
//   -L/usr/local/cuda/lib64 -lcupti -ldl && /tmp/launch_callbacks
#include <map>
#include <thread>

#include "launch_records.hpp"

namespace {

using namespace launch_probe;

constexpr const char* kName = "launch_callbacks";

__global__ void empty_kernel() {}

struct CallSeen {
  CUpti_CallbackDomain domain;
  CUpti_CallbackId cbid;
  std::uint32_t correlation;
  std::uint64_t scope;
};

std::mutex g_check_mutex;
std::vector<CallSeen> g_check_calls;

void CUPTIAPI on_any_launch(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  std::lock_guard lock(g_check_mutex);
  g_check_calls.push_back({domain, cbid, cb->correlationId, t_scope});
}

/// Enables the callback of every call of `domain` whose name holds "Launch"; prints their names.
void enable_launch_callbacks(CUpti_SubscriberHandle sub, CUpti_CallbackDomain domain) {
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  const CUpti_CallbackId size = runtime ? static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                        : static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE);
  std::printf("CHECK %s callbacks enabled:", runtime ? "runtime" : "driver");
  for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    if (std::strstr(name, "Launch") == nullptr) continue;
    PROBE_CUPTI(cuptiEnableCallback(1, sub, domain, cbid));
    std::printf(" %s(%u)", name, cbid);
  }
  std::printf("\n");
}

struct Method {
  const char* name;
  bool runtime;  // a runtime API call: does its driver callback carry the kernel's correlation id?
  void (*launch)(const Target&);
};

void launch_triple_chevron(const Target& t) { empty_kernel<<<1, 1, 0, t.stream>>>(); }
void launch_cuda_launch_kernel(const Target& t) {
  PROBE_CUDA(
      cudaLaunchKernel(reinterpret_cast<const void*>(&empty_kernel), dim3(1), dim3(1), nullptr, 0, t.stream));
}
void launch_cuda_launch_kernel_ex(const Target& t) {
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(1);
  config.blockDim = dim3(1);
  config.stream = t.stream;
  PROBE_CUDA(cudaLaunchKernelEx(&config, &empty_kernel));
}
void launch_cu_launch_kernel(const Target& t) {
  PROBE_CU(g_driver.launch_kernel(t.function, 1, 1, 1, 1, 1, 1, 0, t.stream, nullptr, nullptr));
}
void launch_cu_launch_kernel_ex(const Target& t) {
  CUlaunchConfig config{};
  config.gridDimX = config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = config.blockDimY = config.blockDimZ = 1;
  config.hStream = t.stream;
  PROBE_CU(g_driver.launch_kernel_ex(&config, t.function, nullptr, nullptr));
}
void launch_per_thread_stream(const Target&) { empty_kernel<<<1, 1, 0, cudaStreamPerThread>>>(); }

constexpr Method kMethods[] = {{"<<<>>>", true, &launch_triple_chevron},
                               {"cudaLaunchKernel", true, &launch_cuda_launch_kernel},
                               {"cudaLaunchKernelEx", true, &launch_cuda_launch_kernel_ex},
                               {"cuLaunchKernel", false, &launch_cu_launch_kernel},
                               {"cuLaunchKernelEx", false, &launch_cu_launch_kernel_ex},
                               {"<<<>>> on cudaStreamPerThread", true, &launch_per_thread_stream}};
constexpr int kCheckLaunches = 10;

struct MethodResult {
  int kernels = 0, driver_same = 0, runtime_same = 0, right_scope = 0;
  std::map<std::string, int> callbacks;  // which callbacks carried a kernel's correlation id
  std::map<std::string, int> calls;      // every launch callback the method's launches made
};

std::string label(const CallSeen& c) {
  return (c.domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver:" : "runtime:") +
         probe::callback_name(c.domain, c.cbid);
}

MethodResult check_method(const Target& t, const Method& m, bool other_thread, std::uint64_t first_scope) {
  {
    std::lock_guard lock(g_check_mutex);
    g_check_calls.clear();
  }
  const auto body = [&] {
    for (int i = 0; i < kCheckLaunches; ++i) {
      t_scope = first_scope + i;
      m.launch(t);
    }
    t_scope = 0;
    PROBE_CUDA(cudaDeviceSynchronize());
  };
  if (other_thread) {
    std::thread(body).join();
  } else {
    body();
  }
  Records r = take_records();
  std::sort(r.kernels.begin(), r.kernels.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  MethodResult res;
  res.kernels = static_cast<int>(r.kernels.size());
  std::lock_guard lock(g_check_mutex);
  for (const CallSeen& c : g_check_calls) ++res.calls[label(c)];
  for (std::size_t k = 0; k < r.kernels.size(); ++k) {
    bool driver = false, runtime = false, right = false;
    for (const CallSeen& c : g_check_calls) {
      if (c.correlation != r.kernels[k].correlation) continue;
      ++res.callbacks[label(c)];
      driver |= c.domain == CUPTI_CB_DOMAIN_DRIVER_API;
      runtime |= c.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
      right |= c.domain == CUPTI_CB_DOMAIN_DRIVER_API && c.scope == first_scope + k;
    }
    res.driver_same += driver;
    res.runtime_same += runtime;
    res.right_scope += right;
  }
  return res;
}

void check_methods(const Target& t) {
  take_records();
  CUpti_SubscriberHandle sub = nullptr;
  PROBE_CUPTI(cuptiSubscribe(&sub, &on_any_launch, nullptr));
  enable_launch_callbacks(sub, CUPTI_CB_DOMAIN_DRIVER_API);
  enable_launch_callbacks(sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  int runtime_methods_ok = 0, runtime_methods = 0;
  std::uint64_t first_scope = 1000000;
  for (int thread = 0; thread < 2; ++thread) {
    for (const Method& m : kMethods) {
      if (thread == 1 && &m != &kMethods[0]) continue;  // <<<>>> alone from a second thread
      const MethodResult r = check_method(t, m, thread == 1, first_scope);
      first_scope += 1000;
      std::printf(
          "CHECK %-32s thread=%s kernel_records=%d driver_callback_same_correlation=%d "
          "runtime_callback_same_correlation=%d right_scope_from_driver_callback=%d callbacks:",
          m.name, thread == 0 ? "main" : "second", r.kernels, r.driver_same, r.runtime_same, r.right_scope);
      for (const auto& [name, n] : r.callbacks) std::printf(" %s=%d", name.c_str(), n);
      std::printf(" | every launch callback:");
      for (const auto& [name, n] : r.calls) std::printf(" %s=%d", name.c_str(), n);
      std::printf("\n");
      if (m.runtime) {
        ++runtime_methods;
        runtime_methods_ok += r.kernels == kCheckLaunches && r.right_scope == kCheckLaunches;
      }
    }
  }
  std::printf(
      "CONCLUSION: runtime launches reach a driver launch callback with the kernel record's correlation id "
      "and the launching thread's scope in %d of %d runtime launch methods (every kernel of the method)\n",
      runtime_methods_ok, runtime_methods);
  cupti_off();
  PROBE_CUPTI(cuptiUnsubscribe(sub));
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  load_driver();
  const Target t = make_target(reinterpret_cast<const void*>(&empty_kernel));
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  check_methods(t);
  return 0;
}

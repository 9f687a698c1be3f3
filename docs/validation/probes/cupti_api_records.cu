// docs/validation/probes/cupti_api_records.cu — the witness for how cuscope turns on API records
// (docs/cupti.md, "Correlation"): raw CUPTI, no cuscope. 10 launches, each inside a pushed external
// correlation id, then one unwanted call each (cudaGetDevice, cuCtxGetDevice); prints how many
// kernel, API and external correlation records CUPTI gave.
//   MODE:    percbid   only the wanted calls turned on (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 1))
//            kind      the whole RUNTIME (or DRIVER) kind
//            kindminus the kind, then every unwanted call turned off (what cuscope does)
//            kindoff   the kind enabled and disabled, then the wanted calls turned on
//   CONTEXT: after (CUPTI used first) or before (cudaFree(0) before CUPTI is touched)
//   API:     rt (<<<>>> launches) or driver (cuLaunchKernel)
// Not built by CMake. On a GPU machine:
//   nvcc -arch=sm_90 -o probe docs/validation/probes/cupti_api_records.cu -lcupti -lcuda \
//        -L/usr/local/cuda/extras/CUPTI/lib64 && ./probe MODE CONTEXT API
// H100, CUDA 13.0, driver 580 (2026-11-24): percbid/before gave 0 API and 0 external records
// (rt and driver); kindminus gave the 10 launches' records both before and after.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
__global__ void k_empty() {}
static std::map<int,int> counts;
static void CUPTIAPI req(uint8_t** b, size_t* s, size_t* m) { *b = (uint8_t*)aligned_alloc(8, 8<<20); *s = 8<<20; *m = 0; }
static void CUPTIAPI done(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) counts[r->kind]++;
  free(b);
}
static bool wanted(const char* name) { return strstr(name, "Launch") || strstr(name, "Synchronize"); }
static int per_cbid(CUpti_CallbackDomain d, int size, bool enable_wanted, bool disable_unwanted) {
  int n = 0;
  for (CUpti_CallbackId cbid = 1; cbid < (CUpti_CallbackId)size; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(d, cbid, &name) != CUPTI_SUCCESS || !name) continue;
    const bool w = wanted(name);
    CUptiResult r = CUPTI_SUCCESS;
    if (w && enable_wanted) r = d == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 1) : cuptiActivityEnableDriverApi(cbid, 1);
    if (!w && disable_unwanted) r = d == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 0) : cuptiActivityEnableDriverApi(cbid, 0);
    if (r != CUPTI_SUCCESS) std::printf("cbid %s: %d\n", name, (int)r);
    n += w;
  }
  return n;
}
int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "percbid";
  const bool ctx_before = argc > 2 && !strcmp(argv[2], "before");
  const bool driver = argc > 3 && !strcmp(argv[3], "driver");
  if (ctx_before) cudaFree(0);
  cuptiActivityRegisterCallbacks(req, done);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  const CUpti_CallbackDomain d = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
  const int size = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;
  const CUpti_ActivityKind kind = driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME;
  if (!strcmp(mode, "kind")) {
    cuptiActivityEnable(kind);
  } else if (!strcmp(mode, "kindminus")) {
    cuptiActivityEnable(kind);
    per_cbid(d, size, false, true);
  } else if (!strcmp(mode, "kindoff")) {
    cuptiActivityEnable(kind);
    cuptiActivityDisable(kind);
    per_cbid(d, size, true, false);
  } else {
    per_cbid(d, size, true, false);
  }
  cudaFunction_t f = nullptr;
  cudaGetFuncBySymbol(&f, (const void*)k_empty);
  for (int i = 0; i < 10; ++i) {
    cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, 100 + i);
    if (driver) {
      cuLaunchKernel((CUfunction)f, 1,1,1, 1,1,1, 0, nullptr, nullptr, nullptr);
    } else {
      k_empty<<<1,1>>>();
    }
    int dev; cudaGetDevice(&dev);  // unwanted
    CUdevice cd; cuCtxGetDevice(&cd);  // unwanted (driver)
    uint64_t last; cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  }
  cudaDeviceSynchronize();
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::printf("%-9s %-6s %-7s: kernel %d runtime %d driver %d external %d\n", mode, driver ? "driver" : "rt", ctx_before ? "before" : "after",
              counts[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL], counts[CUPTI_ACTIVITY_KIND_RUNTIME], counts[CUPTI_ACTIVITY_KIND_DRIVER], counts[CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION]);
}

// docs/validation/probes/cuda_api_costs.cu — host cost of the CUDA runtime calls a scope with CUDA
// events makes (gpu_events.cpp): the capture check, the stream's device, the event record, and the
// resolver's query. No cuscope. Not built by CMake. On a GPU machine:
//   nvcc -O2 -arch=sm_90 -o costs docs/validation/probes/cuda_api_costs.cu && ./costs
// H100, CUDA 13.0, driver 580 (2026-11-24), mean of 100,000 calls: cudaStreamIsCapturing 86 ns,
// cudaStreamGetDevice 61 ns, cudaGetDevice 52 ns, cudaEventRecord 1,663 ns, cudaEventQuery of a
// completed event 371 ns, cudaGetLastError 33 ns.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
template <class F> double ns(int n, F f) { auto t0 = std::chrono::steady_clock::now(); for (int i = 0; i < n; ++i) f(); return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / n; }
int main() {
  cudaStream_t s; cudaStreamCreate(&s); cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b);
  const int n = 100000;
  for (int r = 0; r < 2; ++r) {
    cudaStreamCaptureStatus st; int dev;
    std::printf("IsCapturing %.0f ns\n", ns(n, [&] { cudaStreamIsCapturing(s, &st); }));
    std::printf("StreamGetDevice %.0f ns\n", ns(n, [&] { cudaStreamGetDevice(s, &dev); }));
    std::printf("GetDevice %.0f ns\n", ns(n, [&] { cudaGetDevice(&dev); }));
    std::printf("EventRecord %.0f ns\n", ns(n, [&] { cudaEventRecord(a, s); }));
    cudaStreamSynchronize(s);
    std::printf("EventQuery(done) %.0f ns\n", ns(n, [&] { cudaEventQuery(a); }));
    std::printf("GetLastError %.0f ns\n", ns(n, [&] { cudaGetLastError(); }));
  }
}

// A scope-using CUDA program built outside cuscope's tree (tests/consumer/check.sh).
#include <cstdio>
#include <cuscope/cuscope.hpp>

__global__ void scale(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}

int main() {
  int devices = 0;
  const bool gpu = cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
  cudaGetLastError();
  float* x = nullptr;
  if (gpu) cudaMalloc(&x, 1024 * sizeof(float));
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("consumer_scope");
    if (gpu) scale<<<4, 256>>>(x, 1024);
  }
  if (gpu) cudaDeviceSynchronize();
  const cuscope::Report r = cuscope::snapshot();
  const cuscope::RangeStats* s = r.find("consumer_scope");
  std::printf("consumer_scope calls: %llu\n", static_cast<unsigned long long>(s ? s->calls : 0));
  if (gpu) cudaFree(x);
  return s != nullptr && s->calls == 3 ? 0 : 1;
}

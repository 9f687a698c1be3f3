// producers/cuda_calls.cpp — see cuda_calls.hpp.
#include "producers/cuda_calls.hpp"

namespace cuscope::inline v0::detail {
namespace {

constexpr CudaCalls kRuntime{
    &cudaEventCreateWithFlags,
    &cudaEventRecord,
    &cudaEventQuery,
    &cudaEventElapsedTime,
    &cudaEventDestroy,
    &cudaGetDevice,
    &cudaSetDevice,
    &cudaStreamGetDevice,
    &cudaStreamIsCapturing,
    &cudaThreadExchangeStreamCaptureMode,
    &cudaGetLastError,
};

}  // namespace

constinit CudaCalls g_cuda = kRuntime;

void set_cuda_calls_for_testing(const CudaCalls* fakes) noexcept {
  g_cuda = fakes != nullptr ? *fakes : kRuntime;
}

}  // namespace cuscope::inline v0::detail

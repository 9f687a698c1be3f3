// producers/cuda_calls.hpp — the CUDA runtime calls that time scopes with CUDA events, as one table
// of function pointers: the event pool (gpu_events.cpp) and its resolver (session/collector.cpp)
// call CUDA only through it. By default it holds the runtime's own functions; a test or a
// benchmark swaps in fakes (tests/fake_cuda.hpp) to run the event timer with no GPU.
//
// Never: add work to a call (a scope pays one indirect call where it paid a direct one), or swap
// the table while a thread may be calling through it (swap it before the session starts and put it
// back after it has stopped).
#pragma once

#include <cuda_runtime_api.h>

namespace cuscope::inline v0::detail {

struct CudaCalls {
  cudaError_t (*event_create_with_flags)(cudaEvent_t* event, unsigned int flags);
  cudaError_t (*event_record)(cudaEvent_t event, cudaStream_t stream);
  cudaError_t (*event_query)(cudaEvent_t event);
  cudaError_t (*event_elapsed_time)(float* ms, cudaEvent_t start, cudaEvent_t stop);
  cudaError_t (*event_destroy)(cudaEvent_t event);
  cudaError_t (*get_device)(int* device);
  cudaError_t (*set_device)(int device);
  cudaError_t (*stream_get_device)(cudaStream_t stream, int* device);
  cudaError_t (*stream_is_capturing)(cudaStream_t stream, cudaStreamCaptureStatus* status);
  cudaError_t (*exchange_capture_mode)(cudaStreamCaptureMode* mode);
  cudaError_t (*get_last_error)();
};

/// The calls in use: the CUDA runtime's unless a test swapped them.
extern constinit CudaCalls g_cuda;

/// Tests and benchmarks: use `fakes` (nullptr: the CUDA runtime again). See the rule above.
void set_cuda_calls_for_testing(const CudaCalls* fakes) noexcept;

}  // namespace cuscope::inline v0::detail

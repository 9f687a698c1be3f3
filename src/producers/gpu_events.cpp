// producers/gpu_events.cpp — see gpu_events.hpp. Never synchronizes: a pair is read only once
// cudaEventQuery says its stop event has completed.
#include "producers/gpu_events.hpp"

namespace cuscope::inline v0::detail {

GpuEvents::GpuEvents() = default;

GpuEvents::Pair* GpuEvents::acquire() noexcept {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  Pair* p = spare_;
  if (p != nullptr) {
    spare_ = p->next;
  } else {
    free_.pop(p);
  }
  if (p != nullptr && p->device != device) {
    // Events belong to a device; re-create this pair on the current one.
    cudaEventDestroy(p->start);
    cudaEventDestroy(p->stop);
    p->start = p->stop = nullptr;
  }
  if (p == nullptr) {
    if (created_ >= kMaxPairs) return nullptr;
    p = new Pair;
    ++created_;
  }
  if (p->start == nullptr) {
    if (cudaEventCreate(&p->start) != cudaSuccess || cudaEventCreate(&p->stop) != cudaSuccess) {
      cudaGetLastError();
      if (p->start != nullptr) cudaEventDestroy(p->start);
      p->start = p->stop = nullptr;
      spare(p);
      return nullptr;
    }
    p->device = device;
  }
  return p;
}

bool GpuEvents::begin(std::uint32_t depth, cudaStream_t stream) noexcept {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(stream, &capture) != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
    cudaGetLastError();
    fail();  // an event recorded into a capture would become part of the user's graph
    return false;
  }
  Pair* p = acquire();
  if (p == nullptr) {
    fail();
    return false;
  }
  if (cudaEventRecord(p->start, stream) != cudaSuccess) {
    cudaGetLastError();
    spare(p);
    fail();
    return false;
  }
  open_[depth - 1] = p;
  streams_[depth - 1] = stream;
  return true;
}

void GpuEvents::end(std::uint32_t depth, model::Node* node) noexcept {
  Pair* p = open_[depth - 1];
  open_[depth - 1] = nullptr;
  if (p == nullptr) return;
  if (cudaEventRecord(p->stop, streams_[depth - 1]) != cudaSuccess) {
    cudaGetLastError();
    spare(p);
    fail();
    return;
  }
  p->node = node;
  if (!pending_.push(p)) {
    spare(p);
    fail();
  }
}

void GpuEvents::abandon(std::uint32_t depth) noexcept {
  Pair* p = open_[depth - 1];
  open_[depth - 1] = nullptr;
  if (p != nullptr) spare(p);
}

bool GpuEvents::resolve() noexcept {
  for (Pair** slot = pending_.front(); slot != nullptr; slot = pending_.front()) {
    Pair* p = *slot;
    const cudaError_t q = cudaEventQuery(p->stop);
    if (q == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    float ms = 0.0f;
    if (q == cudaSuccess && cudaEventElapsedTime(&ms, p->start, p->stop) == cudaSuccess && ms >= 0.0f) {
      p->node->gpu.add(static_cast<std::uint64_t>(static_cast<double>(ms) * 1e6));
    } else {
      // A broken pair (its context was reset, say) is re-created on its next use, not reused.
      cudaGetLastError();
      cudaEventDestroy(p->start);
      cudaEventDestroy(p->stop);
      cudaGetLastError();
      p->start = p->stop = nullptr;
      fail();
    }
    pending_.pop();
    free_.push(p);
  }
  return true;
}

}  // namespace cuscope::inline v0::detail

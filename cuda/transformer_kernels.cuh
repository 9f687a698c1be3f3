// cuda/transformer_kernels.cuh — the demo's hand-written kernels (cuda/transformer_demo.cu): a
// block reduction, the fill of inputs and weights, RMSNorm, causal softmax, the residual add and
// SiLU*up. Each launch is one kernel the demo counts in its phase's expected kernels.
// Never here: cuscope, cuBLAS, launches or anything of the host side (the demo launches them).
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace demo_kernels {

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
};
struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

/// Reduces `v` over the block (blockDim.x a multiple of 32, at most 1024); every thread gets it.
template <class Op>
__device__ float block_reduce(float v, Op op) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  v = partial[0];
  for (int w = 1; w < static_cast<int>(blockDim.x) / 32; ++w) v = op(v, partial[w]);
  __syncthreads();  // partial is reused by the caller's next reduction
  return v;
}

/// p[i] = offset + scale * (a hash of i and seed mapped to [-1, 1)).
__global__ void fill_kernel(__half* p, int n, std::uint32_t seed, float scale, float offset) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  std::uint32_t h = (static_cast<std::uint32_t>(i) ^ seed) * 2654435761u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  const float unit = static_cast<float>(h) * (2.0f / 4294967296.0f) - 1.0f;
  p[i] = __float2half(offset + scale * unit);
}

/// One block per row: y = x / rms(x) * w.
__global__ void rms_norm_kernel(const __half* x, const __half* w, __half* y, int cols, float eps) {
  const __half* row = x + static_cast<std::size_t>(blockIdx.x) * cols;
  __half* out = y + static_cast<std::size_t>(blockIdx.x) * cols;
  float squares = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    const float v = __half2float(row[c]);
    squares += v * v;
  }
  const float inv_rms = rsqrtf(block_reduce(squares, Sum{}) / static_cast<float>(cols) + eps);
  for (int c = static_cast<int>(threadIdx.x); c < cols; c += static_cast<int>(blockDim.x)) {
    out[c] = __float2half(__half2float(row[c]) * inv_rms * __half2float(w[c]));
  }
}

/// One block per score row (all heads' rows stacked): causal softmax in place.
__global__ void causal_softmax_kernel(__half* scores, int tokens) {
  __half* row = scores + static_cast<std::size_t>(blockIdx.x) * tokens;
  const int last = static_cast<int>(blockIdx.x) % tokens;  // the query may see keys 0..last
  float row_max = -INFINITY;
  for (int c = static_cast<int>(threadIdx.x); c <= last; c += static_cast<int>(blockDim.x)) {
    row_max = fmaxf(row_max, __half2float(row[c]));
  }
  row_max = block_reduce(row_max, Max{});
  float sum = 0.0f;
  for (int c = static_cast<int>(threadIdx.x); c <= last; c += static_cast<int>(blockDim.x)) {
    sum += __expf(__half2float(row[c]) - row_max);
  }
  const float inv_sum = 1.0f / block_reduce(sum, Sum{});
  for (int c = static_cast<int>(threadIdx.x); c < tokens; c += static_cast<int>(blockDim.x)) {
    row[c] = __float2half(c <= last ? __expf(__half2float(row[c]) - row_max) * inv_sum : 0.0f);
  }
}

__global__ void add_kernel(const __half* a, const __half* b, __half* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) y[i] = __hadd(a[i], b[i]);
}

__global__ void silu_mul_kernel(const __half* gate, const __half* up, __half* y, int n) {
  const int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x);
  if (i >= n) return;
  const float g = __half2float(gate[i]);
  y[i] = __float2half(g / (1.0f + __expf(-g)) * __half2float(up[i]));
}

}  // namespace demo_kernels

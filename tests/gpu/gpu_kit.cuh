// tests/gpu/gpu_kit.cuh — what the CUPTI subscriber's GPU tests share (test_gpu_activity.cu,
// test_gpu_memory.cu, test_gpu_event_timing.cu): a kernel that does nothing, one that spins a given
// time, the report once the device and cuscope have settled, and a range that must be there. Each
// test file gets its own copies (an anonymous namespace). Never a test case here.
#pragma once

#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cuscope/cuscope.hpp>

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

__global__ void empty_kernel() {}

__global__ void spin_kernel(long long cycles) {
  const long long start = clock64();
  while (clock64() - start < cycles) {
  }
}

long long cycles_for_ms(double ms) {
  int khz = 0;
  cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0);
  return static_cast<long long>(ms * khz);
}

const cuscope::RangeStats& range(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* found = r.find(path);
  REQUIRE(found != nullptr);
  return *found;
}

cuscope::Report settled() {
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
  cuscope::flush();
  return cuscope::snapshot();
}

void warm_up() {
  empty_kernel<<<1, 1>>>();  // module loading and CUPTI's instrumentation happen here
  REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
}

}  // namespace

// bench/minimal_cupti.hpp — the floor of CUPTI tracing, the anchor cuscope's cost is measured
// against: a client that turns on CONCURRENT_KERNEL records only, no API records, callbacks or
// correlation, and hands CUPTI's buffers back unread. The GPU bench switches it on around its
// loops (gpu_bench.cu); minimal_cupti_inject.cpp makes it a CUDA injection library for programs
// that do not link cuscope (torch_overhead.py's minimal_cupti).
//
// Never here: reading a record, a lock beyond one per buffer handed over, or cuscope (the floor
// must not carry any of its work).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace cuscope_bench {

class MinimalCupti {
 public:
  static constexpr std::size_t kBufferBytes = 8u << 20;
  /// Turns the client on; "" when it is on, else which CUPTI call refused and why.
  static std::string try_start();
  /// try_start(), exiting the program when CUPTI refuses (the bench: a floor it did not measure is
  /// no floor).
  static void start();
  /// Hands back every buffer (forced flush) and turns the kind off.
  static void stop();

 private:
  static std::string refusal(CUptiResult r, const char* call);
  static void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void CUPTIAPI completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t);

  static inline std::mutex mutex_;
  static inline std::vector<std::uint8_t*> free_;
};

}  // namespace cuscope_bench

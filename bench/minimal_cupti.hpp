// bench/minimal_cupti.hpp — the floor of CUPTI tracing, the anchor cuscope's cost is measured
// against: a client that turns on CONCURRENT_KERNEL records only (or, as the floor of what
// cuscope's defaults trace, copy and set records too), no API records, callbacks or correlation,
// and hands CUPTI's buffers back unread (zeroed by the client, as cuscope's are: CUPTI is told they
// come zeroed and does not zero them on the launching thread). Its third floor is CUPTI set up as cuscope's
// defaults set it up, doing nothing with it: the defaults' activity kinds and a subscriber whose callbacks,
// on exactly the calls cuscope's defaults subscribe to (launch notes, graph nodes), return at once (the floor
// of tying launches to scopes by callbacks, the way Proton does). The GPU bench switches it on around its
// loops (gpu_bench.cu); minimal_cupti_inject.cpp makes it a CUDA injection library for programs that do not
// link cuscope (torch_overhead.py's minimal_cupti).
//
// Never here: reading a record, work in a callback, a lock beyond one per buffer handed over, or
// cuscope (the floor must not carry any of its work: the bench hands it cuscope's lists of kinds
// and calls, read once before it starts).
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace cuscope_bench {

/// What the client traces: kernels (the floor of any tracer), or kernels, copies and sets (the
/// kinds of GPU work cuscope's defaults trace: CONCURRENT_KERNEL, MEMCPY, MEMCPY2, MEMSET).
enum class MinimalKinds { kernels, kernels_copies_sets };

/// CUPTI as a client sets it up: the activity kinds it enables, and the callbacks (domain, id) a
/// subscriber turns on, which do nothing; none: no subscriber.
struct MinimalSetup {
  std::vector<CUpti_ActivityKind> kinds;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> callbacks;
};

/// The kinds of `kinds`, with no callbacks.
MinimalSetup minimal_setup(MinimalKinds kinds);

class MinimalCupti {
 public:
  static constexpr std::size_t kBufferBytes = 8u << 20;
  /// Turns the client on; "" when it is on, else which CUPTI call refused and why (what it had
  /// turned on is turned off again).
  static std::string try_start(const MinimalSetup& setup);
  static std::string try_start(MinimalKinds kinds = MinimalKinds::kernels) {
    return try_start(minimal_setup(kinds));
  }
  /// try_start(), exiting the program when CUPTI refuses (the bench: a floor it did not measure is
  /// no floor).
  static void start(MinimalKinds kinds = MinimalKinds::kernels);
  /// Hands back every buffer (forced flush), turns the kinds off and ends the subscription.
  static void stop();

 private:
  static std::string refusal(CUptiResult r, const char* call);
  static void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records);
  static void CUPTIAPI completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t, std::size_t);

  static void CUPTIAPI ignore(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}
  static void set_zeroed_buffers(bool zeroed);
  static void undo();

  static inline std::mutex mutex_;
  static inline std::vector<std::uint8_t*> free_;
  static inline std::vector<CUpti_ActivityKind> enabled_;  ///< by start(), for stop()
  static inline CUpti_SubscriberHandle subscriber_ = nullptr;
};

}  // namespace cuscope_bench

// bench/minimal_cupti.cpp — see minimal_cupti.hpp.
#include "minimal_cupti.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace cuscope_bench {

std::string MinimalCupti::refusal(CUptiResult r, const char* call) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  return std::string(call) + " failed: " + text;
}

namespace {

// "cuptiActivityEnable(CONCURRENT_KERNEL)": the call, with the kind by name where it is one a floor
// enables.
std::string enable_call(CUpti_ActivityKind kind) {
  const char* name = nullptr;
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      name = "CONCURRENT_KERNEL";
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      name = "MEMCPY";
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      name = "MEMCPY2";
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      name = "MEMSET";
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      name = "OVERHEAD";
      break;
    default:
      break;
  }
  return "cuptiActivityEnable(" + (name != nullptr ? std::string(name) : "kind " + std::to_string(kind)) +
         ")";
}

}  // namespace

MinimalSetup minimal_setup(MinimalKinds kinds) {
  MinimalSetup setup{{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL}, {}};
  if (kinds == MinimalKinds::kernels_copies_sets)
    setup.kinds.insert(setup.kinds.end(),
                       {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET});
  return setup;
}

std::string MinimalCupti::try_start(const MinimalSetup& setup) {
  if (CUptiResult r = cuptiActivityRegisterCallbacks(&requested, &completed); r != CUPTI_SUCCESS)
    return refusal(r, "cuptiActivityRegisterCallbacks");
  set_zeroed_buffers(true);  // as cuscope: CUPTI does not zero the buffers it gets (they come zeroed)
  std::string why;
  if (!setup.callbacks.empty()) {
    if (CUptiResult r = cuptiSubscribe(&subscriber_, &ignore, nullptr); r != CUPTI_SUCCESS) {
      subscriber_ = nullptr;
      undo();
      return refusal(r, "cuptiSubscribe");
    }
    for (auto [domain, cbid] : setup.callbacks) {
      if (CUptiResult r = cuptiEnableCallback(1, subscriber_, domain, cbid); r != CUPTI_SUCCESS) {
        why = refusal(
            r, ("cuptiEnableCallback(domain " + std::to_string(domain) + ", " + std::to_string(cbid) + ")")
                   .c_str());
        break;
      }
    }
  }
  for (auto k = setup.kinds.begin(); why.empty() && k != setup.kinds.end(); ++k) {
    if (CUptiResult r = cuptiActivityEnable(*k); r != CUPTI_SUCCESS) {
      why = refusal(r, enable_call(*k).c_str());
    } else {
      enabled_.push_back(*k);
    }
  }
  if (!why.empty()) undo();
  return why;
}

void MinimalCupti::start(MinimalKinds kinds) {
  if (const std::string why = try_start(kinds); !why.empty()) {
    std::fprintf(stderr, "minimal CUPTI client: %s\n", why.c_str());
    std::exit(EXIT_FAILURE);
  }
}

void MinimalCupti::set_zeroed_buffers(bool zeroed) {
  std::uint8_t value = zeroed ? 1 : 0;
  std::size_t size = sizeof(value);
  cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER, &size, &value);
}

void MinimalCupti::undo() {
  for (CUpti_ActivityKind on : enabled_) cuptiActivityDisable(on);
  enabled_.clear();
  if (subscriber_ != nullptr) cuptiUnsubscribe(subscriber_);
  subscriber_ = nullptr;
  set_zeroed_buffers(false);
}

void MinimalCupti::stop() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : enabled_) {
    if (CUptiResult r = cuptiActivityDisable(kind); r != CUPTI_SUCCESS) {
      std::fprintf(stderr, "minimal CUPTI client: %s\n", refusal(r, "cuptiActivityDisable").c_str());
      std::exit(EXIT_FAILURE);
    }
  }
  enabled_.clear();
  if (subscriber_ != nullptr) {
    if (CUptiResult r = cuptiUnsubscribe(subscriber_); r != CUPTI_SUCCESS) {
      std::fprintf(stderr, "minimal CUPTI client: %s\n", refusal(r, "cuptiUnsubscribe").c_str());
      std::exit(EXIT_FAILURE);
    }
    subscriber_ = nullptr;
  }
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  set_zeroed_buffers(false);  // CUPTI as found
}

void CUPTIAPI MinimalCupti::requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
    if (*buffer != nullptr) std::memset(*buffer, 0, kBufferBytes);  // CUPTI is told it comes zeroed
  } else {
    *buffer = free_.back();
    free_.pop_back();
  }
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI MinimalCupti::completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t size,
                                      std::size_t valid) {
  // A buffer of another size is cuscope's, handed here after the callbacks were switched: not
  // ours to hand out again as kBufferBytes (it would overflow), so left alone.
  if (buffer == nullptr || size != kBufferBytes) return;
  std::memset(buffer, 0, std::min(valid, size));  // zero again where CUPTI wrote, off the launching thread
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace cuscope_bench

// bench/minimal_cupti.cpp — see minimal_cupti.hpp.
#include "minimal_cupti.hpp"

#include <cstdio>
#include <cstdlib>
#include <iterator>

namespace cuscope_bench {

std::string MinimalCupti::refusal(CUptiResult r, const char* call) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  return std::string(call) + " failed: " + text;
}

std::string MinimalCupti::try_start(MinimalKinds kinds) {
  if (CUptiResult r = cuptiActivityRegisterCallbacks(&requested, &completed); r != CUPTI_SUCCESS)
    return refusal(r, "cuptiActivityRegisterCallbacks");
  struct Kind {
    CUpti_ActivityKind kind;
    const char* call;
  };
  static constexpr Kind kKernels[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"}};
  static constexpr Kind kAll[] = {
      {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "cuptiActivityEnable(CONCURRENT_KERNEL)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY, "cuptiActivityEnable(MEMCPY)"},
      {CUPTI_ACTIVITY_KIND_MEMCPY2, "cuptiActivityEnable(MEMCPY2)"},
      {CUPTI_ACTIVITY_KIND_MEMSET, "cuptiActivityEnable(MEMSET)"}};
  const bool all = kinds == MinimalKinds::kernels_copies_sets;
  const Kind* first = all ? kAll : kKernels;
  const Kind* last = all ? std::end(kAll) : std::end(kKernels);
  for (const Kind* k = first; k != last; ++k) {
    if (CUptiResult r = cuptiActivityEnable(k->kind); r != CUPTI_SUCCESS) {
      for (CUpti_ActivityKind on : enabled_) cuptiActivityDisable(on);
      enabled_.clear();
      return refusal(r, k->call);
    }
    enabled_.push_back(k->kind);
  }
  return {};
}

void MinimalCupti::start(MinimalKinds kinds) {
  if (const std::string why = try_start(kinds); !why.empty()) {
    std::fprintf(stderr, "minimal CUPTI client: %s\n", why.c_str());
    std::exit(EXIT_FAILURE);
  }
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
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CUPTIAPI MinimalCupti::requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  std::lock_guard lock(mutex_);
  if (free_.empty()) {
    *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  } else {
    *buffer = free_.back();
    free_.pop_back();
  }
  *size = *buffer != nullptr ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI MinimalCupti::completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t size,
                                      std::size_t) {
  // A buffer of another size is cuscope's, handed here after the callbacks were switched: not
  // ours to hand out again as kBufferBytes (it would overflow), so left alone.
  if (buffer == nullptr || size != kBufferBytes) return;
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

}  // namespace cuscope_bench

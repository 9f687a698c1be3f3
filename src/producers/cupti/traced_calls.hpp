// producers/cupti/traced_calls.hpp — which CUDA API calls cuscope ties to scopes: those that
// launch, copy, set, allocate, free or wait, and every call that produces SYNCHRONIZATION records
// (stream waits, event and stream queries). A record whose API call is not traced could never be
// tied to a scope. Used for the API records (external correlation) and for the launch callbacks.
#pragma once

#include <array>
#include <string_view>

namespace cuscope::inline v0::detail {

/// Whether the API call named `name` (CUPTI's callback name) is one cuscope traces; `driver`: a
/// driver API call (their allocations are named cuMemAlloc*).
inline bool traced_call(std::string_view name, bool driver) {
  constexpr std::array<std::string_view, 9> kCalls = {"Launch",      "Memcpy",    "Memset",
                                                      "Malloc",      "Free",      "Synchronize",
                                                      "WaitEvent",   "EventQuery", "StreamQuery"};
  for (std::string_view part : kCalls) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return driver && name.find("MemAlloc") != std::string_view::npos;
}

}  // namespace cuscope::inline v0::detail

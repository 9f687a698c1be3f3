// producers/cupti/traced_calls.hpp — which CUDA API calls cuscope ties to scopes: those that
// launch, copy or set; those that wait (every call that produces SYNCHRONIZATION records: stream
// waits, event and stream queries, synchronizes) unless synchronization records are off; those
// that allocate or free unless memory records are off (CUSCOPE_SYNC_RECORDS, CUSCOPE_MEMORY_RECORDS).
// A record whose API call is not traced could never be tied to a scope. Used for the API records
// (external correlation) and for the launch callbacks. The standard library only: the raw CUPTI
// probes (docs/validation/probes) include it too.
#pragma once

#include <array>
#include <string>
#include <string_view>

namespace cuscope::inline v0::detail {

/// The records a session asked for besides kernels, copies and sets (always on).
struct RecordChoice {
  bool syncs = true;   ///< Options::sync_records
  bool memory = true;  ///< Options::memory_records
};

/// Whether the API call named `name` (CUPTI's callback name) is one cuscope traces for `want`;
/// `driver`: a driver API call (their allocations are named cuMemAlloc*).
inline bool traced_call(std::string_view name, bool driver, RecordChoice want = {}) {
  const auto names_any = [name](const auto& parts) {
    for (std::string_view part : parts) {
      if (name.find(part) != std::string_view::npos) return true;
    }
    return false;
  };
  constexpr std::array<std::string_view, 3> kWork = {"Launch", "Memcpy", "Memset"};
  constexpr std::array<std::string_view, 4> kWaits = {"Synchronize", "WaitEvent", "EventQuery",
                                                      "StreamQuery"};
  constexpr std::array<std::string_view, 2> kMemory = {"Malloc", "Free"};
  if (names_any(kWork)) return true;
  if (want.syncs && names_any(kWaits)) return true;
  return want.memory && (names_any(kMemory) || (driver && name.find("MemAlloc") != std::string_view::npos));
}

/// The activity status of a session that traces with `want`: "on" when nothing is left out, else
/// "on, " and what was left out and by which variables; `noted`: the launch callbacks are on, so the
/// synchronizes and the allocations and frees whose records are off are noted by callbacks
/// (producers/cupti/call_callbacks.hpp) and their columns still measure something.
inline std::string tracing_status(RecordChoice want, bool noted = false) {
  if (want.syncs && want.memory) return "on";
  if (noted) {
    if (!want.syncs && !want.memory)
      return "on, synchronizes and allocations seen by callbacks, without their records (CUSCOPE_SYNC_RECORDS=0, "
             "CUSCOPE_MEMORY_RECORDS=0)";
    return want.syncs ? "on, allocations seen by callbacks, without memory records (CUSCOPE_MEMORY_RECORDS=0)"
                      : "on, synchronizes seen by callbacks, without synchronization records (CUSCOPE_SYNC_RECORDS=0)";
  }
  if (!want.syncs && !want.memory)
    return "on, without synchronization or memory records (CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)";
  return want.syncs ? "on, without memory records (CUSCOPE_MEMORY_RECORDS=0)"
                    : "on, without synchronization records (CUSCOPE_SYNC_RECORDS=0)";
}

}  // namespace cuscope::inline v0::detail

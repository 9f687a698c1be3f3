// producers/cupti/errors.hpp — one line saying why CUPTI refused, in the user's terms, with what to
// do about it where something can be done.
#pragma once

#include <string>

namespace cuscope::inline v0::detail {

/// "<reason>: <call> returned <CUPTI error name>", for a CUptiResult `result` of `call`.
std::string cupti_refusal(const char* call, int result);

/// The same for the profiler interface's start (cuptiProfilerInitialize), where a refusal not named
/// otherwise means another tool in the process (Nsight Compute, compute-sanitizer) holds it.
std::string profiler_refusal(const char* call, int result);

}  // namespace cuscope::inline v0::detail

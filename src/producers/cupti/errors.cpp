// producers/cupti/errors.cpp — see errors.hpp.
#include "producers/cupti/errors.hpp"

#include <cupti.h>
#include <fmt/format.h>

namespace cuscope::inline v0::detail {
namespace {

std::string error_name(CUptiResult r) {
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr)
    return fmt::format("CUPTI error {}", int(r));
  return text;
}

const char* reason(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return "CUPTI is already in use by another tool (Nsight Systems, Nsight Compute or compute-sanitizer)";
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
      return "no permission for GPU performance counters (ERR_NVGPUCTRPERM; run as root, or load the driver "
             "with NVreg_RestrictProfilingToAdminUsers=0: https://developer.nvidia.com/ERR_NVGPUCTRPERM)";
    case CUPTI_ERROR_HARDWARE_BUSY:
      return "the GPU's performance counters are busy (another profiler or DCGM holds them)";
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return "this GPU or its configuration (virtualized, MIG, CMP) does not support it";
    default:
      return "CUPTI refused";
  }
}

// Why cuptiProfilerInitialize refused: its own reasons where CUPTI names one, else the usual
// cause, another tool in the process holding the GPU's profiler.
const char* profiler_reason(CUptiResult r) {
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_NOT_SUPPORTED:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED:
    case CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED:
      return reason(r);
    case CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED:
      return "the legacy CUPTI event and metric API is in use in this process";
    default:
      return "another tool holds the GPU's profiler (Nsight Compute or compute-sanitizer?)";
  }
}

}  // namespace

std::string profiler_refusal(const char* call, int result) {
  const auto r = static_cast<CUptiResult>(result);
  return fmt::format("{}: {} returned {}", profiler_reason(r), call, error_name(r));
}

std::string cupti_refusal(const char* call, int result) {
  const auto r = static_cast<CUptiResult>(result);
  return fmt::format("{}: {} returned {}", reason(r), call, error_name(r));
}

}  // namespace cuscope::inline v0::detail

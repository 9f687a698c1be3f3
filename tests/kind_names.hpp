// tests/kind_names.hpp — a CUPTI activity kind's short name ("KERNEL", "MEMCPY", "RUNTIME", ...), as
// the tests' fakes of cuptiActivityEnable/Disable log each switch ("KERNEL off", "DRIVER on").
// Never: call CUPTI.
#pragma once

#include <cupti.h>

namespace cuscope_test {

inline const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "KERNEL";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "MEMCPY";
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return "MEMCPY2";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "MEMSET";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "MEMORY2";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "SYNCHRONIZATION";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "OVERHEAD";
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API:
      return "INTERNAL_LAUNCH_API";
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      return "CUDA_EVENT";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "EXTERNAL";
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      return "RUNTIME";
    case CUPTI_ACTIVITY_KIND_DRIVER:
      return "DRIVER";
    default:
      return "other";
  }
}

}  // namespace cuscope_test

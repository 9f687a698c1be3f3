// bench/minimal_cupti_inject.cpp — libcuscope_minimal_cupti.so: the minimal CUPTI client
// (minimal_cupti.hpp) as a CUDA injection library, the floor of CUPTI tracing for a program that does
// not link cuscope: `CUDA_INJECTION64_PATH=.../libcuscope_minimal_cupti.so program` traces its
// kernels the cheapest way CUPTI can, through the same entry point `cuscope run` uses
// (torch_overhead.py's minimal_cupti configuration).
//
// Its one line on standard error says whether it traces: "cuscope_minimal_cupti: tracing kernels
// ..." (the mark torch_overhead.py looks for), or "cuscope_minimal_cupti: not tracing: ...".
// Never: exit or abort the program, call CUDA (InitializeInjection runs inside cuInit), or export
// anything but InitializeInjection.
#include <cstdio>
#include <string>

#include "minimal_cupti.hpp"

extern "C" {

/// The CUDA driver's entry point (CUDA_INJECTION64_PATH), inside cuInit: CUPTI's activity API may be
/// called here, as NVIDIA's own injection samples do. 1 when the client traces, 0 when CUPTI refused.
__attribute__((visibility("default"))) int InitializeInjection() {
  const std::string why = cuscope_bench::MinimalCupti::try_start();
  if (!why.empty()) {
    std::fprintf(stderr, "cuscope_minimal_cupti: not tracing: %s\n", why.c_str());
    return 0;
  }
  std::fprintf(stderr,
               "cuscope_minimal_cupti: tracing kernels (CONCURRENT_KERNEL records only, handed back unread)\n");
  return 1;
}

}  // extern "C"

// bench/scope_instructions.cpp — instructions per enabled scope, and per injected NVTX range, for
// bench/run-callgrind.sh.
//
// Times are noisy on a shared machine; instruction counts are not. Under
// `valgrind --tool=callgrind --toggle-collect=run_scopes`, callgrind counts only what
// run_scopes() executes: run once with N scopes and once with 2N, and the difference over N is
// the cost of one scope's enter and exit in the steady state (host only: no GPU events, no CUPTI).
// `scope_instructions N injected` does the same for run_injected(): an NVTX push/pop (ASCII
// message) as libcuscope_inject.so receives it in zero-code mode (bench/injected.hpp), and
// `scope_instructions N traced` counts run_scopes() in trace mode (CUSCOPE_TRACE=/dev/null; N
// at most 16,000, so that 2N scopes' events fit a thread's ring even if the writer thread never
// runs under valgrind, and none is dropped, which would be cheaper).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>

#include "host_session.hpp"
#include "injected.hpp"

extern "C" __attribute__((noinline)) void run_scopes(long n) {
  for (long i = 0; i < n; ++i) {
    CUSCOPE_SCOPE("counted");
    __asm__ volatile("" ::: "memory");
  }
}

extern "C" __attribute__((noinline)) void run_injected(const cuscope_bench::Injected* in, long n) {
  for (long i = 0; i < n; ++i) {
    in->push_a("counted");
    in->pop();
    __asm__ volatile("" ::: "memory");
  }
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100'000;
  if (argc > 2 && std::strcmp(argv[2], "injected") == 0) {
    const cuscope_bench::Injected& in = cuscope_bench::injected(5000);
    if (!in.error.empty()) {
      std::fprintf(stderr, "scope_instructions: %s\n", in.error.c_str());
      return 1;
    }
    in.push_a("counted");  // the steady state: the message cached
    in.pop();
    run_injected(&in, n);
    std::printf("injected ranges %ld\n", n);
    return 0;
  }
  const bool traced = argc > 2 && std::strcmp(argv[2], "traced") == 0;
  cuscope_bench::start_host_only_session(5000, traced ? "/dev/null" : "");
  { CUSCOPE_SCOPE("counted"); }  // the steady state: the call site interned
  run_scopes(n);
  const cuscope::Report r = cuscope::snapshot();
  std::printf("scopes %ld%s, clock: %s\n", n, traced ? " (trace mode)" : "", r.clock.c_str());
  if (traced && r.diagnostics.trace_records_dropped != 0) {
    std::fprintf(stderr, "scope_instructions: %llu trace events dropped\n",
                 static_cast<unsigned long long>(r.diagnostics.trace_records_dropped));
    return 1;
  }
  return 0;
}

// bench/scope_instructions.cpp — instructions per enabled scope, for bench/run-callgrind.sh.
//
// Times are noisy on a shared machine; instruction counts are not. Under
// `valgrind --tool=callgrind --toggle-collect=run_scopes`, callgrind counts only what
// run_scopes() executes: run once with N scopes and once with 2N, and the difference over N is
// the cost of one scope's enter and exit in the steady state (host only: no GPU events, no CUPTI).
#include <cstdio>
#include <cstdlib>
#include <cuscope/cuscope.hpp>

#include "host_session.hpp"

extern "C" __attribute__((noinline)) void run_scopes(long n) {
  for (long i = 0; i < n; ++i) {
    CUSCOPE_SCOPE("counted");
    __asm__ volatile("" ::: "memory");
  }
}

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 100'000;
  cuscope_bench::start_host_only_session(5000);
  { CUSCOPE_SCOPE("counted"); }  // the steady state: the call site interned
  run_scopes(n);
  std::printf("scopes %ld, clock: %s\n", n, cuscope::snapshot().clock.c_str());
  return 0;
}

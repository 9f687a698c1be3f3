// bench/host_session.hpp — the session the CPU benchmarks measure scopes in: CUDA-event timing,
// CUPTI tracing and the exit table off (so "enabled" is the host-only scope on any machine), and
// the scope clock settled: on the TSC once it is calibrated (about 100 ms after start, where there
// is one), waited for up to `max_wait_ms` (longer under valgrind, which runs everything slower).
// With `trace_path`, in trace mode (CUSCOPE_TRACE) as well; with `wait_steps`, the session waits
// that many steps (CUSCOPE_WAIT) before recording, so that its scopes are outside the window; with
// `repeating` as well, the window repeats (CUSCOPE_ACTIVE=1, CUSCOPE_REPEAT=0): `wait_steps` steps
// outside it, then one recorded, over and over.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cuscope/cuscope.hpp>

namespace cuscope_bench {

inline void start_host_only_session(int max_wait_ms, const char* trace_path = "",
                                    std::uint32_t wait_steps = 0, bool repeating = false) {
  cuscope::Options options;
  options.trace_path = trace_path;
  options.wait_steps = wait_steps;
  if (repeating) {
    options.active_steps = 1;
    options.repeat = 0;
  }
  options.gpu_events = false;
  options.activities = false;
  options.print_at_exit = false;
  cuscope::start(options);
  for (int waited = 0;
       waited < max_wait_ms && cuscope::snapshot().clock.rfind("CLOCK_MONOTONIC (calibrating", 0) == 0;
       waited += 20)
    usleep(20'000);
}

}  // namespace cuscope_bench

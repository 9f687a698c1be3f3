// bench/gpu_bench_summary.hpp — what cuscope_gpu_bench measured (Measured, filled round by round by
// gpu_bench.cu) and its summary: the medians, the ratios of medians, the paired ratios the goals
// read, issue 24's targets and the notes that say how far each traced loop is to be trusted.
//
// Never here: timing, a session, a CUDA or CUPTI call (the summary is taken after each part, while
// the bench runs, and must not disturb it).
#pragma once

#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <vector>

#include "gpu_bench_configs.hpp"
#include "summary.hpp"

namespace cuscope_bench {

struct Measured {
  std::vector<double> launch[kLaunchConfigCount];  ///< per configuration, each round's mean per launch
  std::vector<double> event_pair, event_scope, step_without, step_with;
  // The step with cuscope's parts one at a time: where the full configuration's cost comes from.
  std::vector<double> step_host, step_events, step_tracing, step_defaults, step_sampled, step_external,
      step_records, step_events_cupti;
  // The defaults with a step window of kWindowCycle steps repeated without end (kWindowWait paused,
  // one warm-up, one recorded): what one recorded step in kWindowCycle costs the program.
  std::vector<double> step_windowed;
  // The defaults after a window that ended before the timed steps (CUSCOPE_WARMUP=1 CUSCOPE_ACTIVE=1):
  // CUPTI detached (CUSCOPE_DETACH), what a program's steps cost after its last window.
  std::vector<double> step_after_window;
  int after_window_not_detached = 0;  ///< rounds whose CUPTI had not detached 2 s after the window
  // The defaults in the wait steps of a window detached between windows (CUSCOPE_DETACH_BETWEEN=1),
  // CUPTI detached; each round's cuscope::step() that attached it again, and the step after it.
  std::vector<double> step_between_windows, reattach_call, step_after_reattach;
  int between_not_detached = 0;  ///< rounds whose CUPTI had not detached 3 s after the window
  // The defaults with recording off from the start (CUSCOPE_ENABLE=0): CUPTI not attached, each scope
  // one branch; what a program shipped with cuscope linked and off pays.
  std::vector<double> step_recording_off;
  int recording_off_attached = 0;  ///< rounds whose session had attached CUPTI all the same
  // The step under the minimal CUPTI client, cuscope off: what tracing kernels costs the step before
  // cuscope does anything, the floor under goal.defaults_step.
  std::vector<double> step_minimal;
  // The same with copy and set records too: the floor of what cuscope's defaults trace (the step
  // copies 1 MiB from pageable memory, which the kernels-only floor does not trace).
  std::vector<double> step_minimal_copies;
  // And under CUPTI set up as the defaults set it up (their kinds, launch callbacks doing nothing):
  // the floor of launch notes, below which cuscope's own work is all that is left.
  std::vector<double> step_minimal_callbacks;
  // Each alternation's blocks (Args::alternations, AlternatingBlock), each block's timed steps in
  // turn: the same steps without cuscope, with its defaults, under CUPTI set up as the defaults with
  // callbacks doing nothing (a prefix of the alternations, once CUPTI refused it) and without again.
  std::vector<double> alt_without, alt_defaults, alt_callbacks, alt_without_again;
  /// Each configuration of that floor CUPTI refused: left out from that round on.
  struct Refusal {
    std::string key, why;
    int round = 0;  ///< the first round left out, from 1
  };
  std::vector<Refusal> floor_refused;
  bool refused(const std::string& key) const {
    for (const Refusal& r : floor_refused) {
      if (r.key == key) return true;
    }
    return false;
  }
  /// CUPTI's detaches between parts (gpu_loops.hpp, end_session()): each part starts detached.
  CuptiDetaches cupti_detaches;
  cuscope::Report traced;  ///< the last full-tracing loop's report
  std::uint64_t traced_after_forced_flush = 0;
  // Kernels each traced loop attributed to its scopes, last round (of launches + kBatch).
  std::uint64_t attributed[kLaunchConfigCount] = {};
  std::uint64_t event_timed[kLaunchConfigCount] = {};       ///< and the calls timed by CUDA events
  cuscope::Diagnostics diagnosed[kLaunchConfigCount] = {};  ///< and their reports' diagnostics
  cuscope::Report demo;  ///< the last transformer run's report, taken at the end of each round
};

/// Where it ran, for the summary's context.
struct BenchMachine {
  std::string gpu;   ///< "NVIDIA H200 (sm_90)"
  std::string cuda;  ///< "driver 13000, runtime 13000"
};

/// The summary of `rounds_done` rounds of `m`; `next`: the part about to begin ("" at a round's
/// end), for the PARTIAL note of a summary written while the bench runs.
Summary summarize(const Args& args, const BenchMachine& machine, const Measured& m, int rounds_done,
                  const std::string& next = "");

}  // namespace cuscope_bench

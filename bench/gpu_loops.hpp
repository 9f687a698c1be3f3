// bench/gpu_loops.hpp — the timed loops of the GPU benchmarks (gpu_bench.cu): kernel launches
// bare or in scopes, CUDA-event pairs, the demo's transformer step; the cuscope session each
// configuration runs under (the minimal CUPTI client is minimal_cupti.hpp's), and CUPTI detached
// between them. Loops are timed in batches; between batches, untimed, the stream is drained and CUDA
// events are resolved, so neither the launch queue nor cuscope's event pool fills up and only the
// host cost is timed.
// Never here: the configurations, the rounds or the summary (gpu_bench.cu).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <vector>

#include "minimal_cupti.hpp"

namespace cuscope_bench {

/// Exits the benchmark, naming the call, when `status` is an error.
void check_cuda(cudaError_t status, const char* call, const char* file, int line);
#define BENCH_CUDA(call) ::cuscope_bench::check_cuda((call), #call, __FILE__, __LINE__)

inline constexpr int kBatch = 1000;  // launches (event pairs) timed between two drains

/// Replaces the cuscope session by a fresh one with these options (the exit table stays off).
void restart_session(bool enabled, cuscope::EventTiming events, bool activities,
                     std::uint32_t warmup_steps = 0, const std::string& trace_path = "",
                     std::uint32_t sample_every = 0,
                     cuscope::Attribution attribution = cuscope::Options{}.attribution,
                     bool sync_and_memory_records = cuscope::Options{}.sync_records,
                     cuscope::EventTimestamps timestamps = cuscope::EventTimestamps::cuda);

/// Replaces the cuscope session by one with cuscope's defaults and a step window that repeats
/// without end: `wait` steps paused, `warmup` traced and left out, `active` recorded (CUSCOPE_WAIT,
/// CUSCOPE_WARMUP, CUSCOPE_ACTIVE, CUSCOPE_REPEAT=0).
void restart_windowed_session(std::uint32_t wait, std::uint32_t warmup, std::uint32_t active);

/// Replaces the cuscope session by one with cuscope's defaults and a step window that ends at once
/// (CUSCOPE_WARMUP=1 CUSCOPE_ACTIVE=1, CUSCOPE_REPEAT=1), runs its two steps, then untimed steps (each
/// calls CUDA, at whose exit CUPTI detaches: CUSCOPE_DETACH) until the activity status says CUPTI
/// detached, 2 s at most: true when it did. The steps after it run as a program's do after its
/// last window.
bool restart_after_window_session();

/// Replaces the cuscope session by one with cuscope's defaults and recording off from the start
/// (CUSCOPE_ENABLE=0): true when its activity status says CUPTI is not attached (so the part's end
/// detaches nothing, and calls no CUPTI that would attach it).
bool restart_recording_off_session();

/// Replaces the cuscope session by one with cuscope's defaults and a window that repeats without end
/// and detaches CUPTI between its windows (CUSCOPE_WAIT=`wait` CUSCOPE_WARMUP=1 CUSCOPE_ACTIVE=1
/// CUSCOPE_REPEAT=0 CUSCOPE_DETACH_BETWEEN=1): its first wait steps (empty cuscope::step() calls:
/// CUPTI not attached yet), its window (two transformer steps), then untimed
/// transformer steps until the activity status says CUPTI detached between windows, 3 s at most. True
/// when it did; `*steps_taken`: the wait steps of the second wait so far.
bool restart_between_windows_session(std::uint32_t wait, std::uint32_t* steps_taken);
/// What attaching CUPTI again costs a program, at the end of the wait whose steps `steps_taken` of
/// `wait` are done: the rest of them as empty cuscope::step() calls but the last, then the host time
/// (ns) of the cuscope::step() that ends it (the next window's warm-up step begins: CUPTI attached
/// again inside it), into `*reattach_ns`, and of the transformer step after it (CUPTI's first launches
/// after a re-attach), into `*first_step_ns`.
void time_reattach(std::uint32_t wait, std::uint32_t steps_taken, double* reattach_ns, double* first_step_ns);

/// Ends the current session (reset_for_testing), leaving none started, then detaches CUPTI
/// (cuptiFinalize, after a device synchronize and a forced flush) where the part attached it. A part
/// of the bench ends its session before the next part begins, so that a teardown that stalls
/// (CUPTI's flushes, disabling kinds, unsubscribing, the detach) is named as the part whose session it
/// was, and --skip of that part avoids it. So every part starts with CUPTI detached, whichever part
/// came before it: a CUPTI left attached and idle makes a launch dearer (the probe tracing_toggle,
/// bench/README.md), which would load the parts without cuscope by the order of the round.
void end_session();
/// Tells end_session() that the part attached CUPTI outside cuscope (the minimal client).
void cupti_attached();
/// The detaches end_session() made and those CUPTI refused (the first refusal's words): after a
/// refused one, the next part ran with CUPTI attached and idle.
struct CuptiDetaches {
  int made = 0;
  int refused = 0;
  std::string why;    ///< the first refusal's
  bool kept = false;  ///< --keep-attached: none tried (keep_cupti_attached())
  /// Bytes of cuscope's activity buffers CUPTI had not handed back by a finalize that succeeded,
  /// taken back into cuscope's pool each time (BufferPool::reclaim_out()), in all.
  std::uint64_t kept_buffer_bytes = 0;
};
const CuptiDetaches& cupti_detaches();
/// --keep-attached: end_session() detaches CUPTI no more, so that a lease whose detach hung or
/// crashed (tests/gpu-check.sh) still gets the figures of the parts that need none; each part after
/// one that attached CUPTI then runs with it attached and idle (the summary says so).
void keep_cupti_attached();

enum class Wrap { None, ScopePerLaunch, ScopePerBatch };

/// Host nanoseconds per launch of `launches` empty kernels (one untimed batch first);
/// `step_per_batch`: cuscope::step() after each batch, untimed.
double launch_ns(cudaStream_t s, int launches, Wrap wrap, bool step_per_batch);
/// Kernels a launch loop's report attributes to its scopes ("launch" or "launch_batch").
std::uint64_t attributed_kernels(const cuscope::Report& r);
/// Calls of the same ranges that got a CUDA-event time (gpu.count): with events on, every call
/// once its pair resolved; under CUSCOPE_EVENT_TIMESTAMPS=cupti, once CUPTI's records came.
std::uint64_t event_timed_calls(const cuscope::Report& r);
/// Host nanoseconds per pair of bare cudaEventRecord calls, or per empty scope with CUDA events.
double event_ns(cudaStream_t s, int pairs, bool scope);
/// Step times (ns) of `steps` transformer steps after `warmup` untimed ones.
std::vector<double> step_ns(int warmup, int steps);

}  // namespace cuscope_bench

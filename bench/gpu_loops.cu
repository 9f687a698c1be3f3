// bench/gpu_loops.cu — see gpu_loops.hpp.

#include <cupti.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <utility>

#include "gpu_loops.hpp"
#include "producers/cupti/adapter_state.hpp"
#include "producers/cupti/detach.hpp"
#include "session/session.hpp"
#include "transformer_step.hpp"

namespace cuscope_bench {

void check_cuda(cudaError_t status, const char* call, const char* file, int line) {
  if (status == cudaSuccess) return;
  std::fprintf(stderr, "%s:%d: %s failed: %s\n", file, line, call, cudaGetErrorString(status));
  std::exit(EXIT_FAILURE);
}

namespace {

__global__ void empty_kernel() {}

std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

// Whether the session was just ended (end_session) and none started since: restart_session then
// starts one without another reset (each reset keeps its old session reachable, over 10 MB of the
// model's tables, for threads that may still point into it).
bool g_ended = false;

// `field` summed over the launch loops' ranges (a scope per launch, or per batch).
template <class Field>
std::uint64_t over_loop_ranges(const cuscope::Report& r, Field field) {
  std::uint64_t n = 0;
  for (const char* name : {"launch", "launch_batch"}) {
    if (const cuscope::RangeStats* l = r.find(name)) n += field(*l);
  }
  return n;
}

// Whether CUPTI may be attached since the last detach: a session that traced, or the minimal client.
bool g_cupti_attached = false;
CuptiDetaches g_detaches;

// CUPTI detached, as cuscope's detach does it (the GPU work done and every record handed over first),
// here on the bench's thread between two parts, where no other thread calls CUDA or CUPTI. cuscope's
// buffer callback stays registered with CUPTI after its session: the stage says a finalize is under
// way, so that a buffer CUPTI might hand back from inside cuptiFinalize calls no CUPTI from there
// (buffer_completed() asks cupti_callable(), as in cuscope's own detach), and none after it.
void detach_cupti() {
  using cuscope::detail::DetachStage;
  BENCH_CUDA(cudaDeviceSynchronize());
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  cuscope::detail::set_detach_stage(DetachStage::finalizing);
  const CUptiResult r = cuptiFinalize();
  cuscope::detail::set_detach_stage(DetachStage::none);  // as the next session's start sets it
  if (r == CUPTI_SUCCESS) {
    ++g_detaches.made;
    // What CUPTI never handed back is lost to it: back into cuscope's pool, as cuscope's own attach
    // after its finalize does, so that the later parts do not run on a shrinking budget.
    g_detaches.kept_buffer_bytes += cuscope::detail::state().buffers.reclaim_out();
    return;
  }
  const char* text = nullptr;
  if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  if (g_detaches.refused++ == 0) g_detaches.why = std::string("cuptiFinalize failed: ") + text;
}

// Replaces the cuscope session by a fresh one with `o`, the exit table off.
void restart_with(cuscope::Options o) {
  if (!g_ended) end_session();
  g_ended = false;
  o.print_at_exit = false;
  if (o.activities) g_cupti_attached = true;
  cuscope::start(o);
}

}  // namespace

void end_session() {
  cuscope::detail::reset_for_testing();
  g_ended = true;
  if (std::exchange(g_cupti_attached, false) && !g_detaches.kept) detach_cupti();
}

void keep_cupti_attached() { g_detaches.kept = true; }

void cupti_attached() { g_cupti_attached = true; }

const CuptiDetaches& cupti_detaches() { return g_detaches; }

void restart_session(bool enabled, cuscope::EventTiming events, bool activities, std::uint32_t warmup_steps,
                     const std::string& trace_path, std::uint32_t sample_every,
                     cuscope::Attribution attribution, bool sync_and_memory_records,
                     cuscope::EventTimestamps timestamps) {
  cuscope::Options o;
  o.event_timestamps = timestamps;
  o.sync_records = o.memory_records = sync_and_memory_records;
  o.attribution = attribution;
  o.trace_path = trace_path;
  o.enabled = enabled;
  o.events = events;
  o.events_sample_every = sample_every;
  o.activities = activities;
  o.warmup_steps = warmup_steps;
  restart_with(o);
}

void restart_windowed_session(std::uint32_t wait, std::uint32_t warmup, std::uint32_t active) {
  cuscope::Options o;
  o.wait_steps = wait;
  o.warmup_steps = warmup;
  o.active_steps = active;
  o.repeat = 0;
  restart_with(o);
}

bool restart_after_window_session() {
  cuscope::Options o;
  o.warmup_steps = 1;
  o.active_steps = 1;  // repeat 1: the window ends with the second step
  restart_with(o);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (int step = 1;; ++step) {
    cuscope_bench::transformer_step_ns();
    if (step >= 2 && cuscope::snapshot().activity_status.ends_with(", detached after the last step window")) {
      g_cupti_attached = false;  // cuscope detached it: no second detach at the part's end
      return true;
    }
    if (std::chrono::steady_clock::now() > give_up) return false;
  }
}

bool restart_recording_off_session() {
  cuscope::Options o;
  o.enabled = false;
  restart_with(o);
  if (!cuscope::snapshot().activity_status.starts_with("not attached yet")) return false;
  g_cupti_attached = false;  // nothing to detach at the part's end
  return true;
}

bool restart_between_windows_session(std::uint32_t wait, std::uint32_t* steps_taken) {
  cuscope::Options o;
  o.wait_steps = wait;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  o.detach_between = true;
  restart_with(o);
  for (std::uint32_t i = 0; i < wait; ++i) cuscope::step();  // the first wait: CUPTI not attached yet
  cuscope_bench::transformer_step_ns();                      // the warm-up step
  cuscope_bench::transformer_step_ns();  // the window's step: its end pauses CUPTI, the detach pending
  *steps_taken = 0;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  while (*steps_taken + 1 < wait) {
    cuscope_bench::transformer_step_ns();
    ++*steps_taken;
    if (cuscope::snapshot().activity_status.ends_with(", detached between step windows until the next one"))
      return true;
    if (std::chrono::steady_clock::now() > give_up) return false;
  }
  return false;
}

void time_reattach(std::uint32_t wait, std::uint32_t steps_taken, double* reattach_ns,
                   double* first_step_ns) {
  for (std::uint32_t i = steps_taken; i + 1 < wait; ++i) cuscope::step();
  const std::uint64_t start = now_ns();
  cuscope::step();  // the last wait step ends: CUPTI attached again for the warm-up step
  *reattach_ns = static_cast<double>(now_ns() - start);
  *first_step_ns = static_cast<double>(cuscope_bench::transformer_step_ns());
}

double launch_ns(cudaStream_t s, int launches, Wrap wrap, bool step_per_batch) {
  std::uint64_t timed = 0;
  for (int done = -kBatch; done < launches; done += kBatch) {
    const std::uint64_t start = now_ns();
    if (wrap == Wrap::None) {
      for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 1, 0, s>>>();
    } else if (wrap == Wrap::ScopePerLaunch) {
      for (int i = 0; i < kBatch; ++i) {
        CUSCOPE_SCOPE("launch", s);
        empty_kernel<<<1, 1, 0, s>>>();
      }
    } else {
      CUSCOPE_SCOPE("launch_batch", s);
      for (int i = 0; i < kBatch; ++i) empty_kernel<<<1, 1, 0, s>>>();
    }
    if (done >= 0) timed += now_ns() - start;
    BENCH_CUDA(cudaGetLastError());
    BENCH_CUDA(cudaStreamSynchronize(s));
    cuscope::detail::resolve_gpu_events();
    if (step_per_batch) cuscope::step();
  }
  return static_cast<double>(timed) / launches;
}

std::uint64_t attributed_kernels(const cuscope::Report& r) {
  return over_loop_ranges(r, [](const cuscope::RangeStats& l) { return l.self.kernel_calls; });
}

std::uint64_t event_timed_calls(const cuscope::Report& r) {
  return over_loop_ranges(r, [](const cuscope::RangeStats& l) { return l.gpu.count; });
}

double event_ns(cudaStream_t s, int pairs, bool scope) {
  cudaEvent_t a = nullptr, b = nullptr;
  BENCH_CUDA(cudaEventCreate(&a));
  BENCH_CUDA(cudaEventCreate(&b));
  std::uint64_t timed = 0;
  for (int done = -kBatch; done < pairs; done += kBatch) {
    const std::uint64_t start = now_ns();
    if (scope) {
      for (int i = 0; i < kBatch; ++i) {
        CUSCOPE_SCOPE("event_scope", s);
      }
    } else {
      for (int i = 0; i < kBatch; ++i) {
        BENCH_CUDA(cudaEventRecord(a, s));
        BENCH_CUDA(cudaEventRecord(b, s));
      }
    }
    if (done >= 0) timed += now_ns() - start;
    BENCH_CUDA(cudaStreamSynchronize(s));
    cuscope::detail::resolve_gpu_events();
  }
  BENCH_CUDA(cudaEventDestroy(a));
  BENCH_CUDA(cudaEventDestroy(b));
  return static_cast<double>(timed) / pairs;
}

std::vector<double> step_ns(int warmup, int steps) {
  std::vector<double> times;
  for (int i = 0; i < warmup + steps; ++i) {
    const double t = static_cast<double>(cuscope_bench::transformer_step_ns());
    if (i >= warmup) times.push_back(t);
  }
  return times;
}

}  // namespace cuscope_bench

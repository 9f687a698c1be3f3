// session/collector.cpp — the session's collector thread and the CUDA-event resolver: every 10 ms
// it resolves the CUDA events scopes recorded, keeps the clock calibrated and (with launch notes)
// drains the threads' launch rings, and every 100 ms asks CUPTI for its completed buffers, so a
// snapshot sees recent work without a flush and CUPTI's buffers stay few. After the last step
// window it detaches CUPTI (advance_detach(), off the program's threads). A second thread, the
// reporter, rewrites the report's files every CUSCOPE_REPORT_EVERY seconds (report_files.cpp); a
// third, the stepper, ends a step every CUSCOPE_STEP_MS milliseconds (window.cpp, clock_step()).
//
// Never: let cuscope's own CUDA calls disturb the program's (they run in relaxed capture mode, and
// under an external correlation id that keeps them out of the report), or wait on the GPU.
#include <cuda_runtime_api.h>

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/cuda_calls.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "session/internal.hpp"

namespace cuscope::inline v0::detail {
namespace {

void collector_loop(Session* s) {
  // Relaxed capture mode: this thread's cudaEventQuery calls must not invalidate a stream capture
  // that another thread runs in global mode (the default of cudaStreamBeginCapture).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (g_cuda.exchange_capture_mode(&mode) != cudaSuccess) g_cuda.get_last_error();
  finalize_on_this_thread();  // an armed detach finalizes at this thread's CUDA calls, no other's
  s->collector_ready.store(true, std::memory_order_release);
  std::unique_lock lock(s->collector_mutex);
  for (unsigned tick = 1; !s->collector_stop; ++tick) {
    s->collector_cv.wait_for(lock, std::chrono::milliseconds(10));
    lock.unlock();
    if (detach_stage() == DetachStage::armed) {
      // A CUDA call of this thread's own (relaxed capture mode, as it is), at whose exit CUPTI's
      // callback finalizes (detach.hpp): first in the tick, before the event queries' calls (made
      // under the resolver's lock: a finalize must hold no lock of cuscope's), and a tick after the
      // arming (made late in a tick), not in it: a callback or hook of another thread that passed
      // its check just before the arming (and may still call CUPTI) has had 10 ms to return. Again
      // each tick while armed, two calls in turn, in case one does not reach CUPTI's callback
      // (advance_detach() gives the detach up after kFinalizeWaitNs).
      cudaStreamCaptureMode same = cudaStreamCaptureModeRelaxed;
      int device = 0;
      if ((tick % 2 == 0 ? g_cuda.exchange_capture_mode(&same) : g_cuda.get_device(&device)) != cudaSuccess)
        g_cuda.get_last_error();
    }
    resolve_gpu_events();
    recalibrate_clock();  // does something about once a second
    // A detach under way is settled whatever tracing says (a window's re-attach may have turned it off).
    const bool detached_now = advance_detach();
    if (s->tracing.load(std::memory_order_acquire)) {
      if (detached_now) {
        // The detach after the last step window, made this tick: its flushes delivered.
      } else if (tick % 10 == 0) {
        poll_activity();
      } else {
        drain_launch_notes(*s);  // launch rings between polls: a fast launcher fills one in ~16 ms
      }
    }
    lock.lock();
  }
}

// A thread of the session's own that calls `work` every `every` until the session stops: the
// reporter (CUSCOPE_REPORT_EVERY: the report's files rewritten, off the collector's ticks, so that
// building a large report never holds them up: a fast launcher fills its launch ring in about 16 ms)
// and the stepper (CUSCOPE_STEP_MS: clock_step(), window.cpp, until the program's own step() stops
// them). As the collector, in relaxed capture mode: building a report resolves CUDA events, and a
// step's re-attach makes CUDA calls, neither of which may invalidate another thread's stream capture.
template <class Every, class Work>
void every_until_stopped(Session* s, std::atomic<bool>* ready, Every every, Work work) {
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (g_cuda.exchange_capture_mode(&mode) != cudaSuccess) g_cuda.get_last_error();
  ready->store(true, std::memory_order_release);
  std::unique_lock lock(s->collector_mutex);
  while (!s->collector_cv.wait_for(lock, every, [s] { return s->collector_stop; })) {
    lock.unlock();
    work();
    lock.lock();
  }
}

// Marks the calling thread's CUDA calls as cuscope's own while it lives: capture mode relaxed (so
// that its event queries never invalidate another thread's global-mode stream capture), and,
// while CUPTI traces, an external correlation id that keeps those calls out of the report.
class OwnCudaCalls {
 public:
  OwnCudaCalls() noexcept {
    if (g_cuda.exchange_capture_mode(&mode_) != cudaSuccess) {
      g_cuda.get_last_error();
      restore_mode_ = false;
    }
    if (CorrelationHook push = g_push_correlation.load(std::memory_order_acquire)) {
      push(model::kCuscopeInternal);
      pushed_ = true;
    }
  }
  ~OwnCudaCalls() {
    if (pushed_) {
      if (CorrelationPopHook pop = g_pop_correlation.load(std::memory_order_acquire)) pop();
    }
    if (restore_mode_) g_cuda.exchange_capture_mode(&mode_);
  }
  OwnCudaCalls(const OwnCudaCalls&) = delete;
  OwnCudaCalls& operator=(const OwnCudaCalls&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool restore_mode_ = true;
  bool pushed_ = false;
};

// Every thread's CUDA-event pool, taken under the registry's lock and queried outside it, so that
// a thread's first scope, its exit and fork() never wait on cudaEventQuery. A pool outlives the
// list: states are never freed (threads never shrinks) and a state keeps its pool when it is
// reused; the pool's resolver side is resolve_mutex's, its owner side the (new) owner's.
std::vector<GpuEvents*> event_pools(Session& s) {
  std::lock_guard threads(s.threads_mutex);
  std::vector<GpuEvents*> pools;
  for (const auto& ts : s.threads) {
    if (ts->gpu) pools.push_back(ts->gpu.get());
  }
  return pools;
}

}  // namespace

void start_collector(Session& s) {
  s.collector = std::thread(collector_loop, &s);  // also keeps the clock calibrated
  if (s.options.report_every_s != 0 && has_report_file(s.options))
    s.reporter = std::thread([s = &s] {
      every_until_stopped(s, &s->reporter_ready, std::chrono::seconds(s->options.report_every_s),
                          [s] { write_periodic_report(*s); });
    });
  if (s.options.step_ms != 0)
    s.stepper = std::thread([s = &s] {
      every_until_stopped(s, &s->stepper_ready, std::chrono::milliseconds(s->options.step_ms),
                          [s] { clock_step(*s); });
    });
  // A thread's start-up allocates (its stack and TLS, the CUDA runtime's per-thread state): a
  // fork() right after start() must not find an allocator lock held by a thread being born.
  const auto born = [&s] {
    return s.collector_ready.load(std::memory_order_acquire) &&
           (!s.reporter.joinable() || s.reporter_ready.load(std::memory_order_acquire)) &&
           (!s.stepper.joinable() || s.stepper_ready.load(std::memory_order_acquire));
  };
  for (int i = 0; i < 2000 && !born(); ++i) std::this_thread::sleep_for(std::chrono::microseconds(500));
}

void stop_collector(Session& s) {
  if (!s.collector.joinable()) return;  // the reporter starts after it, or not at all
  {
    std::lock_guard lock(s.collector_mutex);
    s.collector_stop = true;
  }
  s.collector_cv.notify_all();
  s.collector.join();
  if (s.reporter.joinable()) s.reporter.join();
  if (s.stepper.joinable()) s.stepper.join();
}

bool resolve_gpu_events() noexcept {
  try {
    Session& s = session();
    std::lock_guard resolve(s.resolve_mutex);
    const std::vector<GpuEvents*> pools = event_pools(s);
    if (pools.empty()) return true;
    const OwnCudaCalls own;
    bool done = true;
    for (GpuEvents* pool : pools) {
      if (!pool->resolve()) done = false;
    }
    return done;
  } catch (...) {  // out of memory for the list: nothing resolved this time
    return false;
  }
}

void give_up_gpu_events() noexcept {
  try {
    Session& s = session();
    std::lock_guard resolve(s.resolve_mutex);
    for (GpuEvents* pool : event_pools(s)) pool->give_up();
  } catch (...) {  // out of memory for the list: what waits stays uncounted
  }
}

}  // namespace cuscope::inline v0::detail

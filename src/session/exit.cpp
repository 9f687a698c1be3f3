// session/exit.cpp — the end of a session: shutdown(), run by exit() and quick_exit() (or called
// by the program), collects what is still on its way, and writes the table, the JSON report and
// the trace's summary (a process below a `cuscope run` that recorded nothing: none of them, and
// its trace file removed).
//
// Exit: start() probes CUDA first (which initializes the runtime), then registers the handler
// here, so the handler runs before CUDA's own teardown. Never: throw into the program, wait for
// the GPU without a bound, or touch CUDA or CUPTI once the session is closed.
#include <fmt/format.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>

#include "producers/cupti/adapter.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/gpu_events.hpp"
#include "producers/log.hpp"
#include "session/handover.hpp"
#include "session/internal.hpp"
#include "session/run_claim.hpp"
#include "trace/session_trace.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

std::once_flag g_atexit_once;

void at_exit() { cuscope::shutdown(); }

}  // namespace

void register_exit_handlers() {
  std::call_once(g_atexit_once, [] {
    std::atexit(at_exit);
    std::at_quick_exit(at_exit);  // std::quick_exit runs these, not the atexit ones
  });
}

}  // namespace detail

void shutdown() {
  using namespace detail;
  if (forked_child()) return;  // the parent's table and files are the parent's
  if (const Engine* e = forward_target()) return e->shutdown();
  try {
    Session& s = session();
    {
      std::lock_guard lock(s.lifecycle_mutex);
      if (!s.started || s.shut_down) {
        s.shut_down = true;
        return;
      }
      s.shut_down = true;
      g_state.store(kOff, std::memory_order_release);
      g_flags.store(0, std::memory_order_relaxed);
    }
    // Once the files are final (or not written), another process may write them (run_claim.hpp).
    struct ReleaseClaims {
      ~ReleaseClaims() { release_path_claims(); }
    } release_claims;
    stop_collector(s);
    // The collector, which alone finalizes, is stopped: a detach not made by now never will be. Given
    // up here, not only in stop_activity_tracing(): while armed, the CUPTI-timed events' flushes
    // below would be gated as after a detach.
    settle_detach_for_stop();
    // GPU work may still be running: wait for its events a bounded time, never forever. Events
    // timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti) also wait for CUPTI to deliver their records.
    const bool cupti_clock = event_timestamps_from_cupti();
    for (int i = 0; i < 1000 && !resolve_gpu_events(); ++i) {
      if (cupti_clock && i % 10 == 9) flush_activity();
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    disable_range_profiler();  // collects an open counter window first
    resolve_gpu_events();
    // Delivers what finished, then forces out what did not (counted as incomplete at exit), and
    // detaches from CUPTI before CUDA's teardown.
    stop_activity_tracing();
    if (cupti_clock) resolve_gpu_events();  // what the last flushes brought
    give_up_gpu_events();                   // what has not come by now never will: counted
    {
      std::lock_guard agg(s.aggregator_mutex);
      s.aggregator.settle(1);  // what still waits for its correlation now never gets it
    }
    finish_trace();  // all recorded is written: the report knows what the trace dropped
    s.closed.store(true, std::memory_order_release);
    // Below a `cuscope run`, a process that recorded nothing leaves nothing: no table, no files,
    // no note of where they would have gone, and its trace removed.
    const bool nothing = s.below_run && leaves_nothing(s, report_of(s));
    if (!nothing) say_path_notes(s);
    freeze_report(s);  // a scope still open now stays open in it
    if (!s.options.print_at_exit && s.options.json_path.empty() && s.options.trace_path.empty()) return;
    const Report r = report_of(s);
    const bool wrote_trace = trace_open();  // not when the file could not be opened: it is not ours
    close_trace(s, r);
    if (nothing) {
      struct stat st {};  // a trace written to a device or a pipe is not a file to remove
      const std::string& trace = s.options.trace_path;
      if (wrote_trace && ::lstat(trace.c_str(), &st) == 0 && S_ISREG(st.st_mode)) std::remove(trace.c_str());
      return;
    }
    write_report_files(s.options, r, ReportMoment::exit);
  } catch (const std::exception& e) {
    warn_once(fmt::format("shutdown failed: {}", e.what()));
  }
}

}  // namespace v0
}  // namespace cuscope

// session/session.hpp — the process-wide session (private): the state that ties producers, the
// model and the views together. The calls between the session's own files are in internal.hpp.
//
// The session object is created once and intentionally never destroyed: scopes on other threads
// and CUDA's own teardown can outlive any static destructor order we could pick.
//
// What the producers record into is theirs (producers/sink.hpp, which Session extends), and so is
// what a scope reads on its hot path (producers/scope_state.hpp): never the other way round.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cuscope/report.hpp>
#include <cuscope/session.hpp>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "model/roofline.hpp"
#include "model/spans.hpp"
#include "producers/cupti/metrics_host.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"

namespace cuscope::inline v0::detail {

class Session : public Sink {
 public:
  Session();
  model::SpanTable spans;  // NVTX start/end ranges (zero-code mode); has its own lock

  std::mutex resolve_mutex;  // one CUDA-event resolver at a time

  std::mutex threads_mutex;
  std::vector<std::unique_ptr<ThreadState>> threads;  // guarded by threads_mutex; never shrinks
  std::vector<ThreadState*> released_threads;

  // Fixed at start.
  std::string device = "no GPU";
  // "on" or "on, sampled: ..." when scopes record CUDA events; "projected: ..." when CUPTI's
  // projected spans time them instead; else why neither.
  std::string gpu_timing = "session not started";
  [[nodiscard]] bool records_events() const { return gpu_timing.rfind("on", 0) == 0; }
  std::string activity_status = "session not started";
  std::string counters_status{kCountersNotRequested};
  std::vector<Metric> counter_metrics;  // the plan the range profiler follows, when it runs
  model::DevicePeaks peaks;
  std::uint64_t start_ns = 0;
  std::int64_t rank = -1;       // in its job (RANK, OMPI_COMM_WORLD_RANK, ...); -1: none
  std::int64_t world_size = 0;  // 0: not known
  std::int64_t pid = 0;         // this process, and its host (ranks.hpp's ProcessIdentity)
  std::string host;
  // Below a `cuscope run`, not the process it started (ranks.hpp): if it records nothing, it
  // leaves nothing (report_files.cpp). Its path notes (the rank or pid its files got) wait until
  // its report is first written, said once (path_notes_said).
  bool below_run = false;
  std::vector<std::string> path_notes;
  std::atomic<bool> path_notes_said{false};

  std::atomic<std::uint64_t> steps{0};
  std::atomic<std::uint64_t> recorded_steps{0};
  // Of steps, those CUSCOPE_STEP_MS's clock ended: the others are the program's (its first step()
  // stops the clock's for good). Both change only in window.cpp's end_step(), under lifecycle_mutex.
  std::atomic<std::uint64_t> clock_steps{0};
  // The step window's position (window.cpp, end_step()): the step count, less the steps recorded
  // whole before it (Options::whole_ms) and those a wait of Options::wait_ms took again on its last
  // wait step; and when the wait in progress began.
  // Guarded by lifecycle_mutex.
  std::uint64_t window_step = 0;
  std::uint64_t wait_began_ns = 0;
  // Options::whole_ms: every step recorded until the first to end that long after the start, and
  // the window (at window_step 0) from then on. Guarded by lifecycle_mutex.
  bool whole = false;
  // Options::step_ms is Options::sample_ms's, not the program's: its steps stop at the program's first
  // step() without a note (window.cpp).
  bool clock_from_sample = false;

  std::mutex lifecycle_mutex;
  bool started = false;
  bool shut_down = false;
  // shutdown() has collected everything: CUDA may be torn down next (static destructors after
  // it), so step(), flush() and snapshot() touch nothing of CUDA, CUPTI or the window any more.
  std::atomic<bool> closed{false};
  // A window's end began detaching CUPTI, after the last window or between two
  // (producers/cupti/detach.hpp: where it stands); between two, the next window's first step ends it.
  bool detach_asked = false;
  // Between windows or while recording is off (Options::detach_between): a detach was refused or given
  // up, so the later ones pause CUPTI only; and how many times CUPTI was attached again after each.
  bool detach_between_off = false;
  std::uint64_t reattaches = 0;
  std::uint64_t reattaches_after_off = 0;
  // CUPTI not attached yet: the session began in the first wait of a window detached between windows,
  // or with recording off (window.cpp, defers_attach()); the first step or switch that traces attaches
  // it, with nothing to forget.
  bool attach_deferred = false;
  // A window began while that detach was still under way (2 s): its later steps try again, unwaited.
  bool reattach_late = false;
  // Recording as the program last set it (Options::enabled, then set_enabled()): while off, CUPTI's
  // tracing is paused as outside the step window.
  bool recording_on = true;
  // What snapshot() returns once shutdown() closed the session (guarded by lifecycle_mutex).
  std::optional<Report> final_report;

  std::thread collector;
  std::thread reporter;  // CUSCOPE_REPORT_EVERY's periodic writes, off the collector's ticks
  std::thread stepper;   // CUSCOPE_STEP_MS's steps, until the program's first step() (window.cpp)
  std::mutex collector_mutex;
  std::condition_variable collector_cv;
  bool collector_stop = false;               // guarded by collector_mutex; stops the reporter too
  std::atomic<bool> collector_ready{false};  // its start-up (thread and CUDA runtime set-up) is done
  std::atomic<bool> reporter_ready{false};   // the same, for the reporter
  std::atomic<bool> stepper_ready{false};    // the same, for the stepper
};

Session& session();

/// Tests only: ends the session (without printing) and starts afresh with a new one, as if the
/// process had just begun. No other thread may be inside a scope. The old session is leaked.
void reset_for_testing() noexcept;
/// Tests and benchmarks: the started session as CUPTI tracing leaves it, without CUPTI: instance
/// ids recorded, `push` and `pop` as the correlation hooks, tracing on and the scope flags decided
/// again (CUDA events as CUSCOPE_EVENTS has them with tracing); `launch_notes`: as with
/// CUSCOPE_ATTRIBUTION=launch (scopes push nothing; note_launch() reads their instances).
/// reset_for_testing() undoes it.
void trace_with_fake_cupti_for_testing(CorrelationHook push, CorrelationPopHook pop,
                                       bool launch_notes = false) noexcept;
/// The session's report as snapshot() builds it (no forwarding to an injected engine).
Report report_of(Session& s) noexcept;
/// Makes the report what it is now, for good (shutdown(), once the session is closed).
void freeze_report(Session& s) noexcept;

/// Resolves finished CUDA events of every thread; true when none is left pending (collector.cpp).
bool resolve_gpu_events() noexcept;
/// At the session's end, after the last resolve_gpu_events(): counts the scopes whose events are
/// still pending as gpu_event_failures (collector.cpp).
void give_up_gpu_events() noexcept;

/// Session::gpu_timing for `o` (CUSCOPE_EVENTS): "on" or "on, sampled: ..." when scopes record CUDA
/// events; "projected: ..." when CUPTI traces and events are not needed; else why neither.
std::string event_timing(const Options& o, bool gpu_available, const std::string& no_gpu_reason,
                         bool tracing);

/// Whether some step of `o`'s window pauses CUPTI's tracing (a wait step, or one after the last
/// window): the activity status then says "paused outside the step window".
bool pauses_tracing(const Options& o);

}  // namespace cuscope::inline v0::detail

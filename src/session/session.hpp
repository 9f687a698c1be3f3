// session/session.hpp — the process-wide session (private): what the hot path reads, and the
// state that ties producers, the model and the views together.
//
// The session object is created once and intentionally never destroyed: scopes on other threads
// and CUDA's own teardown can outlive any static destructor order we could pick.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cuscope/scope.hpp>  // first: detail:: below extends cuscope::v0::detail
#include <cuscope/session.hpp>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "model/roofline.hpp"
#include "model/spans.hpp"
#include "producers/cupti/metrics_host.hpp"
#include "producers/gpu_events.hpp"
#include "producers/hot_tls.hpp"

namespace cuscope::inline v0::detail {

/// What a scope does, read once per scope entry (one relaxed load).
enum Flags : std::uint32_t {
  kRecording = 1u << 0,    ///< inside the active window: scopes build the range tree
  kGpuEvents = 1u << 1,    ///< record CUDA events around recorded scopes
  kCorrelation = 1u << 2,  ///< push external correlation ids for CUPTI
  kCounters = 1u << 3,     ///< hardware counters may be collected: scope boundaries call the profiler
  kTrace = 1u << 4,        ///< trace mode: recorded scopes also go to the trace writer
};
extern std::atomic<std::uint32_t> g_flags;

/// Hooks the CUPTI adapter installs while it traces (null otherwise).
using CorrelationHook = void (*)(std::uint64_t instance) noexcept;
using CorrelationPopHook = void (*)() noexcept;
extern std::atomic<CorrelationHook> g_push_correlation;
extern std::atomic<CorrelationPopHook> g_pop_correlation;

/// A thread's producer state: its range tree and its CUDA-event pool.
class Session;
struct ThreadState {
  Session* owner = nullptr;
  model::ThreadTree* tree = nullptr;
  std::unique_ptr<GpuEvents> gpu;
  model::SoloCounter outside_window;  // scopes entered outside the step window (left out)
  bool counted_root = false;          // owner only: a "(counted steps)" frame is open at depth 1
  bool counted_root_traced = false;   // owner only: and trace mode recorded its entry
};

/// The process's name table: outlives sessions, since call sites cache its ids.
model::NameTable& process_names();

class Session {
 public:
  Session();
  Options options;
  model::Forest forest{&process_names()};

  std::mutex aggregator_mutex;
  model::Aggregator aggregator{forest};  // guarded by aggregator_mutex
  model::SpanTable spans;                // NVTX start/end ranges (zero-code mode); has its own lock

  std::mutex resolve_mutex;  // one CUDA-event resolver at a time

  std::mutex threads_mutex;
  std::vector<std::unique_ptr<ThreadState>> threads;  // guarded by threads_mutex; never shrinks
  std::vector<ThreadState*> released_threads;

  // Fixed at start.
  std::string device = "no GPU";
  std::string gpu_timing = "session not started";  // "on", or why not
  std::string activity_status = "session not started";
  std::string counters_status{kCountersNotRequested};
  std::vector<Metric> counter_metrics;  // the plan the range profiler follows, when it runs
  model::DevicePeaks peaks;
  std::uint64_t start_ns = 0;
  std::int64_t rank = -1;       // in its job (RANK, OMPI_COMM_WORLD_RANK, ...); -1: none
  std::int64_t world_size = 0;  // 0: not known

  std::atomic<std::uint64_t> steps{0};
  std::atomic<std::uint64_t> recorded_steps{0};
  std::atomic<std::uint64_t> cross_thread_ends{0};
  std::atomic<std::uint64_t> stray_pops{0};       // pop() on a thread that never opened a scope
  std::atomic<std::uint64_t> rejected_counts{0};  // count() amounts that were inf or NaN

  std::mutex lifecycle_mutex;
  bool started = false;
  bool shut_down = false;
  std::atomic<bool> tracing{false};  // CUPTI traces: scopes push correlation ids
  // shutdown() has collected everything: CUDA may be torn down next (static destructors after
  // it), so step(), flush() and snapshot() touch nothing of CUDA, CUPTI or the window any more.
  std::atomic<bool> closed{false};

  std::thread collector;
  std::mutex collector_mutex;
  std::condition_variable collector_cv;
  bool collector_stop = false;               // guarded by collector_mutex
  std::atomic<bool> collector_ready{false};  // its start-up (thread and CUDA runtime set-up) is done
};

Session& session();

/// Starts the session from a scope (options from the environment); true if scopes record.
bool start_from_scope() noexcept;
/// A state for the calling thread (first scope on the thread), or nullptr past the thread limit.
ThreadState* attach_thread() noexcept;
/// Tests only: ends the session (without printing) and starts afresh with a new one, as if the
/// process had just begun. No other thread may be inside a scope. The old session is leaked.
void reset_for_testing() noexcept;
/// The session's report as snapshot() builds it (no forwarding to an injected engine).
Report report_of(Session& s) noexcept;
/// Forgets the calling thread's state (scope.cpp), used by reset_for_testing().
void forget_this_thread() noexcept;

/// A range by interned name id, for producers other than Scope (the NVTX injection): what enter()
/// does, without an NVTX range of its own and without a stream. nullptr when it records nothing.
ThreadState* enter_interned(std::uint32_t id, std::uint32_t& token) noexcept;
/// exit() of a scope known to have begun on the calling thread (its state is the thread's own), at
/// `now_ns`: what exit() does after checking that.
void exit_owned(ThreadState* ts, std::uint32_t token, std::uint64_t now_ns) noexcept;
/// The calling thread's state if it has one (no attaching).
ThreadState* current_thread_state() noexcept;
/// The calling thread's state (scope.cpp), for the NVTX injection's own common path: it opens and
/// closes frames with ThreadTree::begin_common()/end_common() as the scope's common path does.
CUSCOPE_HOT_TLS extern constinit thread_local ThreadState* t_state;
/// The token exit_owned() takes for a frame that begin_common() opened at `depth` on this thread.
std::uint32_t owned_token(std::uint32_t depth) noexcept;
/// Closes what other threads ended on `ts` (the calling thread's): after an end_common() that found
/// remote_posted(), as the scope's common exit does.
void settle_remote_ends(ThreadState* ts) noexcept;
/// Whether the session (started on demand) records now: inside the step window.
bool recording() noexcept;
/// Set by the NVTX injection: scopes push no NVTX range of their own (NVTX goes to cuscope itself).
extern std::atomic<bool> g_nvtx_quiet;

/// Resolves finished CUDA events of every thread; true when none is left pending.
bool resolve_gpu_events() noexcept;

}  // namespace cuscope::inline v0::detail

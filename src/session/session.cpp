// session/session.cpp — the session's life: start (explicit or from the first scope), the step
// window, the collector thread that resolves CUDA events, flush, snapshot, and the exit summary.
//
// Exit: start() probes CUDA first (which initializes the runtime), then registers its atexit
// (and at_quick_exit) handler, so the handler runs before CUDA's own teardown. Nothing here may
// throw into the program: every public entry point catches.
//
// Lifetime: every entry point works in a static constructor before main and in a static
// destructor after it. So nothing they reach has a dynamic initializer at namespace scope: state
// is constant-initialized (atomics, std::mutex, std::once_flag) or a leaked function-local static.
//
// fork(): a child process has cuscope off (see cuscope/session.hpp). Its other threads are gone
// and any lock they held stays held, so in the child every entry point returns before taking one.
#include "session/session.hpp"

#include <fmt/format.h>
#include <pthread.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <set>
#include <stdexcept>

#include "model/utf8.hpp"
#include "producers/clock.hpp"
#include "producers/cuda_probe.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/log.hpp"
#include "producers/nvtx_domain.hpp"
#include "session/handover.hpp"
#include "session/hardware.hpp"
#include "session/ranks.hpp"
#include "trace/session_trace.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

spdlog::logger& logger() {
  static spdlog::logger* l = [] {
    auto* made = new spdlog::logger("cuscope", std::make_shared<spdlog::sinks::stderr_sink_mt>());
    made->set_pattern("cuscope: %v");
    return made;
  }();
  return *l;
}

Session* g_session = nullptr;
std::mutex g_notes_mutex;  // constexpr-constructed: usable before any dynamic initializer ran

// Function-local, so a warning in a static constructor finds it made; leaked: used until the end.
std::set<std::string>& warned() {
  static auto* set = new std::set<std::string>;
  return *set;
}

// Set in a child created by fork(): cuscope is off there (constant-initialized).
std::atomic<bool> g_forked_child{false};
std::atomic<long> g_parent_pid{0};

bool forked_child() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

void before_fork() noexcept;
void after_fork_in_parent() noexcept;
void after_fork_in_child() noexcept;

// Once per process, at load time (below) and again from session() in case a program forks from a
// static constructor that runs before ours.
void register_fork_handlers() noexcept {
  static const bool registered = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  (void)registered;
}
[[gnu::constructor]] void register_fork_handlers_at_load() { register_fork_handlers(); }

enum class Phase { Wait, Warmup, Record, Done };

Phase phase_of(const Options& o, std::uint64_t step) {
  if (step < o.wait_steps) return Phase::Wait;
  if (step < std::uint64_t{o.wait_steps} + o.warmup_steps) return Phase::Warmup;
  if (o.active_steps == 0 || step < std::uint64_t{o.wait_steps} + o.warmup_steps + o.active_steps)
    return Phase::Record;
  return Phase::Done;
}

std::uint32_t flags_for(const Session& s, Phase p) {
  const bool tracing = s.tracing.load(std::memory_order_relaxed);
  std::uint32_t f = 0;
  if (p == Phase::Record) {
    f |= kRecording;
    if (s.gpu_timing == "on") f |= kGpuEvents;
    const std::uint64_t recorded = s.recorded_steps.load(std::memory_order_relaxed);
    if (s.counters_status.rfind("on", 0) == 0 && counters_failure().empty() &&
        (s.options.metric_steps == 0 || recorded < s.options.metric_steps)) {
      f |= kCounters;
    }
  }
  if (tracing && (p == Phase::Record || p == Phase::Warmup)) f |= kCorrelation;
  if (p == Phase::Record && trace_on()) f |= kTrace;
  return f;
}

// Resolves CUDA events every 10 ms and asks CUPTI for its completed buffers every 100 ms, so a
// snapshot sees recent work without a flush and CUPTI's buffers stay few.
void collector_loop(Session* s) {
  // Relaxed capture mode: this thread's cudaEventQuery calls must not invalidate a stream capture
  // that another thread runs in global mode (the default of cudaStreamBeginCapture).
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  if (cudaThreadExchangeStreamCaptureMode(&mode) != cudaSuccess) cudaGetLastError();
  s->collector_ready.store(true, std::memory_order_release);
  std::unique_lock lock(s->collector_mutex);
  for (unsigned tick = 1; !s->collector_stop; ++tick) {
    s->collector_cv.wait_for(lock, std::chrono::milliseconds(10));
    lock.unlock();
    resolve_gpu_events();
    recalibrate_clock();  // does something about once a second
    if (tick % 10 == 0 && s->tracing.load(std::memory_order_acquire)) poll_activity();
    lock.lock();
  }
}

void at_exit() { cuscope::shutdown(); }

void write_text(const std::string& path, const std::string& text, const char* what) {
  if (path.empty()) {
    std::fputs(text.c_str(), stderr);
    std::fflush(stderr);
    return;
  }
  std::ofstream out(path, std::ios::trunc);
  out << text;
  out.close();
  if (!out) {
    warn_once(fmt::format("could not write the {} to '{}'; printing it to stderr instead", what, path));
    std::fputs(text.c_str(), stderr);
  }
}

// A thread's tree is handed on only after the thread's last scope: from a pthread key
// destructor, which runs after every C++ thread_local destructor of the thread (a thread_local
// built before the thread's first scope may still open scopes in its destructor). A scope in a
// later key destructor attaches again, and the key releases again (POSIX repeats the round).
void release_thread(void* state) {
  auto* ts = static_cast<ThreadState*>(state);
  forget_this_thread();
  auto& s = static_cast<Session&>(*ts->owner);  // attach_thread() made it: a Session's
  std::lock_guard lock(s.threads_mutex);
  s.released_threads.push_back(ts);
  s.forest.idle_trees.fetch_add(1, std::memory_order_release);
}

pthread_key_t release_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    if (pthread_key_create(&k, release_thread) != 0) throw std::runtime_error("no pthread key left");
    return k;
  }();
  return key;
}

// Held across fork(), so that the child finds them free and what they guard whole: the session's
// thread registry (thread exits take it), then the notes (a leaf lock: nothing else is taken
// while it is held, but the logger's).
Session* g_forking = nullptr;  // the session whose thread lock fork() holds

void before_fork() noexcept {
  g_forking = g_session;
  if (g_forking) g_forking->threads_mutex.lock();
  g_notes_mutex.lock();
}

void after_fork_in_parent() noexcept {
  g_notes_mutex.unlock();
  if (g_forking) g_forking->threads_mutex.unlock();
}

std::once_flag g_atexit_once;

// The child's only thread is the one that called fork(). Its scopes still open from the parent
// end without touching the tree (ended "on another thread"), and its exit releases nothing, since
// the session's locks may be held by threads that no longer exist.
void after_fork_in_child() noexcept {
  g_notes_mutex.unlock();
  if (g_forking) g_forking->threads_mutex.unlock();
  g_parent_pid.store(static_cast<long>(getppid()), std::memory_order_relaxed);
  g_forked_child.store(true, std::memory_order_relaxed);
  g_state.store(kOff, std::memory_order_release);
  g_flags.store(0, std::memory_order_relaxed);
  forget_this_thread();
  pthread_setspecific(release_key(), nullptr);  // the child's thread exit releases nothing
}

void stop_collector(Session& s) {
  if (!s.collector.joinable()) return;
  {
    std::lock_guard lock(s.collector_mutex);
    s.collector_stop = true;
  }
  s.collector_cv.notify_all();
  s.collector.join();
}

// What snapshot() returns in a forked child: nothing recorded, and why.
Report forked_child_report() {
  Report r;
  const std::string off = "off in a process created by fork()";
  r.device = "not queried (cuscope is off in a process created by fork())";
  r.gpu_timing = r.activity_status = r.counters_status = off;
  r.notes.push_back(
      fmt::format("cuscope is off in this process: it was created by fork() from process {}, "
                  "whose session goes on there (see README, Lifetime)",
                  g_parent_pid.load(std::memory_order_relaxed)));
  return r;
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const std::size_t len = model::utf8_sequence_length(text, i);
    if (byte == '\n') {
      out += "\\n";
    } else if (byte == '\r') {
      out += "\\r";
    } else if (byte == '\t') {
      out += "\\t";
    } else if (len == 0 || byte < 0x20 || byte == 0x7f) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out.append(text, i, len);
      i += len;
      continue;
    }
    ++i;
  }
  return out;
}

void warn_once(const std::string& message) noexcept {
  try {
    const std::string line = one_line(message);  // one message, one line, whatever it quotes
    std::lock_guard lock(g_notes_mutex);
    if (!warned().insert(line).second) return;
    if (forked_child()) {
      // The logger's lock may be held by a thread the parent had: plain stdio, which fork resets.
      std::fputs(("cuscope: " + line + "\n").c_str(), stderr);
      return;
    }
    logger().warn("{}", line);
  } catch (...) {  // a warning must never take the program down
  }
}

Session::Session() = default;

Session& session() {
  static const bool made = [] {
    register_fork_handlers();
    g_session = new Session();  // leaked on purpose (see file comment)
    return true;
  }();
  (void)made;
  return *g_session;
}

Sink& current_sink() { return session(); }

// The session's report (snapshot() without the forwarding): also the trace summary of a session
// that reset_for_testing() ends.
Report report_of(Session& s) noexcept {
  Report r;
  try {
    if (!s.closed.load(std::memory_order_acquire)) resolve_gpu_events();  // else CUDA may be gone
    {
      std::lock_guard agg(s.aggregator_mutex);
      s.aggregator.build(r);
    }
    s.spans.build(s.forest.names, r);
    {
      std::lock_guard lock(s.lifecycle_mutex);
      r.device = s.device;
      r.gpu_timing = s.gpu_timing;
      r.activity_status = s.activity_status;
      r.counters_status = s.counters_status;
      r.clock = clock_description();
      r.rank = s.rank;
      r.world_size = s.world_size;
      if (std::string failure = counters_failure(); !failure.empty()) r.counters_status = failure;
      apply_verdicts(r, s.peaks, s.counter_metrics);
      r.wall_ns = s.started ? now_ns() - s.start_ns : 0;
      r.window_start_step = std::uint64_t{s.options.wait_steps} + s.options.warmup_steps;
    }
    {
      std::lock_guard lock(g_notes_mutex);
      r.notes.assign(warned().begin(), warned().end());
    }
    r.steps = s.steps.load(std::memory_order_relaxed);
    r.recorded_steps = s.recorded_steps.load(std::memory_order_relaxed);
    r.diagnostics.cross_thread_ends = s.cross_thread_ends.load(std::memory_order_relaxed);
    r.diagnostics.unbalanced_ends += s.stray_pops.load(std::memory_order_relaxed);
    r.diagnostics.rejected_counts = s.rejected_counts.load(std::memory_order_relaxed);
    r.diagnostics.trace_records_dropped = trace_dropped();
    std::lock_guard threads(s.threads_mutex);
    for (const auto& ts : s.threads) {
      r.diagnostics.outside_window_scopes += ts->outside_window.get();
      if (!ts->gpu) continue;
      r.diagnostics.gpu_event_failures += ts->gpu->failures.load(std::memory_order_relaxed);
      r.diagnostics.scopes_in_capture += ts->gpu->in_capture.load(std::memory_order_relaxed);
    }
  } catch (const std::exception& e) {
    warn_once(fmt::format("snapshot failed: {}", e.what()));
  }
  return r;
}

void reset_for_testing() noexcept {
  Session& old = session();
  {
    std::lock_guard lock(old.lifecycle_mutex);
    old.shut_down = true;
  }
  stop_collector(old);
  g_state.store(kNotStarted, std::memory_order_release);
  g_flags.store(0, std::memory_order_relaxed);
  disable_range_profiler();
  stop_activity_tracing();  // the next session starts tracing again
  finish_trace();
  old.closed.store(true, std::memory_order_release);  // its report is final: no CUDA-event queries
  if (trace_open()) close_trace(old, report_of(old));  // its summary names the device, as at exit
  static auto* retired = new std::vector<Session*>;  // kept reachable: threads may still point into them
  retired->push_back(g_session);
  g_session = new Session();
  forget_this_thread();
  pthread_setspecific(release_key(), nullptr);
  std::lock_guard lock(g_notes_mutex);
  warned().clear();
}

bool start_from_scope() noexcept {
  if (g_state.load(std::memory_order_acquire) == kNotStarted) cuscope::start();
  return g_state.load(std::memory_order_relaxed) == kOn;
}

ThreadState* attach_thread() noexcept {
  try {
    Session& s = session();
    // Past the thread limit every scope retries: lock-free until a tree is free again.
    if (s.forest.idle_trees.load(std::memory_order_acquire) == 0 && s.forest.full()) return nullptr;
    const pthread_key_t key = release_key();
    std::lock_guard lock(s.threads_mutex);
    ThreadState* ts = nullptr;
    if (!s.released_threads.empty()) {
      ts = s.released_threads.back();
      s.released_threads.pop_back();
      s.forest.idle_trees.fetch_sub(1, std::memory_order_relaxed);
      for (std::uint32_t d = ts->tree->open_depth(); d > 0 && ts->gpu; --d) ts->gpu->abandon(d);
      ts->tree->abandon_open();  // the exited thread left them open
      ts->tree->new_owner();
    } else {
      model::ThreadTree* tree = s.forest.make_tree();
      if (tree == nullptr) return nullptr;
      auto fresh = std::make_unique<ThreadState>();
      fresh->owner = &s;
      fresh->tree = tree;
      if (s.gpu_timing == "on") fresh->gpu = std::make_unique<GpuEvents>();
      ts = fresh.get();
      s.threads.push_back(std::move(fresh));
    }
    pthread_setspecific(key, ts);
    return ts;
  } catch (...) {
    return nullptr;
  }
}

namespace {

// Marks the calling thread's CUDA calls as cuscope's own while it lives: capture mode relaxed (so
// that its event queries never invalidate another thread's global-mode stream capture), and,
// while CUPTI traces, an external correlation id that keeps those calls out of the report.
class OwnCudaCalls {
 public:
  OwnCudaCalls() noexcept {
    if (cudaThreadExchangeStreamCaptureMode(&mode_) != cudaSuccess) {
      cudaGetLastError();
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
    if (restore_mode_) cudaThreadExchangeStreamCaptureMode(&mode_);
  }
  OwnCudaCalls(const OwnCudaCalls&) = delete;
  OwnCudaCalls& operator=(const OwnCudaCalls&) = delete;

 private:
  cudaStreamCaptureMode mode_ = cudaStreamCaptureModeRelaxed;
  bool restore_mode_ = true;
  bool pushed_ = false;
};

}  // namespace

bool resolve_gpu_events() noexcept {
  Session& s = session();
  std::lock_guard resolve(s.resolve_mutex);
  std::lock_guard threads(s.threads_mutex);
  bool done = true;
  bool any = false;
  for (const auto& ts : s.threads) any = any || ts->gpu;
  if (!any) return true;
  const OwnCudaCalls own;
  for (const auto& ts : s.threads) {
    if (ts->gpu && !ts->gpu->resolve()) done = false;
  }
  return done;
}

}  // namespace detail

bool start() {
  if (detail::forked_child()) return false;
  return start(options_from_env());
}

bool start(const Options& given) {
  using namespace detail;
  if (forked_child()) return false;
  if (const Engine* e = forward_target()) return e->start(given);
  try {
    Session& s = session();
    std::lock_guard lock(s.lifecycle_mutex);
    if (s.started) return false;
    s.started = true;
    Options options = given;
    if (options.max_depth < 1 || options.max_depth > model::kHardMaxDepth) {
      // What CUSCOPE_MAX_DEPTH does with such a value: keep the default, and say so.
      const std::uint32_t fallback = Options{}.max_depth;
      warn_once(fmt::format("Options::max_depth={} is out of range [1, {}]; using {}", options.max_depth,
                            model::kHardMaxDepth, fallback));
      options.max_depth = fallback;
    }
    const ProcessIdentity id = this_process();  // each rank of a job writes its own files
    for (const std::string& problem : id.problems) warn_once(problem);
    expand_output_paths(options, id);
    s.rank = id.rank;
    s.world_size = id.world_size;
    s.options = options;
    start_clock(true);
    s.start_ns = now_ns();
    s.forest.max_depth.store(options.max_depth, std::memory_order_relaxed);
    nvtx_domain();

    GpuProbe probe;
    const bool wants_cuda = options.gpu_events || options.activities;
    if (wants_cuda) {
      probe = probe_gpu();
      s.device = probe.device;
    } else {
      s.device = "not queried (GPU timing and tracing are off)";
    }
    if (!options.gpu_events) {
      s.gpu_timing = "disabled by option (CUSCOPE_GPU_EVENTS=0)";
    } else {
      s.gpu_timing = probe.available ? "on" : probe.reason;
    }
    if (!options.activities) {
      s.activity_status = "disabled by option (CUSCOPE_ACTIVITIES=0)";
    } else if (!probe.available) {
      s.activity_status = probe.reason;
    } else {
      s.activity_status = start_activity_tracing(s);
    }
    if (!options.metrics.empty()) s.counters_status = probe.available ? start_counters(s) : probe.reason;
    if (probe.available) s.peaks = device_peaks();
    if (std::string off = start_trace(s); !off.empty()) warn_once(off);
    trace_step(s.start_ns, 0, phase_of(options, 0) == Phase::Record);

    g_flags.store(flags_for(s, phase_of(options, 0)), std::memory_order_relaxed);
    if (phase_of(options, 0) != Phase::Record) {
      std::lock_guard agg(s.aggregator_mutex);
      s.aggregator.set_recording(false, s.start_ns);
    }
    s.collector = std::thread(collector_loop, &s);  // also keeps the clock calibrated
    // A thread's start-up allocates (its stack and TLS, the CUDA runtime's per-thread state): a
    // fork() right after start() must not find an allocator lock held by a thread being born.
    for (int i = 0; i < 2000 && !s.collector_ready.load(std::memory_order_acquire); ++i)
      std::this_thread::sleep_for(std::chrono::microseconds(500));
    std::call_once(g_atexit_once, [] {
      std::atexit(at_exit);
      std::at_quick_exit(at_exit);  // std::quick_exit runs these, not the atexit ones
    });
    g_state.store(options.enabled ? kOn : kOff, std::memory_order_release);
    return true;
  } catch (const std::exception& e) {
    warn_once(fmt::format("could not start: {}; scopes record nothing", e.what()));
    g_state.store(kOff, std::memory_order_release);
    return false;
  }
}

void step() {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->step();
  Session& s = session();
  if (g_state.load(std::memory_order_acquire) == kNotStarted) start();
  if (s.closed.load(std::memory_order_acquire)) return;  // the summary is written: steps are final
  const Options& o = s.options;
  const std::uint64_t finished = s.steps.fetch_add(1, std::memory_order_relaxed);
  const Phase was = phase_of(o, finished);
  const Phase next = phase_of(o, finished + 1);
  if (was == Phase::Record) s.recorded_steps.fetch_add(1, std::memory_order_relaxed);
  g_flags.store(flags_for(s, next), std::memory_order_relaxed);  // also ends the counters' steps
  trace_step(now_ns(), finished + 1, next == Phase::Record);
  if (was == next) return;
  if ((was == Phase::Record) != (next == Phase::Record)) {
    std::lock_guard agg(s.aggregator_mutex);
    s.aggregator.set_recording(next == Phase::Record, now_ns());
  }
}

void set_enabled(bool on) {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->set_enabled(on);
  if (g_state.load(std::memory_order_acquire) == kNotStarted) start();
  Session& s = session();
  std::lock_guard lock(s.lifecycle_mutex);
  if (s.shut_down) return;
  g_state.store(on ? kOn : kOff, std::memory_order_release);
}

bool enabled() {
  using namespace detail;
  if (const Engine* e = forward_target()) return e->enabled();
  const int state = g_state.load(std::memory_order_acquire);
  if (state != kNotStarted) return state == kOn;
  // Not started: what the first scope would do, which starts the session from the environment.
  // Read quietly: start() reports bad values once.
  return options_from([](const char* name) -> const char* { return std::getenv(name); }, Options{}, nullptr)
      .enabled;
}

void flush() {
  using namespace detail;
  if (forked_child()) return;
  if (const Engine* e = forward_target()) return e->flush();
  Session& s = session();
  if (s.closed.load(std::memory_order_acquire)) return;  // the report is final, CUDA may be gone
  // A normal flush: work still running stays with CUPTI and arrives complete later.
  if (s.tracing.load(std::memory_order_acquire)) flush_activity();  // takes the aggregator lock itself
  resolve_gpu_events();
}

Report snapshot() {
  using namespace detail;
  if (forked_child()) return forked_child_report();
  if (const Engine* e = forward_target()) return e->snapshot();
  return report_of(session());
}

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
    stop_collector(s);
    // GPU work may still be running: wait for its events a bounded time, never forever.
    for (int i = 0; i < 1000 && !resolve_gpu_events(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    disable_range_profiler();  // collects an open counter window first
    resolve_gpu_events();
    // Delivers what finished, then forces out what did not (counted as incomplete at exit), and
    // detaches from CUPTI before CUDA's teardown.
    stop_activity_tracing();
    {
      std::lock_guard agg(s.aggregator_mutex);
      s.aggregator.settle(1);  // what still waits for its correlation now never gets it
    }
    finish_trace();  // all recorded is written: the report knows what the trace dropped
    s.closed.store(true, std::memory_order_release);
    if (!s.options.print_at_exit && s.options.json_path.empty() && s.options.trace_path.empty()) return;
    const Report r = snapshot();
    close_trace(s, r);
    if (s.options.print_at_exit) write_text(s.options.output_path, format_table(r, s.options.table), "table");
    if (!s.options.json_path.empty()) write_text(s.options.json_path, format_json(r), "JSON report");
  } catch (const std::exception& e) {
    warn_once(fmt::format("shutdown failed: {}", e.what()));
  }
}

Options current_options() {
  if (const detail::Engine* e = detail::forward_target()) return e->current_options();
  if (detail::forked_child()) {
    Options off;
    off.enabled = false;
    off.print_at_exit = false;
    return off;
  }
  detail::Session& s = detail::session();
  std::lock_guard lock(s.lifecycle_mutex);
  return s.options;
}

}  // namespace v0
}  // namespace cuscope

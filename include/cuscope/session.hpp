// cuscope/session.hpp — the process-wide session: options, step window, flush, shutdown.
//
// The session starts by itself on the first scope, configured from the CUSCOPE_*
// environment variables, or explicitly with start(). It prints the summary table
// at exit (before CUDA's own teardown), unless told not to.
//
// Example:
//   cuscope::Options o = cuscope::options_from_env();  // defaults, then CUSCOPE_* on top
//   o.warmup_steps = 2;                                 // keep first launches out
//   cuscope::start(o);
//   for (int i = 0; i < 10; ++i) { CUSCOPE_SCOPE("step"); train_step(); cuscope::step(); }
//   // the table prints at exit; cuscope::snapshot() reads the same numbers at any time
//
// None of these functions throws; all are safe to call from any thread, and from static
// constructors and destructors (before main and after it). The summary is written once: when main
// returns, on exit(), on std::quick_exit() or at shutdown(). In a child created by fork(), cuscope
// is off: scopes record nothing, snapshot() is empty with a note, and nothing is written at exit
// (the parent's CUSCOPE_OUTPUT and CUSCOPE_JSON stay the parent's).
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope {
inline namespace v0 {

/// Which scope calls CUDA events time (Options::events, CUSCOPE_EVENTS).
enum class EventTiming : std::uint8_t {
  automatic,  ///< "auto": only where CUPTI does not trace the GPU work (then GPU time is projected)
  always,     ///< "always": every recorded call of a scope given a stream
  sampled,    ///< "sampled:N": the first kFirstTimedCalls calls of each range, then one call in N
  off,        ///< "off": never
};
[[nodiscard]] std::string_view to_string(EventTiming e);
/// Calls of each range (per thread) that "sampled:N" always times before it times one in N.
inline constexpr std::uint32_t kFirstTimedCalls = 10;

/// Where the times of the CUDA events that time scopes come from (Options::event_timestamps,
/// CUSCOPE_EVENT_TIMESTAMPS; docs/cupti-event-clock.md).
enum class EventTimestamps : std::uint8_t {
  cuda,   ///< "cuda": events with timing, read with cudaEventElapsedTime
  cupti,  ///< "cupti": events without timing (cudaEventDisableTiming), their device timestamps taken
          ///< from CUPTI's CUDA_EVENT records; only while CUPTI traces, else "cuda" with a note
};
[[nodiscard]] std::string_view to_string(EventTimestamps t);

/// How CUPTI's records of GPU work are tied to the scope that launched it (Options::attribution,
/// CUSCOPE_ATTRIBUTION; docs/cupti.md).
enum class Attribution : std::uint8_t {
  external,  ///< "external": each scope pushes its instance as CUPTI's external correlation id,
             ///< which CUPTI ties to the API records of the calls made inside it
  launch,    ///< "launch": a CUPTI callback at each driver call that launches, copies, sets,
             ///< allocates or waits notes the scope open on its thread; no API records
};
[[nodiscard]] std::string_view to_string(Attribution a);

/// Session configuration. Every field has an environment variable (docs/options.md).
struct Options {
  /// CUSCOPE_ENABLE: false makes every scope cost one branch, and CUPTI is not attached until
  /// set_enabled(true) (where it could trace, but for CUSCOPE_METRICS and
  /// CUSCOPE_EVENT_TIMESTAMPS=cupti; docs/cupti-windows.md)
  bool enabled = true;
  bool gpu_events = true;  ///< CUSCOPE_GPU_EVENTS: false is CUSCOPE_EVENTS=off (the older switch)
  /// CUSCOPE_EVENTS: which calls CUDA events time, "auto" (the default), "always", "sampled:N" or
  /// "off". Where CUPTI traces, a call's GPU time is the projected span of its work
  /// (RangeStats::gpu_projected) and needs no events: "auto" records none there, and records them
  /// only where tracing is off (no driver hook, CUPTI taken by another tool, CUSCOPE_ACTIVITIES=0).
  EventTiming events = EventTiming::automatic;
  /// N of "sampled:N" (2 to 1e9); 0 otherwise. start() given `sampled` with N outside that uses
  /// `auto`, with a note.
  std::uint32_t events_sample_every = 0;
  /// CUSCOPE_EVENT_TIMESTAMPS: "cuda" (the default) or "cupti" (timing-disabled events whose device
  /// timestamps CUPTI records; a trial on an H200 failed, docs/cupti-event-clock.md)
  EventTimestamps event_timestamps = EventTimestamps::cuda;
  bool activities = true;  ///< CUSCOPE_ACTIVITIES: trace GPU work with CUPTI
  /// CUSCOPE_ATTRIBUTION: "launch" (the default: launch callbacks, the cheaper way on an H200,
  /// docs/cupti.md) or "external"; where CUPTI's subscriber is taken (another tool holds it),
  /// "launch" falls back to "external", with a note saying why.
  Attribution attribution = Attribution::launch;
  /// CUSCOPE_GRAPHS: break replayed CUDA graph kernels down by the scope each node was captured
  /// in (a CUPTI subscriber of its own; false leaves the subscriber to another tool)
  bool graphs = true;
  /// CUSCOPE_SYNC_RECORDS: CUPTI's synchronization records (the host's waits on streams, events and
  /// the device, per range: synchronizes, event and stream queries, stream waits) and the API records
  /// or callbacks of the calls that wait. Off by default (issue 24: on an H200 the PyTorch step took
  /// 1.169x with these and the memory records, 1.044x without; docs/cupti.md). While off, with
  /// launch attribution, the context, stream and event synchronizes are still timed by their own
  /// callbacks; the report's activity status says which ("on, synchronizes ... seen by callbacks,
  /// without synchronization records ...")
  bool sync_records = false;
  /// CUSCOPE_MEMORY_RECORDS: CUPTI's memory records (allocations, frees, live memory per range) and
  /// the API records or callbacks of the calls that allocate or free. Off by default, as above;
  /// while off, with launch attribution, the device and managed allocations and frees are still seen
  /// by their own callbacks
  bool memory_records = false;
  std::uint32_t wait_steps = 0;    ///< CUSCOPE_WAIT: steps recorded nothing at all
  /// CUSCOPE_WAIT_MS: each wait lasts at least this many milliseconds too (0-86400000; 0, the
  /// default: wait_steps alone): its last wait step is taken again at each step() until that long
  /// has passed since the wait began, so that a window that repeats records one step every so
  /// often whatever a step takes: wait 1, warmup 1, active 1, repeat 0, wait_ms 10000 records a
  /// step every 10 s (with detach_between, CUPTI detached in between). Needs wait_steps > 0
  /// (start() says so otherwise).
  std::uint32_t wait_ms = 0;
  std::uint32_t warmup_steps = 0;  ///< CUSCOPE_WARMUP: then steps run traced but left out
  std::uint32_t active_steps = 0;  ///< CUSCOPE_ACTIVE: then steps recorded; 0 = every step after
  /// CUSCOPE_REPEAT: how many times the wait, warm-up and active steps run, one cycle after the
  /// other; 0 = without end (1, the default: once). Needs active_steps > 0 (start() keeps 1 and says
  /// so otherwise). Outside the warm-up and active steps CUPTI's tracing is paused: a cycle of
  /// wait 9, active 1, repeat 0 records one step in ten and traces only that one.
  std::uint32_t repeat = 1;
  /// CUSCOPE_DETACH: after the last window (active_steps > 0, repeat >= 1), detach CUPTI
  /// (cuptiFinalize, at the exit of the program's next CUDA call) instead of only pausing it: a
  /// paused CUPTI still cost a launch 1.05x on an H200, a detached one nothing measurable
  /// (docs/cupti-windows.md). Not where hardware counters run (CUSCOPE_METRICS) or another tool
  /// holds CUPTI's subscriber. false: paused only, as between windows. Passed its H200 test (2026-11-28).
  bool detach = true;
  /// CUSCOPE_DETACH_BETWEEN: also detach CUPTI between the windows of a window that repeats
  /// (repeat != 1, wait_steps > 0): in each cycle's wait steps, once the window's records are in
  /// (1 s after the pause), and attach it again at the next warm-up (or active) step, so that the
  /// steps between windows cost what a program without CUPTI pays (docs/cupti-windows.md). Only a
  /// cycle longer than about a second gains; re-attaching costs the warm-up step about 65 us and
  /// CUPTI's first launches after it, which warm-up steps keep out of the window. Not with hardware
  /// counters, CUSCOPE_EVENT_TIMESTAMPS=cupti or another tool holding CUPTI's subscriber. Graph
  /// kernels of graphs made before a re-attach lose their capture-time breakdown (counted under
  /// "(unknown node)"). Also while recording is off: set_enabled(false) detaches CUPTI the same way,
  /// and set_enabled(true) attaches it again (without a window that repeats with wait steps, only
  /// that, with a note). Off by default; not yet run on a GPU.
  bool detach_between = false;
  /// CUSCOPE_STEP_MS: for a program that never calls step(), cuscope ends a step itself every this
  /// many milliseconds (1-86400000; 0, the default: never), on a thread of its own, so that the
  /// window above counts time: step_ms 1000, wait 59, active 1, repeat 0 records one second a
  /// minute. A scope open across a step's end keeps its place (docs/options.md). The program's
  /// first step() stops these steps, with a note: its own steps count from then on.
  std::uint32_t step_ms = 0;
  /// CUSCOPE_WHOLE_MS: record every step until the first step that ends this many milliseconds
  /// after the start (0-86400000; 0, the default: the window from the start), then the step window
  /// above: a program's start and first steps whole, then only the window's steps. Needs a window
  /// that leaves steps out (wait, warmup or active steps; start() says so otherwise).
  std::uint32_t whole_ms = 0;
  /// CUSCOPE_SAMPLE_MS: leave it on. The program whole for its first sample_ms (whole_ms, where
  /// given), then one step every sample_ms, with CUPTI detached in between: start() sets wait_steps
  /// 1, wait_ms sample_ms, warmup_steps 1, active_steps 1, repeat 0 and detach_between (a window given
  /// with it is replaced, with a note), and, for a program that never calls step(), step_ms a tenth
  /// of sample_ms (at most 100; where step_ms is 0). 0, the default: every step recorded. A report
  /// then counts the recorded steps (Report::recorded_steps of steps), not the whole run
  /// (docs/options.md, "Leave it on"). Not yet run on a GPU.
  std::uint32_t sample_ms = 0;
  bool print_at_exit = true;  ///< CUSCOPE_PRINT: print the table at exit
  /// CUSCOPE_OUTPUT: write the exit table here ("" = stderr). In this path, CUSCOPE_JSON's and
  /// CUSCOPE_TRACE's, start() replaces %r by the process's rank in its job (Report::rank; 0 when
  /// none), %p by its pid, %h by its host name and %% by %: one file per rank of a job.
  std::string output_path;
  std::string json_path;  ///< CUSCOPE_JSON: also write the exit report as JSON here
  /// CUSCOPE_REPORT_EVERY: while the session runs, rewrite the report's files every this many
  /// seconds (1-86400; 0, the default: at exit only): the JSON (json_path) and the table when
  /// output_path names a file, each replaced whole. For programs stopped rather than exited
  /// (servers, jobs killed at their time limit) and for reading the report while they run.
  std::uint32_t report_every_s = 0;
  TableOptions table;            ///< CUSCOPE_SORT, CUSCOPE_ROWS, CUSCOPE_TOP_KERNELS
  std::uint32_t max_depth = 64;  ///< CUSCOPE_MAX_DEPTH: deeper scopes time into their parent; 1-256
                                 ///< (start() uses 64 instead of a value outside, with a note)
  /// CUSCOPE_METRICS: hardware counters by kernel replay, as named sets ("sol", "memory",
  /// "compute", "occupancy") and/or CUPTI metric names, comma-separated; "" = none (replay is slow).
  std::string metrics;
  /// CUSCOPE_METRIC_RANGES: range paths ("step/mlp,step/attention") whose kernels are replayed for
  /// counters, with everything inside them; empty = every range. Other ranges run at full speed.
  std::vector<std::string> metric_ranges;
  std::uint32_t metric_steps = 0;  ///< CUSCOPE_METRIC_STEPS: counters in the first N recorded steps; 0 = all
  /// CUSCOPE_TRACE: record every scope instance, GPU activity record and step mark of the window to
  /// this file ("" = no trace); read it with `cuscope show|json|trace` (docs/trace.md).
  std::string trace_path;
  /// CUSCOPE_TRACE_LIMIT: the trace file's bound in MiB; what does not fit is dropped and counted.
  std::uint32_t trace_limit_mb = 256;
  /// CUSCOPE_NVTX_DOMAINS (zero-code mode, docs/zero-code.md): which NVTX domains become ranges. Domain names
  /// to keep only those ("default,Megatron"), or names each prefixed with '-' to leave those out
  /// ("-NCCL,-cuBLAS"); "default" is the domain of plain nvtxRangePush calls. Empty = every domain.
  std::vector<std::string> nvtx_domains;
};

/// One problem found while reading options: `variable` names the setting, `value` what was given.
struct OptionError {
  std::string variable;
  std::string value;
  std::string message;  ///< full sentence, e.g. "CUSCOPE_ROWS='ten' is not a whole number; keeping 50"
};

/// `base` with every CUSCOPE_* variable that is set applied on top. A bad value keeps the
/// value of `base`, and is reported once (to `errors` when given, and in the report's notes).
[[nodiscard]] Options options_from_env(Options base = {}, std::vector<OptionError>* errors = nullptr);

/// Same, from an explicit lookup (used by tests; `getenv` is the real one).
using EnvLookup = const char* (*)(const char* name);
[[nodiscard]] Options options_from(EnvLookup lookup, Options base, std::vector<OptionError>* errors);

/// options_from_env() with the program's own settings on top (Python's start(**options)): `given`
/// answers, for a CUSCOPE_* name, the text the program sets (nullptr: none), read instead of the
/// environment's, which is then neither read nor reported (no "keeping ..." note for a value the
/// program replaced). A bad given value goes to `errors` only, not to the report's notes: the
/// caller refuses it.
[[nodiscard]] Options options_from_env(Options base, std::vector<OptionError>* errors, EnvLookup given);

/// Starts the session with `options` (if it has not started yet; otherwise changes nothing, returns
/// false and says so once in the report's notes). Scopes, step(), set_enabled() and start() start it
/// implicitly with options_from_env(): call start(options) before any of them.
bool start(const Options& options);
bool start();

/// Marks the end of a step (an iteration of the program's main loop). Drives the
/// wait / warm-up / active window.
void step();

/// Turns recording on or off at run time; a scope costs about one branch while off, and CUPTI's
/// tracing is paused (GPU work launched while off is not recorded; docs/options.md, CUSCOPE_ENABLE).
void set_enabled(bool enabled);
/// Whether scopes record; before the session starts, whether the first scope will (CUSCOPE_ENABLE).
/// False after shutdown() and in a forked child.
[[nodiscard]] bool enabled();

/// Makes every finished piece of GPU work visible to the next snapshot (resolves CUDA events,
/// flushes CUPTI buffers). Never synchronizes the device; work still running stays pending.
void flush();

/// A consistent copy of everything aggregated so far; collection goes on.
[[nodiscard]] Report snapshot();

/// Flushes, prints the exit summary if configured, and stops collection; idempotent.
/// Runs by itself at exit, before CUDA tears down. Scopes after it record nothing.
void shutdown();

/// The options the session runs with (defaults before it starts).
[[nodiscard]] Options current_options();

}  // namespace v0
}  // namespace cuscope

// session/internal.hpp — the calls between the session's own files, one block per file: its
// lifecycle (session.cpp), the step window (window.cpp), threads (threads.cpp), the collector
// (collector.cpp), exit (exit.cpp), the report's files (report_files.cpp), fork (fork.cpp) and
// warnings (warnings.cpp).
//
// Never included outside src/session/: what other layers may call is in session.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cuscope/report.hpp>
#include <string>
#include <vector>

#include "session/session.hpp"

namespace cuscope::inline v0::detail {

// session.cpp

/// The session if session() has made one, else nullptr; never makes one (for the fork handlers).
Session* session_if_made() noexcept;

// window.cpp

enum class Phase { Wait, Warmup, Record, Done };
/// The phase of step `step` (0-based) of the window: wait, warm-up and active steps, that cycle
/// `o.repeat` times (0: without end), then done.
Phase phase_of(const Options& o, std::uint64_t step);
/// The session's first phase: recorded while Options::whole_ms keeps it whole, else the window's first.
Phase first_phase(const Options& o);
/// The phase the session is in now: recorded while Options::whole_ms keeps it whole
/// (Session::whole), else the window's at Session::window_step. The caller holds the lifecycle lock.
Phase phase_now(const Session& s);
/// The scopes' flags in phase `p` (g_flags): what they record, and how.
std::uint32_t flags_for(const Session& s, Phase p);
/// Pauses or resumes CUPTI's tracing for phase `p` and the program's switch (Session::recording_on):
/// paused outside the window and while recording is off; after a detach between windows, CUPTI
/// attached again where `p` traces. The caller holds the lifecycle lock. True when CUPTI was attached
/// again or stopped tracing (the scope flags then change).
bool pause_for(Session& s, Phase p);
/// Whether start() leaves CUPTI unattached where it could trace: the session begins in a wait step of
/// a window detached between windows (Options::detach_between), or with recording off
/// (CUSCOPE_ENABLE=0), and nothing needs CUPTI from the start (hardware counters, CUPTI's clock for
/// cuscope's events).
bool defers_attach(const Options& o);
/// start() where defers_attach() (the caller holds the lifecycle lock): CUPTI is not attached until
/// the first step or switch that traces, which attaches it as after a detach between windows, with
/// nothing to forget.
void defer_first_attach(Session& s);
/// The activity status while that first attach waits: what will attach CUPTI, or that nothing will
/// (the last window ended, or the session did).
std::string deferred_attach_status(const Session& s);
/// Whether the model counts work launched outside every scope in phase `p`: in the active window,
/// while recording is on (Session::recording_on). The caller holds the lifecycle lock.
bool records(const Session& s, Phase p);
/// The longest CUSCOPE_STEP_MS (a day).
inline constexpr std::uint32_t kMaxStepMs = 86'400'000;

// window_options.cpp

/// start()'s step window options: Options::sample_ms expanded into its window, and each value that
/// is out of range or cannot apply said once (warn_once) and replaced by what the session does.
void settle_window_options(Options& o);
/// The clock's steps Options::sample_ms gives a program that never calls step() (where step_ms is 0):
/// a tenth of sample_ms, at least 1 ms and at most 100 ms.
std::uint32_t sample_step_ms(std::uint32_t sample_ms);
/// A step CUSCOPE_STEP_MS ends (the stepper thread, collector.cpp): what step() does, unless the
/// program has called step() itself.
void clock_step(Session& s);

// threads.cpp

/// Forgets the calling thread's state, and that its exit would release one: a thread whose state
/// belongs to a session that is gone (reset_for_testing()) or to the parent process (fork()).
void detach_this_thread() noexcept;

// collector.cpp

/// Starts `s`'s collector thread (and, with CUSCOPE_REPORT_EVERY and a file to rewrite, its
/// reporter thread; with CUSCOPE_STEP_MS, its stepper thread), and waits (a bounded time) until
/// their start-up is done.
void start_collector(Session& s);
/// Stops and joins `s`'s collector, reporter and stepper threads, if they run.
void stop_collector(Session& s);

// exit.cpp

/// Makes shutdown() run at exit() and at quick_exit(), once per process.
void register_exit_handlers();

/// The largest N of CUSCOPE_EVENTS=sampled:N (Options::events_sample_every); the smallest is 2.
inline constexpr std::uint32_t kMaxEventSampleEvery = 1'000'000'000;

// report_files.cpp

enum class ReportMoment { exit, periodic };
/// The longest CUSCOPE_REPORT_EVERY, in seconds (a day).
inline constexpr std::uint32_t kMaxReportEvery = 86'400;
/// Writes `r` where `o` says: at exit the table (to CUSCOPE_OUTPUT, else stderr, when
/// print_at_exit) and the JSON (CUSCOPE_JSON), a file that cannot be written going to stderr with
/// a note; while running (CUSCOPE_REPORT_EVERY) the same files, but never the program's own
/// stdout or stderr (at exit those are written through their streams, never cut), and a failure
/// noted once and tried again the next time.
void write_report_files(const Options& o, const Report& r, ReportMoment when);
/// Below a `cuscope run`, a process that recorded nothing in `r` (no range, no span: an environment
/// check, a tool the program runs) writes no report, prints no table and leaves no trace.
bool leaves_nothing(const Session& s, const Report& r);
/// Says the session's path notes (the rank or pid its files got), once; true when it said any
/// (a report built before lacks them).
bool say_path_notes(Session& s);
/// CUSCOPE_REPORT_EVERY: the report as it is now, to its files (when the process leaves something).
void write_periodic_report(Session& s);
/// Makes the table's, the JSON's and the trace's paths absolute, from the working folder now (the
/// session's start), so that every write, periodic or at exit, goes to the same file however the
/// program changes its working folder, and a trace removed at exit (a process below a run that
/// recorded nothing) is the one opened at the start.
void anchor_report_paths(Options& o);
/// The program's stdout or stderr when `path` is its file (/dev/stderr, the terminal, the log a
/// shell sent it to), else nullptr.
std::FILE* standard_stream(const std::string& path);
/// Removes what a process killed while it wrote left beside the table's and the JSON's files: their
/// temporaries (FILE.cuscope-tmp.PID) of processes that are gone. A living process's is kept.
void sweep_stale_temporaries(const Options& o);
/// Whether `o` names a file the report is written to, other than the program's stdout or stderr
/// (what CUSCOPE_REPORT_EVERY rewrites).
bool has_report_file(const Options& o);
/// Replaces the file at `path` by `text`, whole, with its permissions: written beside it and
/// renamed over it (in place when it is not a regular file, or when no file can be made beside it
/// or renamed over it); false when it could not, the old file then whole unless written in place,
/// and `*why` (when given) says why (the system's words: "No such file or directory").
bool replace_file(const std::string& path, const std::string& text, std::string* why = nullptr);

// fork.cpp

/// Installs the fork handlers, once per process.
void register_fork_handlers() noexcept;
/// Whether this process is a child created by fork(): cuscope is off in it.
bool forked_child() noexcept;
/// What snapshot() returns in a forked child: nothing recorded, and why.
Report forked_child_report();

// warnings.cpp

/// Every message warn_once() has printed, in the report's order (the notes).
std::vector<std::string> notes_so_far();
/// Forgets every message printed (reset_for_testing()): each may be printed once more.
void forget_warnings() noexcept;
/// Held across fork() (a leaf lock: nothing else is taken while it is held, but the logger's).
void lock_notes() noexcept;
void unlock_notes() noexcept;

}  // namespace cuscope::inline v0::detail

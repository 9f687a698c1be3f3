// trace/session_trace.hpp — trace mode in a session's life: the writer opened at start, step
// marks, and the summary written at shutdown. The session calls these; scopes call
// trace::record() (writer.hpp) and the CUPTI decoder tees its records to trace::g_writer.
#pragma once

#include <cstdint>
#include <cuscope/report.hpp>
#include <string>

namespace cuscope::inline v0::detail {

class Session;

/// Opens the trace file the session's options name and starts its writer; "" when trace mode is
/// off or on, else one line saying why it could not start (the session goes on without it).
std::string start_trace(Session& s) noexcept;
/// Whether the session records a trace (scopes then set the kTrace flag).
bool trace_on() noexcept;
/// A step mark: step `step` (1-based; 0 = the session's start) ended at `now_ns`.
void trace_step(std::uint64_t now_ns, std::uint64_t step, bool recording) noexcept;
/// The program switched recording on or off (set_enabled()) at `now_ns`.
void trace_recording(std::uint64_t now_ns, bool on) noexcept;
/// Stops recording and writes what was recorded; afterwards trace_dropped() is final.
void finish_trace() noexcept;
/// Records that did not fit in the trace so far.
std::uint64_t trace_dropped() noexcept;
/// Whether a trace is open: started, and not yet closed by close_trace().
bool trace_open() noexcept;
/// Writes the session's summary (from its exit report `r`) and closes the file.
void close_trace(Session& s, const Report& r) noexcept;

}  // namespace cuscope::inline v0::detail

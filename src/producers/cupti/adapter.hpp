// producers/cupti/adapter.hpp — CUPTI activity tracing for a session.
//
// Enables kernel, copy, set, memory, synchronization and overhead records (the last two can be left
// out: CUSCOPE_SYNC_RECORDS, CUSCOPE_MEMORY_RECORDS), and ties each to the
// scope that launched its work in one of two ways (CUSCOPE_ATTRIBUTION, docs/cupti.md): launch
// notes (the default: the subscriber's launch callbacks, producers/launch_notes.hpp, drained before
// each buffer; no API records), or external correlation (scopes push their instance id, kind
// CUSTOM0, and runtime + driver API records are on for the calls that launch work, and only those:
// cuscope's own event calls stay untraced). Completed buffers (a bounded pool of zeroed buffers,
// buffer_pool.hpp) are decoded into the session's aggregator on CUPTI's thread, or on the thread
// that flushes. The
// subscriber (subscriber.hpp) also gets the graph node callbacks that tie replayed kernels to
// capture-time scopes; when another tool holds it, tracing goes on without that breakdown and with
// external correlation (one note says why).
// After the last step window the session detaches CUPTI (request_detach(), advance_detach();
// detach.hpp): from then on nothing here calls CUPTI.
// No lock that CUPTI's callbacks take (the aggregator's, the pool's, the notes') is held while
// calling into CUPTI: start and the pauses between step windows run under the session's lifecycle
// lock, which no callback takes. The buffer callback calls nothing in CUPTI under a lock.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <vector>

#include "producers/cupti/activity_kinds.hpp"  // activity_kinds()
#include "producers/cupti/detach.hpp"          // DetachFor
#include "producers/cupti/subscriber.hpp"
#include "producers/cupti/traced_calls.hpp"

namespace cuscope::inline v0::detail {

struct Sink;

/// Starts tracing into `sink` (the session's): "on", or one line saying why tracing is off
/// (nothing is left enabled then). The CUDA device must have been found.
std::string start_activity_tracing(Sink& sink) noexcept;
/// Delivers every buffer whose records are complete (a normal flush: work still running stays
/// with CUPTI and comes later, never as a record with zero timestamps), then ages waiting records.
void flush_activity() noexcept;
/// As flush_activity(), with CUPTI's incomplete buffers too (a forced flush): what a report of
/// everything so far needs, mid-session (the GPU bench).
void flush_activity_forced() noexcept;
/// CUPTI buffers given back with bytes written past their valid ones (buffer_pool.hpp): 0 unless
/// CUPTI writes where it says it did not (the GPU tests check it).
std::uint64_t activity_buffers_written_past_valid() noexcept;
/// The same, as the collector thread's periodic call.
void poll_activity() noexcept;
/// With launch notes: the threads' launch rings into `sink`'s model now, no CUPTI call (the
/// collector's call between polls: a ring holds 4,096 notes, which a fast launcher fills in about
/// 16 ms; a full one drains itself where these locks are free, launch_notes.hpp). Nothing when
/// `sink` is not attributed by launch notes.
void drain_launch_notes(Sink& sink) noexcept;
/// After a counter window has closed (its kernels finished: the range profiler's decode synchronized
/// the context): hands back every buffer, incomplete ones too. Kernels replayed for counters get
/// records CUPTI never completes (no timestamps), and a default flush never returns a buffer that
/// holds one: without this, every later record of that thread would wait for the session's end.
void deliver_after_counters() noexcept;
/// Delivers what is complete, then forces out the rest (counted as incomplete at exit), disables
/// every kind and detaches the session. CUPTI is not finalized (see adapter.cpp). After a detach
/// (detach.hpp) no CUPTI call: the detach delivered everything; a detach not yet made is given up.
void stop_activity_tracing() noexcept;
/// At a stop, before its last CUDA calls (shutdown()'s wait for CUDA events, a reset's): a detach
/// still pending or armed is given up (CUPTI then stopped as without one: a finalize from an exit
/// handler could race CUDA's own teardown, and an armed one would run at the exit of cuscope's own
/// next CUDA call), a finalize under way waited for (1 s at most). True when cuscope may call CUPTI.
/// stop_activity_tracing() does it too.
bool settle_detach_for_stop() noexcept;

/// Detaching CUPTI after the last step window (docs/cupti-windows.md, "Detaching after the last
/// step window"; the stages are detach.hpp's), or, as `why` says, between two windows (Options::
/// detach_between) or while recording is off. The step that ends the window (or the switch that turns
/// recording off), right after its pause (the lifecycle lock held):
/// the detach begins (pending), unless this session's CUPTI is not paused (a refused pause) or
/// another tool holds CUPTI's subscriber (one note). True when it began.
bool request_detach(DetachFor why = DetachFor::last_window) noexcept;
/// What reattach_activity_tracing() did.
struct Reattached {
  enum class How : std::uint8_t {
    resumed,     ///< no detach was made (none asked): the pause ended as between windows
    called_off,  ///< the detach was still pending (the window's records awaited): called off, the pause
                 ///< ended as between windows
    under_way,   ///< the detach still under way on the collector: nothing done yet
    attached,    ///< CUPTI attached again (`status`: start_activity_tracing()'s)
    refused,     ///< the attach refused: CUPTI does not trace again (`status` says why)
  };
  How how = How::resumed;
  bool detach_refused = false;  ///< attached or refused: the detach had been refused or given up (noted)
  std::string status;
};
/// The first step of a window after a detach between windows (Options::detach_between), the lifecycle
/// lock held: CUPTI traces again. A detach still pending is called off (CUPTI never left: the pause
/// ends as between windows); one under way on the collector is waited for (`wait`: 2 s at most;
/// still under way then, or without `wait`, How::under_way, and nothing done); a detached CUPTI, or one left
/// attached with every kind off by a refused detach, is attached again: cuscope's side of the last attach
/// forgotten, the model's books keyed by CUPTI's ids emptied (Aggregator::reattached(), the trace's Reattach
/// mark, under the aggregator's lock), then start_activity_tracing(). CUPTI's correlation ids start again at
/// 1 (docs/cupti-windows.md).
/// `forget` false: the session's first attach, deferred (defer_attach()): no book of CUPTI's to empty,
/// and no Reattach mark.
Reattached reattach_activity_tracing(Sink& sink, bool wait = true, bool forget = true) noexcept;
/// A session that begins in the first wait of a window detached between windows, or with recording
/// off (`until` says which): CUPTI not attached (the stage `detached`, so that every CUPTI call is
/// gated) until reattach_activity_tracing() attaches it.
void defer_attach(DetachFor until) noexcept;
/// Tests: `attach` stands for start_activity_tracing() in reattach_activity_tracing() (nullptr: it
/// again).
void set_attach_for_testing(std::string (*attach)(Sink& sink)) noexcept;
/// The collector's tick while a detach is under way. Pending: nothing (the collector polls as between
/// windows) until kDetachWaitNs after the pause, then a normal flush and what stop_activity_tracing()
/// does (a forced flush, what it hands back incomplete counted as at exit; every kind off; the
/// buffers' attribute back) and the finalize armed for the exit of the collector's next CUDA call
/// (subscriber.hpp; the collector makes one each tick while armed). No sooner: CUPTI's normal flush
/// holds back every buffer with an incomplete record, so one that brings nothing does not say the
/// window's work is in (a GPU behind the pause). Refused, or still armed kFinalizeWaitNs after the
/// arming (no call of the collector's reached CUPTI's callback): one note, the API callbacks off
/// (else every CUDA call of the program would reach them), CUPTI left attached and paused. True when
/// it delivered (the tick's poll is done).
bool advance_detach() noexcept;
/// How long the window's records have to come complete after the pause: a GPU further behind than
/// this has the rest counted as incomplete, as at exit.
inline constexpr std::uint64_t kDetachWaitNs = 1'000'000'000;
/// How long an armed detach waits for the collector's calls to finalize it before it is given up.
inline constexpr std::uint64_t kFinalizeWaitNs = 1'000'000'000;
/// Tests: that wait (0: kFinalizeWaitNs again), for cases that hold a detach armed, or give it up.
void set_finalize_wait_for_testing(std::uint64_t ns) noexcept;
/// Tests: kDetachWaitNs (0: it again), for cases that hold a detach pending, or need it sooner.
void set_detach_wait_for_testing(std::uint64_t ns) noexcept;

/// Pauses (`paused`) or resumes CUPTI's tracing of the program's work, between step windows
/// (session.cpp: the wait steps and those after the last window): every kind the session enabled
/// but CUDA_EVENT (cuscope's own records) is disabled, then the launch callbacks are; resuming
/// turns the callbacks on first, then the kinds, the records of launches last, so that every record
/// has its launch noted. What was recorded before the pause is delivered as it completes. The graph
/// callbacks stay on (graphs captured while paused keep their breakdown). A refusal is one note and
/// leaves CUPTI tracing, as before: its records outside the window counted as such. Nothing unless
/// the session traces, and nothing when already so; the caller serializes calls.
void pause_activity_tracing(bool paused) noexcept;
/// Tests: `hook` stands for CUPTI, called with each change (nullptr: CUPTI again).
void set_pause_hook_for_testing(void (*hook)(bool paused)) noexcept;
/// Tests: `sink` traced as start_activity_tracing() leaves a session that enabled `kinds` (no launch
/// callbacks, no CUPTI call), with `fake` standing for cuptiActivityEnable (`on`) and
/// cuptiActivityDisable in pause_activity_tracing() and stop_activity_tracing(), until the stop.
void trace_kinds_with_fake_cupti_for_testing(Sink& sink, const std::vector<CUpti_ActivityKind>& kinds,
                                             CUptiResult (*fake)(CUpti_ActivityKind kind, bool on)) noexcept;

/// What the buffer callback does with one completed buffer of `valid` bytes (CUPTI dropped
/// `dropped` records before it): under the aggregator's lock, the launch notes made so far, then
/// the buffer's records, into `sink`'s model; the buffer and the time that took count as cuscope's
/// own processing (Diagnostics::activity_buffers, activity_processing_ns). No CUPTI call. Tests
/// call it with buffers of their own.
void take_buffer(Sink& sink, std::uint8_t* buffer, std::size_t valid, std::size_t dropped) noexcept;

/// Tests: the libcupti API version cuscope believes is loaded (0: ask cuptiGetVersion).
void set_cupti_version_for_testing(std::uint32_t version) noexcept;

}  // namespace cuscope::inline v0::detail

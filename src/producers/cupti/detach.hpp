// producers/cupti/detach.hpp — where a session's detach of CUPTI after its last step window, or
// between two windows (Options::detach_between), stands (docs/cupti-windows.md, "Detaching after the
// last step window", "Detaching between step windows"), and the one cuptiFinalize, made
// at the exit site of a CUDA API callback, as NVIDIA's header asks and Kineto does
// (pytorch/kineto#686: cuptiFinalize outside a callback raced other threads inside CUPTI): the
// callback of the collector thread's own CUDA call, made for it while armed. Never on a program's
// thread (it would pay the finalize inside one of its calls, maybe inside its stream capture) or
// from an exit handler.
//
// The stages, in order: pending (the step that ended the window paused CUPTI; the collector
// delivers the window's records), detaching (the collector claimed it: the last records, every kind
// off), armed (the API callbacks on, nothing of cuscope's calls CUPTI any more), finalizing (a
// callback's thread inside cuptiFinalize), detached. Or kept: not detached (refused, or given up).
// From armed on cuscope makes no CUPTI call: any would attach CUPTI again. Between windows, the next
// window's first step calls a pending detach off (pending to none: the claim makes the two exclusive),
// waits for one under way, and attaches CUPTI again (the stage back to none).
//
// Never here: a lock or an allocation on the callback's path (finalize_at_api_exit() runs in the
// program's CUDA calls), a note to the user (the adapter says why, off the program's threads), the
// session.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>

namespace cuscope::inline v0::detail {

enum class DetachStage : std::uint8_t {
  none,        ///< no detach asked for (or the session stopped)
  pending,     ///< paused after the window; its records still being delivered
  detaching,   ///< the collector claimed it: the window's last records, every kind off, the arming
  armed,       ///< everything off; cuptiFinalize waits for the collector's next CUDA call's exit
  finalizing,  ///< a thread is inside cuptiFinalize
  detached,    ///< cuptiFinalize returned success: CUPTI is gone from the process
  refused,     ///< cuptiFinalize refused (finalize_result() says how); the adapter has not said so yet
  kept,        ///< paused and left attached: a refusal said, or no detach possible
};

/// The stage now (acquire).
DetachStage detach_stage() noexcept;
/// Sets the stage (release).
void set_detach_stage(DetachStage stage) noexcept;
/// From `from` to `to`, if the stage is `from`: true when it was.
bool move_detach_stage(DetachStage from, DetachStage to) noexcept;
/// What the detach asked for last is made for (request_detach()), and so what the status and the
/// notes say of it, and whether anything attaches CUPTI again after it.
enum class DetachFor : std::uint8_t {
  last_window,      ///< after the last step window: for good
  between_windows,  ///< between two step windows (Options::detach_between): the next window attaches it
  recording_off,    ///< while recording is off (set_enabled(false), Options::detach_between; or
                    ///< CUSCOPE_ENABLE=0 at the start): switching recording on attaches it
};
void set_detach_for(DetachFor why) noexcept;
DetachFor detach_for() noexcept;
/// A session's activity status (`status`, ending ", paused outside the step window" where the window
/// pauses) as the detach has it now: that suffix replaced by ", paused after the last step window;
/// CUPTI detaches once the window's records are in" (pending), "...; CUPTI detaches now" (detaching,
/// armed, finalizing) or ", detached after the last step window"; between windows "between step
/// windows" for "after the last step window", and the detached one ", detached between step windows
/// until the next one", or, once the session `ended` (its last report) in a wait step, ", detached
/// after the last step window" (no next one came); while recording is off "while recording is off"
/// for "after the last step window", once the records are in "the last records" for "the window's
/// records", and the detached one ", detached while recording is off"; as it is when kept or not
/// asked for.
std::string with_detach_stage(std::string status, bool ended = false);
/// The one note of buffers CUPTI kept across a detach (never handed back before its finalize, `bytes`
/// of them), which cuscope took back when CUPTI attached again; "" when it kept none.
std::string kept_buffers_note(std::size_t bytes);
/// Whether cuscope may call CUPTI: false while armed, finalizing or detached.
bool cupti_callable() noexcept;
/// What cuptiFinalize returned (CUPTI_SUCCESS before it ran).
CUptiResult finalize_result() noexcept;
/// Whether cuscope's cuptiFinalize succeeded since the last call (which clears it): CUPTI has
/// forgotten every buffer it held then (a deferred attach, with none made, says false).
bool took_finalize() noexcept;

/// For the subscriber's callback, first thing: true when a detach is armed or done, and the callback
/// must do nothing else (nothing of cuscope's may call CUPTI). While armed, at the exit site of a
/// runtime or driver API call made on the finalizing thread, cuptiFinalize, once.
bool finalize_at_api_exit(CUpti_CallbackDomain domain, const void* data) noexcept;
/// Makes the calling thread the finalizing one: the collector's, at its start. Its CUDA calls'
/// exits finalize an armed detach; no other thread's do.
void finalize_on_this_thread() noexcept;

/// A forked child: a detach being made or armed is never made there (kept), with no CUPTI call.
void forget_detach_in_forked_child() noexcept;

/// Tests: `observer` stands for CUPTI in every call the detach makes or gates (the flushes, the event
/// timestamps, cuptiEnableDomain, cuptiFinalize, cuptiUnsubscribe), each named as it happens; what
/// it returns is the call's result. nullptr: CUPTI again.
using CuptiObserver = CUptiResult (*)(const char* call);
void set_cupti_observer_for_testing(CuptiObserver observer) noexcept;
/// The observer, if a test set one.
CuptiObserver cupti_observer() noexcept;

/// `call` (the CUPTI call named `name`), unless cuscope may call CUPTI no more (cupti_callable(): any
/// call would attach it again, or race the finalize); a test's observer stands for CUPTI.
template <class Call>
CUptiResult call_cupti(const char* name, Call&& call) {
  if (!cupti_callable()) return CUPTI_ERROR_NOT_INITIALIZED;
  if (CuptiObserver observer = cupti_observer()) return observer(name);
  return call();
}
/// Tests: what the subscriber's callback does at the exit site of a driver API call (no CUPTI), on a
/// finalizing thread (the collector's own call) or, `as_collector` false, on the calling thread as it is.
void api_exit_for_testing(bool as_collector = true) noexcept;

}  // namespace cuscope::inline v0::detail

// producers/cupti/detach_sequence.cpp — the detach after the last step window or between two, the
// adapter's side (adapter.hpp: request_detach(), advance_detach(), settle_detach_for_stop(),
// reattach_activity_tracing(); docs/cupti-windows.md, "Detaching after the last step window",
// "Detaching between step windows"): the pending wait for the window's records, the last records and
// every kind off, the finalize armed for the collector's call (subscriber.hpp), a refused or given-up
// detach said once, and, between windows, the detach called off or CUPTI attached again, the model's
// books keyed by CUPTI's ids forgotten first. The stages are detach.hpp's.
// Never here: a CUPTI call once the finalize is armed (call_cupti() gates them), or tracing's start,
// pauses and stop (adapter.cpp).
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "model/range_activity.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/adapter_state.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/subscriber.hpp"
#include "producers/log.hpp"
#include "producers/scope_state.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

std::atomic<std::uint64_t> g_finalize_wait_ns{kFinalizeWaitNs};  // tests change it
std::atomic<std::uint64_t> g_detach_wait_ns{kDetachWaitNs};      // tests change it

// The one note of a detach not made: CUPTI stays attached and paused, and `why`. Between windows,
// none is tried again: the later ones pause CUPTI only.
void say_kept(std::string_view why) {
  switch (detach_for()) {
    case DetachFor::between_windows:
      warn_once(fmt::format(
          "CUPTI is not detached between step windows: {}; it is paused between them from now on", why));
      return;
    case DetachFor::recording_off:
      warn_once(fmt::format(
          "CUPTI is not detached while recording is off: {}; it is paused while recording is off from now on",
          why));
      return;
    case DetachFor::last_window:
      warn_once(fmt::format("CUPTI is paused, not detached, after the last step window: {}", why));
      return;
  }
}

std::atomic<std::string (*)(Sink&)> g_attach_for_testing{nullptr};

// A detach claimed by the collector and not yet settled: its records, its arming, its finalize, or a
// refused finalize the collector has not said yet (its next tick does).
bool under_way(DetachStage stage) {
  return stage == DetachStage::detaching || stage == DetachStage::armed || stage == DetachStage::finalizing ||
         stage == DetachStage::refused;
}

void say_refused_finalize() { say_kept(refusal("cuptiFinalize", finalize_result())); }

// The detach after the last step window, on the collector's thread once the window's records are in
// (advance_detach()): what stop_activity_tracing() does (a forced flush, what it hands back incomplete
// counted as at exit; every kind off; the buffers' attribute back), the subscriber kept, then the
// finalize armed for the exit of the collector's next CUDA call. Refused: one note, CUPTI left
// attached and paused.
void detach_now(State& s) {
  Sink* target = s.target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  // The external correlation hooks call CUPTI: off, so that no scope or own call calls it. With launch
  // notes they only mark cuscope's own calls on their thread (own_calls_begin/end, no CUPTI) and stay:
  // a thread between the two now (a snapshot's event queries) must end its mark, or its launches in a
  // later session would count as cuscope's own.
  if (!target->launch_attributed.load(std::memory_order_acquire)) {
    g_push_correlation.store(nullptr, std::memory_order_release);
    g_pop_correlation.store(nullptr, std::memory_order_release);
  }
  last_records_and_kinds_off(s, *target);  // of the kinds, only CUDA_EVENT was still on (paused)
  target->launch_attributed.store(false, std::memory_order_release);
  std::string why;
  {
    std::lock_guard lock(flush_mutex());  // no flush of another thread's runs into the finalize
    s.detach_armed_ns = now_ns();
    why = arm_finalize_at_api_exit();
  }
  if (why.empty()) return;
  set_detach_stage(DetachStage::kept);
  say_kept(why);
}

}  // namespace

void reclaim_kept_buffers(State& s) noexcept {
  // Every buffer should be back by the finalize: the detach's forced flushes hand back all of them,
  // incomplete ones too (cupti_activity.h). One that is not is lost to CUPTI: taken back, said once.
  static std::atomic<bool> said{false};
  if (!took_finalize()) return;  // no finalize since the last attach: CUPTI may still hand them back
  const std::size_t bytes = s.buffers.reclaim_out();
  if (bytes == 0 || said.exchange(true, std::memory_order_relaxed)) return;
  try {
    warn_once(kept_buffers_note(bytes));
  } catch (...) {  // out of memory for the note: the buffers are back all the same
  }
}

// Waits, a bounded time (1 s), for a thread inside cuptiFinalize. True when none is (any longer).
bool wait_out_finalize() {
  for (int i = 0; i < 1000 && detach_stage() == DetachStage::finalizing; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return detach_stage() != DetachStage::finalizing;
}

bool settle_detach_for_stop() noexcept {
  move_detach_stage(DetachStage::pending, DetachStage::kept);
  move_detach_stage(DetachStage::detaching, DetachStage::kept);  // the collector is stopped first
  move_detach_stage(DetachStage::armed, DetachStage::kept);
  wait_out_finalize();
  if (move_detach_stage(DetachStage::refused, DetachStage::kept)) say_refused_finalize();
  return cupti_callable();
}

void set_finalize_wait_for_testing(std::uint64_t ns) noexcept {
  g_finalize_wait_ns.store(ns != 0 ? ns : kFinalizeWaitNs, std::memory_order_relaxed);
}

void set_detach_wait_for_testing(std::uint64_t ns) noexcept {
  g_detach_wait_ns.store(ns != 0 ? ns : kDetachWaitNs, std::memory_order_relaxed);
}

bool request_detach(DetachFor why) noexcept {
  State& s = state();
  if (s.target.load(std::memory_order_acquire) == nullptr || s.pause_refused || !cupti_callable())
    return false;
  set_detach_for(why);
  if (subscriber_refused()) {
    say_kept("another tool holds CUPTI's subscriber, and detaching would detach it too");
    return false;
  }
  s.detach_paused_ns.store(now_ns(), std::memory_order_relaxed);
  set_detach_stage(DetachStage::pending);  // release: the collector sees the pause's switches
  return true;
}

bool advance_detach() noexcept {
  State& s = state();
  switch (detach_stage()) {
    case DetachStage::pending: {
      // Not sooner: a normal flush that brings nothing does not say the window's records are in, since
      // CUPTI holds back every buffer with an incomplete record (a GPU running behind the pause).
      if (model::elapsed_ns(s.detach_paused_ns.load(std::memory_order_relaxed), now_ns()) <
          g_detach_wait_ns.load(std::memory_order_relaxed))
        return false;  // the collector's polls, as between windows
      // Claimed: a window's first step that comes now waits for the detach instead of calling it off.
      if (!move_detach_stage(DetachStage::pending, DetachStage::detaching)) return false;
      deliver(0);  // what finished since the last poll, complete
      detach_now(s);
      return true;
    }
    case DetachStage::refused:  // set by the callback's thread; only this one moves it on
      stop_api_callbacks();     // CUPTI stays attached: every CUDA call would reach the callback
      say_refused_finalize();
      set_detach_stage(DetachStage::kept);
      return false;
    case DetachStage::armed:
      // The collector's calls each tick have not reached CUPTI's callback: given up, as refused. Claimed
      // back first (no finalize can begin then), kept only once the API callbacks are off: a window's
      // first step that attaches CUPTI again waits for that (its unsubscribe must not race this).
      if (model::elapsed_ns(s.detach_armed_ns, now_ns()) <
              g_finalize_wait_ns.load(std::memory_order_relaxed) ||
          !move_detach_stage(DetachStage::armed, DetachStage::detaching))
        return false;
      stop_api_callbacks();
      say_kept(
          "no CUDA call of cuscope's collector reached CUPTI's callback, where it finalizes, within 1 s");
      set_detach_stage(DetachStage::kept);
      return false;
    default:
      return false;
  }
}

void defer_attach(DetachFor until) noexcept {
  set_detach_for(until);
  set_detach_stage(DetachStage::detached);
}

Reattached reattach_activity_tracing(Sink& sink, bool wait, bool forget) noexcept {
  Reattached out;
  // Called off before the collector claimed it: CUPTI never left, and resumes as between windows.
  if (move_detach_stage(DetachStage::pending, DetachStage::none)) {
    pause_activity_tracing(false);
    out.how = Reattached::How::called_off;
    return out;
  }
  // Claimed: its last records, its arming and the finalize at the collector's next tick (10 ms) take
  // tens of milliseconds; an armed one given up takes 1 s (kFinalizeWaitNs).
  for (int i = 0; wait && i < 2000 && under_way(detach_stage()); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  const DetachStage stage = detach_stage();
  if (under_way(stage)) {
    out.how = Reattached::How::under_way;  // the collector settles it; a later step attaches CUPTI again
    return out;
  }
  if (stage == DetachStage::none) {  // none was made (another tool's subscriber): paused only
    pause_activity_tracing(false);
    return out;
  }
  // Kept (a refused or given-up detach: CUPTI attached, every kind off) or detached: cuscope's side of
  // the last attach forgotten (no CUPTI call while detached: unsubscribe() is gated), then, before
  // CUPTI can hand back any record of the new attach, the model's books keyed by its ids, with the
  // trace's mark at the same place, then everything start_activity_tracing() sets up.
  out.detach_refused = stage != DetachStage::detached;
  State& s = state();
  s.kinds.off();  // empty since the detach
  unsubscribe();
  s.target.store(nullptr, std::memory_order_release);
  // The flushes' lock held throughout: the collector's next poll, the first CUPTI call once the stage
  // is none again, must not race the attach's first calls inside libcupti (two first calls at once
  // did, flush_mutex()). The attach flushes nothing; the aggregator's lock comes after this one.
  std::lock_guard flushes(flush_mutex());
  reclaim_kept_buffers(s);  // before the attach: after the finalize, what CUPTI never handed back
  if (forget) {
    trace::Writer* writer = trace::g_writer.load(std::memory_order_acquire);
    {
      std::lock_guard lock(sink.aggregator_mutex);
      if (writer != nullptr) writer->reattached(now_ns());
      sink.aggregator.reattached();
    }
    // The mark in the file before any graph node the new attach makes: those go through the threads'
    // rings, which the writer writes before the marks it took with them (writer.hpp).
    if (writer != nullptr) writer->pass_now();
  }
  std::string (*attach)(Sink&) = g_attach_for_testing.load(std::memory_order_acquire);
  out.status = attach != nullptr ? attach(sink) : start_activity_tracing(sink);
  out.how = out.status.rfind("on", 0) == 0 ? Reattached::How::attached : Reattached::How::refused;
  return out;
}

void set_attach_for_testing(std::string (*attach)(Sink& sink)) noexcept {
  g_attach_for_testing.store(attach, std::memory_order_release);
}

}  // namespace cuscope::inline v0::detail

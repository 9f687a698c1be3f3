// producers/cupti/detach_sequence.cpp — the detach after the last step window, the adapter's side
// (adapter.hpp: request_detach(), advance_detach(), settle_detach_for_stop();
// docs/cupti-windows.md, "Detaching after the last step window"): the pending wait for the window's
// records, the last records and every kind off, the finalize armed for the collector's call
// (subscriber.hpp), and a refused or given-up detach said once. The stages are detach.hpp's.
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

namespace cuscope::inline v0::detail {
namespace {

std::atomic<std::uint64_t> g_finalize_wait_ns{kFinalizeWaitNs};  // tests change it

// The one note of a detach not made: CUPTI stays attached and paused, and `why`.
void say_kept(std::string_view why) {
  warn_once(fmt::format("CUPTI is paused, not detached, after the last step window: {}", why));
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

// Waits, a bounded time (1 s), for a thread inside cuptiFinalize. True when none is (any longer).
bool wait_out_finalize() {
  for (int i = 0; i < 1000 && detach_stage() == DetachStage::finalizing; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return detach_stage() != DetachStage::finalizing;
}

bool settle_detach_for_stop() noexcept {
  move_detach_stage(DetachStage::pending, DetachStage::kept);
  move_detach_stage(DetachStage::armed, DetachStage::kept);
  wait_out_finalize();
  if (move_detach_stage(DetachStage::refused, DetachStage::kept)) say_refused_finalize();
  return cupti_callable();
}

void set_finalize_wait_for_testing(std::uint64_t ns) noexcept {
  g_finalize_wait_ns.store(ns != 0 ? ns : kFinalizeWaitNs, std::memory_order_relaxed);
}

bool request_detach() noexcept {
  State& s = state();
  if (s.target.load(std::memory_order_acquire) == nullptr || s.pause_refused) return false;
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
      if (model::elapsed_ns(s.detach_paused_ns.load(std::memory_order_relaxed), now_ns()) < kDetachWaitNs)
        return false;  // the collector's polls, as between windows
      deliver(0);      // what finished since the last poll, complete
      detach_now(s);
      return true;
    }
    case DetachStage::refused:  // set by the callback's thread; only this one moves it on
      stop_api_callbacks();     // CUPTI stays attached: every CUDA call would reach the callback
      say_refused_finalize();
      set_detach_stage(DetachStage::kept);
      return false;
    case DetachStage::armed:
      // The collector's calls each tick have not reached CUPTI's callback: given up, as refused.
      if (model::elapsed_ns(s.detach_armed_ns, now_ns()) <
              g_finalize_wait_ns.load(std::memory_order_relaxed) ||
          !move_detach_stage(DetachStage::armed, DetachStage::kept))
        return false;
      stop_api_callbacks();
      say_kept(
          "no CUDA call of cuscope's collector reached CUPTI's callback, where it finalizes, within 1 s");
      return false;
    default:
      return false;
  }
}

}  // namespace cuscope::inline v0::detail

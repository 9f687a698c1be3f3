// producers/cupti/detach.cpp — see detach.hpp.
#include "producers/cupti/detach.hpp"

#include <fmt/format.h>

#include <atomic>
#include <string_view>

namespace cuscope::inline v0::detail {
namespace {

// Constant-initialized: the callback may run before and after any static constructor.
std::atomic<DetachStage> g_stage{DetachStage::none};
std::atomic<CUptiResult> g_finalize_result{CUPTI_SUCCESS};
std::atomic<CuptiObserver> g_observer{nullptr};
std::atomic<DetachFor> g_for{DetachFor::last_window};
constinit thread_local bool t_finalizing_thread = false;  // the collector's (finalize_on_this_thread)

bool off_limits(DetachStage s) {
  return s == DetachStage::armed || s == DetachStage::finalizing || s == DetachStage::detached;
}

// The one cuptiFinalize: the thread that moves armed to finalizing makes it.
// Set by a finalize that succeeded; taken (took_finalize()) by the next attach.
std::atomic<bool> g_finalized{false};

void finalize_once() noexcept {
  if (!move_detach_stage(DetachStage::armed, DetachStage::finalizing)) return;
  const CuptiObserver observer = g_observer.load(std::memory_order_acquire);
  const CUptiResult r = observer != nullptr ? observer("cuptiFinalize") : cuptiFinalize();
  g_finalize_result.store(r, std::memory_order_relaxed);
  if (r == CUPTI_SUCCESS) g_finalized.store(true, std::memory_order_release);
  // From finalizing only: a stop that gave up waiting for it, and a next session that set none since,
  // must not be marked detached (every flush of that session would then be gated).
  move_detach_stage(DetachStage::finalizing,
                    r == CUPTI_SUCCESS ? DetachStage::detached : DetachStage::refused);
}

}  // namespace

DetachStage detach_stage() noexcept { return g_stage.load(std::memory_order_acquire); }

void set_detach_stage(DetachStage stage) noexcept { g_stage.store(stage, std::memory_order_release); }

bool move_detach_stage(DetachStage from, DetachStage to) noexcept {
  return g_stage.compare_exchange_strong(from, to, std::memory_order_acq_rel);
}

void set_detach_for(DetachFor why) noexcept { g_for.store(why, std::memory_order_release); }

DetachFor detach_for() noexcept { return g_for.load(std::memory_order_acquire); }

std::string with_detach_stage(std::string status, bool ended) {
  constexpr std::string_view kPaused = ", paused outside the step window";
  const DetachFor why = detach_for();
  const std::string_view where = why == DetachFor::between_windows ? "between step windows"
                                 : why == DetachFor::recording_off ? "while recording is off"
                                                                   : "after the last step window";
  const std::string_view records =
      why == DetachFor::recording_off ? "the last records" : "the window's records";
  std::string stage;
  switch (detach_stage()) {
    case DetachStage::pending:
      stage = fmt::format(", paused {}; CUPTI detaches once {} are in", where, records);
      break;
    case DetachStage::detaching:
    case DetachStage::armed:
    case DetachStage::finalizing:
      stage = fmt::format(", paused {}; CUPTI detaches now", where);
      break;
    case DetachStage::detached:
      stage = why == DetachFor::recording_off ? std::string(", detached while recording is off")
              : why == DetachFor::between_windows && !ended
                  ? std::string(", detached between step windows until the next one")
                  : std::string(", detached after the last step window");
      break;
    default:
      return status;  // none, refused or kept: paused, as it says
  }
  if (status.ends_with(kPaused)) status.resize(status.size() - kPaused.size());
  return status + stage;
}

std::string kept_buffers_note(std::size_t bytes) {
  if (bytes == 0) return {};
  return fmt::format(
      "CUPTI kept {:.2f} MiB of cuscope's activity buffers across its detach (never handed back before "
      "its finalize); cuscope took them back when CUPTI attached again",
      static_cast<double>(bytes) / (1024.0 * 1024.0));
}

bool cupti_callable() noexcept { return !off_limits(detach_stage()); }

CUptiResult finalize_result() noexcept { return g_finalize_result.load(std::memory_order_relaxed); }

bool took_finalize() noexcept { return g_finalized.exchange(false, std::memory_order_acq_rel); }

bool finalize_at_api_exit(CUpti_CallbackDomain domain, const void* data) noexcept {
  // The hot path's cost while no detach is armed: this load.
  const DetachStage stage = g_stage.load(std::memory_order_relaxed);
  if (!off_limits(stage)) return false;
  if (stage == DetachStage::armed && t_finalizing_thread && data != nullptr &&
      (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
      static_cast<const CUpti_CallbackData*>(data)->callbackSite == CUPTI_API_EXIT)
    finalize_once();
  return true;
}

void finalize_on_this_thread() noexcept { t_finalizing_thread = true; }

void forget_detach_in_forked_child() noexcept {
  move_detach_stage(DetachStage::detaching, DetachStage::kept);  // its collector is not in the child
  move_detach_stage(DetachStage::armed, DetachStage::kept);
}

void set_cupti_observer_for_testing(CuptiObserver observer) noexcept {
  g_observer.store(observer, std::memory_order_release);
}

CuptiObserver cupti_observer() noexcept { return g_observer.load(std::memory_order_acquire); }

void api_exit_for_testing(bool as_collector) noexcept {
  CUpti_CallbackData exit{};
  exit.callbackSite = CUPTI_API_EXIT;
  const bool was = t_finalizing_thread;
  if (as_collector) t_finalizing_thread = true;
  finalize_at_api_exit(CUPTI_CB_DOMAIN_DRIVER_API, &exit);
  t_finalizing_thread = was;
}

}  // namespace cuscope::inline v0::detail

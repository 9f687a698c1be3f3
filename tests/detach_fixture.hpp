// Fake CUPTI for the detach tests (test_cupti_detach.cpp, test_cupti_detach_lifetimes.cpp): every
// CUPTI call logged in order, buffers handed back from inside flushes as CUPTI would, a session
// traced by it, and the sequences a detach must make. Never here: a GPU, or CUPTI itself.
#pragma once

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cupti_buffer.hpp"
#include "cuscope/cuscope.hpp"
#include "kind_names.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace cuscope_test::detach {

using cuscope::detail::DetachStage;

// Every CUPTI call the fakes saw, in order ("KERNEL off", "cuptiActivityFlushAll(0)", ...), from
// the test's thread and the collector's.
inline std::mutex g_log_mutex;
inline std::vector<std::string> g_log;
inline CUptiResult g_finalize_result = CUPTI_SUCCESS;
// Buffers CUPTI would hand back: at the first normal flush while the detach is pending, and at the
// first forced flush.
inline cuscope_test::CuptiBuffer* g_at_pending_flush = nullptr;
inline cuscope_test::CuptiBuffer* g_at_forced_flush = nullptr;
// A buffer CUPTI holds back while a record in it is incomplete (a kernel the GPU has not run yet): a
// normal flush hands its complete form back once the clock reaches `until_ns`; a forced flush before
// that hands back its incomplete form (the same kernel with zero timestamps). Set while the collector
// polls: atomic.
struct HeldBuffer {
  cuscope_test::CuptiBuffer* complete = nullptr;
  cuscope_test::CuptiBuffer* incomplete = nullptr;
  std::uint64_t until_ns = 0;
};
inline std::atomic<HeldBuffer*> g_held{nullptr};

inline void log_call(const std::string& call) {
  std::lock_guard lock(g_log_mutex);
  g_log.push_back(call);
}

inline std::vector<std::string> logged() {
  std::lock_guard lock(g_log_mutex);
  return g_log;
}

// As CUPTI calls buffer_completed from inside a flush.
inline void hand_back(cuscope_test::CuptiBuffer*& buffer) {
  cuscope_test::CuptiBuffer* b = buffer;
  buffer = nullptr;
  if (b != nullptr) cuscope::detail::take_buffer(cuscope::detail::session(), b->data(), b->size(), 0);
}

// Set by a case: what runs inside the fake cuptiFinalize (another thread's doing meanwhile).
inline void (*g_inside_finalize)() = nullptr;

inline CUptiResult observe(const char* call) {
  log_call(call);
  const std::string c = call;
  if (c == "cuptiFinalize") {
    if (g_inside_finalize != nullptr) g_inside_finalize();
    return g_finalize_result;
  }
  if (c == "cuptiActivityFlushAll(0)" && (cuscope::detail::detach_stage() == DetachStage::pending ||
                                          cuscope::detail::detach_stage() == DetachStage::detaching))
    hand_back(g_at_pending_flush);
  if (c == "cuptiActivityFlushAll(FORCED)") hand_back(g_at_forced_flush);
  if (HeldBuffer* held = g_held.load()) {
    if (c == "cuptiActivityFlushAll(FORCED)") {
      g_held = nullptr;
      hand_back(held->incomplete);
    } else if (c == "cuptiActivityFlushAll(0)" && cuscope::detail::now_ns() >= held->until_ns) {
      g_held = nullptr;
      hand_back(held->complete);
    }
  }
  return CUPTI_SUCCESS;
}

inline CUptiResult switch_kind(CUpti_ActivityKind kind, bool on) {
  const char* name = cuscope_test::kind_name(kind);
  log_call(std::string(name) + (on ? " on" : " off"));
  return CUPTI_SUCCESS;
}

inline const std::vector<CUpti_ActivityKind> kFakeKinds = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_CUDA_EVENT};

// Stands for start_activity_tracing() at a re-attach between step windows: logged as "attach", the
// session traced by the fakes again, as it began.
inline std::string fake_attach(cuscope::detail::Sink& sink) {
  log_call("attach");
  cuscope::detail::trace_kinds_with_fake_cupti_for_testing(sink, kFakeKinds, &switch_kind);
  return "on (fake CUPTI)";
}

// A session traced by fake CUPTI (kernels, copies and cuscope's own CUDA_EVENT records on), every
// CUPTI call logged.
struct FakeCuptiSession {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  explicit FakeCuptiSession(const cuscope::Options& o) : session(o) {
    {
      std::lock_guard lock(g_log_mutex);
      g_log.clear();
    }
    g_finalize_result = CUPTI_SUCCESS;
    // The collector's calls reach no CUPTI callback here: an armed detach stays armed until the case
    // plays the callback (api_exit_for_testing), however slow the machine, unless a case says less.
    cuscope::detail::set_finalize_wait_for_testing(3'600'000'000'000);
    cuscope::detail::set_cupti_observer_for_testing(&observe);
    cuscope::detail::set_attach_for_testing(&fake_attach);
    cuscope::detail::trace_kinds_with_fake_cupti_for_testing(cuscope::detail::session(), kFakeKinds,
                                                             &switch_kind);
  }
  ~FakeCuptiSession() {
    cuscope::detail::reset_for_testing();  // stops while the observer still stands for CUPTI
    cuscope::detail::set_cupti_observer_for_testing(nullptr);
    cuscope::detail::set_finalize_wait_for_testing(0);
    cuscope::detail::set_detach_wait_for_testing(0);
    cuscope::detail::set_attach_for_testing(nullptr);
    cuscope::detail::set_detach_for(cuscope::detail::DetachFor::last_window);
    g_at_pending_flush = g_at_forced_flush = nullptr;
    g_held = nullptr;
    g_inside_finalize = nullptr;
  }
  FakeCuptiSession(const FakeCuptiSession&) = delete;
  FakeCuptiSession& operator=(const FakeCuptiSession&) = delete;
};

// Waits (at most 5 s) for the collector to bring the detach to `stage`.
inline bool reaches(DetachStage stage) {
  for (int i = 0; i < 5000 && cuscope::detail::detach_stage() != stage; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return cuscope::detail::detach_stage() == stage;
}

// What followed `mark` in `log` (the whole log if it is not there), runs of normal flushes as one.
inline std::vector<std::string> after(const std::vector<std::string>& log, const std::string& mark) {
  auto from = std::find(log.begin(), log.end(), mark);
  from = from == log.end() ? log.begin() : from + 1;
  std::vector<std::string> out;
  for (auto it = from; it != log.end(); ++it) {
    if (*it == "cuptiActivityFlushAll(0)" && !out.empty() && out.back() == *it) continue;
    out.push_back(*it);
  }
  return out;
}

inline std::vector<std::string> without_normal_flushes(std::vector<std::string> log) {
  std::erase(log, "cuptiActivityFlushAll(0)");
  return log;
}

// A window of one active step, once: the step that ends it is the last window's end.
inline cuscope::Options one_window() {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.active_steps = 1;
  return o;
}

// `a` then `b`: the sequences above put together.
inline std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// A detach made: pending, delivered, armed, then the collector's CUDA call's exit.
inline void detach_made() {
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::detached);
}

// Wait 1, warm-up 1, active 1, without end, detached between windows: step 0 waits, 1 warms up, 2 is
// recorded, 3 waits (the detach), 4 warms up (the re-attach), 5 is recorded, 6 waits, ...
inline cuscope::Options between_windows() {
  cuscope::Options o = one_window();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.repeat = 0;
  o.detach_between = true;
  return o;
}

inline void steps(int n) {
  for (int i = 0; i < n; ++i) cuscope::step();
}

// The window's first detach between windows, made: step 2 recorded ends, step 3 waits, CUPTI
// detached (its records in after 50 ms).
inline void first_detach() {
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  steps(3);
  detach_made();
}

inline const std::vector<std::string> kPause = {"KERNEL off", "MEMCPY off"};  // CUDA_EVENT stays on
inline const std::vector<std::string> kDetach = {
    "cuptiActivityFlushAll(0)",       // the window's records, the collector's polls for 1 s
    "cuptiActivityFlushAll(FORCED)",  // what is left, incomplete counted
    "CUDA_EVENT off",
    "cuptiActivityFlushAll(FORCED)",
    "cuptiEnableDomain(1, RUNTIME_API, DRIVER_API)",  // the finalize armed
    "cuptiFinalize"};

}  // namespace cuscope_test::detach

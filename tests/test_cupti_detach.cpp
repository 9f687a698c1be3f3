// Detaching CUPTI after the last step window (CUSCOPE_DETACH, docs/cupti.md): the order of the
// sequence (pause, normal flushes until the window's records are in, a forced flush, every kind off,
// the API callbacks armed, cuptiFinalize at the next API exit), no CUPTI call after it, exact counts
// across it, a refused finalize, and the windows that never detach. Fakes stand for CUPTI (the
// observer of detach.hpp and the fake kinds of adapter.hpp); the collector thread runs for real.
// Never here: a GPU, or CUPTI itself (tests/gpu/test_gpu_detach.cu checks the real detach).
#include <sys/wait.h>
#include <unistd.h>

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
#include "noted_session.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/subscriber.hpp"
#include "producers/launch_notes.hpp"
#include "producers/scope_state.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

using cuscope::detail::DetachStage;

// Every CUPTI call the fakes saw, in order ("KERNEL off", "cuptiActivityFlushAll(0)", ...), from
// the test's thread and the collector's.
std::mutex g_log_mutex;
std::vector<std::string> g_log;
CUptiResult g_finalize_result = CUPTI_SUCCESS;
// Buffers CUPTI would hand back: at the first normal flush while the detach is pending, and at the
// first forced flush.
cuscope_test::CuptiBuffer* g_at_pending_flush = nullptr;
cuscope_test::CuptiBuffer* g_at_forced_flush = nullptr;
// A buffer CUPTI holds back while a record in it is incomplete (a kernel the GPU has not run yet): a
// normal flush hands its complete form back once the clock reaches `until_ns`; a forced flush before
// that hands back its incomplete form (the same kernel with zero timestamps). Set while the collector
// polls: atomic.
struct HeldBuffer {
  cuscope_test::CuptiBuffer* complete = nullptr;
  cuscope_test::CuptiBuffer* incomplete = nullptr;
  std::uint64_t until_ns = 0;
};
std::atomic<HeldBuffer*> g_held{nullptr};

void log_call(const std::string& call) {
  std::lock_guard lock(g_log_mutex);
  g_log.push_back(call);
}

std::vector<std::string> logged() {
  std::lock_guard lock(g_log_mutex);
  return g_log;
}

// As CUPTI calls buffer_completed from inside a flush.
void hand_back(cuscope_test::CuptiBuffer*& buffer) {
  cuscope_test::CuptiBuffer* b = buffer;
  buffer = nullptr;
  if (b != nullptr) cuscope::detail::take_buffer(cuscope::detail::session(), b->data(), b->size(), 0);
}

CUptiResult observe(const char* call) {
  log_call(call);
  const std::string c = call;
  if (c == "cuptiFinalize") return g_finalize_result;
  if (c == "cuptiActivityFlushAll(0)" && cuscope::detail::detach_stage() == DetachStage::pending)
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

CUptiResult switch_kind(CUpti_ActivityKind kind, bool on) {
  const char* name = kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ? "KERNEL"
                     : kind == CUPTI_ACTIVITY_KIND_MEMCPY          ? "MEMCPY"
                     : kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT      ? "CUDA_EVENT"
                                                                   : "other";
  log_call(std::string(name) + (on ? " on" : " off"));
  return CUPTI_SUCCESS;
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
    cuscope::detail::set_cupti_observer_for_testing(&observe);
    cuscope::detail::trace_kinds_with_fake_cupti_for_testing(
        cuscope::detail::session(),
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_CUDA_EVENT},
        &switch_kind);
  }
  ~FakeCuptiSession() {
    cuscope::detail::reset_for_testing();  // stops while the observer still stands for CUPTI
    cuscope::detail::set_cupti_observer_for_testing(nullptr);
    g_at_pending_flush = g_at_forced_flush = nullptr;
    g_held = nullptr;
  }
  FakeCuptiSession(const FakeCuptiSession&) = delete;
  FakeCuptiSession& operator=(const FakeCuptiSession&) = delete;
};

// Waits (at most 5 s) for the collector to bring the detach to `stage`.
bool reaches(DetachStage stage) {
  for (int i = 0; i < 5000 && cuscope::detail::detach_stage() != stage; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return cuscope::detail::detach_stage() == stage;
}

// What followed `mark` in `log` (the whole log if it is not there), runs of normal flushes as one.
std::vector<std::string> after(const std::vector<std::string>& log, const std::string& mark) {
  auto from = std::find(log.begin(), log.end(), mark);
  from = from == log.end() ? log.begin() : from + 1;
  std::vector<std::string> out;
  for (auto it = from; it != log.end(); ++it) {
    if (*it == "cuptiActivityFlushAll(0)" && !out.empty() && out.back() == *it) continue;
    out.push_back(*it);
  }
  return out;
}

std::vector<std::string> without_normal_flushes(std::vector<std::string> log) {
  std::erase(log, "cuptiActivityFlushAll(0)");
  return log;
}

// A window of one active step, once: the step that ends it is the last window's end.
cuscope::Options one_window() {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.active_steps = 1;
  return o;
}

const std::vector<std::string> kPause = {"KERNEL off", "MEMCPY off"};  // CUDA_EVENT stays on
const std::vector<std::string> kDetach = {
    "cuptiActivityFlushAll(0)",       // the window's records, the collector's polls for 1 s
    "cuptiActivityFlushAll(FORCED)",  // what is left, incomplete counted
    "CUDA_EVENT off",
    "cuptiActivityFlushAll(FORCED)",
    "cuptiEnableDomain(1, RUNTIME_API, DRIVER_API)",  // the finalize armed
    "cuptiFinalize"};

}  // namespace

TEST_CASE("the last window's end pauses CUPTI, delivers its records, then detaches in order",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();  // the window's one step ends: paused, the detach pending
  const cuscope::Report pending = cuscope::snapshot();
  // Pending for 1 s (kDetachWaitNs), unless this thread was held up that long.
  if (cuscope::detail::detach_stage() == DetachStage::pending)
    CHECK(pending.activity_status.ends_with(
        ", paused after the last step window; CUPTI detaches once the window's records are in"));
  REQUIRE(reaches(DetachStage::armed));
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused after the last step window; CUPTI detaches at the program's next CUDA call"));
  cuscope::detail::api_exit_for_testing();  // the program's next CUDA call returns
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  const std::vector<std::string> log = logged();
  CHECK(without_normal_flushes({log.begin(), std::find(log.begin(), log.end(), "MEMCPY off") + 1}) == kPause);
  CHECK(after(log, "MEMCPY off") == kDetach);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.activity_status.ends_with(", detached after the last step window"));
  CHECK(r.notes.empty());
}

TEST_CASE("after the detach cuscope calls CUPTI no more: polls, flush, snapshot and shutdown",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  const std::size_t armed = logged().size();  // the API callbacks' arming was the last call
  cuscope::detail::api_exit_for_testing();
  cuscope::detail::api_exit_for_testing();                      // a second API exit: no second finalize
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the collector's polls, 100 ms apart
  cuscope::flush();
  cuscope::detail::flush_activity_forced();
  cuscope::step();  // after the last window: no pause, no resume
  (void)cuscope::snapshot();
  cuscope::shutdown();  // its flushes, the kinds and the subscriber: all gone with CUPTI
  const std::vector<std::string> log = logged();
  CHECK(std::vector<std::string>(log.begin() + static_cast<std::ptrdiff_t>(armed), log.end()) ==
        std::vector<std::string>{"cuptiFinalize"});
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached after the last step window"));
}

TEST_CASE("records that arrive between the pause and the detach are kept, incomplete ones counted",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  const std::uint64_t t = cuscope::detail::now_ns();
  cuscope_test::CuptiBuffer late;  // the window's kernel, completed after the pause
  late.api(1, t).kernel(1, t + 10, t + 20, "finished_after_pause");
  cuscope_test::CuptiBuffer running;  // one still running at the detach: CUPTI never completes it
  running.api(2, t + 30).kernel(2, 0, 0, "still_running");
  g_at_pending_flush = &late;
  g_at_forced_flush = &running;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(r.diagnostics.incomplete_at_exit == 1);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.outside_window_records == 0);
  cuscope::shutdown();
  const cuscope::Report final_report = cuscope::snapshot();  // the same after the exit's stop
  CHECK(final_report.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(final_report.diagnostics.incomplete_at_exit == 1);
}

// CUPTI's normal flush hands back no buffer with an incomplete record in it (cupti_activity.h,
// cuptiActivityFlushAll): while the GPU still runs the window's last work, normal flushes bring
// nothing, however quiet that looks. A GPU 0.3 s behind its host (the H200 trial's worker,
// docs/cupti.md) must still have the window's records come complete before the forced flush.
TEST_CASE(
    "a window whose GPU runs 300 ms behind the pause has its records delivered complete before the detach",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  const std::uint64_t t = cuscope::detail::now_ns();
  cuscope_test::CuptiBuffer complete;
  complete.api(1, t).kernel(1, t + 10, t + 20, "behind_the_pause");
  cuscope_test::CuptiBuffer incomplete;
  incomplete.api(1, t).kernel(1, 0, 0, "behind_the_pause");
  HeldBuffer held{&complete, &incomplete, t + 300'000'000};
  g_held = &held;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.incomplete_at_exit == 0);
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
}

TEST_CASE("a refused finalize warns once and leaves CUPTI paused, its API callbacks off",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  g_finalize_result = CUPTI_ERROR_NOT_SUPPORTED;
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(reaches(DetachStage::kept));      // the collector said so
  cuscope::detail::api_exit_for_testing();  // no second try
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 1);
  // After it, the API callbacks off (then the collector's flushes again: CUPTI is still attached).
  CHECK(without_normal_flushes(after(log, "cuptiFinalize")) ==
        std::vector<std::string>{"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)"});
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.notes.size() == 1);
  CHECK(r.notes[0].starts_with("CUPTI is paused, not detached, after the last step window: "));
  CHECK(r.notes[0].find("cuptiFinalize") != std::string::npos);
  CHECK_FALSE(r.activity_status.ends_with(" after the last step window"));  // not detached
}

TEST_CASE("CUSCOPE_DETACH=0 keeps pausing after the last window, no detach",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.detach = false;
  FakeCuptiSession traced(o);
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // a detach asked for would be pending
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(log == kPause);
  CHECK_FALSE(cuscope::snapshot().activity_status.ends_with(" after the last step window"));
}

TEST_CASE("a window repeated without end never detaches, it pauses between windows",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.wait_steps = 1;
  o.repeat = 0;  // wait 0, active 1, wait 2, active 3, ...
  FakeCuptiSession traced(o);
  for (int i = 0; i < 6; ++i) cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 0);
  CHECK(std::count(log.begin(), log.end(), "KERNEL off") == 3);  // steps 1, 3, 5 ended windows
}

TEST_CASE("a repeated window detaches after its last cycle only", "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.wait_steps = 1;
  o.repeat = 2;  // wait 0, active 1, wait 2, active 3, then done
  FakeCuptiSession traced(o);
  cuscope::step();
  cuscope::step();  // the first window's end: paused only
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  cuscope::step();  // the last window's end
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
}

TEST_CASE("a window that never ends never detaches", "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.active_steps = 0;  // every step recorded
  o.warmup_steps = 1;
  FakeCuptiSession traced(o);
  for (int i = 0; i < 5; ++i) cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()).empty());
}

TEST_CASE("no detach where hardware counters run: the range profiler is CUPTI's too",
          "[session][window][tracing][detach]") {
  cuscope::Options o = one_window();
  o.metrics = "sol";  // without a GPU the counters do not start; the detach is left out all the same
  FakeCuptiSession traced(o);
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == kPause);
}

TEST_CASE("a shutdown before the API exit gives the armed detach up: CUPTI stopped as without one",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::shutdown();                      // no CUDA call came: no finalize at exit
  cuscope::detail::api_exit_for_testing();  // a CUDA call after it
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 0);
  CHECK(log.back() == "cuptiActivityFlushAll(FORCED)");  // the stop's, as without a detach
  CHECK_FALSE(cuscope::snapshot().activity_status.ends_with(" after the last step window"));
}

TEST_CASE("no detach where another tool holds CUPTI's subscriber: one note, CUPTI paused",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  // As start_activity_tracing() leaves a session whose cuptiSubscribe another tool refused.
  cuscope::detail::set_subscribe_result_for_testing(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  (void)cuscope::detail::subscribe(cuscope::detail::session(), false);
  cuscope::detail::set_subscribe_result_for_testing(0);
  REQUIRE(cuscope::detail::subscriber_refused());
  cuscope::step();
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == kPause);
  const std::vector<std::string> notes = cuscope::snapshot().notes;
  CHECK(std::count(notes.begin(), notes.end(),
                   "CUPTI is paused, not detached, after the last step window: another tool holds CUPTI's "
                   "subscriber, and detaching would detach it too") == 1);
}

TEST_CASE("a child made by fork() never makes its parent's armed detach",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  const std::size_t before = logged().size();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {                           // no Catch2 here: the child reports by its exit status
    cuscope::detail::api_exit_for_testing();  // the child's first CUDA call returns
    const bool kept = cuscope::detail::detach_stage() == DetachStage::kept;
    ::_exit(kept && logged().size() == before ? 0 : 1);
  }
  int status = -1;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(cuscope::detail::detach_stage() == DetachStage::armed);  // the parent's goes on
  cuscope::detail::api_exit_for_testing();
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
}

// With launch notes (the default) the correlation hooks mark cuscope's own CUDA calls (collector.cpp's
// OwnCudaCalls: a snapshot's event queries, on whatever thread asks) and call no CUPTI. A thread
// between the mark's begin and end when the collector detaches must still end it: else the mark stays
// on that thread, and in a later session (tests, the GPU bench) its launches count as cuscope's own.
TEST_CASE(
    "an own-calls mark begun before the detach ends after it: a later session's launches are the program's",
    "[session][window][tracing][detach][launch]") {
  std::atomic<int> at{0};
  const auto wait_for = [&](int stage) {
    for (int i = 0; i < 10'000 && at.load() < stage; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  };
  std::thread program;
  {
    FakeCuptiSession traced(one_window());
    cuscope::detail::trace_with_fake_cupti_for_testing(&cuscope::detail::own_calls_begin,
                                                       &cuscope::detail::own_calls_end, true);
    program = std::thread([&] {
      // As OwnCudaCalls around a snapshot's event queries: the mark begins before the detach...
      if (auto push = cuscope::detail::g_push_correlation.load()) push(cuscope::model::kCuscopeInternal);
      at = 1;
      wait_for(2);
      // ...and ends after it.
      if (auto pop = cuscope::detail::g_pop_correlation.load()) pop();
      at = 3;
      wait_for(4);
      {
        CUSCOPE_SCOPE("next_session");
        cuscope::detail::note_launch(cuscope::detail::session(), 301);
      }
      at = 5;
    });
    wait_for(1);
    cuscope::step();
    CHECK(reaches(DetachStage::armed));
    at = 2;
    wait_for(3);
    cuscope::detail::api_exit_for_testing();
    CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
  }
  cuscope_test::NotedSession next;
  at = 4;
  wait_for(5);
  program.join();
  next.kernels({301});
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("next_session") != nullptr);
  CHECK(r.find("next_session")->self.kernel_calls == 1);
}

TEST_CASE("the activity status trades its pause for the detach's stage, and stays on for tracing_on()",
          "[tracing][detach]") {
  const std::string paused = "on, synchronizes seen by callbacks, paused outside the step window";
  const auto status_at = [&](DetachStage stage) {
    cuscope::detail::set_detach_stage(stage);
    return cuscope::detail::with_detach_stage(paused);
  };
  CHECK(status_at(DetachStage::pending) ==
        "on, synchronizes seen by callbacks, paused after the last step window; CUPTI detaches once the "
        "window's records are in");
  CHECK(status_at(DetachStage::finalizing) ==
        "on, synchronizes seen by callbacks, paused after the last step window; CUPTI detaches at the "
        "program's next CUDA call");
  const std::string detached = status_at(DetachStage::detached);
  CHECK(detached == "on, synchronizes seen by callbacks, detached after the last step window");
  cuscope::Report r;
  r.activity_status = detached;
  CHECK(r.tracing_on());                          // as for a paused session
  CHECK(status_at(DetachStage::kept) == paused);  // refused: paused, as it says
  CHECK(status_at(DetachStage::none) == paused);
}

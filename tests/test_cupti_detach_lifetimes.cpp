// Detaching CUPTI after the last step window, around the threads and odd lifetimes of real programs:
// which thread finalizes (the collector's own CUDA call, never a program's), a stop before the
// armed finalize's API exit, a finalize that returns after the next session began, a session that
// starts while a finalize is under way, a child made by fork(), and an own-calls mark that spans
// the detach. Fakes stand for CUPTI (detach_fixture.hpp); the collector thread runs for
// real. Never here: a GPU, or CUPTI itself (tests/gpu/test_gpu_detach.cu).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cuscope/cuscope.hpp"
#include "detach_fixture.hpp"
#include "noted_session.hpp"
#include "producers/cuda_calls.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/launch_notes.hpp"
#include "producers/scope_state.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

using cuscope::detail::DetachStage;
using namespace cuscope_test::detach;

// The CUDA runtime's calls, but for the capture mode's exchange, which plays CUPTI's callback at the
// call's exit on the calling thread (detach.hpp's api_exit_for_testing(false)): what the collector's
// own CUDA call brings about while a detach is armed. Swapped in before the session, out after it.
std::atomic<int> g_exchanges_armed{0};
cudaError_t exchange_with_callback(cudaStreamCaptureMode*) {
  if (cuscope::detail::detach_stage() == DetachStage::armed) {
    g_exchanges_armed.fetch_add(1);
    cuscope::detail::api_exit_for_testing(false);
  }
  return cudaSuccess;
}
struct CallbackAtExchange {
  CallbackAtExchange() {
    cuscope::detail::CudaCalls calls = cuscope::detail::g_cuda;
    calls.exchange_capture_mode = &exchange_with_callback;
    cuscope::detail::set_cuda_calls_for_testing(&calls);
    g_exchanges_armed = 0;
  }
  ~CallbackAtExchange() { cuscope::detail::set_cuda_calls_for_testing(nullptr); }
  CallbackAtExchange(const CallbackAtExchange&) = delete;
  CallbackAtExchange& operator=(const CallbackAtExchange&) = delete;
};

}  // namespace

// The finalize is the collector's to make, at the exit of a CUDA call of its own: the program's
// threads never pay it inside one of their calls (or inside their stream capture), and a program
// that makes no CUDA call after its last window is detached all the same.
TEST_CASE("an armed detach finalizes at the collector's own CUDA call, with none of the program's",
          "[session][window][tracing][detach]") {
  CallbackAtExchange callback;  // made before the session, gone after it
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::detached));
  CHECK(g_exchanges_armed.load() == 1);  // one call of the collector's, once armed
  const std::vector<std::string> log = logged();
  CHECK(after(log, "MEMCPY off") == kDetach);
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached after the last step window"));
}

// Where no call of the collector's reaches CUPTI's callback (a driver that calls back on neither of
// its two calls), the armed detach is given up after the wait: one note, the API callbacks off (else
// every CUDA call of the program reaches them), CUPTI paused as without a detach.
TEST_CASE("an armed detach no call of the collector's finalizes is given up: one note, callbacks off",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::detail::set_finalize_wait_for_testing(50'000'000);  // 50 ms
  cuscope::step();
  REQUIRE(reaches(DetachStage::kept));
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 0);
  CHECK(after(log, "cuptiEnableDomain(1, RUNTIME_API, DRIVER_API)") ==
        std::vector<std::string>{"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)"});
  const cuscope::Report r = cuscope::snapshot();
  CHECK(std::count(r.notes.begin(), r.notes.end(),
                   "CUPTI is paused, not detached, after the last step window: no CUDA call of cuscope's "
                   "collector reached CUPTI's callback, where it finalizes, within 1 s") == 1);
  CHECK_FALSE(r.activity_status.ends_with(" after the last step window"));
  cuscope::detail::api_exit_for_testing();  // a later call of the collector's: no finalize now
  CHECK(cuscope::detail::detach_stage() == DetachStage::kept);
}

TEST_CASE("a program thread's CUDA call never finalizes an armed detach",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing(false);  // this thread's CUDA call returns: not the collector's
  std::thread([] { cuscope::detail::api_exit_for_testing(false); }).join();
  CHECK(cuscope::detail::detach_stage() == DetachStage::armed);
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 0);
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused after the last step window; CUPTI detaches now"));
  cuscope::detail::api_exit_for_testing();  // the collector's
  CHECK(cuscope::detail::detach_stage() == DetachStage::detached);
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

// A finalize slower than the stop's 1 s wait, and a next session that set its stage to none
// meanwhile: the finalize, when it returns, leaves that stage alone (marked detached, every flush of
// the new session would be gated, its records lost without a word).
TEST_CASE("a finalize that returns after the next session began leaves that session's stage alone",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(one_window());
  cuscope::step();
  REQUIRE(reaches(DetachStage::armed));
  g_inside_finalize = [] { cuscope::detail::set_detach_stage(DetachStage::none); };
  cuscope::detail::api_exit_for_testing();
  const std::vector<std::string> log = logged();
  CHECK(std::count(log.begin(), log.end(), "cuptiFinalize") == 1);
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
}

// A thread still inside cuptiFinalize: a session does not attach CUPTI beside it. It waits 1 s at
// most, then says why tracing could not start.
TEST_CASE("tracing does not start while a finalize is under way, and says so", "[session][tracing][detach]") {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  cuscope::detail::set_detach_stage(DetachStage::finalizing);
  const std::string why = cuscope::detail::start_activity_tracing(cuscope::detail::session());
  CHECK(why == "CUPTI tracing could not start: the last session's cuptiFinalize is still under way");
  CHECK(cuscope::detail::detach_stage() == DetachStage::finalizing);
  cuscope::detail::set_detach_stage(DetachStage::none);
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

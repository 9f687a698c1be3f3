// Detaching CUPTI between step windows (CUSCOPE_DETACH_BETWEEN, docs/cupti-windows.md): each wait
// step's detach in the order of the last window's, CUPTI attached again at the next window's first
// step, the books keyed by CUPTI's ids forgotten there (live and replayed), a detach still pending
// called off, one under way waited for, a refused one said once and not tried again, a buffer CUPTI
// kept across it said once, a child made by fork() while detached, a program that ends in a wait
// step, and the status at each stage (recording switched off across a window's start:
// test_cupti_detach_while_off.cpp). Fakes stand for CUPTI
// (detach_fixture.hpp: fake_attach stands for start_activity_tracing()); the collector thread runs
// for real.
// Never here: a GPU, or CUPTI itself (tests/gpu/test_gpu_detach.cu checks the real detach).
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "cupti_buffer.hpp"
#include "cuscope/cuscope.hpp"
#include "detach_fixture.hpp"
#include "model/range_tree.hpp"
#include "producers/cupti/adapter_state.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/scope_state.hpp"
#include "session/internal.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope::detail::DetachStage;
using namespace cuscope_test::detach;

}  // namespace

TEST_CASE("a repeated window detaches CUPTI in its wait steps and attaches it again at the next window",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);  // the window's records in after 50 ms
  steps(3);  // step 2 recorded ends: paused, the detach pending
  detach_made();
  const cuscope::Report detached = cuscope::snapshot();
  CHECK(detached.activity_status.ends_with(", detached between step windows until the next one"));
  cuscope::step();  // the warm-up step begins: CUPTI attached again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 1 time, paused outside the step "
        "window");
  steps(2);  // step 5 recorded ends: the next detach
  detach_made();
  cuscope::step();
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 2 times, paused outside the step "
        "window");
  const std::vector<std::string> log = without_normal_flushes(logged());
  const std::vector<std::string> cycle = with(with(kPause, without_normal_flushes(kDetach)), {"attach"});
  CHECK(log == with(cycle, cycle));
  CHECK(cuscope::snapshot().notes.empty());
}

// A buffer CUPTI never handed back by its finalize (here one taken from the pool as CUPTI's request
// would, and held) is lost to CUPTI: taken back into the pool when CUPTI attaches again, said once,
// so that a program left on does not spend its buffer budget one detach at a time.
TEST_CASE("a buffer CUPTI kept across a detach between windows is taken back at the re-attach, said once",
          "[session][window][tracing][detach][buffers]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::BufferPool& pool = cuscope::detail::state().buffers;
  std::size_t size = 0;
  std::uint8_t* held = pool.take(&size);
  REQUIRE(size == 4u << 20);
  held[100] = 1;  // a record CUPTI wrote
  first_detach();
  CHECK(cuscope::snapshot().notes.empty());
  CHECK(pool.bytes_out() == size);
  cuscope::step();  // attached again: the buffer back, zeroed
  const std::string note =
      "CUPTI kept 4.00 MiB of cuscope's activity buffers across its detach (never handed back before its "
      "finalize); cuscope took them back when CUPTI attached again";
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{note});
  CHECK(pool.bytes_out() == 0);
  CHECK(held[100] == 0);    // zeroed whole, free again (a late hand-back of it: test_buffer_pool.cpp)
  REQUIRE(pool.take(&size) != nullptr);  // kept again, by the next attach's CUPTI
  steps(2);
  detach_made();
  cuscope::step();  // taken back again, not said again
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{note});
  CHECK(pool.bytes_out() == 0);
}

// CUPTI's correlation ids start again at 1 after a re-attach (the probe on an H200, 5 of 5). The
// first attach's correlation 1 was a call of cuscope's own; the new attach's correlation 1 is the
// program's launch, outside every scope in the window, whose kernel record comes before its API
// record: without the books forgotten, the kernel is taken for cuscope's own and never counted, and
// a replay without the trace's Reattach mark does the same.
TEST_CASE(
    "after a re-attach a kernel of the new correlation 1 is not taken for the old one's, live and replayed",
    "[session][window][tracing][detach][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("detach_between.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("detach_between.json");
  cuscope::Options o = between_windows();
  o.trace_path = trace_path;
  o.json_path = json_path;
  {
    FakeCuptiSession traced(o);
    cuscope::detail::set_detach_wait_for_testing(50'000'000);
    steps(2);  // step 2 is recorded
    const std::uint64_t t1 = cuscope::detail::now_ns();
    cuscope_test::CuptiBuffer own;  // an event query of cuscope's own, correlation 1
    own.external(1, cuscope::model::kCuscopeInternal).api(1, t1).kernel(1, t1 + 10, t1 + 20, "own_kernel");
    cuscope::detail::take_buffer(cuscope::detail::session(), own.data(), own.size(), 0);
    cuscope::step();
    detach_made();
    steps(2);  // attached again; step 5 is recorded
    const std::uint64_t t2 = cuscope::detail::now_ns();
    cuscope_test::CuptiBuffer program;  // the program's launch: correlation 1 again, its kernel first
    program.kernel(1, t2 + 10, t2 + 40, "program_kernel").api(1, t2);
    cuscope::detail::take_buffer(cuscope::detail::session(), program.data(), program.size(), 0);
    const cuscope::Report live = cuscope::snapshot();
    REQUIRE(live.find("(unscoped)") != nullptr);
    CHECK(live.find("(unscoped)")->self.kernel_calls == 1);
    CHECK(live.find("(unscoped)")->self.kernel_ns == 30);
    CHECK(live.diagnostics.unresolved_records == 0);
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  REQUIRE(replayed.find("(unscoped)") != nullptr);
  CHECK(replayed.find("(unscoped)")->self.kernel_calls == 1);
}

TEST_CASE(
    "a window that begins while the detach is still pending calls it off: CUPTI resumes, never detached",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::set_detach_wait_for_testing(3'600'000'000'000);  // pending until the case says
  steps(3);
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::pending);
  CHECK(cuscope::snapshot().activity_status.ends_with(
      ", paused between step windows; CUPTI detaches once the window's records are in"));
  cuscope::step();  // the warm-up step: the pause ends as between windows
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  cuscope::detail::set_detach_wait_for_testing(1);              // a detach still pending would go now
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the collector's ticks
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with(kPause, {"MEMCPY on", "KERNEL on"}));
  CHECK(cuscope::snapshot().activity_status.find("between step windows") == std::string::npos);
  // A wait that short never gains: said once.
  const std::string called_off =
      "CUPTI's detach between step windows was called off: a wait ended within the 1 s the detach waits for "
      "the window's records, so CUPTI was only paused in it; a longer wait (CUSCOPE_WAIT, CUSCOPE_WAIT_MS) "
      "detaches it";
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{called_off});
  cuscope::detail::set_detach_wait_for_testing(3'600'000'000'000);
  steps(2);  // warm-up 4, active 5 ends: pending again
  REQUIRE(cuscope::detail::detach_stage() == DetachStage::pending);
  cuscope::step();  // called off again
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{called_off});
}

TEST_CASE("a window that begins while the detach is under way waits for its finalize, then attaches again",
          "[session][window][tracing][detach][threads]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  steps(3);
  REQUIRE(reaches(DetachStage::armed));
  std::atomic<bool> stepped{false};
  std::thread program([&] {  // the warm-up step waits (2 s at most)
    cuscope::step();
    stepped = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  CHECK_FALSE(stepped);  // still waiting: the finalize has not come
  // Meanwhile no scope pushes (its flags stored before the wait): the hooks would mark the thread's
  // launches as the scope's while CUPTI is attached again.
  CHECK((cuscope::detail::g_flags.load() & cuscope::detail::kCorrelation) == 0);
  cuscope::detail::api_exit_for_testing();  // the collector's CUDA call returns: finalized
  program.join();
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
  CHECK(cuscope::snapshot().activity_status.find("attached again 1 time,") != std::string::npos);
  CHECK((cuscope::detail::g_flags.load() & cuscope::detail::kCorrelation) != 0);  // as the new attach traces
}

TEST_CASE(
    "a detach given up while the next window waits for it: callbacks off first, then CUPTI traces again",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  cuscope::detail::set_finalize_wait_for_testing(100'000'000);  // no finalize comes: given up 100 ms on
  steps(3);
  REQUIRE(reaches(DetachStage::armed));
  cuscope::step();  // waits for the give-up, then attaches CUPTI again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  std::vector<std::string> detach_armed = without_normal_flushes(kDetach);
  detach_armed.pop_back();  // no cuptiFinalize
  CHECK(without_normal_flushes(logged()) ==
        with(with(kPause, detach_armed), {"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)", "attach"}));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.notes ==
        std::vector<std::string>{
            "CUPTI is not detached between step windows: no CUDA call of cuscope's collector reached "
            "CUPTI's callback, where it finalizes, within 1 s; it is paused between them from now on"});
  CHECK(r.activity_status == "on (fake CUPTI), paused outside the step window");  // it never left
}

// A detach still armed 2 s after the window began (no finalize yet, none given up): one note, the
// window's later steps try again without waiting, and the first after the finalize attaches CUPTI.
TEST_CASE("a window that begins 2 s before the detach is made tries again at each later step, unwaited",
          "[session][window][tracing][detach]") {
  cuscope::Options o = between_windows();
  o.active_steps = 2;  // 0 waits, 1 warms up, 2 and 3 recorded, 4 waits, 5 warms up, 6 and 7 recorded
  FakeCuptiSession traced(o);
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  steps(4);
  REQUIRE(reaches(DetachStage::armed));
  cuscope::step();  // into warm-up step 5: 2 s of waiting, then on
  CHECK(cuscope::detail::detach_stage() == DetachStage::armed);
  const auto start = std::chrono::steady_clock::now();
  cuscope::step();  // into step 6: tried again, not waited for
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::milliseconds(1000));
  CHECK(cuscope::detail::detach_stage() == DetachStage::armed);
  cuscope::detail::api_exit_for_testing();
  cuscope::step();  // into step 7: attached again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()) == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
  CHECK(
      cuscope::snapshot().notes ==
      std::vector<std::string>{"CUPTI's detach between step windows was still under way 2 s after a window "
                               "began: that window's GPU work is recorded only from the step at which CUPTI "
                               "is attached again"});
}

namespace {

std::string refused_attach(cuscope::detail::Sink&) {
  log_call("attach refused");
  return "cuptiActivityRegisterCallbacks returned CUPTI_ERROR_UNKNOWN (the test's)";
}

}  // namespace

TEST_CASE(
    "an attach refused after a detach between windows: tracing off for good, CUDA events time the calls",
    "[session][window][tracing][detach]") {
  cuscope::Options o = between_windows();
  o.gpu_events = true;  // CUSCOPE_EVENTS=auto, which leaves the calls' GPU time to CUPTI while it traces
  FakeCuptiSession traced(o);
  {
    std::lock_guard lock(cuscope::detail::session().lifecycle_mutex);  // as a traced session has it
    cuscope::detail::session().gpu_timing = "projected: each call's span of the GPU work CUPTI traced";
  }
  cuscope::detail::set_attach_for_testing(&refused_attach);
  first_detach();
  cuscope::step();                                              // the warm-up step: the attach refused
  steps(6);                                                     // two more cycles: no CUPTI call, no detach
  std::this_thread::sleep_for(std::chrono::milliseconds(250));  // the collector's polls: none
  CHECK(without_normal_flushes(logged()) ==
        with(with(kPause, without_normal_flushes(kDetach)), {"attach refused"}));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.activity_status ==
        "off since CUPTI could not trace again after a detach between step windows: "
        "cuptiActivityRegisterCallbacks returned CUPTI_ERROR_UNKNOWN (the test's)");
  CHECK_FALSE(r.tracing_on());
  CHECK(r.gpu_timing.starts_with("on"));  // CUSCOPE_EVENTS=auto: events where CUPTI does not trace
  CHECK(r.notes ==
        std::vector<std::string>{
            "CUPTI could not trace again after a detach between step windows "
            "(cuptiActivityRegisterCallbacks returned CUPTI_ERROR_UNKNOWN (the test's)): the later "
            "windows' GPU work is not recorded"});
}

TEST_CASE("a refused finalize between windows is said once, CUPTI traces again, and later windows only pause",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  g_finalize_result = CUPTI_ERROR_NOT_SUPPORTED;
  steps(3);
  REQUIRE(reaches(DetachStage::armed));
  cuscope::detail::api_exit_for_testing();
  REQUIRE(reaches(DetachStage::kept));  // the collector said so, the API callbacks off
  cuscope::step();                      // attached again: every kind was off
  steps(5);                             // steps 5 and 8 end windows: paused only
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  const std::vector<std::string> first = with(with(kPause, without_normal_flushes(kDetach)),
                                              {"cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)", "attach"});
  const std::vector<std::string> later = {"KERNEL off", "MEMCPY off", "MEMCPY on",
                                          "KERNEL on",  "KERNEL off", "MEMCPY off"};
  CHECK(without_normal_flushes(logged()) == with(first, later));
  const std::vector<std::string> notes = cuscope::snapshot().notes;
  REQUIRE(notes.size() == 1);
  CHECK(notes[0].starts_with("CUPTI is not detached between step windows: "));
  CHECK(notes[0].find("cuptiFinalize") != std::string::npos);
  CHECK(notes[0].ends_with("; it is paused between them from now on"));
}

// The GPU case's sequence (test_gpu_detach.cu): windows that re-attach, then the last window's own
// detach, whose status keeps the count of re-attaches.
TEST_CASE("after re-attaches between windows the last window detaches CUPTI, and the status says both",
          "[session][window][tracing][detach]") {
  cuscope::Options o = between_windows();
  o.repeat = 3;  // steps 0-2, 3-5 and 6-8, then done
  FakeCuptiSession traced(o);
  first_detach();
  cuscope::step();  // warm-up 4: attached again
  steps(2);         // active 5 ends: the second detach between windows
  detach_made();
  cuscope::step();  // warm-up 7: attached again
  CHECK(cuscope::detail::detach_for() == cuscope::detail::DetachFor::between_windows);
  steps(2);  // active 8 ends: done, the last window's detach
  detach_made();
  CHECK(cuscope::detail::detach_for() == cuscope::detail::DetachFor::last_window);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 2 times, detached after the last "
        "step window");
  const std::vector<std::string> cycle = with(with(kPause, without_normal_flushes(kDetach)), {"attach"});
  CHECK(without_normal_flushes(logged()) ==
        with(with(cycle, cycle), with(kPause, without_normal_flushes(kDetach))));
  CHECK(cuscope::snapshot().notes.empty());
}

// No next window came: the last report says CUPTI detached after the last window that ran.
TEST_CASE(
    "a program that ends in a wait step, CUPTI detached between windows, reports it detached after the last "
    "window",
    "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  first_detach();
  const std::string running = cuscope::snapshot().activity_status;
  const std::string base =
      running.substr(0, running.find(", detached between step windows until the next one"));
  CHECK(running == base + ", detached between step windows until the next one");
  cuscope::shutdown();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.final);
  CHECK(r.activity_status == base + ", detached after the last step window");
}

// A child made by fork() in a wait step while CUPTI is detached: its steps attach nothing (cuscope is
// off in a child); the parent's next window attaches CUPTI again as without the child.
TEST_CASE("a child made by fork() while detached between windows attaches nothing, and its parent does",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  first_detach();
  const std::size_t before = logged().size();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {   // no Catch2 here: the child reports by its exit status
    cuscope::step();  // would begin the next window's warm-up step
    cuscope::step();
    const bool untouched =
        cuscope::detail::detach_stage() == DetachStage::detached && logged().size() == before;
    ::_exit(untouched ? 0 : 1);
  }
  int status = -1;
  REQUIRE(::waitpid(child, &status, 0) == child);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(logged().size() == before);
  cuscope::step();  // the parent's warm-up step: attached again
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  REQUIRE(logged().size() > before);
  CHECK(logged().back() == "attach");
}

// start() with CUSCOPE_DETACH_BETWEEN where CUPTI could trace: the session begins in its first wait,
// and CUPTI is not attached until the first window's first step (a GPU's start does this; here the
// fakes stand for CUPTI and the test plays start()'s call).
TEST_CASE("a session detached between windows attaches CUPTI at its first window, not at its start",
          "[session][window][tracing][detach]") {
  FakeCuptiSession traced(between_windows());
  cuscope::detail::reset_for_testing();  // a session as start() leaves it, no fake tracing set up
  cuscope::start(between_windows());
  {
    cuscope::detail::Session& s = cuscope::detail::session();
    std::lock_guard lock(s.lifecycle_mutex);
    cuscope::detail::defer_first_attach(s);
  }
  {
    std::lock_guard lock(g_log_mutex);
    g_log.clear();
  }
  CHECK(cuscope::snapshot().activity_status ==
        "not attached yet: CUPTI attaches at the first step that traces (CUSCOPE_DETACH_BETWEEN)");
  cuscope::flush();                                             // no CUPTI call: none is attached
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // nor the collector's polls
  CHECK(logged().empty());
  cuscope::step();  // the first wait ends, the warm-up step begins: attached
  CHECK(logged() == std::vector<std::string>{"attach"});
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(cuscope::snapshot().activity_status == "on (fake CUPTI), paused outside the step window");
  cuscope::detail::set_detach_wait_for_testing(50'000'000);
  steps(2);  // step 2 recorded ends: the first detach between windows
  detach_made();
  cuscope::step();  // the next warm-up step: attached again, the first time counted
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 1 time, paused outside the step "
        "window");
  CHECK(cuscope::snapshot().notes.empty());
}

TEST_CASE("the activity status says where a detach between windows stands", "[tracing][detach]") {
  const std::string paused = "on, paused outside the step window";
  cuscope::detail::set_detach_for(cuscope::detail::DetachFor::between_windows);
  const auto status_at = [&](DetachStage stage) {
    cuscope::detail::set_detach_stage(stage);
    return cuscope::detail::with_detach_stage(paused);
  };
  CHECK(status_at(DetachStage::pending) ==
        "on, paused between step windows; CUPTI detaches once the window's records are in");
  CHECK(status_at(DetachStage::detaching) == "on, paused between step windows; CUPTI detaches now");
  CHECK(status_at(DetachStage::armed) == "on, paused between step windows; CUPTI detaches now");
  CHECK(status_at(DetachStage::detached) == "on, detached between step windows until the next one");
  CHECK(status_at(DetachStage::kept) == paused);
  cuscope::detail::set_detach_for(cuscope::detail::DetachFor::last_window);
  CHECK(status_at(DetachStage::detaching) == "on, paused after the last step window; CUPTI detaches now");
  cuscope::detail::set_detach_stage(DetachStage::none);
}

TEST_CASE("CUSCOPE_DETACH_BETWEEN where no window repeats with wait steps: one note, and no detach between",
          "[session][window][tracing][detach][options]") {
  cuscope::Options o = between_windows();
  o.wait_steps = 0;  // nothing pauses between windows
  FakeCuptiSession traced(o);
  steps(4);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  CHECK(cuscope::detail::detach_stage() == DetachStage::none);
  CHECK(without_normal_flushes(logged()).empty());
  const std::vector<std::string> notes = cuscope::snapshot().notes;
  CHECK(notes ==
        std::vector<std::string>{
            "Options::detach_between: no step window repeats with wait steps (repeat != 1, wait_steps > "
            "0), so CUPTI is detached only while recording is off (cuscope::set_enabled(false))"});
}

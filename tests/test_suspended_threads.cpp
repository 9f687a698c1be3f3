// Suspended frames (producers/suspended_frames.hpp) with the lifetimes real programs have: many
// threads whose frames another thread's step() suspends, a thread that does nothing while another
// thread's steps pass windows, a frame ended by a thread_local destructor at the thread's exit, a
// child forked while frames are suspended (cuscope is off there; the parent's count as before).
// Each is in the TSan run ([threads]).
// Never here: a GPU, or a check that a step took a given time (suspended_kit.hpp).
#include <sys/wait.h>
#include <unistd.h>

#include <barrier>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <latch>
#include <string>
#include <thread>
#include <vector>

#include "session_fixture.hpp"
#include "suspended_kit.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::calls;
using namespace suspended_kit;

// Ends the thread's `tl_outer` (cuscope::push) at the thread's exit, a wait of the window. Made
// before the thread's first scope, so destroyed after cuscope's own per-thread objects.
struct PopAtThreadExit {
  Clock::time_point* popped = nullptr;
  ~PopAtThreadExit() {
    cuscope::pop();
    *popped = Clock::now();
  }
};

// In step 1 (recorded), with another thread quiet: step 1 ends, a wait sleeps, step 3 is recorded
// for a while, and unless `exit_in_window` a wait after it sleeps too (the sleeps added to
// `m->slept`). The time slept in step 3.
std::uint64_t pass_wait_and_window(bool exit_in_window, Measured* m) {
  cuscope::step();  // step 1 ends: a wait
  sleep_outside(&m->slept);
  cuscope::step();  // step 3 is recorded
  const Clock::time_point w = Clock::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs / 2));
  const std::uint64_t in_window = ns_since(w);
  if (!exit_in_window) {
    cuscope::step();  // step 3 ends: a wait
    sleep_outside(&m->slept);
  }
  return in_window;
}

}  // namespace

TEST_CASE(
    "200 threads' scopes open across a wait that another thread's step() began each count "
    "only their recorded time",
    "[session][window][suspended][threads]") {
  constexpr int kThreads = 200;
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  std::barrier phase(kThreads + 1);
  std::vector<Measured> measured(kThreads);
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&phase, &m = measured[static_cast<std::size_t>(i)]] {
      const Clock::time_point t = Clock::now();
      {
        CUSCOPE_SCOPE("worker");
        { CUSCOPE_SCOPE("work"); }
        phase.arrive_and_wait();  // every worker entered in step 1
        phase.arrive_and_wait();  // step 1 ended: a wait
        {
          CUSCOPE_SCOPE("idle");  // suspends `worker`
          sleep_outside(&m.slept);
        }
        phase.arrive_and_wait();    // every worker slept
        phase.arrive_and_wait();    // step 2 ended: step 3 is recorded
        { CUSCOPE_SCOPE("work"); }  // resumes `worker`
      }
      m.elapsed = ns_since(t);
    });
  }
  phase.arrive_and_wait();
  cuscope::step();
  phase.arrive_and_wait();
  phase.arrive_and_wait();
  cuscope::step();
  phase.arrive_and_wait();
  for (std::thread& t : threads) t.join();
  std::uint64_t bound = 0;
  for (const Measured& m : measured) bound += m.recorded_bound();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "worker") == kThreads);
  CHECK(calls(r, "worker/work") == 2 * kThreads);
  CHECK(r.find("worker")->threads == kThreads);
  CHECK(r.find("worker/idle") == nullptr);
  CHECK(host_ns(r, "worker") < bound);  // no thread's sleep in it
  CHECK(host_ns(r, "worker") >= host_ns(r, "worker/work"));
  CHECK(r.diagnostics.outside_window_scopes == kThreads);
  check_all_closed(r);
}

TEST_CASE(
    "a scope open on a thread that does nothing while another thread's steps pass two windows "
    "counts only its time in windows",
    "[session][window][suspended][threads]") {
  const bool exit_in_window = GENERATE(true, false);  // else in the wait after
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  std::latch entered(1), release(1);
  Measured m;
  Clock::time_point t;
  std::thread quiet([&] {
    t = Clock::now();
    {
      CUSCOPE_SCOPE("outer");
      entered.count_down();
      release.wait();  // nothing on this thread meanwhile
    }
    m.elapsed = ns_since(t);
  });
  entered.wait();
  const std::uint64_t quiet_window = pass_wait_and_window(exit_in_window, &m);
  release.count_down();
  quiet.join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "outer") == 1);
  CHECK(host_ns(r, "outer") >= quiet_window);       // the second window counts
  CHECK(host_ns(r, "outer") < m.recorded_bound());  // not the waits' sleeps
  check_all_closed(r);
}

namespace {

// A scope entered in a wait step on a thread that then does nothing: the window's first scope
// there opens it, and another thread's steps pass a wait and a second window (and, unless
// `exit_in_window`, a wait after it) before it exits. Its checks, on the live report and, in trace
// mode, on the replay.
void kept_on_quiet_thread(const cuscope::Options& o, bool exit_in_window,
                          const std::string& replay_trace = {}, const std::string& replay_json = {}) {
  std::latch kept(1), recorded(1), opened(1), release(1);
  Measured m;
  std::uint64_t quiet_window = 0;
  const auto check = [&](const cuscope::Report& r) {
    CHECK(calls(r, "kept") == 1);
    CHECK(calls(r, "kept/child") == 1);
    CHECK(host_ns(r, "kept") >= quiet_window);       // the second window counts
    CHECK(host_ns(r, "kept") < m.recorded_bound());  // not the waits' sleeps
  };
  {
    cuscope_test::Session session(o);  // step 0 is a wait
    std::thread quiet([&] {
      const Clock::time_point t = Clock::now();
      {
        CUSCOPE_SCOPE("kept");  // outside the window: kept for it
        kept.count_down();
        recorded.wait();
        { CUSCOPE_SCOPE("child"); }  // the window's first scope here: opens `kept`
        opened.count_down();
        release.wait();  // nothing on this thread meanwhile
      }
      m.elapsed = ns_since(t);
    });
    kept.wait();
    cuscope::step();  // into step 1, recorded
    recorded.count_down();
    opened.wait();
    quiet_window = pass_wait_and_window(exit_in_window, &m);
    release.count_down();
    quiet.join();
    const cuscope::Report r = cuscope::snapshot();
    check(r);
    check_all_closed(r);
    cuscope::shutdown();
  }
  if (!replay_trace.empty()) check(cuscope_test::trace_kit::replay_as_exit(replay_trace, replay_json));
}

}  // namespace

TEST_CASE(
    "a scope entered before a window on a thread that does nothing while another thread's steps "
    "pass two windows counts only its time in windows",
    "[session][window][suspended][outside][threads]") {
  const bool exit_in_window = GENERATE(true, false);  // else in the wait after
  kept_on_quiet_thread(every_other(), exit_in_window);
}

TEST_CASE("a trace replays a scope entered before a window on a quiet thread to the same report",
          "[session][window][suspended][outside][trace]") {
  const bool exit_in_window = GENERATE(true, false);
  const std::string trace_path = cuscope_test::trace_kit::temp_path("kept_quiet.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("kept_quiet.json");
  kept_on_quiet_thread(every_other(cuscope_test::replayable_options(trace_path, json_path)), exit_in_window,
                       trace_path, json_path);
}

TEST_CASE(
    "a suspended scope ended by a thread_local destructor at the thread's exit closes at the "
    "window's end",
    "[session][window][suspended][threads][lifetime]") {
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  std::latch entered(1), stepped(1);
  Measured m;
  Clock::time_point popped{};
  const Clock::time_point t = Clock::now();
  std::thread thread([&] {
    thread_local PopAtThreadExit pop_at_exit;
    pop_at_exit.popped = &popped;
    cuscope::push("tl_outer");
    { CUSCOPE_SCOPE("work"); }
    entered.count_down();
    stepped.wait();
    CUSCOPE_SCOPE("idle");  // suspends `tl_outer`
    sleep_outside(&m.slept);
  });  // the thread exits in the wait: `tl_outer` ends there
  entered.wait();
  cuscope::step();  // step 1 ends: a wait
  stepped.count_down();
  thread.join();
  m.elapsed =
      static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(popped - t).count());
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "tl_outer") == 1);
  CHECK(calls(r, "tl_outer/work") == 1);
  CHECK(host_ns(r, "tl_outer") < m.recorded_bound());  // not its sleep
  CHECK(host_ns(r, "tl_outer") >= host_ns(r, "tl_outer/work"));
  check_all_closed(r);
}

TEST_CASE(
    "a child forked while scopes are suspended ends them with cuscope off, and the parent's count "
    "only their recorded time",
    "[session][window][suspended][threads]") {
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  Measured m;
  const Clock::time_point t = Clock::now();
  cuscope::push("main");
  { CUSCOPE_SCOPE("work"); }
  cuscope::step();        // step 1 ends: a wait
  cuscope::push("idle");  // suspends `main`
  sleep_outside(&m.slept);
  const Clock::time_point forked = Clock::now();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // No Catch2 here: the child reports by its exit status, one bit per failed check. It goes on
    // as the parent does: out of the suspended scopes, into the next window, a scope there.
    int failed = 0;
    cuscope::pop();  // idle
    cuscope::step();
    { CUSCOPE_SCOPE("child_work"); }
    cuscope::pop();  // main
    const cuscope::Report r = cuscope::snapshot();
    if (cuscope::enabled()) failed |= 1;
    if (r.find("main") != nullptr || r.find("child_work") != nullptr) failed |= 2;
    ::_exit(failed);
  }
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  m.slept += ns_since(forked);  // the child's run, in the wait too
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  cuscope::pop();   // idle
  cuscope::step();  // step 2 ends: step 3 is recorded
  { CUSCOPE_SCOPE("work"); }
  cuscope::pop();  // main
  m.elapsed = ns_since(t);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/work") == 2);
  CHECK(r.find("child_work") == nullptr);
  CHECK(host_ns(r, "main") < m.recorded_bound());  // neither the sleep nor the child's run
  check_all_closed(r);
}

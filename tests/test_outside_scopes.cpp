// Scopes that began outside the step window and are still open when it opens
// (producers/outside_scopes.hpp): what the window records inside them goes under their path, they
// count a call from the first scope recorded inside them to the window's end (again at each window
// of a repeating one, the time between left out), and a trace replays the same report.
// Without them, a program's outer scope ("main") entered in a wait step put every recorded step at
// the top ("step" instead of "main/step").
// Never here: a GPU (the window's CUPTI side is tests/test_step_cycles.cpp's).
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>
#include <vector>

#include "session_fixture.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::calls;

std::vector<std::string> paths(const cuscope::Report& r) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < r.ranges.size(); ++i) out.push_back(r.ranges[i].path);
  return out;
}

cuscope::Options window(std::uint32_t wait, std::uint32_t active, std::uint32_t repeat) {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = wait;
  o.active_steps = active;
  o.repeat = repeat;
  return o;
}

}  // namespace

// The outer scope enters in the wait step, the window opens at step 1 inside it: its two recorded
// steps go under "main", which counts one call, from the first of them on (so at least their time),
// and no longer counts as left out. Without the kept scope the steps were "step", at the top.
TEST_CASE("a scope open when the window opens keeps its place: the steps recorded inside it go under it",
          "[session][window][outside]") {
  cuscope_test::Session session(window(1, 0, 1));
  {
    CUSCOPE_SCOPE("main");
    for (int i = 0; i < 3; ++i) {
      { CUSCOPE_SCOPE("step"); }
      cuscope::step();
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"main", "main/step"});
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/step") == 2);
  REQUIRE(r.find("main") != nullptr);
  CHECK(r.find("main")->host.total_ns >= r.find("main/step")->host.total_ns);
  CHECK(r.diagnostics.outside_window_scopes == 1);  // the wait step's "step"; "main" is counted
}

// Nested kept scopes, a wait before every window and the outer scopes open through three windows:
// each level opens at each window (closed at its end, at the next wait's first scope), and every
// window's steps go under the same path.
TEST_CASE("nested scopes open through a repeating window open at each window, and its steps go under them",
          "[session][window][outside]") {
  cuscope_test::Session session(window(2, 1, 3));  // steps 2, 5 and 8 recorded
  {
    CUSCOPE_SCOPE("train");
    CUSCOPE_SCOPE("epoch");
    for (int i = 0; i < 10; ++i) {
      {
        CUSCOPE_SCOPE("step");
        CUSCOPE_SCOPE("forward");
      }
      cuscope::step();
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) ==
        std::vector<std::string>{"train", "train/epoch", "train/epoch/step", "train/epoch/step/forward"});
  CHECK(calls(r, "train") == 3);
  CHECK(calls(r, "train/epoch") == 3);
  CHECK(calls(r, "train/epoch/step") == 3);
  CHECK(calls(r, "train/epoch/step/forward") == 3);
  CHECK(r.recorded_steps == 3);
  // 7 steps' two scopes each, and "train" and "epoch" after the last window, waiting to open again.
  CHECK(r.diagnostics.outside_window_scopes == 7 * 2 + 2);
}

// A wait of 30 ms between windows: the outer scope's calls are its windows', so its host time holds
// none of the waits (without the close at each window's end it held them all: at least 60 ms).
TEST_CASE("a kept scope's call ends at its window's end: the waits between windows are not in its time",
          "[session][window][outside]") {
  cuscope_test::Session session(window(1, 1, 0));  // steps 1, 3 and 5 recorded
  {
    CUSCOPE_SCOPE("main");
    for (int i = 0; i < 6; ++i) {
      { CUSCOPE_SCOPE("step"); }
      if (i % 2 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));  // a wait step
      cuscope::step();
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("main") != nullptr);
  CHECK(calls(r, "main") == 3);
  CHECK(calls(r, "main/step") == 3);
  CHECK(r.find("main")->host.total_ns < 30'000'000);  // three windows of a scope and a step() each
  CHECK(r.find("main")->host.total_ns >= r.find("main/step")->host.total_ns);
}

// A recorded scope still open when the window closes: the kept scope under it cannot close before it,
// so both go on, their calls counting whole, and the next window's steps go under them.
TEST_CASE("a kept scope under a recorded scope open across the window's end goes on as one call",
          "[session][window][outside]") {
  cuscope_test::Session session(window(1, 1, 0));  // steps 1, 3, ... recorded
  {
    CUSCOPE_SCOPE("main");
    cuscope::step();  // the wait ends
    {
      CUSCOPE_SCOPE("phase");     // recorded, open across the window's end
      cuscope::step();            // step 1 ends: a wait
      { CUSCOPE_SCOPE("idle"); }  // outside the window, under "phase": nothing closes
      cuscope::step();            // step 3 is recorded
      { CUSCOPE_SCOPE("work"); }
    }
    cuscope::step();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"main", "main/phase", "main/phase/work"});
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/phase") == 1);
  CHECK(calls(r, "main/phase/work") == 1);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

// Kept scopes that close before any window: nothing of theirs is recorded, and the stack is empty
// again, so that a scope recorded later is at the top. A kept scope that a window opens on but
// that holds no recorded scope is never opened: not in the report.
TEST_CASE(
    "a scope that closes in its wait steps, or that a window opens on without a recorded scope inside, "
    "is left out",
    "[session][window][outside]") {
  cuscope_test::Session session(window(1, 0, 1));
  {
    CUSCOPE_SCOPE("setup");
    { CUSCOPE_SCOPE("load"); }
  }
  {
    CUSCOPE_SCOPE("idle");
    cuscope::step();  // the window opens inside "idle", which records nothing in it
  }
  { CUSCOPE_SCOPE("step"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"step"});
  CHECK(r.diagnostics.outside_window_scopes == 3);
}

// A scope recorded in the window, then a wait step inside it whose own scope stays open into the
// next window: the scope recorded there goes under both.
TEST_CASE("a scope entered in a wait step under a recorded one keeps its place in the next window",
          "[session][window][outside]") {
  cuscope_test::Session session(window(1, 1, 0));  // wait 0, active 1, wait 2, active 3, ...
  cuscope::step();                                 // into the first window
  {
    CUSCOPE_SCOPE("outer");  // recorded: step 1
    cuscope::step();         // step 2 waits
    CUSCOPE_SCOPE("inner");  // left out, kept
    cuscope::step();         // step 3: the window again
    { CUSCOPE_SCOPE("leaf"); }
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"outer", "outer/inner", "outer/inner/leaf"});
  CHECK(calls(r, "outer") == 1);
  CHECK(calls(r, "outer/inner") == 1);
  CHECK(calls(r, "outer/inner/leaf") == 1);
}

// A kept scope ended on another thread (its end is marked in the owner's stack): the owner's next
// recorded scope is not put under it, and the stack still pops the scopes below it in order.
TEST_CASE("a kept scope ended on another thread is not opened under the window",
          "[session][window][outside][threads]") {
  cuscope_test::Session session(window(1, 0, 1));
  CUSCOPE_SCOPE("main");
  std::uint32_t token = 0;
  cuscope::detail::ThreadState* ts = cuscope::detail::enter_named("handed_off", nullptr, token);
  REQUIRE(ts != nullptr);
  std::thread([&] { cuscope::detail::exit(ts, token); }).join();
  cuscope::step();
  { CUSCOPE_SCOPE("step"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"main", "main/step"});
  CHECK(r.diagnostics.cross_thread_ends == 1);
}

// Trace mode: the kept scopes' opening is in the trace, so that it replays to the exit report to
// the byte (replay_as_exit) with the same paths.
TEST_CASE("a trace replays the scopes a window opened inside to the same report",
          "[session][window][outside][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("outside.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("outside.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.wait_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  {
    cuscope_test::Session session(o);
    {
      CUSCOPE_SCOPE("main");
      for (int i = 0; i < 4; ++i) {
        { CUSCOPE_SCOPE("step"); }
        cuscope::step();
      }
    }
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(paths(replayed) == std::vector<std::string>{"main", "main/step"});
  CHECK(calls(replayed, "main") == 2);  // a call per window, closed at its end
  CHECK(calls(replayed, "main/step") == 2);
}

// More scopes open outside the window than the stack keeps (256), and deeper than the tree records
// (max_depth 64): the first 64 open as ranges, the kept ones past them and the window's own scope
// count as depth overflows, those past 256 are not kept, and every exit after that pops in order.
TEST_CASE("scopes kept past the maximum depth overflow as counted, and those past the stack are not kept",
          "[session][window][outside]") {
  cuscope_test::Session session(window(1, 0, 1));
  constexpr int kOpen = 300;
  std::vector<std::uint32_t> tokens(kOpen);
  std::vector<cuscope::detail::ThreadState*> states(kOpen);
  for (int i = 0; i < kOpen; ++i)
    states[i] = cuscope::detail::enter_named(i % 2 ? "odd" : "even", nullptr, tokens[i]);  // no recursion
  cuscope::step();
  { CUSCOPE_SCOPE("inside"); }
  for (int i = kOpen - 1; i >= 0; --i) cuscope::detail::exit(states[i], tokens[i]);
  { CUSCOPE_SCOPE("after"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.ranges.size() == 1 + 64 + 1);  // the root, "even/odd/..." 64 deep, and "after"
  CHECK(r.find("after") != nullptr);
  CHECK(r.diagnostics.depth_overflows == (256 - 64) + 1);
  CHECK(r.diagnostics.outside_window_scopes == kOpen - 256);
}

// Eight threads each open "worker" in the wait step, then the program's step opens the window while
// every one of them is inside it: each thread keeps its own, so every thread's jobs go under
// "worker", which counts one call a thread. Run under TSan with the threaded cases.
TEST_CASE("every thread's scope open when the window opens keeps its place",
          "[session][window][outside][threads]") {
  cuscope_test::Session session(window(1, 0, 1));
  constexpr int kThreads = 8;
  constexpr int kJobs = 10;
  std::atomic<int> inside{0};
  std::atomic<bool> open{false};
  std::atomic<int> finished{0};
  std::atomic<bool> leave{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      CUSCOPE_SCOPE("worker");
      inside.fetch_add(1);
      while (!open.load()) std::this_thread::yield();
      for (int j = 0; j < kJobs; ++j) {
        CUSCOPE_SCOPE("job");
      }
      finished.fetch_add(1);
      while (!leave.load()) std::this_thread::yield();
    });
  }
  while (inside.load() < kThreads) std::this_thread::yield();
  cuscope::step();  // the window opens with every "worker" open
  open.store(true);
  while (finished.load() < kThreads) std::this_thread::yield();
  leave.store(true);
  for (std::thread& t : threads) t.join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(paths(r) == std::vector<std::string>{"worker", "worker/job"});
  CHECK(calls(r, "worker") == kThreads);
  CHECK(calls(r, "worker/job") == kThreads * kJobs);
  REQUIRE(r.find("worker") != nullptr);
  CHECK(r.find("worker")->threads == kThreads);
  CHECK(r.diagnostics.outside_window_scopes == 0);
}

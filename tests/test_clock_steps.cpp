// CUSCOPE_STEP_MS (Options::step_ms): steps that cuscope's stepper thread ends by the clock, for a
// program that never calls step(), so that the step window counts time; the program's own first
// step() stops them, with a note; a value out of range ends none.
// Never here: a GPU, or a check on how long a step took (the machine may be slow): only on what
// the window recorded once the steps have come.
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>
#include <vector>

#include "child_kit.hpp"
#include "session_fixture.hpp"
#include "trace_kit.hpp"

namespace {

std::vector<std::string> paths(const cuscope::Report& r) {
  std::vector<std::string> out;
  for (std::size_t i = 1; i < r.ranges.size(); ++i) out.push_back(r.ranges[i].path);
  return out;
}

bool has_note(const cuscope::Report& r, const std::string& note) {
  for (const std::string& n : r.notes)
    if (n == note) return true;
  return false;
}

// Waits (up to 10 s) until the session has ended `steps` steps; the steps it found.
std::uint64_t wait_for_steps(std::uint64_t steps) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::uint64_t now = 0;
  while ((now = cuscope::snapshot().steps) < steps && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return now;
}

}  // namespace

// A program with no step() of its own, one long outer scope, and work scopes all the time: the
// clock's steps open a window of two steps after one wait step and close it, and the work recorded
// in it goes under the outer scope. Without the stepper no step ends (the report has none), and
// nothing is recorded under a window that never opens.
TEST_CASE("CUSCOPE_STEP_MS ends steps by the clock: a window opens and closes in a program that never steps",
          "[session][window][step_ms]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.step_ms = 50;
  o.wait_steps = 1;
  o.active_steps = 2;  // steps 1 and 2 recorded, then the window is done
  cuscope_test::Session session(o);
  std::uint64_t steps = 0;
  {
    CUSCOPE_SCOPE("main");
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while ((steps = cuscope::snapshot().steps) < 4 && std::chrono::steady_clock::now() < deadline) {
      CUSCOPE_SCOPE("work");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  REQUIRE(steps >= 4);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.recorded_steps == 2);
  CHECK(paths(r) == std::vector<std::string>{"main", "main/work"});
  REQUIRE(r.find("main") != nullptr);
  CHECK(r.find("main")->calls == 1);
  CHECK(r.find("main/work")->calls >= 1);
  CHECK(r.notes.empty());
  // The report says whose steps they were: every one the clock's.
  CHECK(r.clock_steps == r.steps);
  CHECK(r.step_ms == 50);
  const std::string table = cuscope::format_table(r);
  CHECK(table.find(" — steps " + std::to_string(r.recorded_steps) + "/" + std::to_string(r.steps) +
                   " (ended by cuscope's clock every 50 ms)") != std::string::npos);
}

// The program steps itself: the clock's steps stop at once, for good, and a note says after which
// step; the program's steps go on counting.
TEST_CASE("the program's first step() stops CUSCOPE_STEP_MS's steps, with a note",
          "[session][window][step_ms]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.step_ms = 5;
  cuscope_test::Session session(o);
  REQUIRE(wait_for_steps(2) >= 2);
  cuscope::step();
  const std::uint64_t after = cuscope::snapshot().steps;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // twenty of the clock's steps
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == after);
  CHECK(has_note(r,
                 "cuscope::step() was called: the program marks its own steps, so those CUSCOPE_STEP_MS=5 "
                 "ended every 5 ms stop after step " +
                     std::to_string(after - 1)));
  cuscope::step();
  const cuscope::Report later = cuscope::snapshot();
  CHECK(later.steps == after + 1);
  CHECK(later.clock_steps == after - 1);  // the clock's, then the program's two
  CHECK(later.step_ms == 5);
  CHECK(cuscope::format_table(later).find(" (" + std::to_string(after - 1) +
                                          " ended by cuscope's clock every 5 ms)") != std::string::npos);
}

// A step() without CUSCOPE_STEP_MS says nothing; a value out of range ends no step, with a note.
TEST_CASE("step_ms out of range ends no step, with a note, and step() without it says nothing",
          "[session][window][step_ms]") {
  {
    cuscope_test::Session session(cuscope_test::quiet_options());
    cuscope::step();
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.notes.empty());
    CHECK(r.clock_steps == 0);  // the program's own
    CHECK(r.step_ms == 0);
    CHECK(cuscope::format_table(r).find("cuscope's clock") == std::string::npos);
  }
  cuscope::Options o = cuscope_test::quiet_options();
  o.step_ms = 86'400'001;
  cuscope_test::Session session(o);
  CHECK(cuscope::current_options().step_ms == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 0);
  CHECK(r.notes ==
        std::vector<std::string>{
            "Options::step_ms=86400001 is out of range [0, 86400000]; cuscope ends no step itself"});
}

// Trace mode: the clock's steps are in the trace's summary, so a replay says the same as the exit
// report (replay_as_exit compares the two JSONs to the byte).
TEST_CASE("a trace replays the steps the clock ended, and says whose they were",
          "[session][step_ms][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("clock_steps.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("clock_steps.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.step_ms = 5;
  std::uint64_t steps = 0;
  {
    cuscope_test::Session session(o);
    REQUIRE(wait_for_steps(3) >= 3);
    cuscope::shutdown();
    steps = cuscope::snapshot().steps;
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(replayed.steps == steps);
  CHECK(replayed.clock_steps == steps);
  CHECK(replayed.step_ms == 5);
}

// fork() while the stepper runs: the child has no stepper (threads do not survive fork), and its
// scopes, step() and exit handlers do nothing (cuscope is off in a child): it exits at once, without
// taking a lock of the session's that the stepper may have held at the fork. The parent's clock goes
// on ending steps.
TEST_CASE("a child forked while the clock ends steps exits at once, and the parent's steps go on",
          "[session][window][step_ms][fork]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.step_ms = 5;
  cuscope_test::Session session(o);
  const std::uint64_t before = wait_for_steps(1);
  REQUIRE(before >= 1);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    { CUSCOPE_SCOPE("in_child"); }
    cuscope::step();
    std::exit(0);  // the exit handlers run: shutdown() must not wait for a stepper
  }
  int status = 0;
  if (cuscope_test::wait_child(child, &status) == 0) FAIL("the forked child did not exit within 5 s");
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  CHECK(wait_for_steps(before + 2) >= before + 2);
  CHECK(cuscope::snapshot().find("in_child") == nullptr);
}

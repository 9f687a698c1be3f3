// A recorded scope still open when the step window closes (producers/suspended_frames.hpp): from
// the thread's first scope outside the window its frames are suspended, so that the stretch until
// the next window is not in their host time; the thread's first recorded scope there resumes them;
// one that exits outside a window closes at the window's end. Each stays one call. A thread that
// enters no scope between two windows is caught up at its next exit; a trace replays
// the same report to the byte. Without it `main` entered in CUSCOPE_WHOLE_MS's whole start counted
// every wait of the run in its host and self time.
// The lifetimes real programs have (many threads, another thread's steps, thread_local destructors,
// fork) are test_suspended_threads.cpp's.
// Never here: a GPU, or a check that a step took a given time: each case sleeps outside the windows
// (a slow machine makes that longer, never shorter) and takes its quick steps well inside them.
#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>

#include "fake_cuda.hpp"
#include "session_fixture.hpp"
#include "suspended_kit.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::calls;
using namespace suspended_kit;

// `main` entered in a recorded step and open through two waits, each with a scope and a sleep in it,
// and a window between them; it exits in the second wait. `scope_in_waits` false: the waits sleep
// outside every scope.
Measured main_across_waits(bool scope_in_waits) {
  Measured m;
  const auto wait_outside = [&] {
    if (scope_in_waits) {
      CUSCOPE_SCOPE("idle");
      sleep_outside(&m.slept);
    } else {
      sleep_outside(&m.slept);
    }
  };
  cuscope::step();  // step 0, a wait, ends: step 1 is recorded
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("main");
    { CUSCOPE_SCOPE("work"); }
    cuscope::step();  // step 1 ends: a wait
    wait_outside();
    cuscope::step();  // step 2 ends: step 3 is recorded
    { CUSCOPE_SCOPE("work"); }
    cuscope::step();  // step 3 ends: a wait, in which main exits
    wait_outside();
  }
  m.elapsed = ns_since(t);
  return m;
}

// `main` entered in a recorded step, across a wait (with a scope: it suspends `main`), a window in
// which the thread enters no scope (`quiet` of it measured) and another wait (with a scope); it
// exits in the next window (`exit_in_window`) or in that wait.
struct QuietMeasured : Measured {
  std::uint64_t quiet = 0;
};
QuietMeasured main_across_quiet_window(bool exit_in_window) {
  QuietMeasured m;
  cuscope::step();  // into step 1, recorded
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("main");
    cuscope::step();  // step 1 ends: a wait
    {
      CUSCOPE_SCOPE("idle");  // suspends `main`
      sleep_outside(&m.slept);
    }
    cuscope::step();  // step 3, recorded: no scope entered in it
    const Clock::time_point quiet = Clock::now();
    std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs / 2));
    m.quiet = ns_since(quiet);
    cuscope::step();  // step 3 ends: a wait
    {
      CUSCOPE_SCOPE("idle");
      sleep_outside(&m.slept);
    }
    if (exit_in_window) cuscope::step();  // step 5, recorded: `main` resumes at its exit
  }
  m.elapsed = ns_since(t);
  return m;
}

}  // namespace

TEST_CASE("a recorded scope open across the waits counts none of them: one call, its recorded time",
          "[session][window][suspended]") {
  cuscope_test::Session session(every_other());
  const Measured m = main_across_waits(true);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/work") == 2);
  CHECK(r.find("main/idle") == nullptr);           // outside the window
  CHECK(host_ns(r, "main") < m.recorded_bound());  // neither sleep outside in it
  CHECK(host_ns(r, "main") >= host_ns(r, "main/work"));
  CHECK(r.diagnostics.outside_window_scopes == 2);
  check_all_closed(r);
}

TEST_CASE("a thread that enters no scope between two windows counts none of that stretch either",
          "[session][window][suspended]") {
  cuscope_test::Session session(every_other());
  const Measured m = main_across_waits(false);  // caught up at `work`'s exit, suspended at main's
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/work") == 2);
  CHECK(host_ns(r, "main") < m.recorded_bound());  // neither sleep
  CHECK(host_ns(r, "main") >= host_ns(r, "main/work"));
  CHECK(r.diagnostics.outside_window_scopes == 0);
  check_all_closed(r);
}

TEST_CASE(
    "a window in which the thread enters no scope counts in its suspended scopes, only the "
    "stretches between windows are left out",
    "[session][window][suspended]") {
  const bool exit_in_window = GENERATE(true, false);  // else in the next wait
  cuscope_test::Session session(every_other());
  const QuietMeasured m = main_across_quiet_window(exit_in_window);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "main") == 1);
  CHECK(host_ns(r, "main") >= m.quiet);            // the quiet window counts
  CHECK(host_ns(r, "main") < m.recorded_bound());  // neither wait's sleep
  check_all_closed(r);
}

TEST_CASE("a suspended scope that exits in the next window counts from the window's start again",
          "[session][window][suspended]") {
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  Measured m;
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("main");
    {
      CUSCOPE_SCOPE("phase");  // open across the wait too, nested
      cuscope::step();         // a wait
      {
        CUSCOPE_SCOPE("idle");
        sleep_outside(&m.slept);
      }
      cuscope::step();  // step 3, recorded: phase and main exit in it, with nothing entered first
    }
  }
  m.elapsed = ns_since(t);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/phase") == 1);
  CHECK(host_ns(r, "main/phase") < m.recorded_bound());
  CHECK(host_ns(r, "main") < m.recorded_bound());
  CHECK(host_ns(r, "main") >= host_ns(r, "main/phase"));
  check_all_closed(r);
}

TEST_CASE(
    "a scope recorded in CUSCOPE_WHOLE_MS's whole start and open for the run counts only its "
    "recorded time",
    "[session][window][suspended][whole_ms]") {
  cuscope::Options o = every_other();
  o.whole_ms = 50;
  cuscope_test::Session session(o);
  Measured m;
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("main");  // the whole start
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    for (int i = 0; i < 4; ++i) {
      {
        CUSCOPE_SCOPE("step");
        if (i % 2 == 1) sleep_outside(&m.slept);  // steps 1 and 3 are the window's waits (0 ended the start)
      }
      cuscope::step();
    }
  }
  m.elapsed = ns_since(t);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.recorded_steps == 2);  // the whole start's step 0, and step 2
  CHECK(calls(r, "main") == 1);
  CHECK(calls(r, "main/step") == 2);
  CHECK(host_ns(r, "main") >= 100'000'000);        // the whole start
  CHECK(host_ns(r, "main") < m.recorded_bound());  // not a wait
}

TEST_CASE("a trace replays suspended scopes to the same report", "[session][window][suspended][trace]") {
  // Across two waits; across a quiet window, exiting in the next window or in a wait.
  const int scenario = GENERATE(0, 1, 2);
  const std::string trace_path = cuscope_test::trace_kit::temp_path("suspended.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("suspended.json");
  QuietMeasured m;
  {
    cuscope_test::Session session(every_other(cuscope_test::replayable_options(trace_path, json_path)));
    if (scenario == 0) {
      static_cast<Measured&>(m) = main_across_waits(true);
    } else {
      m = main_across_quiet_window(scenario == 1);
    }
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(calls(replayed, "main") == 1);
  CHECK(host_ns(replayed, "main") >= m.quiet);
  CHECK(host_ns(replayed, "main") < m.recorded_bound());
}

TEST_CASE("nested scopes caught up together each lose only the stretches since their own start",
          "[session][window][suspended]") {
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  Measured outer, inner;
  std::uint64_t in_windows = 0;  // inner's time in windows 3 and 5, at least
  const auto quiet_in_window = [&in_windows] {
    const Clock::time_point w = Clock::now();
    std::this_thread::sleep_for(std::chrono::nanoseconds(kSleepNs / 4));
    in_windows += ns_since(w);
  };
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("outer");
    cuscope::step();  // a wait, with no scope on this thread
    sleep_outside(&outer.slept);
    cuscope::step();  // step 3, recorded
    const Clock::time_point u = Clock::now();
    {
      CUSCOPE_SCOPE("inner");  // after the first wait: only the second is its
      quiet_in_window();
      cuscope::step();  // a wait, with no scope on this thread
      sleep_outside(&inner.slept);
      cuscope::step();  // step 5, recorded
      quiet_in_window();
    }  // the first exit since two windows closed: both frames caught up
    inner.elapsed = ns_since(u);
  }
  outer.elapsed = ns_since(t);
  outer.slept += inner.slept;
  const cuscope::Report r = cuscope::snapshot();
  CHECK(host_ns(r, "outer/inner") >= in_windows);
  CHECK(host_ns(r, "outer/inner") < inner.recorded_bound());
  CHECK(host_ns(r, "outer") >= host_ns(r, "outer/inner"));
  CHECK(host_ns(r, "outer") < outer.recorded_bound());
  check_all_closed(r);
}

TEST_CASE(
    "a stream scope open across a wait has no CUDA-event time, counted in a note, and its children "
    "in the windows keep theirs",
    "[session][window][suspended][gpu_events]") {
  const bool by_switch = GENERATE(false, true);  // the wait: recording switched off, else a wait step
  cuscope_test::FakeCuda cuda;                   // events complete when recorded, at the fake device clock
  cuscope::Options o = every_other();            // CUSCOPE_EVENTS=always
  o.activities = false;
  cuscope_test::Session session(o);
  cuscope::step();  // into step 1, recorded
  {
    CUSCOPE_SCOPE("main", cuscope_test::FakeCuda::stream(0));
    cuda.advance_ns(1'000);
    if (by_switch) {
      cuscope::set_enabled(false);
    } else {
      cuscope::step();  // step 1 ends: a wait
    }
    {
      CUSCOPE_SCOPE("idle");       // suspends `main` (in a wait step)
      cuda.advance_ns(5'000'000);  // the wait's GPU work: a pair around `main` would count it
    }
    if (by_switch) {
      cuscope::set_enabled(true);
    } else {
      cuscope::step();  // step 2 ends: step 3 is recorded
    }
    {
      CUSCOPE_SCOPE("work", cuscope_test::FakeCuda::stream(0));
      cuda.advance_ns(2'000);
    }
  }
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("main") != nullptr);
  CHECK(r.find("main")->calls == 1);
  CHECK(r.find("main")->gpu.count == 0);  // left out, not 5,003,000 ns
  CHECK(r.find("main")->gpu.total_ns == 0);
  REQUIRE(r.find("main/work") != nullptr);
  CHECK(r.find("main/work")->gpu.count == 1);
  CHECK(r.find("main/work")->gpu.total_ns == 2'000);
  CHECK(r.diagnostics.gpu_event_failures == 0);  // a choice, not a failure
  CHECK(std::count(r.notes.begin(), r.notes.end(),
                   "CUDA-event time left out of 1 scope open across a wait between step windows (or "
                   "recording switched off): a pair of CUDA events would have counted the GPU work in "
                   "between in its GPU time (docs/options.md, the step window)") == 1);
}

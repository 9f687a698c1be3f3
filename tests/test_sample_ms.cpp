// CUSCOPE_WHOLE_MS (Options::whole_ms) and CUSCOPE_SAMPLE_MS (Options::sample_ms): every step
// recorded until the first that ends that long after the start, then the step window; the sample's
// window as start() sets it (a window given with it replaced, with a note; step_ms and whole_ms kept
// where given), the clock's steps it gives a program that never calls step(), stopped without a note
// at the program's first step(); CUPTI traced for the whole start, detached after it and attached
// again for each sampled step (fakes stand for CUPTI); values out of range, and a whole start without
// a window, one note each; the environment's values read.
// Never here: a GPU, or a check that a step took a given time: each case only sleeps past the whole
// start or the wait (a slow machine makes them last longer, never shorter), and takes its quick steps
// well inside them.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>
#include <vector>

#include "detach_fixture.hpp"
#include "producers/cupti/detach.hpp"
#include "session/internal.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope_test::calls;
using cuscope_test::work_steps;

constexpr std::uint32_t kWholeMs = 400;
constexpr std::uint32_t kDay = 86'400'000;  // a clock step the case never reaches

void past(std::uint32_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms + 50)); }

// Wait 1, active 1, without end: after the whole start, every other step is recorded.
cuscope::Options whole_then_window(std::uint32_t whole_ms) {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  o.whole_ms = whole_ms;
  return o;
}

// The options start() settled on (the session's own).
cuscope::Options settled() {
  cuscope::detail::Session& s = cuscope::detail::session();
  std::lock_guard lock(s.lifecycle_mutex);
  return s.options;
}

}  // namespace

TEST_CASE("CUSCOPE_WHOLE_MS records every step until the first that ends that long after the start",
          "[session][window][whole_ms]") {
  cuscope_test::Session session(whole_then_window(kWholeMs));
  work_steps(6);  // steps 0-5, well within kWholeMs: all recorded, as without a window
  cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 6);
  CHECK(r.recorded_steps == 6);
  CHECK(calls(r, "work") == 6);
  CHECK(r.window_start_step == 0);  // recorded from the first step
  past(kWholeMs);
  work_steps(1);  // step 6 is still whole (recorded); it ends past kWholeMs: the window's first step next
  r = cuscope::snapshot();
  CHECK(r.recorded_steps == 7);
  CHECK(calls(r, "work") == 7);
  work_steps(4);  // the window: wait, recorded, wait, recorded
  r = cuscope::snapshot();
  CHECK(r.steps == 11);
  CHECK(r.recorded_steps == 9);
  CHECK(calls(r, "work") == 9);
  CHECK(r.notes.empty());
}

// Without it the same window begins at the start: its first step waits.
TEST_CASE("without CUSCOPE_WHOLE_MS the window begins at the first step", "[session][window][whole_ms]") {
  cuscope_test::Session session(whole_then_window(0));
  work_steps(6);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.recorded_steps == 3);
  CHECK(calls(r, "work") == 3);
}

TEST_CASE("whole_ms out of range, or without a window that leaves steps out, is one note",
          "[session][window][whole_ms][options]") {
  SECTION("out of range: the window from the start") {
    cuscope_test::Session session(whole_then_window(kDay + 1));
    work_steps(4);
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.recorded_steps == 2);
    CHECK(r.notes == std::vector<std::string>{"Options::whole_ms=86400001 is out of range [0, 86400000]; the "
                                              "step window begins at the start"});
  }
  SECTION("no window: every step recorded") {
    cuscope::Options o = cuscope_test::quiet_options();
    o.whole_ms = 1000;
    cuscope_test::Session session(o);
    work_steps(3);
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.recorded_steps == 3);
    CHECK(r.notes == std::vector<std::string>{
                         "Options::whole_ms=1000 needs a step window that leaves steps out (wait_steps, "
                         "warmup_steps or active_steps > 0): every step is recorded already; ignored"});
  }
}

TEST_CASE(
    "CUSCOPE_SAMPLE_MS sets the window: the start whole, then one step every so often, detached between",
    "[session][window][sample_ms][options]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.sample_ms = 10'000;
  SECTION("alone") {
    cuscope_test::Session session(o);
    const cuscope::Options s = settled();
    CHECK(s.whole_ms == 10'000);
    CHECK(s.wait_steps == 1);
    CHECK(s.wait_ms == 10'000);
    CHECK(s.warmup_steps == 1);
    CHECK(s.active_steps == 1);
    CHECK(s.repeat == 0);
    CHECK(s.detach_between);
    CHECK(s.step_ms == 100);  // a tenth of sample_ms, at most 100
    CHECK(cuscope::snapshot().notes.empty());
  }
  SECTION("with a whole start and clock steps of the program's") {
    o.whole_ms = 60'000;
    o.step_ms = 500;
    cuscope_test::Session session(o);
    CHECK(settled().whole_ms == 60'000);
    CHECK(settled().step_ms == 500);
  }
  SECTION("with a window of the program's: replaced, one note") {
    o.wait_steps = 9;
    o.active_steps = 2;
    cuscope_test::Session session(o);
    CHECK(settled().wait_steps == 1);
    CHECK(settled().active_steps == 1);
    CHECK(cuscope::snapshot().notes ==
          std::vector<std::string>{
              "Options::sample_ms=10000 sets the step window itself (wait_steps 1, wait_ms 10000, "
              "warmup_steps 1, "
              "active_steps 1, repeat 0): the window given with it (wait_steps 9, wait_ms 0, warmup_steps 0, "
              "active_steps 2, repeat 1) is not used"});
  }
  SECTION("out of range: every step recorded") {
    o.sample_ms = kDay + 1;
    cuscope_test::Session session(o);
    work_steps(3);
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.recorded_steps == 3);
    CHECK(settled().wait_steps == 0);
    CHECK(r.notes ==
          std::vector<std::string>{"Options::sample_ms=86400001 is out of range [0, 86400000]; every "
                                   "step is recorded as without it"});
  }
}

TEST_CASE("the clock steps of CUSCOPE_SAMPLE_MS are a tenth of it, from 1 to 100 ms", "[window][sample_ms]") {
  using cuscope::detail::sample_step_ms;
  CHECK(sample_step_ms(1) == 1);
  CHECK(sample_step_ms(50) == 5);
  CHECK(sample_step_ms(1000) == 100);
  CHECK(sample_step_ms(kDay) == 100);
}

// The program's steps under a sample: recorded whole until one ends past sample_ms, then a wait of at
// least sample_ms (its step taken again until then), a warm-up step and a recorded one.
TEST_CASE("a sampled program records its start whole, then a step after each wait of sample_ms",
          "[session][window][sample_ms]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.sample_ms = kWholeMs;
  o.step_ms = kDay;  // no clock step within the case
  // No CUPTI, on a GPU machine too (tests/gpu-check.sh runs this suite there): its detach, asked for
  // at the whole start's end, would be called off by a wait this short, with a note of its own (the
  // fakes' case below and the GPU case detach for real).
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session(o);
  work_steps(5);  // whole
  past(kWholeMs);
  work_steps(1);  // the last whole step: 6 recorded
  work_steps(5);  // the wait, its step taken again
  cuscope::Report r = cuscope::snapshot();
  CHECK(r.recorded_steps == 6);
  CHECK(calls(r, "work") == 6);
  CHECK(r.window_start_step == 0);  // recorded from the first step
  past(kWholeMs);
  work_steps(3);  // the wait ends; the warm-up step; the recorded step
  r = cuscope::snapshot();
  CHECK(r.steps == 14);
  CHECK(r.recorded_steps == 7);
  CHECK(calls(r, "work") == 7);
  CHECK(r.clock_steps == 0);
  // The clock's steps were the program's own choice (step_ms): their stop at its first step() is said.
  CHECK(r.notes ==
        std::vector<std::string>{"cuscope::step() was called: the program marks its own steps, so "
                                 "those CUSCOPE_STEP_MS=86400000 ended every 86400000 ms stop after "
                                 "step 0"});
}

// Where the clock's steps are the sample's own, the program's first step() stops them unsaid: a
// program that marks its steps has nothing to change.
TEST_CASE("the program's first step() stops the sample's clock steps without a note",
          "[session][sample_ms]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.sample_ms = 10'000;  // clock steps of 100 ms
  cuscope_test::Session session(o);
  work_steps(3);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps - r.clock_steps == 3);  // a clock step may come first on a slow machine
  CHECK(r.notes.empty());
}

// Trace mode: a sampled session's trace replays to its exit report to the byte (the whole start's
// steps recorded from the first mark on, the window's after it), with a scope open throughout.
TEST_CASE("a sampled session's trace replays to its exit report", "[session][sample_ms][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("sampled.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("sampled.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.sample_ms = kWholeMs;
  o.step_ms = kDay;
  {
    cuscope_test::Session session(o);
    {
      CUSCOPE_SCOPE("main");  // entered in the whole start, open across the windows
      work_steps(3);
      past(kWholeMs);
      work_steps(3);  // the last whole step, then the wait's step again
      past(kWholeMs);
      work_steps(3);  // the wait ends, the warm-up step, the recorded step
    }
    cuscope::shutdown();
  }
  const cuscope::Report r = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(r.steps == 9);
  CHECK(r.recorded_steps == 5);
  CHECK(calls(r, "main/work") == 5);
  CHECK(calls(r, "main") == 1);
}

namespace {
using namespace cuscope_test::detach;
}  // namespace

// The sample with fakes standing for CUPTI: traced from the start (nothing deferred: the whole start
// records), detached once the whole start's records are in, attached again at the warm-up step.
TEST_CASE("a sample keeps CUPTI attached through the whole start, then detaches it until the next sample",
          "[session][window][sample_ms][tracing][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.sample_ms = kWholeMs;
  o.step_ms = kDay;
  CHECK_FALSE(cuscope::detail::defers_attach([&] {
    cuscope::Options s = o;
    cuscope::detail::settle_window_options(s);
    return s;
  }()));
  FakeCuptiSession traced(o);
  cuscope::detail::set_detach_wait_for_testing(50'000'000);  // the records in after 50 ms
  cuscope::step();
  cuscope::step();
  CHECK(logged().empty());  // whole: tracing, no switch
  past(kWholeMs);
  cuscope::step();  // the whole start ends: paused, then detached
  detach_made();
  CHECK(cuscope::snapshot().activity_status.ends_with(", detached between step windows until the next one"));
  past(kWholeMs);
  cuscope::step();  // the wait ends: the warm-up step attaches CUPTI again
  CHECK(cuscope::detail::detach_stage() == cuscope::detail::DetachStage::none);
  CHECK(cuscope::snapshot().activity_status ==
        "on (fake CUPTI), detached between step windows and attached again 1 time, paused outside the step "
        "window");
  const std::vector<std::string> log = without_normal_flushes(logged());
  CHECK(log == with(with(kPause, without_normal_flushes(kDetach)), {"attach"}));
  CHECK(cuscope::snapshot().notes.size() == 1);  // the program's step_ms stopped (above)
}

namespace {
const char* g_value = nullptr;  // what the lookup below answers for g_name
const char* g_name = nullptr;

cuscope::Options read(const char* name, const char* value, std::vector<cuscope::OptionError>* errors) {
  g_name = name;
  g_value = value;
  return cuscope::options_from(
      [](const char* n) -> const char* { return std::strcmp(n, g_name) == 0 ? g_value : nullptr; },
      cuscope::Options{}, errors);
}
}  // namespace

TEST_CASE("CUSCOPE_WHOLE_MS and CUSCOPE_SAMPLE_MS are read from the environment, bad values kept out",
          "[options][whole_ms][sample_ms]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(read("CUSCOPE_WHOLE_MS", "30000", &errors).whole_ms == 30'000);
  CHECK(read("CUSCOPE_SAMPLE_MS", "10000", &errors).sample_ms == 10'000);
  CHECK(errors.empty());
  CHECK(read("CUSCOPE_SAMPLE_MS", "often", &errors).sample_ms == 0);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_SAMPLE_MS");
  errors.clear();
  CHECK(read("CUSCOPE_WHOLE_MS", "86400001", &errors).whole_ms == 0);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_WHOLE_MS");
}

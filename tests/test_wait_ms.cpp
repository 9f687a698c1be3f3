// CUSCOPE_WAIT_MS (Options::wait_ms): a wait of the step window that lasts at least so long, its
// last wait step taken again at each step() until then, so that a repeated window records one step
// every so often whatever a step takes; the environment's value read and judged; a value out of
// range, or without wait steps, one note and waits that count steps only.
// Never here: a GPU, or a check that a step took a given time: each case only sleeps past the wait
// (a slow machine makes a wait last longer, never shorter), and takes its quick steps well inside it.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>
#include <vector>

#include "session_fixture.hpp"

namespace {

using cuscope_test::calls;
using cuscope_test::work_steps;

constexpr std::uint32_t kWaitMs = 400;

// `wait` wait steps, then one recorded, without end; each wait at least `wait_ms` (0: steps only).
cuscope::Options repeated_window(std::uint32_t wait, std::uint32_t wait_ms) {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = wait;
  o.active_steps = 1;
  o.repeat = 0;
  o.wait_ms = wait_ms;
  return o;
}

void past_the_wait() { std::this_thread::sleep_for(std::chrono::milliseconds(kWaitMs + 50)); }

}  // namespace

// Wait 2, active 1, repeat 0, each wait at least kWaitMs: the first wait step counts as without
// CUSCOPE_WAIT_MS; its last is taken again until kWaitMs have passed since the wait began (the
// session's start, then each window's end), so the quick steps record nothing, and the first step
// past it is the window's.
TEST_CASE("a wait of CUSCOPE_WAIT_MS takes its last step again until it has lasted that long",
          "[session][window][wait_ms]") {
  cuscope_test::Session session(repeated_window(2, kWaitMs));
  work_steps(6);  // steps 0-5, all in the first wait (well within kWaitMs)
  cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 6);
  CHECK(r.recorded_steps == 0);
  CHECK(calls(r, "work") == 0);
  past_the_wait();
  work_steps(1);  // step 6 ends the wait: it was its last step, and the wait has lasted
  work_steps(1);  // step 7 is the window's: recorded; its end begins the next wait
  r = cuscope::snapshot();
  CHECK(r.recorded_steps == 1);
  CHECK(calls(r, "work") == 1);
  work_steps(5);  // steps 8-12: the next wait's first step, then its last again and again
  r = cuscope::snapshot();
  CHECK(r.steps == 13);
  CHECK(r.recorded_steps == 1);
  CHECK(calls(r, "work") == 1);
  past_the_wait();
  work_steps(2);  // the wait ends, then the window's step
  r = cuscope::snapshot();
  CHECK(r.recorded_steps == 2);
  CHECK(calls(r, "work") == 2);
  CHECK(r.notes.empty());
}

// Without CUSCOPE_WAIT_MS the same window counts steps only: every third step is recorded.
TEST_CASE("without CUSCOPE_WAIT_MS a wait counts steps only", "[session][window][wait_ms]") {
  cuscope_test::Session session(repeated_window(2, 0));
  work_steps(9);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.recorded_steps == 3);
  CHECK(calls(r, "work") == 3);
}

TEST_CASE("wait_ms out of range, or without wait steps, is one note, and waits count steps only",
          "[session][window][wait_ms][options]") {
  cuscope::Options o = repeated_window(1, 0);
  SECTION("out of range") {
    o.wait_ms = 86'400'001;
    cuscope_test::Session session(o);
    work_steps(4);  // every other step recorded
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.recorded_steps == 2);
    CHECK(r.notes == std::vector<std::string>{
                         "Options::wait_ms=86400001 is out of range [0, 86400000]; waits count steps only"});
  }
  SECTION("no wait steps") {
    o.wait_steps = 0;
    o.repeat = 1;
    o.active_steps = 0;  // every step recorded
    o.wait_ms = 1000;
    cuscope_test::Session session(o);
    work_steps(3);
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.recorded_steps == 3);
    CHECK(r.notes == std::vector<std::string>{
                         "Options::wait_ms=1000 needs wait_steps > 0 (a wait to make last); ignored"});
  }
}

namespace {
const char* g_wait_ms = nullptr;  // what the lookup below answers for CUSCOPE_WAIT_MS
}  // namespace

TEST_CASE("CUSCOPE_WAIT_MS is read from the environment, a bad value kept out with an error",
          "[options][wait_ms]") {
  const auto read = [](const char* value, std::vector<cuscope::OptionError>* errors) {
    g_wait_ms = value;
    return cuscope::options_from(
        [](const char* name) -> const char* {
          return std::string(name) == "CUSCOPE_WAIT_MS" ? g_wait_ms : nullptr;
        },
        cuscope::Options{}, errors);
  };
  std::vector<cuscope::OptionError> errors;
  CHECK(read("10000", &errors).wait_ms == 10000);
  CHECK(errors.empty());
  CHECK(read("soon", &errors).wait_ms == 0);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_WAIT_MS");
  errors.clear();
  CHECK(read("86400001", &errors).wait_ms == 0);
  CHECK(errors.size() == 1);
}

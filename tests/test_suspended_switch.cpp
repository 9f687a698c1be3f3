// A recorded scope open across recording switched off (cuscope::set_enabled(false), then true):
// the switch counts as a step window's end and the next as its start (producers/window_edges.hpp),
// so that the stretch off is not in the scope's host time, on its own thread or a quiet one, live
// and replayed from a trace, in a step window that repeats, and in a session started with recording
// off; one that exits while recording is off closes at the switch. Without it such a scope counted
// all the time recording was off.
// Never here: a GPU, or a check that a call took a given time (suspended_kit.hpp).
#include <atomic>
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

// Sleeps `ns` with recording on: the nanoseconds it took, added to `*on`.
void sleep_on(std::uint64_t ns, std::uint64_t* on) {
  const Clock::time_point t = Clock::now();
  std::this_thread::sleep_for(std::chrono::nanoseconds(ns));
  *on += ns_since(t);
}

// Recording switched off for a sleep, then on again unless `exit_while_off`: what `scope`'s caller
// measures. Called with `scope` open on this thread or another.
void switch_off_and_on(bool exit_while_off, Measured* m, std::uint64_t* on) {
  cuscope::set_enabled(false);
  sleep_outside(&m->slept);
  if (exit_while_off) return;
  cuscope::set_enabled(true);
  sleep_on(kSleepNs / 4, on);
}

struct Case {
  Measured m;
  std::uint64_t on = 0;  // slept with recording on, inside the scope: a floor of its host time
  void check(const cuscope::Report& r) const {
    CHECK(calls(r, "train") == 1);
    CHECK(host_ns(r, "train") >= on);
    CHECK(host_ns(r, "train") < m.recorded_bound());  // not the time off
    check_all_closed(r);
  }
};

// `train` open across the switches on the thread that makes them, or (`quiet`) on a thread that does
// nothing meanwhile.
Case across_switch(bool quiet, bool exit_while_off) {
  Case c;
  if (!quiet) {
    const Clock::time_point t = Clock::now();
    {
      CUSCOPE_SCOPE("train");
      sleep_on(kSleepNs / 4, &c.on);
      switch_off_and_on(exit_while_off, &c.m, &c.on);
    }
    c.m.elapsed = ns_since(t);
    return c;
  }
  std::latch entered(1), release(1);
  std::thread worker([&] {
    const Clock::time_point t = Clock::now();
    {
      CUSCOPE_SCOPE("train");
      entered.count_down();
      release.wait();
    }
    c.m.elapsed = ns_since(t);
  });
  entered.wait();
  sleep_on(kSleepNs / 4, &c.on);
  switch_off_and_on(exit_while_off, &c.m, &c.on);
  release.count_down();
  worker.join();
  return c;
}

}  // namespace

TEST_CASE("a scope open while recording is switched off and on again counts only its time on",
          "[session][enabled][suspended][threads]") {
  const bool quiet = GENERATE(false, true);  // else on the thread that switches
  const bool exit_while_off = GENERATE(false, true);
  cuscope_test::Session session;
  const Case c = across_switch(quiet, exit_while_off);
  c.check(cuscope::snapshot());
}

TEST_CASE("a scope open across a switch off in a step window that repeats counts only its time on",
          "[session][enabled][suspended][window]") {
  // Off in step 1 (recorded), on again in step 3 (recorded): the wait step between is off too.
  cuscope_test::Session session(every_other());
  cuscope::step();  // into step 1, recorded
  Case c;
  const Clock::time_point t = Clock::now();
  {
    CUSCOPE_SCOPE("train");
    sleep_on(kSleepNs / 4, &c.on);
    cuscope::set_enabled(false);
    sleep_outside(&c.m.slept);
    cuscope::step();  // a wait
    sleep_outside(&c.m.slept);
    cuscope::step();  // step 3, recorded once switched on
    sleep_outside(&c.m.slept);
    cuscope::set_enabled(true);
    sleep_on(kSleepNs / 4, &c.on);
  }
  c.m.elapsed = ns_since(t);
  c.check(cuscope::snapshot());
}

TEST_CASE("a session started with recording off counts a scope across its later switches by their time on",
          "[session][enabled][suspended]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.enabled = false;
  cuscope_test::Session session(o);
  cuscope::set_enabled(true);
  const Case c = across_switch(false, false);
  c.check(cuscope::snapshot());
}

TEST_CASE("a trace replays a scope open across recording switched off to the same report",
          "[session][enabled][suspended][trace]") {
  const bool quiet = GENERATE(false, true);
  const std::string trace_path = cuscope_test::trace_kit::temp_path("switch.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("switch.json");
  Case c;
  {
    cuscope_test::Session session(cuscope_test::replayable_options(trace_path, json_path));
    c = across_switch(quiet, false);
    c.check(cuscope::snapshot());
    cuscope::shutdown();
  }
  c.check(cuscope_test::trace_kit::replay_as_exit(trace_path, json_path));
}

TEST_CASE("scopes on 8 threads count only the time on while another thread switches recording 200 times",
          "[session][enabled][suspended][threads]") {
  constexpr int kThreads = 8, kSwitches = 200;
  cuscope_test::Session session;
  std::atomic<bool> done{false};
  std::latch entered(kThreads);
  // Recording on, at most: from each switch on's call (the first: before any `outer` entered) to the
  // end of the next switch off's.
  std::uint64_t on_at_most = 0;
  Clock::time_point on_since = Clock::now();
  std::vector<std::thread> threads;
  threads.reserve(kThreads);
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&] {
      CUSCOPE_SCOPE("outer");  // open across every switch
      entered.count_down();
      while (!done.load(std::memory_order_relaxed)) {
        CUSCOPE_SCOPE("inner");  // entered on or off, exited on or off
        std::this_thread::yield();
      }
    });
  entered.wait();
  for (int i = 0; i < kSwitches; ++i) {
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    cuscope::set_enabled(false);
    on_at_most += ns_since(on_since);
    std::this_thread::sleep_for(std::chrono::microseconds(800));
    on_since = Clock::now();
    cuscope::set_enabled(true);
  }
  std::this_thread::sleep_for(std::chrono::microseconds(200));
  done.store(true, std::memory_order_relaxed);
  for (std::thread& t : threads) t.join();
  on_at_most += ns_since(on_since);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(calls(r, "outer") == kThreads);
  CHECK(r.find("outer")->host.max_ns < on_at_most + kClockSlackNs);  // none of the 160 ms off
  check_all_closed(r);
}

// Recording switched off (set_enabled(false), CUSCOPE_ENABLE=0) as the model counts the calls the
// driver callbacks note outside every scope: outside the window while off, as in a wait step, and
// only in active steps while on; a trace replays each switch (its Recording record) to the same
// report. On a GPU CUPTI's pause turns these callbacks off; this session's fake CUPTI, which traces
// on, stands for a CUPTI that could not pause.
//
// Never here: a GPU, or a trace file left behind.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>

#include "noted_session.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/launch_notes.hpp"
#include "trace_kit.hpp"

using cuscope::detail::CallNote;
using cuscope_test::NotedSession;

namespace {

const cuscope::RangeStats& range(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* found = r.find(path);
  REQUIRE(found != nullptr);
  return *found;
}

// A synchronize outside every scope, noted now (its wait `ns` long): the clock then moves on before
// the caller's next switch reads it, so that a call made before a switch is before it even on a
// coarse clock (a window's edges are half-open: a call at the switch's own time is after it).
void wait_now(NotedSession& s, std::uint64_t correlation, std::uint64_t ns) {
  CallNote n;
  n.kind = CallNote::Kind::wait;
  n.correlation = correlation;
  n.start_ns = cuscope::detail::now_ns();
  n.end_ns = n.start_ns + ns;
  cuscope::detail::note_call(s.sink(), n);
  while (cuscope::detail::now_ns() <= n.start_ns) {
  }
}

}  // namespace

// Recording switched off (set_enabled(false)) leaves out what the program calls outside every scope
// meanwhile, as between step windows: its synchronizes count outside the window (counted, not
// lost), those before and after in "(unscoped)"; a trace replays the switches to the same report.
// On a GPU CUPTI's pause turns these callbacks off (the GPU case "recording switched off ..." sees
// none); they come where CUPTI could not pause, which this session's fake CUPTI stands for: without
// the switch in the model the middle synchronize landed in "(unscoped)".
TEST_CASE(
    "a synchronize outside every scope while recording is off counts outside the window, live and replayed",
    "[launch][calls][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("calls_off.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("calls_off.json");
  // The test notes the calls itself.
  const cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  {
    NotedSession s(o);
    wait_now(s, 801, 100);  // on
    cuscope::set_enabled(false);
    wait_now(s, 802, 300);  // off: outside
    {
      CUSCOPE_SCOPE("while_off");  // records nothing
    }
    cuscope::set_enabled(true);
    wait_now(s, 803, 50);  // on again
    s.kernels({});
    const cuscope::Report live = cuscope::snapshot();
    CHECK(range(live, "(unscoped)").self.sync_count == 2);
    CHECK(range(live, "(unscoped)").self.sync_ns == 150);
    CHECK(live.diagnostics.outside_window_records == 1);
    CHECK(live.diagnostics.unresolved_records == 0);
    CHECK(live.find("while_off") == nullptr);
    cuscope::detail::drain_launch_notes(s.sink());
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(range(replayed, "(unscoped)").self.sync_count == 2);
  CHECK(replayed.diagnostics.outside_window_records == 1);
}

// CUSCOPE_ENABLE=0 at the start: the session's first mark in its trace says recording is off, so
// the replay leaves the first synchronize out as live did.
TEST_CASE(
    "a session started with recording off leaves out the calls outside every scope until it is on, "
    "live and replayed",
    "[launch][calls][trace]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("calls_start_off.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("calls_start_off.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.enabled = false;  // CUSCOPE_ENABLE=0
  {
    NotedSession s(o);
    wait_now(s, 811, 100);  // off from the start: outside
    cuscope::set_enabled(true);
    wait_now(s, 812, 70);
    s.kernels({});
    const cuscope::Report live = cuscope::snapshot();
    CHECK(range(live, "(unscoped)").self.sync_count == 1);
    CHECK(range(live, "(unscoped)").self.sync_ns == 70);
    CHECK(live.diagnostics.outside_window_records == 1);
    cuscope::detail::drain_launch_notes(s.sink());
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(replayed.diagnostics.outside_window_records == 1);
}

// The switch and the step window together: outside every scope, a call counts only in an active
// step while recording is on. A switch in a wait step or after the last window changes nothing
// there, nor does one step that ends while off stop the window's step count; the replay agrees.
TEST_CASE(
    "recording switched in wait, active and later steps: calls outside every scope count only in "
    "active steps while on, live and replayed",
    "[launch][calls][trace][window]") {
  const std::string trace_path = cuscope_test::trace_kit::temp_path("calls_window_off.cuscope");
  const std::string json_path = cuscope_test::trace_kit::temp_path("calls_window_off.json");
  cuscope::Options o = cuscope_test::replayable_options(trace_path, json_path);
  o.enabled = false;
  o.wait_steps = 1;
  o.active_steps = 2;  // steps: wait, active, active, then after the window
  {
    NotedSession s(o);
    wait_now(s, 911, 1);         // wait step, off: outside
    cuscope::set_enabled(true);  // in the wait step: still outside
    wait_now(s, 912, 1);
    cuscope::step();       // active
    wait_now(s, 913, 10);  // counts
    cuscope::set_enabled(false);
    wait_now(s, 914, 1);
    cuscope::step();  // active, still off
    wait_now(s, 915, 1);
    cuscope::set_enabled(true);
    wait_now(s, 916, 20);  // counts
    cuscope::step();       // after the window
    wait_now(s, 917, 1);
    cuscope::set_enabled(false);
    cuscope::set_enabled(true);  // after the window: still outside
    wait_now(s, 918, 1);
    s.kernels({});
    const cuscope::Report live = cuscope::snapshot();
    CHECK(range(live, "(unscoped)").self.sync_count == 2);
    CHECK(range(live, "(unscoped)").self.sync_ns == 30);
    CHECK(live.diagnostics.outside_window_records == 6);
    CHECK(live.recorded_steps == 2);
    cuscope::detail::drain_launch_notes(s.sink());
    cuscope::shutdown();
  }
  const cuscope::Report replayed = cuscope_test::trace_kit::replay_as_exit(trace_path, json_path);
  CHECK(replayed.diagnostics.outside_window_records == 6);
  CHECK(replayed.recorded_steps == 2);
}

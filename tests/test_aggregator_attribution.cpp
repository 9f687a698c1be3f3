// The aggregator's attribution, on synthetic activity streams: a record goes by its correlation to
// the innermost range open at its launch, or to (unscoped); it waits for a correlation that comes
// later; and what cannot be placed (never correlated, outside the step window, an instance long
// overwritten, zero timestamps, kernels replayed for counters) is counted, never misattributed.
//
// Never: a session, a clock or a GPU; the model is fed by hand (tests/model_fixture.hpp).
#include <catch2/catch.hpp>
#include <cstdint>

#include "model_fixture.hpp"

using cuscope::CopyKind;
using cuscope::Report;
using namespace cuscope::model;

namespace {

using Fixture = cuscope_test::ModelFixture;

}  // namespace

TEST_CASE("a kernel belongs to the innermost range open at launch, and rolls up to parents", "[aggregator]") {
  Fixture f;
  auto step = f.begin("step");
  auto fwd = f.begin("forward");
  const auto c1 = f.launch(fwd.instance);
  f.end(fwd);
  const auto c2 = f.launch(step.instance);
  f.end(step);
  // Kernels complete after their scopes closed, in another order.
  f.kernel(c2, 500, 600);
  f.kernel(c1, 100, 300);

  const Report r = f.report();
  const auto* s = r.find("step");
  const auto* w = r.find("step/forward");
  REQUIRE(s != nullptr);
  REQUIRE(w != nullptr);
  CHECK(w->self.kernel_calls == 1);
  CHECK(w->self.kernel_ns == 200);
  CHECK(w->total.kernel_calls == 1);
  CHECK(s->self.kernel_calls == 1);
  CHECK(s->self.kernel_ns == 100);
  CHECK(s->total.kernel_calls == 2);
  CHECK(s->total.kernel_ns == 300);
  CHECK(r.find("(unscoped)") == nullptr);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("work launched outside every scope goes to (unscoped)", "[aggregator]") {
  Fixture f;
  f.kernel(f.launch(kNoInstance), 100, 150);
  MemcpyActivity m;
  m.correlation = f.launch(kNoInstance);
  m.start_ns = 200;
  m.end_ns = 300;
  m.bytes = 4096;
  m.kind = CopyKind::HtoD;
  f.agg.on(m);
  const Report r = f.report();
  const auto* u = r.find("(unscoped)");
  REQUIRE(u != nullptr);
  CHECK(u->calls == 0);
  CHECK(u->self.kernel_calls == 1);
  CHECK(u->self.gpu_busy_ns == 50);
  CHECK(u->total.memcpy[0].bytes == 4096);
  CHECK(r.root().children.size() == 1);
}

TEST_CASE("a kernel whose correlation arrives in a later batch waits and then resolves", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  f.end(a);
  f.kernel(77, 100, 200);  // correlation 77 not known yet
  CHECK(f.agg.pending() == 1);
  f.agg.settle();
  CHECK(f.agg.pending() == 1);
  f.agg.on(ExternalCorrelation{77, a.instance});
  f.agg.settle();
  CHECK(f.agg.pending() == 0);
  const Report r = f.report();
  CHECK(r.find("a")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("records whose correlation never arrives are counted as unresolved", "[aggregator]") {
  Fixture f;
  f.kernel(99, 100, 200);
  f.agg.settle(2);
  CHECK(f.agg.pending() == 1);
  f.agg.settle(2);
  CHECK(f.agg.pending() == 0);
  const Report r = f.report();
  CHECK(r.diagnostics.unresolved_records == 1);
  CHECK(r.find("(unscoped)") == nullptr);
}

TEST_CASE("all kernels of one graph launch go to the scope of the launch", "[aggregator]") {
  Fixture f;
  auto g = f.begin("graph");
  const auto c = f.launch(g.instance);
  f.end(g);
  for (std::uint64_t i = 0; i < 12; ++i)
    f.kernel(c, 1000 + i * 10, 1005 + i * 10, i % 2 ? "_Z4evenv" : "_Z3oddv");
  const Report report = f.report();
  const auto* r = report.find("graph");
  CHECK(r->self.kernel_calls == 12);
  REQUIRE(r->kernels.size() == 2);
  CHECK(r->kernels[0].duration.count == 6);
  CHECK(r->self.gpu_busy_ns == 60);
}

TEST_CASE("GPU work of scopes outside the step window is counted and left out", "[aggregator]") {
  Fixture f;
  const auto c = f.launch(kOutsideWindow);
  f.kernel(c, 100, 200);
  f.agg.set_recording(false, 1000);
  f.kernel(f.launch(kNoInstance, 2000), 2100, 2200);  // unscoped, launched while not recording
  f.agg.set_recording(true, 3000);
  f.kernel(f.launch(kNoInstance, 3500), 3600, 3700);  // unscoped, recording
  const Report r = f.report();
  CHECK(r.diagnostics.outside_window_records == 2);
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
}

TEST_CASE(
    "a scope recorded in one window and open in a later warm-up: its launches there are outside, by the "
    "API call's time",
    "[aggregator]") {
  // External correlation: the scope's instance stays pushed across the unrecorded stretch, so its
  // API calls name it there too; the call's time says where it was made.
  Fixture f;
  auto main_scope = f.begin("main");
  f.agg.set_recording(true, 0);  // the step window: recording until 1000, then from 3000
  f.kernel(f.launch(main_scope.instance, 500), 510, 520);  // recorded: counted
  f.agg.set_recording(false, 1000);                        // a warm-up step
  const auto warm = f.launch(main_scope.instance, 2000);   // outside: left out, counted as such
  f.agg.set_recording(true, 3000);
  f.kernel(warm, 3100, 3200);                                 // its kernel runs once recording again
  f.kernel(f.launch(main_scope.instance, 3500), 3600, 3700);  // recorded again: counted
  // Launch notes give no time for a scoped call (they decide at the launch): counted as noted.
  const std::uint64_t noted = f.next_correlation++;
  f.agg.on(ExternalCorrelation{noted, main_scope.instance});
  f.kernel(noted, 4000, 4100);
  f.end(main_scope);
  const Report r = f.report();
  CHECK(r.diagnostics.outside_window_records == 1);
  REQUIRE(r.find("main") != nullptr);
  CHECK(r.find("main")->self.kernel_calls == 3);
  CHECK(r.find("main")->self.kernel_ns == 10 + 100 + 100);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("a window repeated many times keeps its latest windows, and counts older work as outside",
          "[aggregator]") {
  Fixture f;
  // Windows [10 + 10 k, 15 + 10 k) for k = 0 .. kMaxWindows + 9: the oldest half goes once full.
  const std::uint64_t cycles = cuscope::model::Attribution::kMaxWindows + 10;
  for (std::uint64_t k = 0; k < cycles; ++k) {
    f.agg.set_recording(true, 10 + 10 * k);
    f.agg.set_recording(false, 15 + 10 * k);
  }
  const std::uint64_t last = 10 + 10 * (cycles - 1);
  f.kernel(f.launch(kNoInstance, last + 1), last + 2, last + 3);  // in the last window: counted
  f.kernel(f.launch(kNoInstance, last + 7), last + 8, last + 9);  // after it: outside
  f.kernel(f.launch(kNoInstance, 11), 12, 13);                    // in the first window, forgotten: outside
  const std::uint64_t kept = 10 + 10 * (cycles - cuscope::model::Attribution::kMaxWindows / 2 - 10);
  f.kernel(f.launch(kNoInstance, kept + 1), kept + 2, kept + 3);  // in the oldest window kept: counted
  const Report r = f.report();
  CHECK(r.diagnostics.outside_window_records == 2);
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 2);
}

TEST_CASE("records with a zero timestamp are counted and dropped", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  f.kernel(f.launch(a.instance), 0, 100);
  f.kernel(f.launch(a.instance), 100, 0);
  f.end(a);
  const Report r = f.report();
  CHECK(r.diagnostics.zero_timestamp_records == 2);
  CHECK(r.find("a")->self.kernel_calls == 0);
}

TEST_CASE("dropped, unknown and overhead records are carried into the report", "[aggregator]") {
  Fixture f;
  f.agg.add_dropped(5);
  f.agg.add_unknown(2);
  f.agg.on(OverheadActivity{100, 350});
  f.agg.on(OverheadActivity{400, 410});
  const Report r = f.report();
  CHECK(r.diagnostics.dropped_records == 5);
  CHECK(r.diagnostics.unknown_records == 2);
  CHECK(r.diagnostics.overhead_records == 2);
  CHECK(r.diagnostics.overhead_ns == 260);
}

TEST_CASE("a correlation to an instance long overwritten is unresolved, not misattributed", "[aggregator]") {
  Fixture f;
  auto first = f.begin("first");
  f.end(first);
  for (std::uint32_t i = 0; i < ThreadTree::kInstanceRing; ++i) f.end(f.begin("churn"));
  const auto c = f.launch(first.instance);  // its ring slot now holds another instance
  f.kernel(c, 10, 20);
  const Report r = f.report();
  CHECK(r.diagnostics.unresolved_records == 1);
  CHECK(r.find("first")->self.kernel_calls == 0);
  CHECK(r.find("churn")->self.kernel_calls == 0);
}

TEST_CASE("kernels replayed for counters come untimed: counted apart, not as lost or cut-off work",
          "[aggregator][metrics]") {
  Fixture f;
  f.agg.set_counter_plan({"gpu__time_duration.sum"}, {"time"}, {"nanosecond"}, {false});
  auto frame = f.begin("(counted steps)");
  auto mlp = f.begin("mlp");  // a chosen range: the range profiler marks it when it opens a window
  f.forest->node_for_testing(mlp.instance)->counters_choice.store(1);
  auto up = f.begin("up");  // entered inside the window: never assessed, replayed all the same
  f.kernel(f.launch(up.instance), 0, 0);
  // Its record first, its correlation in a later buffer: it waits like any other.
  f.kernel(1000, 0, 0);
  f.agg.on(ExternalCorrelation{1000, up.instance});
  f.agg.on(ApiCall{1000, 1, 2});
  f.agg.settle(Aggregator::kMaxAge, false);
  f.end(up);
  f.kernel(f.launch(mlp.instance), 0, 0);
  f.end(mlp);
  auto other = f.begin("other");  // not chosen: its kernels run once, timed
  f.forest->node_for_testing(other.instance)->counters_choice.store(2);
  f.kernel(f.launch(other.instance), 100, 300);
  f.kernel(f.launch(other.instance), 0, 0);  // no timestamps outside a window: cut-off work
  f.end(other);
  f.end(frame);
  auto step = f.begin("step");  // chosen, in a step after the counted ones: not replayed
  f.forest->node_for_testing(step.instance)->counters_choice.store(1);
  f.kernel(f.launch(step.instance), 0, 0);
  f.end(step);
  f.kernel(f.launch(kNoInstance), 0, 0);
  f.agg.set_final_flush(true);  // what the session's last forced flush hands back
  f.kernel(f.launch(up.instance), 0, 0);
  f.kernel(f.launch(step.instance), 0, 0);

  const Report r = f.report();
  CHECK(r.diagnostics.counted_kernels_untimed == 4);
  CHECK(r.diagnostics.zero_timestamp_records == 3);  // other, step, unscoped
  CHECK(r.diagnostics.incomplete_at_exit == 1);      // step's, at exit
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(f.agg.pending() == 0);
  CHECK(r.find("(counted steps)/mlp/up")->self.kernel_calls == 0);
  CHECK(r.find("(counted steps)/mlp")->total.kernel_calls == 0);
  CHECK(r.find("(counted steps)/other")->self.kernel_calls == 1);
  CHECK(r.find("(counted steps)/other")->self.kernel_ns == 200);
  CHECK(r.find("step")->self.kernel_calls == 0);
}

TEST_CASE("without counters, a kernel record with no timestamps counts as such at once", "[aggregator]") {
  Fixture f;
  auto step = f.begin("step");
  f.forest->node_for_testing(step.instance)->counters_choice.store(1);
  f.kernel(f.launch(step.instance), 0, 0);
  f.kernel(5000, 0, 0);  // never correlated: nothing waits for it
  f.end(step);
  CHECK(f.agg.pending() == 0);
  const Report r = f.report();
  CHECK(r.diagnostics.zero_timestamp_records == 2);
  CHECK(r.diagnostics.counted_kernels_untimed == 0);
}

TEST_CASE("a re-attach of CUPTI forgets every book keyed by its ids: what waits counts as unresolved",
          "[aggregator][detach]") {
  Fixture f;
  auto a = f.begin("a");
  const auto c1 = f.launch(a.instance);  // correlation 1, in the first attach
  f.end(a);
  f.kernel(c1, 100, 200);
  f.kernel(42, 300, 400);  // its correlation never came before the detach
  f.agg.on(GraphNodeCreated{7, 1, nullptr});
  REQUIRE(f.agg.pending() == 1);
  REQUIRE(f.agg.graph_nodes().size() == 1);
  f.agg.set_final_flush(true);  // the detach's forced flushes

  f.agg.reattached();
  CHECK(f.agg.pending() == 0);
  CHECK(f.agg.graph_nodes().size() == 0);

  // CUPTI's ids start again at 1: a kernel of the new correlation 1 waits for its own launch's,
  // and does not land in "a", whose launch had that id before.
  auto b = f.begin("b");
  f.kernel(1, 500, 650);
  CHECK(f.agg.pending() == 1);
  f.next_correlation = 1;
  REQUIRE(f.launch(b.instance) == 1);
  f.end(b);
  f.agg.settle();
  CHECK(f.agg.pending() == 0);
  // A zero timestamp is again a record CUPTI gave no time, not work running at exit.
  f.kernel(f.launch(b.instance), 0, 0);

  const Report r = f.report();
  REQUIRE(r.find("a") != nullptr);
  REQUIRE(r.find("b") != nullptr);
  CHECK(r.find("a")->self.kernel_calls == 1);
  CHECK(r.find("a")->self.kernel_ns == 100);
  CHECK(r.find("b")->self.kernel_calls == 1);
  CHECK(r.find("b")->self.kernel_ns == 150);
  CHECK(r.diagnostics.unresolved_records == 1);
  CHECK(r.diagnostics.graph_nodes_evicted == 1);
  CHECK(r.diagnostics.zero_timestamp_records == 1);
  CHECK(r.diagnostics.incomplete_at_exit == 0);
}

TEST_CASE("after two re-attaches an id of every earlier attach is unknown, scoped or not, until its own call",
          "[aggregator][detach]") {
  Fixture f;
  auto a = f.begin("a");
  REQUIRE(f.launch(kNoInstance) == 1);  // the first attach: 1 outside every scope, 2 inside "a"
  REQUIRE(f.launch(a.instance) == 2);
  f.end(a);
  f.agg.reattached();
  f.next_correlation = 3;  // the second attach's 3, from a call of "a" again
  auto a2 = f.begin("a");
  REQUIRE(f.launch(a2.instance) == 3);
  f.end(a2);
  f.agg.reattached();

  // The third attach: its 1, 2 and 3 are none of the earlier calls. Each waits for its own call,
  // not (unscoped) for 1 nor "a" for 2 and 3.
  f.kernel(1, 100, 110);
  f.kernel(2, 200, 220);
  f.kernel(3, 300, 330);
  CHECK(f.agg.pending() == 3);
  auto b = f.begin("b");
  f.next_correlation = 1;
  REQUIRE(f.launch(b.instance) == 1);
  REQUIRE(f.launch(b.instance) == 2);
  REQUIRE(f.launch(kNoInstance) == 3);
  f.end(b);
  f.agg.settle();
  CHECK(f.agg.pending() == 0);

  const Report r = f.report();
  REQUIRE(r.find("b") != nullptr);
  CHECK(r.find("b")->self.kernel_calls == 2);
  CHECK(r.find("b")->self.kernel_ns == 30);
  REQUIRE(r.find("a") != nullptr);
  CHECK(r.find("a")->self.kernel_calls == 0);
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(r.find("(unscoped)")->self.kernel_ns == 30);
  CHECK(r.diagnostics.unresolved_records == 0);
}

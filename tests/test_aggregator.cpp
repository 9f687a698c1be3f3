// The aggregator on synthetic activity streams: attribution by correlation to the innermost
// range, inclusive roll-ups, kernel statistics, busy time, unscoped and unresolved work.
#include <catch2/catch.hpp>
#include <memory>
#include <string>

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

TEST_CASE("kernel statistics per range: demangled name, calls, min, max, mean, launch shape",
          "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  for (std::uint64_t d : {10, 20, 60}) f.kernel(f.launch(a.instance), 1000 * d, 1000 * d + d);
  f.kernel(f.launch(a.instance), 5000, 5001, "_Z6kernelPfi", 64);  // another grid: its own row
  f.end(a);
  const Report report = f.report();
  const auto* r = report.find("a");
  REQUIRE(r != nullptr);
  REQUIRE(r->kernels.size() == 2);
  const auto& k = r->kernels[0];
  CHECK(k.name == "kernel(float*, int)");
  CHECK(k.duration.count == 3);
  CHECK(k.duration.total_ns == 90);
  CHECK(k.duration.min_ns == 10);
  CHECK(k.duration.max_ns == 60);
  CHECK(k.duration.mean_ns() == Approx(30.0));
  CHECK(k.grid == std::array<std::uint32_t, 3>{128, 1, 1});
  CHECK(k.block == std::array<std::uint32_t, 3>{256, 1, 1});
  CHECK(k.registers_per_thread == 32);
  CHECK(k.static_shared_bytes == 1024);
  CHECK(k.dynamic_shared_bytes == 2048);
  CHECK(r->kernels[1].grid[0] == 64);
  CHECK(r->self.kernel_calls == 4);
}

TEST_CASE("GPU busy is the union of kernel intervals across two streams; span per instance", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  f.kernel(f.launch(a.instance), 0 + 1000, 100 + 1000);   // stream 1
  f.kernel(f.launch(a.instance), 50 + 1000, 150 + 1000);  // stream 2, overlapping
  f.kernel(f.launch(a.instance), 300 + 1000, 350 + 1000);
  f.end(a);
  const Report report = f.report();
  const auto* r = report.find("a");
  CHECK(r->self.kernel_ns == 250);
  CHECK(r->self.gpu_busy_ns == 200);
  CHECK(r->self.gpu_span_ns == 350);
  CHECK(r->self.busy_share() == Approx(200.0 / 350.0));
  CHECK(r->total.gpu_busy_ns == 200);
  CHECK(r->total.gpu_span_ns == 350);
}

TEST_CASE("the report's GPU busy is the union over all ranges and (unscoped), not their sum", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  f.kernel(f.launch(a.instance), 1000, 1100);
  f.end(a);
  auto b = f.begin("b");                       // another top-level range (as from another thread)
  f.kernel(f.launch(b.instance), 1050, 1200);  // overlaps a's kernel by 50 ns
  f.end(b);
  f.kernel(f.launch(kNoInstance), 1300, 1310);  // unscoped
  const Report r = f.report();
  CHECK(r.find("a")->total.gpu_busy_ns == 100);
  CHECK(r.find("b")->total.gpu_busy_ns == 150);
  CHECK(r.root().total.kernel_ns == 260);
  CHECK(r.root().total.gpu_busy_ns == 210);  // [1000, 1200) and [1300, 1310)
  Report shown = r;
  shown.activity_status = "on";  // the table's total line shows GPU figures only when tracing was on
  CHECK(cuscope::format_table(shown).find("— kernel time 260 ns — GPU busy 210 ns\n") != std::string::npos);
}

TEST_CASE("a parent's span covers the gaps between its children's kernels", "[aggregator]") {
  Fixture f;
  auto step = f.begin("step");
  auto x = f.begin("x");
  f.kernel(f.launch(x.instance), 1000, 1010);
  f.end(x);
  auto y = f.begin("y");
  f.kernel(f.launch(y.instance), 1100, 1110);
  f.end(y);
  f.end(step);
  const Report r = f.report();
  const auto* s = r.find("step");
  CHECK(s->self.gpu_span_ns == 0);
  CHECK(s->total.gpu_span_ns == 110);
  CHECK(s->total.gpu_busy_ns == 20);
  CHECK(s->total.busy_share() == Approx(20.0 / 110.0));
  CHECK(r.find("step/x")->total.gpu_span_ns == 10);
}

TEST_CASE("spans add up over instances of a range", "[aggregator]") {
  Fixture f;
  for (std::uint64_t i = 0; i < 3; ++i) {
    auto a = f.begin("a");
    f.kernel(f.launch(a.instance), 10'000 * (i + 1), 10'000 * (i + 1) + 40);
    f.kernel(f.launch(a.instance), 10'000 * (i + 1) + 60, 10'000 * (i + 1) + 100);
    f.end(a);
  }
  const Report report = f.report();
  const auto* r = report.find("a");
  CHECK(r->self.gpu_span_ns == 300);
  CHECK(r->self.gpu_busy_ns == 240);
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

TEST_CASE("copies, sets and synchronizations are summed per range and direction", "[aggregator]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto inner = f.begin("inner");
  auto copy = [&](std::uint64_t instance, CopyKind kind, std::uint64_t bytes, std::uint64_t ns) {
    MemcpyActivity m;
    m.correlation = f.launch(instance);
    m.start_ns = 1000;
    m.end_ns = 1000 + ns;
    m.bytes = bytes;
    m.kind = kind;
    f.agg.on(m);
  };
  copy(inner.instance, CopyKind::HtoD, 1 << 20, 100);
  copy(inner.instance, CopyKind::HtoD, 1 << 20, 300);
  copy(outer.instance, CopyKind::DtoH, 512, 7);
  MemsetActivity ms;
  ms.correlation = f.launch(inner.instance);
  ms.start_ns = 10;
  ms.end_ns = 15;
  ms.bytes = 64;
  f.agg.on(ms);
  SyncActivity sy;
  sy.correlation = f.launch(outer.instance);
  sy.start_ns = 10;
  sy.end_ns = 1010;
  f.agg.on(sy);
  f.end(inner);
  f.end(outer);
  const Report r = f.report();
  const auto& in = r.find("outer/inner")->self;
  const auto h2d = static_cast<std::size_t>(CopyKind::HtoD);
  const auto d2h = static_cast<std::size_t>(CopyKind::DtoH);
  CHECK(in.memcpy[h2d].count == 2);
  CHECK(in.memcpy[h2d].bytes == 2u << 20);
  CHECK(in.memcpy[h2d].total_ns == 400);
  CHECK(in.memcpy[h2d].bytes_per_s() == Approx(double(2u << 20) * 1e9 / 400.0));
  CHECK(in.memset_count == 1);
  CHECK(in.memset_bytes == 64);
  const auto& out = r.find("outer")->total;
  CHECK(out.memcpy[h2d].bytes == 2u << 20);
  CHECK(out.memcpy[d2h].bytes == 512);
  CHECK(out.memset_bytes == 64);
  CHECK(out.sync_count == 1);
  CHECK(out.sync_ns == 1000);
  CHECK(r.find("outer")->self.memcpy[h2d].count == 0);
}

TEST_CASE("allocations give bytes and the peak of live bytes, inclusively", "[aggregator]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto a = f.begin("a");
  auto mem = [&](std::uint64_t instance, bool alloc, std::uint64_t address, std::uint64_t bytes) {
    MemoryActivity m;
    m.correlation = f.launch(instance);
    m.timestamp_ns = 5;
    m.address = address;
    m.bytes = bytes;
    m.is_alloc = alloc;
    f.agg.on(m);
  };
  mem(a.instance, true, 0x1000, 100);
  mem(a.instance, true, 0x2000, 50);
  mem(a.instance, false, 0x1000, 100);
  mem(a.instance, true, 0x3000, 30);
  f.end(a);
  mem(outer.instance, true, 0x4000, 500);
  f.end(outer);
  const Report r = f.report();
  const auto* ra = r.find("outer/a");
  CHECK(ra->self.alloc_count == 3);
  CHECK(ra->self.alloc_bytes == 180);
  CHECK(ra->self.free_count == 1);
  CHECK(ra->self.free_bytes == 100);
  CHECK(ra->self.peak_bytes == 150);
  const auto* ro = r.find("outer");
  CHECK(ro->self.peak_bytes == 500);
  CHECK(ro->total.peak_bytes == 580);  // 80 live in a, then 500 more
  CHECK(ro->total.alloc_bytes == 680);
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

TEST_CASE("a million launches of one kernel cost one row", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  const auto c = f.launch(a.instance);
  for (std::uint64_t i = 0; i < 1'000'000; ++i) f.kernel(c, 100 + i * 10, 105 + i * 10);
  f.end(a);
  const Report report = f.report();
  const auto* r = report.find("a");
  REQUIRE(r->kernels.size() == 1);
  CHECK(r->kernels[0].duration.count == 1'000'000);
  CHECK(r->self.gpu_busy_ns == 5'000'000);
}

TEST_CASE("hardware counters roll up: sums add, percentages weigh by kernel duration",
          "[aggregator][metrics]") {
  Fixture f;
  f.agg.set_counter_plan(
      {"gpu__time_duration.sum", "dram__bytes_read.sum", "sm__throughput.avg.pct_of_peak_sustained_elapsed"},
      {"time", "DRAM read", "SM %"}, {"nanosecond", "byte", "percent"}, {false, false, true});
  auto mlp = f.begin("mlp");
  auto up = f.begin("up");
  f.end(up);
  auto down = f.begin("down");
  f.end(down);
  f.end(mlp);
  Node* up_node = f.forest->node_for_testing(up.instance);
  Node* down_node = f.forest->node_for_testing(down.instance);
  f.agg.add_counters(up_node, {300, 1000, 90});
  f.agg.add_counters(up_node, {100, 500, 10});
  f.agg.add_counters(down_node, {600, 4000, 40});
  const Report r = f.report();
  const auto* u = r.find("mlp/up");
  REQUIRE(u->metrics.size() == 3);
  CHECK(u->profiled_kernels == 2);
  CHECK(u->metrics[0].value == 400);
  CHECK(u->metrics[1].value == 1500);
  CHECK(u->metrics[2].value == Approx((300 * 90 + 100 * 10) / 400.0));  // 70%
  CHECK(u->metrics[2].label == "SM %");
  CHECK(u->metrics[2].unit == "percent");
  const auto* m = r.find("mlp");
  REQUIRE(m->metrics.size() == 3);
  CHECK(m->profiled_kernels == 3);
  CHECK(m->metrics[0].value == 1000);
  CHECK(m->metrics[1].value == 5500);
  CHECK(m->metrics[2].value == Approx((300 * 90 + 100 * 10 + 600 * 40) / 1000.0));  // 52%
  CHECK(r.find("mlp/down")->metrics[2].value == Approx(40.0));
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

TEST_CASE("ranges without replayed kernels carry no counters", "[aggregator][metrics]") {
  Fixture f;
  f.agg.set_counter_plan({"gpu__time_duration.sum"}, {"time"}, {"nanosecond"}, {false});
  f.end(f.begin("plain"));
  const Report r = f.report();
  CHECK(r.find("plain")->metrics.empty());
  CHECK(r.find("plain")->profiled_kernels == 0);
}

TEST_CASE("a range's own GPU busy time leaves out its children's, before and after they appear",
          "[aggregator]") {
  Fixture f;
  auto step = f.begin("step");
  f.kernel(f.launch(step.instance), 1000, 1100);
  auto child = f.begin("child");
  f.kernel(f.launch(child.instance), 1050, 1200);
  f.end(child);
  f.kernel(f.launch(step.instance), 1300, 1350);
  f.end(step);
  const Report r = f.report();
  const auto* s = r.find("step");
  CHECK(s->self.gpu_busy_ns == 150);   // [1000,1100) and [1300,1350)
  CHECK(s->total.gpu_busy_ns == 250);  // [1000,1200) and [1300,1350)
  CHECK(r.find("step/child")->self.gpu_busy_ns == 150);
}

TEST_CASE("kernels launched in a changing order each keep their own row", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  // The same text at two addresses (a kernel in two modules): one row.
  const std::string b1 = "_Z1bv", b2 = "_Z1bv";
  const char* order[] = {"_Z1av", b1.c_str(), "_Z1cv",    "_Z1av", b2.c_str(), "_Z1cv",  // a step
                         "_Z1av", "_Z1cv",    b1.c_str(), "_Z1av", "_Z1av",    b2.c_str()};
  std::uint64_t t = 1000;
  for (const char* name : order) {
    f.kernel(f.launch(a.instance), t, t + 10, name);
    t += 100;
  }
  f.kernel(f.launch(a.instance), t, t + 10, "_Z1av", 64);  // the name again, another grid
  f.end(a);
  const Report report = f.report();
  const auto* r = report.find("a");
  REQUIRE(r->kernels.size() == 4);
  auto calls = [&](const char* name, std::uint32_t grid_x = 128) {
    for (const auto& k : r->kernels)
      if (k.name == name && k.grid[0] == grid_x) return k.duration.count;
    return std::uint64_t{0};
  };
  CHECK(calls("a()") == 5);
  CHECK(calls("b()") == 4);
  CHECK(calls("c()") == 3);
  CHECK(calls("a()", 64) == 1);
  CHECK(r->self.kernel_calls == 13);
}

TEST_CASE("a kernel without a name never joins the row of a named kernel that had to wait", "[aggregator]") {
  Fixture f;
  auto a = f.begin("a");
  auto waited = [&](std::uint64_t t) {  // its correlation arrives after it: it waits, then resolves
    const std::uint64_t c = f.next_correlation++;
    f.kernel(c, t, t + 10, "_Z1fv");
    f.agg.on(ExternalCorrelation{c, a.instance});
    f.agg.settle();
  };
  waited(1000);
  f.kernel(f.launch(a.instance), 1100, 1110, nullptr);
  waited(1200);
  f.kernel(f.launch(a.instance), 1300, 1310, nullptr);
  f.kernel(f.launch(a.instance), 1400, 1410, nullptr);
  f.end(a);
  const Report report = f.report();
  const auto* r = report.find("a");
  REQUIRE(r->kernels.size() == 2);
  const bool unknown_first = r->kernels[0].name == "(unknown kernel)";  // rows sort by total time
  CHECK(r->kernels[unknown_first ? 0 : 1].name == "(unknown kernel)");
  CHECK(r->kernels[unknown_first ? 0 : 1].duration.count == 3);
  CHECK(r->kernels[unknown_first ? 1 : 0].name == "f()");
  CHECK(r->kernels[unknown_first ? 1 : 0].duration.count == 2);
  CHECK(f.agg.pending() == 0);
}

TEST_CASE("copies with a pageable host side are counted per range, with their bytes, and roll up",
          "[aggregator][pageable]") {
  Fixture f;
  auto outer = f.begin("outer");
  auto inner = f.begin("inner");
  auto copy = [&](std::uint64_t instance, CopyKind kind, MemoryKind src, MemoryKind dst,
                  std::uint64_t bytes) {
    MemcpyActivity m;
    m.correlation = f.launch(instance);
    m.start_ns = 1000;
    m.end_ns = 1100;
    m.bytes = bytes;
    m.kind = kind;
    m.src_kind = src;
    m.dst_kind = dst;
    f.agg.on(m);
  };
  copy(inner.instance, CopyKind::HtoD, MemoryKind::pageable, MemoryKind::device, 1000);
  copy(inner.instance, CopyKind::HtoD, MemoryKind::pinned, MemoryKind::device, 20);
  copy(inner.instance, CopyKind::DtoH, MemoryKind::device, MemoryKind::pageable, 300);
  copy(outer.instance, CopyKind::HtoH, MemoryKind::pageable, MemoryKind::pinned, 7);
  copy(outer.instance, CopyKind::DtoD, MemoryKind::device, MemoryKind::device, 5000);
  // Its correlation comes later: the waiting copy keeps its kinds.
  MemcpyActivity late;
  late.correlation = 999;
  late.start_ns = 10;
  late.end_ns = 20;
  late.bytes = 40;
  late.kind = CopyKind::HtoD;
  late.src_kind = MemoryKind::pageable;
  f.agg.on(late);
  f.agg.on(ExternalCorrelation{999, inner.instance});
  f.agg.settle();
  f.end(inner);
  f.end(outer);
  const Report r = f.report();
  const auto& in = r.find("outer/inner")->self;
  CHECK(in.pageable_copies == 3);
  CHECK(in.pageable_bytes == 1340);
  const auto& out = r.find("outer");
  CHECK(out->self.pageable_copies == 1);
  CHECK(out->self.pageable_bytes == 7);
  CHECK(out->total.pageable_copies == 4);
  CHECK(out->total.pageable_bytes == 1347);
  CHECK(r.root().total.pageable_copies == 4);
}

namespace {

void stream_kernel(Fixture& f, std::uint64_t instance, std::uint32_t stream, std::uint64_t start,
                   std::uint64_t end, std::uint32_t device = 0) {
  KernelActivity k;
  k.correlation = f.launch(instance);
  k.start_ns = start;
  k.end_ns = end;
  k.name = "_Z6kernelPfi";
  k.grid = {128, 1, 1};
  k.block = {256, 1, 1};
  k.device = device;
  k.stream = stream;
  f.agg.on(k);
}

}  // namespace

TEST_CASE("kernel time per stream: the streams a range used and its busiest one", "[aggregator][streams]") {
  Fixture f;
  auto a = f.begin("a");
  // Stream 7: 3 × 100 ns; stream 9: 2 × 100 ns, one of them beside a stream-7 kernel.
  stream_kernel(f, a.instance, 7, 1000, 1100);
  stream_kernel(f, a.instance, 9, 1050, 1150);
  stream_kernel(f, a.instance, 7, 1200, 1300);
  stream_kernel(f, a.instance, 7, 1300, 1400);
  stream_kernel(f, a.instance, 9, 1500, 1600);
  auto b = f.begin("b");
  stream_kernel(f, b.instance, 9, 2000, 2500);
  stream_kernel(f, b.instance, 7, 2000, 2100, 1);  // stream 7 of device 1: another stream
  f.end(b);
  f.end(a);
  const Report r = f.report();
  const auto* ra = r.find("a");
  CHECK(ra->self.kernel_streams == 2);
  CHECK(ra->self.busiest_stream_ns == 300);
  CHECK(ra->self.kernel_ns == 500);
  CHECK(ra->self.gpu_busy_ns == 450);  // 50 ns overlapped
  const auto* rb = r.find("a/b");
  CHECK(rb->self.kernel_streams == 2);
  CHECK(rb->self.busiest_stream_ns == 500);
  CHECK(ra->total.kernel_streams == 2);       // the most of any range of the subtree
  CHECK(ra->total.busiest_stream_ns == 800);  // summed over the subtree
}

TEST_CASE("streams past the 4 a range tracks count as one more, their time as one stream's at most",
          "[aggregator][streams]") {
  Fixture f;
  auto a = f.begin("a");
  for (std::uint32_t s = 1; s <= 6; ++s) stream_kernel(f, a.instance, s, 1000 * s, 1000 * s + 10 * s);
  f.end(a);
  const Report r = f.report();
  CHECK(r.find("a")->self.kernel_streams == 5);
  // Streams 5 and 6 (50 + 60 ns) are summed apart; their sum is above every tracked stream's (40 ns).
  CHECK(r.find("a")->self.busiest_stream_ns == 110);
  CHECK(r.find("a")->self.kernel_ns == 210);
}

TEST_CASE("each thread's range keeps its own streams: the busiest stream is summed over threads",
          "[aggregator][streams]") {
  Fixture f;
  cuscope::model::ThreadTree* second = f.forest->make_tree();
  auto a = f.begin("a");
  const auto b = second->begin(f.id("a"), 0);
  // Two threads, each on its own stream, their kernels side by side: no stream of one range is idle
  // while another works, so nothing here could have overlapped more.
  stream_kernel(f, a.instance, 7, 1000, 2000);
  stream_kernel(f, b.instance, 9, 1000, 2000);
  second->end(b.depth, 1'000'000);
  f.end(a);
  const Report r = f.report();
  const auto* ra = r.find("a");
  CHECK(ra->threads == 2);
  CHECK(ra->self.kernel_streams == 2);
  CHECK(ra->self.busiest_stream_ns == 2000);
  CHECK(ra->self.kernel_ns == 2000);
}

TEST_CASE("a kernel that waits for its correlation keeps its stream", "[aggregator][streams]") {
  Fixture f;
  auto a = f.begin("a");
  KernelActivity k;
  k.correlation = 500;
  k.start_ns = 100;
  k.end_ns = 300;
  k.name = "_Z6kernelPfi";
  k.stream = 3;
  f.agg.on(k);
  stream_kernel(f, a.instance, 4, 400, 450);
  f.agg.on(ExternalCorrelation{500, a.instance});
  f.agg.settle();
  f.end(a);
  const Report r = f.report();
  CHECK(r.find("a")->self.kernel_calls == 2);
  CHECK(r.find("a")->self.kernel_streams == 2);
  CHECK(r.find("a")->self.busiest_stream_ns == 200);
}

// The aggregator's kernel statistics, on synthetic activity streams: one row per kernel and launch
// shape, GPU busy time as a union of intervals and span per instance, a range's own busy time
// beside its children's, kernel time per stream, and hardware counters rolled up.
//
// Never: a session, a clock or a GPU; the model is fed by hand (tests/model_fixture.hpp).
#include <array>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>

#include "model_fixture.hpp"

using cuscope::Report;
using namespace cuscope::model;

namespace {

using Fixture = cuscope_test::ModelFixture;

}  // namespace

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

TEST_CASE("GPU busy is the union of kernel intervals across two streams, span per instance", "[aggregator]") {
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

TEST_CASE("busy share stays at most 1 when busy time passes the span", "[aggregator]") {
  // Records that come after their call left the span table add to busy time and to no span.
  cuscope::ActivityStats s;
  CHECK(s.busy_share() == 0.0);
  s.gpu_busy_ns = 500;
  s.gpu_span_ns = 400;
  CHECK(s.busy_share() == 1.0);
  s.gpu_busy_ns = 100;
  CHECK(s.busy_share() == 0.25);
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

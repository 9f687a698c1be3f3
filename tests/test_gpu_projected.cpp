// A range's GPU time per call without CUDA events: the projected span of each call's GPU work
// (first kernel, copy or set start to last end, whatever the stream), its count, total, min and
// max; and the bounded table of calls, whose evictions must never count a call twice.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "model/findings.hpp"
#include "model_fixture.hpp"

using cuscope::Report;
using namespace cuscope::model;

namespace {

using Fixture = cuscope_test::ModelFixture;

void copy(Fixture& f, std::uint64_t correlation, std::uint64_t start, std::uint64_t end) {
  MemcpyActivity m;
  m.correlation = correlation;
  m.start_ns = start;
  m.end_ns = end;
  m.bytes = 4096;
  m.kind = cuscope::CopyKind::HtoD;
  f.agg.on(m);
}

void set(Fixture& f, std::uint64_t correlation, std::uint64_t start, std::uint64_t end) {
  MemsetActivity m;
  m.correlation = correlation;
  m.start_ns = start;
  m.end_ns = end;
  m.bytes = 512;
  f.agg.on(m);
}

}  // namespace

TEST_CASE("projected span: one call's kernels with a gap span first start to last end, busy is the union",
          "[projected]") {
  Fixture f;
  auto s = f.begin("step");
  f.kernel(f.launch(s.instance), 1'000, 1'200);
  f.kernel(f.launch(s.instance), 1'500, 1'600);  // 300 ns idle between
  f.end(s);
  const Report r = f.report();
  const auto* step = r.find("step");
  REQUIRE(step != nullptr);
  CHECK(step->gpu_projected.count == 1);
  CHECK(step->gpu_projected.total_ns == 600);
  CHECK(step->gpu_projected.min_ns == 600);
  CHECK(step->gpu_projected.max_ns == 600);
  CHECK(step->total.gpu_busy_ns == 300);
  CHECK(step->total.kernel_ns == 300);
  CHECK(step->gpu.count == 0);  // no CUDA events
  CHECK(&step->gpu_time() == &step->gpu_projected);
}

TEST_CASE("projected span: kernels overlapping on two streams span their hull", "[projected]") {
  Fixture f;
  auto s = f.begin("step");
  f.kernel(f.launch(s.instance), 100, 500, "_Z1av", 128, /*stream=*/7);
  f.kernel(f.launch(s.instance), 300, 900, "_Z1bv", 128, /*stream=*/8);
  f.kernel(f.launch(s.instance), 50, 120, "_Z1cv", 128, /*stream=*/9);  // arrives last, starts first
  f.end(s);
  const Report r = f.report();
  const auto* step = r.find("step");
  REQUIRE(step != nullptr);
  CHECK(step->gpu_projected.count == 1);
  CHECK(step->gpu_projected.total_ns == 850);  // 50 .. 900
  CHECK(step->total.gpu_busy_ns == 850);
  CHECK(step->total.kernel_ns == 400 + 600 + 70);
  CHECK(step->total.gpu_span_ns == 850);
}

TEST_CASE("projected span: per call, with count, total, min and max over calls", "[projected]") {
  Fixture f;
  const std::vector<std::uint64_t> lengths = {400, 100, 250};
  std::uint64_t t = 10'000;
  for (std::uint64_t len : lengths) {
    auto s = f.begin("layer");
    f.kernel(f.launch(s.instance), t, t + len / 2);
    f.kernel(f.launch(s.instance), t + len / 2, t + len);
    f.end(s);
    t += 10'000;
  }
  auto idle = f.begin("layer");  // a call with no GPU work: no projected span, not counted
  f.end(idle);
  const Report r = f.report();
  const auto* layer = r.find("layer");
  REQUIRE(layer != nullptr);
  CHECK(layer->calls == 4);
  CHECK(layer->gpu_projected.count == 3);
  CHECK(layer->gpu_projected.total_ns == 750);
  CHECK(layer->gpu_projected.min_ns == 100);
  CHECK(layer->gpu_projected.max_ns == 400);
  CHECK(layer->gpu_projected.mean_ns() == 250.0);
}

TEST_CASE("projected span: a parent call spans its children's work, each child its own", "[projected]") {
  Fixture f;
  auto step = f.begin("step");
  auto fwd = f.begin("forward");
  f.kernel(f.launch(fwd.instance), 100, 200);
  f.end(fwd);
  auto bwd = f.begin("backward");
  f.kernel(f.launch(bwd.instance), 400, 700);
  f.end(bwd);
  f.end(step);
  const Report r = f.report();
  CHECK(r.find("step")->gpu_projected.count == 1);
  CHECK(r.find("step")->gpu_projected.total_ns == 600);  // 100 .. 700
  CHECK(r.find("step")->self.gpu_span_ns == 0);          // no work of its own
  CHECK(r.find("step/forward")->gpu_projected.total_ns == 100);
  CHECK(r.find("step/backward")->gpu_projected.total_ns == 300);
}

TEST_CASE("projected span: copies and sets extend a call's span but not its busy time", "[projected]") {
  Fixture f;
  auto s = f.begin("load");
  copy(f, f.launch(s.instance), 1'000, 3'000);
  f.kernel(f.launch(s.instance), 3'100, 3'200);
  set(f, f.launch(s.instance), 3'300, 3'400);
  f.end(s);
  auto only_copy = f.begin("copy_only");
  copy(f, f.launch(only_copy.instance), 5'000, 5'500);
  f.end(only_copy);
  const Report r = f.report();
  const auto* load = r.find("load");
  REQUIRE(load != nullptr);
  CHECK(load->gpu_projected.count == 1);
  CHECK(load->gpu_projected.total_ns == 2'400);  // 1000 .. 3400
  CHECK(load->total.gpu_span_ns == 2'400);
  CHECK(load->total.gpu_busy_ns == 100);  // the kernel only
  CHECK(r.find("copy_only")->gpu_projected.count == 1);
  CHECK(r.find("copy_only")->gpu_projected.total_ns == 500);
  CHECK(r.find("copy_only")->total.gpu_busy_ns == 0);
}

TEST_CASE("projected span: a call with no GPU work has none, and GPU time falls back to CUDA events",
          "[projected]") {
  Fixture f;
  auto s = f.begin("host_only");
  f.end(s);
  const Report r = f.report();
  const auto* h = r.find("host_only");
  REQUIRE(h != nullptr);
  CHECK(h->gpu_projected.count == 0);
  CHECK(&h->gpu_time() == &h->gpu);
}

TEST_CASE(
    "projected span: more live calls than the table holds, interleaved: each call's span exact or its "
    "loss counted, no call counted twice",
    "[projected]") {
  // 6 threads x 16,000 calls = 96,000 calls in flight for a table of 65,536 slots (shared across
  // threads): calls evict each other. Each call gets a kernel [b, b+10) in a first pass over all
  // calls, then [b+20, b+30) in a second: an exact span is 30, a call whose second kernel came
  // after it left the table keeps 10 and counts one lost record.
  Fixture f;
  constexpr int kThreads = 6;
  constexpr int kCalls = 16'000;
  std::vector<ThreadTree*> trees = {f.tree};
  for (int t = 1; t < kThreads; ++t) trees.push_back(f.forest->make_tree());
  std::vector<std::uint64_t> instances;
  for (int c = 0; c < kCalls; ++c) {
    for (ThreadTree* tree : trees) {
      auto tok = tree->begin(f.id("call"), 0);
      tree->end(tok.depth, 1);
      instances.push_back(tok.instance);
    }
  }
  for (int pass = 0; pass < 2; ++pass) {
    for (std::size_t i = 0; i < instances.size(); ++i) {
      const std::uint64_t b = 1'000'000 + i * 100 + pass * 20;
      f.kernel(f.launch(instances[i]), b, b + 10);
    }
  }
  const Report r = f.report();
  const auto* call = r.find("call");
  REQUIRE(call != nullptr);
  const std::uint64_t n = instances.size();
  const std::uint64_t lost = r.diagnostics.gpu_span_records_lost;
  CHECK(lost > 0);  // the table did overflow
  CHECK(lost < n);
  CHECK(call->total.kernel_calls == 2 * n);  // every kernel counted (busy time is not this test's:
                                             // the second pass arrives far behind its window)
  CHECK(call->gpu_projected.count == n);     // each call once
  CHECK(call->gpu_projected.total_ns == 30 * n - 20 * lost);
  CHECK(call->gpu_projected.min_ns == 10);
  CHECK(call->gpu_projected.max_ns == 30);
  CHECK(call->total.gpu_span_ns == 30 * n - 20 * lost);
  CHECK(r.diagnostics.unresolved_records == 0);
}

// A counter's rate per GPU second is per second of the range's GPU time, the table's GPU total: its
// projected span here (no CUDA events), not its GPU busy time (the union leaves the gap out).
TEST_CASE("projected span: a counter's rate per GPU second is over the projected span", "[projected]") {
  Fixture f;
  auto s = f.begin("step");
  f.tree->count(f.id("tokens"), 300);
  f.kernel(f.launch(s.instance), 1'000, 1'200);
  f.kernel(f.launch(s.instance), 1'500, 1'600);  // span 600 ns, busy 300 ns
  f.end(s);
  const Report r = f.report();
  const auto* step = r.find("step");
  REQUIRE(step != nullptr);
  REQUIRE(step->counts.size() == 1);
  CHECK(step->gpu_projected.total_ns == 600);
  CHECK(step->counts[0].per_gpu_second == Approx(300 / 600e-9));  // 5e8 a GPU second; over busy it read 1e9
}

// A record whose end comes before its start (a clock glitch, a damaged trace) adds 0 ns to kernel
// and copy time (elapsed_ns) and nothing to busy time: it must not wrap a call's span to 2^64.
TEST_CASE("projected span: a record that ends before it starts spans 0 ns, its call's span not wrapped",
          "[projected]") {
  Fixture f;
  auto first = f.begin("backwards_first");
  f.kernel(f.launch(first.instance), 1'000, 900);  // the call's first record, backwards
  f.kernel(f.launch(first.instance), 2'000, 2'100);
  f.end(first);
  auto copy_only = f.begin("backwards_copy");
  copy(f, f.launch(copy_only.instance), 5'000, 4'000);
  f.end(copy_only);
  auto later = f.begin("backwards_later");
  f.kernel(f.launch(later.instance), 7'000, 7'100);
  set(f, f.launch(later.instance), 7'500, 6'500);  // backwards, after the first
  f.end(later);
  const Report r = f.report();
  const auto* a = r.find("backwards_first");
  REQUIRE(a != nullptr);
  CHECK(a->total.kernel_ns == 100);
  CHECK(a->total.gpu_busy_ns == 100);
  CHECK(a->gpu_projected.count == 1);
  CHECK(a->gpu_projected.total_ns == 1'100);  // 1000 .. 2100: the backwards kernel is at its start
  CHECK(a->total.gpu_span_ns == 1'100);
  CHECK(a->self.gpu_span_ns == 1'100);
  const auto* b = r.find("backwards_copy");
  REQUIRE(b != nullptr);
  CHECK(b->gpu_projected.count == 1);
  CHECK(b->gpu_projected.total_ns == 0);
  CHECK(b->total.gpu_span_ns == 0);
  const auto* c = r.find("backwards_later");
  REQUIRE(c != nullptr);
  CHECK(c->gpu_projected.total_ns == 500);  // 7000 .. 7500
  CHECK(c->total.gpu_span_ns == 500);
}

namespace {

// A call "main" open across two recording windows ([0, 1000) and [5000, ...), when `windows`; else
// one run recorded throughout): in each, a "step" call with a kernel, and a kernel of main's own.
Report across_two_windows(bool windows) {
  Fixture f;
  if (windows) f.agg.set_recording(true, 0);
  auto main = f.begin("main");
  auto s1 = f.begin("step");
  f.kernel(f.launch(s1.instance, 100), 200, 300);
  f.end(s1, 350);
  f.kernel(f.launch(main.instance, 360), 400, 500);
  if (windows) {
    f.agg.set_recording(false, 1'000);
    f.agg.set_recording(true, 5'000);
  }
  auto s2 = f.begin("step", 5'050);
  f.kernel(f.launch(s2.instance, 5'100), 5'200, 5'400);
  f.end(s2, 5'500);
  f.kernel(f.launch(main.instance, 5'600), 5'700, 5'800);
  f.end(main, 6'000);
  return f.report();
}

}  // namespace

// A step window that repeats (CUSCOPE_REPEAT, CUSCOPE_SAMPLE_MS) leaves stretches unrecorded; a
// scope open across them (main, recorded in the first window) must not span them: its GPU time is
// the sum of its hull in each window, and its busy share is over that.
TEST_CASE(
    "projected span: a call open across two recording windows spans each window's work, not the stretch "
    "between",
    "[projected][window]") {
  const Report r = across_two_windows(true);
  const auto* main = r.find("main");
  REQUIRE(main != nullptr);
  CHECK(main->gpu_projected.count == 1);
  CHECK(main->gpu_projected.total_ns == 300 + 600);  // 200 .. 500, then 5200 .. 5800
  CHECK(main->total.gpu_span_ns == 900);
  CHECK(main->self.gpu_span_ns == 100 + 100);  // its own kernels, one per window
  CHECK(main->total.gpu_busy_ns == 100 + 100 + 200 + 100);
  CHECK(r.find("main/step")->gpu_projected.count == 2);
  CHECK(r.find("main/step")->gpu_projected.total_ns == 100 + 200);
  // Recorded throughout, the same call spans the stretch between.
  const Report whole = across_two_windows(false);
  CHECK(whole.find("main")->gpu_projected.total_ns == 5'800 - 200);
  CHECK(whole.find("main")->self.gpu_span_ns == 5'800 - 400);
}

// The GPU runs behind the host: a call made in a window whose kernels run after that window's end
// (but before the next began) spans them as one hull, as without a window.
TEST_CASE("projected span: work the GPU runs after its window's end joins that window's hull",
          "[projected][window]") {
  Fixture f;
  f.agg.set_recording(true, 0);
  auto step = f.begin("step");
  f.kernel(f.launch(step.instance, 100), 900, 1'000);
  f.kernel(f.launch(step.instance, 200), 1'200, 1'400);  // runs after the window's end at 1,100
  f.end(step, 300);
  f.agg.set_recording(false, 1'100);
  f.agg.set_recording(true, 5'000);
  const Report r = f.report();
  CHECK(r.find("step")->gpu_projected.total_ns == 500);  // 900 .. 1,400
  CHECK(r.find("step")->self.gpu_span_ns == 500);
}

// A record of the first window that comes after one of the second (its buffer delivered late) does
// not stretch the second window's hull back across the stretch between: its span is left out, at
// most its own length.
TEST_CASE("projected span: a late record of an earlier window does not bridge the stretch between",
          "[projected][window]") {
  Fixture f;
  f.agg.set_recording(true, 0);
  auto main = f.begin("main");
  const std::uint64_t early = f.launch(main.instance, 150);
  f.kernel(f.launch(main.instance, 100), 200, 300);
  f.agg.set_recording(false, 1'000);
  f.agg.set_recording(true, 5'000);
  f.kernel(f.launch(main.instance, 5'100), 5'200, 5'400);
  f.kernel(early, 250, 450);  // the first window's, delivered last
  f.end(main, 6'000);
  const Report r = f.report();
  CHECK(r.find("main")->gpu_projected.total_ns == 100 + 200);  // not 100 + (5,400 - 250)
  CHECK(r.find("main")->self.gpu_span_ns == 100 + 200);
  CHECK(r.find("main")->self.kernel_calls == 3);  // counted all the same
}

namespace {

// A call "serve" with two bursts of 10 back-to-back kernels 999,000 ns apart, the stretch between
// unrecorded when `windows`; its findings.
std::vector<std::string> serve_findings(bool windows, std::uint64_t* span_ns) {
  Fixture f;
  if (windows) f.agg.set_recording(true, 0);
  auto serve = f.begin("serve");
  const auto burst = [&](std::uint64_t from) {
    for (std::uint64_t i = 0; i < 10; ++i)
      f.kernel(f.launch(serve.instance, from), from + 100 * i, from + 100 * (i + 1));
  };
  burst(1'000);
  if (windows) {
    f.agg.set_recording(false, 3'000);
    f.agg.set_recording(true, 1'000'000);
  }
  burst(1'000'000);
  f.end(serve, 2'000'000);
  Report r = f.report();
  cuscope::model::apply_findings(r);
  *span_ns = r.find("serve")->total.gpu_span_ns;
  std::vector<std::string> ids;
  for (const auto& finding : r.find("serve")->findings) ids.push_back(finding.id);
  return ids;
}

bool has(const std::vector<std::string>& ids, const char* id) {
  return std::find(ids.begin(), ids.end(), id) != ids.end();
}

}  // namespace

// The finding that reads the busy share: a call busy throughout each window is not "idle between
// its kernels" because a wait lies between two windows; recorded throughout, the stretch is idle.
TEST_CASE("projected span: no GPU idle gaps are found in the stretch between two recording windows",
          "[projected][window][findings]") {
  std::uint64_t span = 0;
  CHECK_FALSE(has(serve_findings(true, &span), "gpu-idle-gaps"));
  CHECK(span == 2'000);  // 1,000 .. 2,000, then 1,000,000 .. 1,001,000
  CHECK(has(serve_findings(false, &span), "gpu-idle-gaps"));
  CHECK(span == 1'001'000 - 1'000);
}

// CUDA graphs without a GPU, the breakdown: a replayed kernel stays in its launching range and is
// also counted under the path of the range its node was created in (docs/cuda-graphs.md). Kernel
// records with graph node ids go through the decode path in CUPTI 13.0 buffers built in memory:
// several graphs and threads, late correlations, device-launched graphs, conditional node bodies,
// kernels with no launch; the breakdown in the table and JSON, and switched off.
//
// Never: a session, a GPU or a file; the model is fed by hand, as the CUPTI adapter would feed it.
// Which range a node id maps to (clones, eviction, exec updates) is test_graphs_node_map.cpp's.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>

#include "cli/cli.hpp"
#include "graphs_kit.hpp"

using cuscope::GraphPathStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::model::ThreadTree;
using cuscope_test::graphs_kit::capture_nested;
using cuscope_test::graphs_kit::Fixture;
using cuscope_test::graphs_kit::graph_lines;
using cuscope_test::graphs_kit::graph_row;
using cuscope_test::graphs_kit::GraphLines;

TEST_CASE("graph kernels stay in the launching range and are broken down by capture-time path", "[graphs]") {
  Fixture f;
  capture_nested(f);
  auto decode = f.begin("decode");
  f.end(decode);
  // Three replays of the graph, each one cudaGraphLaunch in decode; node n runs 10 * n ns.
  std::uint64_t t = 1000;
  for (int replay = 0; replay < 3; ++replay) {
    const std::uint32_t c = f.launch(decode.instance);
    for (std::uint64_t node = 1; node <= 4; ++node) {
      f.graph_kernel(c, node, t, t + 10 * node, node == 2 ? "_Z3mlpPf" : "_Z4gemmPf");
      t += 100;
    }
  }
  f.consume();
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  // The launching range's totals are as without the breakdown: every replayed kernel is its own.
  CHECK(d->self.kernel_calls == 12);
  CHECK(d->self.kernel_ns == 3 * (10 + 20 + 30 + 40));
  CHECK(r.find("capture")->total.kernel_calls == 0);
  REQUIRE(d->graph.size() == 4);
  // Longest first: node 4 (capture), 3, 2, 1.
  CHECK(d->graph[0].path == "capture");
  CHECK(d->graph[1].path == "capture/layer_1/attention");
  CHECK(d->graph[2].path == "capture/layer_0/mlp");
  CHECK(d->graph[3].path == "capture/layer_0/attention");
  const GraphPathStats* mlp = graph_row(d, "capture/layer_0/mlp");
  REQUIRE(mlp != nullptr);
  CHECK(mlp->kernel_calls == 3);
  CHECK(mlp->kernel_ns == 60);
  CHECK(mlp->gpu_busy_ns == 60);
  REQUIRE(mlp->kernels.size() == 1);
  CHECK(mlp->kernels[0].name == "mlp(float*)");
  CHECK(mlp->kernels[0].duration.count == 3);
  CHECK(mlp->kernels[0].duration.min_ns == 20);
  std::uint64_t calls = 0, ns = 0;
  for (const GraphPathStats& g : d->graph) {
    calls += g.kernel_calls;
    ns += g.kernel_ns;
  }
  CHECK(calls == d->self.kernel_calls);  // the two views add up
  CHECK(ns == d->self.kernel_ns);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(r.diagnostics.graph_nodes_evicted == 0);
}

TEST_CASE("two graphs launched from two ranges keep their own breakdowns", "[graphs]") {
  Fixture f;
  auto cap_a = f.begin("prefill_graph");
  f.create(1, 1);
  f.create(2, 1);
  f.end(cap_a);
  auto cap_b = f.begin("decode_graph");
  f.create(3, 2);
  f.end(cap_b);
  auto prefill = f.begin("prefill");
  f.end(prefill);
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t ca = f.launch(prefill.instance);
  f.graph_kernel(ca, 1, 100, 150, "_Z4gemmPf", 1);
  f.graph_kernel(ca, 2, 120, 170, "_Z4gemmPf", 1);  // overlaps the first: busy 70, kernel time 100
  const std::uint32_t cb = f.launch(decode.instance);
  f.graph_kernel(cb, 3, 200, 210, "_Z4gemmPf", 2);
  f.graph_kernel(f.launch(decode.instance), 3, 300, 310, "_Z4gemmPf", 2);
  f.consume();
  const Report r = f.report();
  const RangeStats* p = r.find("prefill");
  const RangeStats* d = r.find("decode");
  REQUIRE(p != nullptr);
  REQUIRE(d != nullptr);
  REQUIRE(p->graph.size() == 1);
  CHECK(p->graph[0].path == "prefill_graph");
  CHECK(p->graph[0].kernel_calls == 2);
  CHECK(p->graph[0].kernel_ns == 100);
  CHECK(p->graph[0].gpu_busy_ns == 70);
  REQUIRE(p->graph[0].kernels.size() == 1);
  CHECK(p->graph[0].kernels[0].duration.count == 2);
  REQUIRE(d->graph.size() == 1);
  CHECK(d->graph[0].path == "decode_graph");
  CHECK(d->graph[0].kernel_calls == 2);
  CHECK(d->graph[0].gpu_busy_ns == 20);
}

TEST_CASE("a graph captured on one thread and replayed from another is broken down by the capture",
          "[graphs]") {
  Fixture f;
  ThreadTree* other = f.forest->make_tree();
  REQUIRE(other != nullptr);
  auto cap = f.begin("capture");
  auto layer = f.begin("layer");
  f.create(1);
  f.end(layer);
  f.end(cap);
  // The replaying thread has a "capture/layer" range of its own: it must not mix with the capture's.
  auto serve = other->begin(f.id("serve"), 0);
  auto c2 = other->begin(f.id("capture"), 0);
  f.create(2, 1, other);  // a node added by hand (cudaGraphAddKernelNode) in serve/capture
  other->end(c2.depth, 10);
  const std::uint32_t c = f.launch(serve.instance);
  other->end(serve.depth, 20);
  f.graph_kernel(c, 1, 100, 140);
  f.graph_kernel(c, 2, 200, 210);
  f.consume();
  const Report r = f.report();
  const RangeStats* s = r.find("serve");
  REQUIRE(s != nullptr);
  CHECK(s->self.kernel_calls == 2);
  REQUIRE(s->graph.size() == 2);
  CHECK(s->graph[0].path == "capture/layer");
  CHECK(s->graph[0].kernel_ns == 40);
  CHECK(s->graph[1].path == "serve/capture");
  CHECK(s->graph[1].kernel_ns == 10);
  CHECK(r.find("capture/layer")->total.kernel_calls == 0);
}

TEST_CASE("a graph kernel that waits for its correlation is broken down once it resolves", "[graphs]") {
  Fixture f;
  f.created_in("capture", {1});
  auto decode = f.begin("decode");
  f.end(decode);
  f.graph_kernel(50, 1, 100, 120);  // per-thread buffers: the kernel before its correlation
  f.consume();
  CHECK(f.agg.pending() == 1);
  f.buffer.external(50, decode.instance).api(50, 10);
  f.consume();
  CHECK(f.agg.pending() == 0);
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  CHECK(d->self.kernel_calls == 1);
  REQUIRE(d->graph.size() == 1);
  CHECK(d->graph[0].path == "capture");
  CHECK(d->graph[0].kernel_ns == 20);
}

TEST_CASE("kernels of a device-launched graph are counted, and broken down where their records allow",
          "[graphs]") {
  Fixture f;
  auto cap = f.begin("capture");
  f.create(1);  // the device graph's node, captured on the host like any other
  f.end(cap);
  f.clone(101, 1);  // instantiated with cudaGraphInstantiateFlagDeviceLaunch
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  f.graph_kernel(c, 101, 100, 110, "_Z4gemmPf", 2, true);  // its correlation resolves: decode, capture
  f.graph_kernel(c, 101, 200, 220, "_Z4gemmPf", 2, false);
  f.graph_kernel(4242, 101, 300, 340, "_Z4gemmPf", 2, true);  // a correlation no API call has: waits
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.graph_kernels_device_launched == 2);
  CHECK(f.agg.pending() == 1);
  REQUIRE(r.find("decode") != nullptr);
  CHECK(r.find("decode")->self.kernel_calls == 2);
  CHECK(graph_lines(r, "decode") == GraphLines{{"capture", 2}});
}

TEST_CASE("nodes of a conditional node's body graph take the scope open where they were added", "[graphs]") {
  Fixture f;
  // cudaGraphAddNode(conditional) in "loop" (node 10), then kernel nodes added to its body graph
  // (graph 2) in loop/body; instantiation clones the body's nodes too. Body node 13's clone is not
  // reported: its kernels are of an unknown node, counted.
  auto loop = f.begin("loop");
  f.create(10, 1);
  auto body = f.begin("body");
  f.create(11, 2);
  f.create(12, 2);
  f.create(13, 2);
  f.end(body);
  f.end(loop);
  f.clone(110, 10);
  f.clone(111, 11);
  f.clone(112, 12);
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  for (int i = 0; i < 3; ++i) {  // the body ran 3 times in this launch
    f.graph_kernel(c, 111, 100 + 100 * i, 110 + 100 * i, "_Z4gemmPf", 2);
    f.graph_kernel(c, 112, 150 + 100 * i, 155 + 100 * i, "_Z4gemmPf", 2);
    f.graph_kernel(c, 213, 170 + 100 * i, 171 + 100 * i, "_Z4gemmPf", 2);
  }
  f.consume();
  const Report r = f.report();
  REQUIRE(r.find("decode") != nullptr);
  CHECK(r.find("decode")->self.kernel_calls == 9);
  CHECK(graph_lines(r, "decode") ==
        GraphLines{{"loop/body", 6}, {std::string(cuscope::kUnknownGraphNodeName), 3}});
  const GraphPathStats* body_row = graph_row(r.find("decode"), "loop/body");
  REQUIRE(body_row != nullptr);
  CHECK(body_row->kernel_ns == 45);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 3);
}

TEST_CASE("with the breakdown off, graph kernels count in their launching range only", "[graphs]") {
  Fixture f;
  f.agg.set_graph_breakdown(false);
  auto decode = f.begin("decode");
  f.end(decode);
  f.graph_kernel(f.launch(decode.instance), 1, 100, 110);
  f.consume();
  const Report r = f.report();
  CHECK(r.find("decode")->self.kernel_calls == 1);
  CHECK(r.find("decode")->graph.empty());
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
}

TEST_CASE("the graph breakdown in JSON reads back, and the table lists it under the launching range",
          "[graphs]") {
  Fixture f;
  capture_nested(f);
  f.clone(1'000'000'000, 5);  // nothing: node 5 is unknown
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  f.graph_kernel(c, 1, 1000, 1500);
  f.graph_kernel(c, 2, 2000, 2300, "_Z3mlpPf");
  f.graph_kernel(c, 5, 3000, 3100);
  f.consume();
  Report r = f.report();
  r.activity_status = "on";
  const std::string json = cuscope::format_json(r);
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(json, &back, &error));
  const RangeStats* d = back.find("decode");
  REQUIRE(d != nullptr);
  REQUIRE(d->graph.size() == 3);
  CHECK(d->graph[0].path == "capture/layer_0/attention");
  CHECK(d->graph[0].kernel_calls == 1);
  CHECK(d->graph[0].kernel_ns == 500);
  CHECK(d->graph[0].gpu_busy_ns == 500);
  REQUIRE(d->graph[0].kernels.size() == 1);
  CHECK(d->graph[0].kernels[0].name == "gemm(float*)");
  CHECK(d->graph[0].kernels[0].duration.total_ns == 500);
  CHECK(d->graph[1].path == "capture/layer_0/mlp");
  CHECK(d->graph[2].path == cuscope::kUnknownGraphNodeName);
  CHECK(back.diagnostics.graph_kernels_unknown_node == 1);
  CHECK(cuscope::format_json(back) == json);

  const std::string table = cuscope::format_table(r);
  CHECK(table.find("  (graph) capture/layer_0/attention  kernels 1  kernel time 500 ns  busy 500 ns\n") !=
        std::string::npos);
  CHECK(table.find("  (graph) (unknown node)             kernels 1  kernel time 100 ns  busy 100 ns\n") !=
        std::string::npos);
  CHECK(table.find("1 graph kernel of an unknown node") != std::string::npos);
}

TEST_CASE("the table lists at most 10 capture paths per range and counts the rest", "[graphs]") {
  Report r;
  r.activity_status = "on";
  cuscope::RangeStats decode;
  decode.name = decode.path = "decode";
  decode.parent = 0;
  decode.depth = 1;
  decode.calls = 1;
  for (int i = 0; i < 12; ++i) {
    GraphPathStats g;
    g.path = "layer_" + std::to_string(i);
    g.kernel_calls = 1;
    g.kernel_ns = 1000 - i;
    g.gpu_busy_ns = 1000 - i;
    decode.graph.push_back(g);
  }
  r.ranges.push_back(decode);
  r.ranges[0].children.push_back(1);
  const std::string table = cuscope::format_table(r);
  CHECK(table.find("  (graph) layer_9  kernels 1  kernel time  991 ns  busy  991 ns\n") != std::string::npos);
  CHECK(table.find("layer_10") == std::string::npos);
  CHECK(table.find("  (graph) … 2 more capture paths (JSON: graph)\n") != std::string::npos);
}

// A conditional node's body kernels on an H100 (CUDA 13.0): not device-launched, and matched to no
// API call at once, which only correlation id 0 does.
TEST_CASE("a graph kernel whose record names no launch is counted as such, not as unmatched", "[graphs]") {
  Fixture f;
  auto loop = f.begin("loop");
  f.create(10, 1);
  auto body = f.begin("body");
  f.create(11, 2);
  f.end(body);
  f.end(loop);
  f.clone(110, 10);
  f.clone(111, 11);
  auto run = f.begin("run");
  f.end(run);
  f.launch(run.instance);
  for (int i = 0; i < 10; ++i) f.graph_kernel(0, 111, 100 + 10 * i, 105 + 10 * i, "_Z4gemmPf", 2);
  f.graph_kernel(0, 0, 300, 310, "_Z4gemmPf", 0);  // no graph at all: unmatched, as before
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.graph_kernels_no_launch == 10);
  CHECK(r.diagnostics.unresolved_records == 1);
  CHECK(r.find("run")->self.kernel_calls == 0);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(cuscope::format_table(r).find("10 graph kernels without their launch (correlation 0)") !=
        std::string::npos);
}

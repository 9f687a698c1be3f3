// CUDA graphs without a GPU: node creation and clone events as the CUPTI adapter hands them to the
// model, and kernel records with graph node ids, in CUPTI 13.0 buffers built in memory (the decode
// path) or fed to the aggregator directly. A replayed kernel stays in its launching range and is
// also broken down by the range its node was created in (docs/cuda-graphs.md).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "cli/cli.hpp"
#include "cupti_buffer.hpp"
#include "model_fixture.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "session_fixture.hpp"
#include "trace/reader.hpp"
#include "trace/replay.hpp"
#include "trace/writer.hpp"

using cuscope::GraphPathStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::detail::consume_buffer;
using cuscope_test::CuptiBuffer;
using namespace cuscope::model;

namespace {

struct Fixture : cuscope_test::ModelFixture {
  CuptiBuffer buffer;
  std::uint32_t next_correlation = 1;

  // A node created now on `t` (the fixture's thread by default), as the resource callback reports it.
  void create(std::uint64_t node_id, std::uint32_t graph_id = 1, ThreadTree* t = nullptr) {
    agg.on(GraphNodeCreated{node_id, graph_id, (t != nullptr ? t : tree)->innermost()});
  }
  // Nodes created, in this order, inside a scope `name` that opens and closes around them.
  void created_in(const char* name, std::initializer_list<std::uint64_t> node_ids) {
    auto scope = begin(name);
    for (std::uint64_t id : node_ids) create(id);
    end(scope);
  }
  void clone(std::uint64_t node_id, std::uint64_t original, std::uint32_t exec = 0) {
    agg.on(GraphNodeCloned{node_id, original, exec});
  }
  // cudaGraphExecUpdate(exec, graph of `graph_nodes`) succeeded in an API call made now (its
  // correlation is the next one): later launches have larger correlations.
  void update(std::uint32_t exec, std::vector<std::uint64_t> graph_nodes) {
    agg.on(GraphExecUpdated{exec, next_correlation++, std::move(graph_nodes)});
  }

  // One cudaGraphLaunch inside `instance`: its correlation (the replay's kernels carry it).
  std::uint32_t launch(std::uint64_t instance) {
    const std::uint32_t c = next_correlation++;
    buffer.external(c, instance).api(c, 10);
    return c;
  }
  // The kernel record of graph node `node_id`, [start, end).
  void graph_kernel(std::uint32_t correlation, std::uint64_t node_id, std::uint64_t start, std::uint64_t end,
                    const char* name = "_Z4gemmPf", std::uint32_t graph_id = 1,
                    bool device_launched = false) {
    CUpti_ActivityKernel10 k{};
    k.isDeviceLaunched = device_launched ? 1 : 0;
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = correlation;
    k.start = start;
    k.end = end;
    k.name = name;
    k.gridX = k.gridY = k.gridZ = 1;
    k.blockX = 128;
    k.blockY = k.blockZ = 1;
    k.streamId = 7;
    k.graphNodeId = node_id;
    k.graphId = graph_id;
    buffer.add(k);
  }
  void consume() {
    consume_buffer(buffer.data(), buffer.size(), 0, agg);
    buffer.clear();
  }
};

const GraphPathStats* graph_row(const RangeStats* r, std::string_view path) {
  if (r == nullptr) return nullptr;
  for (const GraphPathStats& g : r->graph) {
    if (g.path == path) return &g;
  }
  return nullptr;
}

// A range's (graph) lines as (path, kernels), longest kernel time first; none for no range.
using GraphLines = std::vector<std::pair<std::string, std::uint64_t>>;
GraphLines graph_lines(const Report& r, std::string_view range) {
  GraphLines lines;
  if (const RangeStats* found = r.find(range))
    for (const GraphPathStats& g : found->graph) lines.emplace_back(g.path, g.kernel_calls);
  return lines;
}

// The path of the range `node` was created in, as the session's node map has it: "" for none.
std::string node_path(cuscope::detail::Session& s, std::uint64_t node) {
  const Node* n = nullptr;
  if (!s.aggregator.graph_nodes().find(node, &n)) return "(not found)";
  std::string p;
  for (; n != nullptr && n->id != 0; n = n->parent)
    p = s.forest.names.name(n->name_id) + (p.empty() ? "" : "/" + p);
  return p;
}

// Capture under capture/layer_0/{attention,mlp} and capture/layer_1/attention: nodes 1..4, the
// 4th in capture itself. All scopes end before any replay.
void capture_nested(Fixture& f) {
  auto capture = f.begin("capture");
  auto l0 = f.begin("layer_0");
  f.created_in("attention", {1});
  f.created_in("mlp", {2});
  f.end(l0);
  auto l1 = f.begin("layer_1");
  f.created_in("attention", {3});
  f.end(l1);
  f.create(4);
  f.end(capture);
}

// Instantiation tied these clones to `exec` (the adapter claims the clones reported with the exec's
// handle at its GRAPHEXEC_CREATED, the order an H100 showed).
void agg_nodes(Fixture& f, std::uint32_t exec, std::vector<std::uint64_t> nodes) {
  f.agg.on(GraphExecNodes{exec, std::move(nodes)});
}

}  // namespace

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

TEST_CASE("clones made by instantiation map to their original's range, by either id", "[graphs]") {
  Fixture f;
  capture_nested(f);
  // cudaGraphInstantiate clones each node: 1 -> 101, 2 -> 102 ...; a clone of a clone (an exec
  // updated from a cloned graph) follows the chain.
  for (std::uint64_t n = 1; n <= 4; ++n) f.clone(100 + n, n);
  f.clone(1001, 101);
  f.clone(999, 77);  // a clone of a node created before tracing started: unknown
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  f.graph_kernel(c, 1, 100, 110);     // the template's id
  f.graph_kernel(c, 101, 200, 210);   // the exec's clone
  f.graph_kernel(c, 1001, 300, 310);  // the clone's clone
  f.graph_kernel(c, 102, 400, 410);
  f.graph_kernel(c, 999, 500, 505);
  f.consume();
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  CHECK(d->self.kernel_calls == 5);
  REQUIRE(d->graph.size() == 3);
  REQUIRE(graph_row(d, "capture/layer_0/attention") != nullptr);
  CHECK(graph_row(d, "capture/layer_0/attention")->kernel_calls == 3);
  REQUIRE(graph_row(d, "capture/layer_0/mlp") != nullptr);
  CHECK(graph_row(d, "capture/layer_0/mlp")->kernel_calls == 1);
  const GraphPathStats* unknown = graph_row(d, cuscope::kUnknownGraphNodeName);
  REQUIRE(unknown != nullptr);
  CHECK(unknown->kernel_calls == 1);
  CHECK(unknown->kernel_ns == 5);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 1);
}

TEST_CASE("instantiation reports each exec node created, then cloned: the clone decides", "[graphs]") {
  Fixture f;
  f.created_in("capture", {1});
  // cudaGraphInstantiate inside "setup": CUPTI reports each exec node as created on this thread
  // (in setup), then as a clone of its template node.
  auto setup = f.begin("setup");
  f.create(101);
  f.clone(101, 1);
  f.create(102);
  f.clone(102, 77);  // template node 77 made before tracing started: unknown, not setup's
  f.clone(103, 1);   // the other order: the clone first, then its creation
  f.create(103);
  f.end(setup);
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  f.graph_kernel(c, 101, 100, 110);
  f.graph_kernel(c, 102, 200, 220);
  f.graph_kernel(c, 103, 300, 330);
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") ==
        GraphLines{{"capture", 2}, {std::string(cuscope::kUnknownGraphNodeName), 1}});
  CHECK(r.diagnostics.graph_kernels_unknown_node == 1);
}

TEST_CASE("a clone onto a node id the map holds takes its new original's range", "[graphs]") {
  Fixture f;
  auto v1 = f.begin("v1");
  f.create(1);
  f.end(v1);
  f.clone(101, 1);  // instantiate
  auto v2 = f.begin("v2");
  f.create(2);
  f.end(v2);
  auto decode = f.begin("decode");
  f.end(decode);
  f.graph_kernel(f.launch(decode.instance), 101, 100, 110);
  f.consume();
  f.clone(101, 2);  // (an exec update is not reported so on an H100: see the GraphExecUpdated tests)
  f.graph_kernel(f.launch(decode.instance), 101, 200, 230);
  f.graph_kernel(f.launch(decode.instance), 101, 300, 330);
  f.consume();
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  REQUIRE(graph_row(d, "v1") != nullptr);
  CHECK(graph_row(d, "v1")->kernel_calls == 1);
  REQUIRE(graph_row(d, "v2") != nullptr);
  CHECK(graph_row(d, "v2")->kernel_calls == 2);
  CHECK(graph_row(d, "v2")->kernel_ns == 60);
  CHECK(d->graph.size() == 2);
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

TEST_CASE("nodes keep their range after it ended and its instances aged out", "[graphs]") {
  Fixture f;
  auto cap = f.begin("capture");
  f.create(1);
  f.end(cap);
  // Far more instances than the ring keeps: the capture's instance id resolves no more.
  for (std::uint32_t i = 0; i < 2 * ThreadTree::kInstanceRing; ++i) f.end(f.begin("other"));
  CHECK(f.forest->node_for_testing(cap.instance) == nullptr);
  auto decode = f.begin("decode");
  f.graph_kernel(f.launch(decode.instance), 1, 100, 130);
  f.end(decode);
  f.create(2);  // no scope open: created outside every range
  f.graph_kernel(f.launch(decode.instance), 2, 200, 205);
  f.consume();
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  REQUIRE(d->graph.size() == 2);
  CHECK(d->graph[0].path == "capture");
  CHECK(d->graph[0].kernel_calls == 1);
  CHECK(d->graph[1].path == cuscope::kUnscopedName);
  CHECK(d->graph[1].kernel_calls == 1);
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

TEST_CASE("the node map is bounded: the oldest nodes are evicted, counted, and their kernels unknown",
          "[graphs]") {
  Fixture f;
  auto cap = f.begin("capture");
  for (std::uint64_t n = 1; n <= GraphNodeMap::kMaxNodes + 3; ++n) f.create(n);
  f.end(cap);
  CHECK(f.agg.graph_nodes().size() == GraphNodeMap::kMaxNodes);
  f.clone(1'000'000'000, 2);  // a clone of an evicted node: unknown too, and nothing more evicted
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c = f.launch(decode.instance);
  for (std::uint64_t n = 1; n <= 5; ++n) f.graph_kernel(c, n, 100 * n, 100 * n + 10);
  f.graph_kernel(c, 1'000'000'000, 1000, 1010);
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.graph_nodes_evicted == 3);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 4);
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  REQUIRE(graph_row(d, "capture") != nullptr);
  CHECK(graph_row(d, "capture")->kernel_calls == 2);  // nodes 4 and 5
  REQUIRE(graph_row(d, cuscope::kUnknownGraphNodeName) != nullptr);
  CHECK(graph_row(d, cuscope::kUnknownGraphNodeName)->kernel_calls == 4);
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

TEST_CASE("CUPTI's subscriber held by another tool: the breakdown is off, in one line saying why",
          "[graphs]") {
  cuscope_test::Session session;
  auto& s = cuscope::detail::session();
  cuscope::detail::set_subscribe_result_for_testing(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const bool on = cuscope::detail::start_graph_breakdown(s);
  cuscope::detail::set_subscribe_result_for_testing(0);
  CHECK_FALSE(on);
  const Report r = cuscope::snapshot();
  REQUIRE(r.notes.size() >= 1);
  std::size_t graph_notes = 0;
  for (const std::string& note : r.notes) graph_notes += note.find("graph") != std::string::npos ? 1 : 0;
  CHECK(graph_notes == 1);
  CHECK(std::find(r.notes.begin(), r.notes.end(),
                  "CUDA graph breakdown off (replayed kernels count in their launching range only): CUPTI is "
                  "already in use by another tool (Nsight Systems, Nsight Compute or compute-sanitizer): "
                  "cuptiSubscribe returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED") != r.notes.end());
  {
    std::lock_guard lock(s.aggregator_mutex);
    CHECK_FALSE(s.aggregator.graph_breakdown());
  }
  // Everything else works: scopes go on.
  { cuscope::Scope decode("decode"); }
  const Report after = cuscope::snapshot();
  const RangeStats* d = after.find("decode");
  REQUIRE(d != nullptr);
  CHECK(d->calls == 1);
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

TEST_CASE("the node callback ties a node to the calling thread's innermost scope, or to none", "[graphs]") {
  cuscope_test::Session session;
  auto& s = cuscope::detail::session();
  cuscope::detail::graph_node_created(s, 1, 9);  // no scope open on this thread yet
  {
    cuscope::Scope capture("capture");
    {
      cuscope::Scope layer("layer_3");
      cuscope::Scope attn("attention");
      cuscope::detail::graph_node_created(s, 2, 9);
    }
    cuscope::detail::graph_node_created(s, 3, 9);
  }
  cuscope::detail::graph_node_cloned(s, 102, 2);
  const Node* range = reinterpret_cast<const Node*>(1);
  REQUIRE(s.aggregator.graph_nodes().find(1, &range));
  CHECK(range == nullptr);
  auto path = [&](std::uint64_t node) { return node_path(s, node); };
  CHECK(path(2) == "capture/layer_3/attention");
  CHECK(path(102) == "capture/layer_3/attention");
  CHECK(path(3) == "capture");
  CHECK(path(4) == "(not found)");
}

TEST_CASE("in trace mode the callbacks write what the model gets: an unscoped node, a clone with its exec, the exec, its update",
          "[graphs][trace]") {
  const std::string path = (std::filesystem::temp_directory_path() / "cuscope_test_graph_callbacks.cuscope").string();
  {
    cuscope::Options o = cuscope_test::quiet_options();
    o.trace_path = path;
    cuscope_test::Session session(o);
    auto& s = cuscope::detail::session();
    cuscope::detail::graph_node_created(s, 2, 9);
    cuscope::detail::graph_node_cloned(s, 102, 2, 7);
    cuscope::detail::graph_exec_nodes(s, 7, {102});
    cuscope::detail::graph_exec_updated(s, 7, 40, {3});
    cuscope::detail::reset_for_testing();
  }
  struct Seen : cuscope::trace::Visitor {
    std::vector<std::string> events;
    void scope(const cuscope::trace::ScopeEvent& e) override {
      if (cuscope::trace::kind_of(e) == cuscope::trace::ScopeKind::GraphNode)
        events.push_back("node " + std::to_string(e.value) + " of graph " + std::to_string(e.arg) + " on slot " +
                         std::to_string(cuscope::trace::slot_of(e)));
    }
    void on(const GraphNodeCloned& c) override {
      events.push_back("clone " + std::to_string(c.node_id) + " of " + std::to_string(c.original_node_id) +
                       " in exec " + std::to_string(c.exec_id));
    }
    void on(const GraphExecNodes& n) override {
      events.push_back("exec " + std::to_string(n.exec_id) + " nodes " + std::to_string(n.node_ids.size()));
    }
    void on(const GraphExecUpdated& u) override {
      events.push_back("exec " + std::to_string(u.exec_id) + " updated at " + std::to_string(u.correlation) +
                       " from " + std::to_string(u.graph_node_ids.size()));
    }
  } seen;
  std::string error;
  cuscope::trace::Reader reader;
  REQUIRE(reader.open(path, &error));
  const bool read = reader.read(seen, &error);
  std::remove(path.c_str());
  INFO(error);
  REQUIRE(read);
  // Node 2 was made on this thread, which has no scope state: slot 0, and no thread attached (its
  // first event in the writer's ring would have named slot 0, a trace the reader refuses).
  CHECK(seen.events == std::vector<std::string>{"node 2 of graph 9 on slot 0", "clone 102 of 2 in exec 7",
                                                "exec 7 nodes 1", "exec 7 updated at 40 from 1"});
}

TEST_CASE("zero-code mode: a node created under NVTX ranges takes the innermost one", "[graphs]") {
  cuscope_test::Session session;
  auto& s = cuscope::detail::session();
  // What the NVTX injection does for nvtxRangePushA("decode"), then ("layer_3") (inject/open_ranges.hpp:
  // enter_interned() when its common path declines; both open the thread's own tree).
  std::uint32_t outer_token = 0;
  std::uint32_t inner_token = 0;
  auto* outer =
      cuscope::detail::enter_interned(cuscope::detail::process_names().intern("decode"), outer_token);
  auto* inner =
      cuscope::detail::enter_interned(cuscope::detail::process_names().intern("layer_3"), inner_token);
  REQUIRE(outer != nullptr);
  REQUIRE(inner != nullptr);
  cuscope::detail::graph_node_created(s, 1, 4);
  cuscope::detail::exit_owned(inner, inner_token, cuscope::detail::now_ns());
  cuscope::detail::graph_node_created(s, 2, 4);
  cuscope::detail::exit_owned(outer, outer_token, cuscope::detail::now_ns());
  cuscope::detail::graph_node_created(s, 3, 4);
  auto path = [&](std::uint64_t node) { return node_path(s, node); };
  CHECK(path(1) == "decode/layer_3");
  CHECK(path(2) == "decode");
  CHECK(path(3).empty());  // no range open
}

TEST_CASE("what the node map learns or forgets between two replays applies to the next kernel", "[graphs]") {
  Fixture f;
  auto a = f.begin("launch_a");
  f.end(a);
  auto b = f.begin("launch_b");
  f.end(b);
  f.graph_kernel(f.launch(a.instance), 7, 100, 110);  // node 7 not created yet: unknown
  f.consume();
  f.created_in("capture", {7});
  // The same node replayed from two ranges in turn, twice each.
  for (int i = 0; i < 2; ++i) {
    f.graph_kernel(f.launch(a.instance), 7, 200 + 100 * i, 220 + 100 * i);
    f.graph_kernel(f.launch(b.instance), 7, 250 + 100 * i, 280 + 100 * i);
  }
  f.consume();
  // Node 7 evicted: the map fills with newer nodes.
  for (std::uint64_t n = 1; n <= GraphNodeMap::kMaxNodes; ++n) f.create(1000 + n);
  f.graph_kernel(f.launch(b.instance), 7, 900, 905);
  f.consume();
  const Report r = f.report();
  const RangeStats* ra = r.find("launch_a");
  const RangeStats* rb = r.find("launch_b");
  REQUIRE(ra != nullptr);
  REQUIRE(rb != nullptr);
  REQUIRE(graph_row(ra, "capture") != nullptr);
  CHECK(graph_row(ra, "capture")->kernel_calls == 2);
  CHECK(graph_row(ra, "capture")->kernel_ns == 40);
  REQUIRE(graph_row(ra, cuscope::kUnknownGraphNodeName) != nullptr);
  CHECK(graph_row(ra, cuscope::kUnknownGraphNodeName)->kernel_calls == 1);
  REQUIRE(graph_row(rb, "capture") != nullptr);
  CHECK(graph_row(rb, "capture")->kernel_calls == 2);
  CHECK(graph_row(rb, "capture")->kernel_ns == 60);
  REQUIRE(graph_row(rb, cuscope::kUnknownGraphNodeName) != nullptr);
  CHECK(graph_row(rb, cuscope::kUnknownGraphNodeName)->kernel_calls == 1);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 2);
  CHECK(r.diagnostics.graph_nodes_evicted == 1);
}

TEST_CASE("nodes created on one thread while another decodes graph kernels: nothing lost",
          "[graphs][threads]") {
  Fixture f;
  f.created_in("capture", {1});
  auto decode = f.begin("decode");
  f.end(decode);
  constexpr std::uint64_t kCreated = 20'000;
  constexpr int kReplays = 200;
  constexpr int kKernels = 50;
  // The capturing thread, as the resource callback does it: no aggregator lock, the map's own.
  std::thread capture([&] {
    for (std::uint64_t n = 0; n < kCreated; ++n) f.agg.on(GraphNodeCreated{100 + n, 2, nullptr});
  });
  std::uint64_t t = 1000;
  for (int replay = 0; replay < kReplays; ++replay) {
    const std::uint32_t c = f.launch(decode.instance);
    for (int k = 0; k < kKernels; ++k, t += 10) f.graph_kernel(c, k % 2 == 0 ? 1 : 100 + k, t, t + 5);
    f.consume();
  }
  capture.join();
  const Report r = f.report();
  const RangeStats* d = r.find("decode");
  REQUIRE(d != nullptr);
  CHECK(d->self.kernel_calls == kReplays * kKernels);
  std::uint64_t broken_down = 0;
  for (const GraphPathStats& g : d->graph) broken_down += g.kernel_calls;
  CHECK(broken_down == kReplays * kKernels);
  REQUIRE(graph_row(d, "capture") != nullptr);
  CHECK(graph_row(d, "capture")->kernel_calls == kReplays * kKernels / 2);  // node 1, known throughout
  const GraphPathStats* unknown = graph_row(d, cuscope::kUnknownGraphNodeName);
  const GraphPathStats* unscoped = graph_row(d, cuscope::kUnscopedName);
  CHECK((unknown ? unknown->kernel_calls : 0) + (unscoped ? unscoped->kernel_calls : 0) ==
        kReplays * kKernels / 2);
  CHECK(r.diagnostics.graph_kernels_unknown_node == (unknown ? unknown->kernel_calls : 0));
  CHECK(r.diagnostics.graph_nodes_evicted == 0);
  CHECK(f.agg.graph_nodes().size() == kCreated + 1);
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

// A model fed by hand and, like trace mode, a trace of the same: what graph_node_created and the
// CUPTI adapter do. finish() gives the live report and the trace's replay.
struct TracedModel {
  std::string path;
  Forest forest;
  Aggregator agg{forest};
  ThreadTree* tree = nullptr;
  std::unique_ptr<cuscope::trace::Writer> writer;

  explicit TracedModel(const char* file)
      : path((std::filesystem::temp_directory_path() / file).string()) {
    forest.record_instances = true;
    tree = forest.make_tree();
    std::string error;
    writer = cuscope::trace::Writer::open(path, cuscope::trace::Writer::kDefaultLimitBytes, forest.names, &error);
    REQUIRE(writer != nullptr);
    writer->meta("max_depth", "64");
  }
  ThreadTree::Token begin(const char* name, std::uint64_t t) {
    const std::uint32_t id = forest.names.intern(name);
    const auto tok = tree->begin(id, t);
    writer->record(cuscope::trace::ScopeKind::Enter, tree->slot(), id, t, tok.instance);
    return tok;
  }
  void end(const ThreadTree::Token& tok, std::uint64_t t) {
    tree->end(tok.depth, t);
    writer->record(cuscope::trace::ScopeKind::Exit, tree->slot(), tok.depth, t, 0);
  }
  // A node made on this thread (its innermost range), or on one with no scope state (slot 0).
  void create(std::uint64_t node, bool scoped = true) {
    agg.on(GraphNodeCreated{node, 3, scoped ? tree->innermost() : nullptr});
    writer->record(cuscope::trace::ScopeKind::GraphNode, scoped ? tree->slot() : 0, 3, 0, node);
  }
  template <class R>
  void on(const R& record) {
    writer->on(record);
    agg.on(record);
  }
  // The live report, and the trace's replay (the file is removed).
  std::pair<Report, Report> finish() {
    writer->buffer_end(0, 0);
    agg.settle(2, false);
    writer->finish_events();
    REQUIRE(writer->close(cuscope::trace::Summary{}));
    agg.settle(1);
    std::pair<Report, Report> out;
    agg.build(out.first);
    std::string error;
    const bool replayed = cuscope::trace::replay_file(path, &out.second, &error);
    std::remove(path.c_str());
    INFO(error);
    REQUIRE(replayed);
    return out;
  }
};

TEST_CASE("a trace keeps graph nodes and graph kernels: its replay has the same breakdown",
          "[graphs][trace]") {
  TracedModel m("cuscope_test_graphs.cuscope");
  const auto capture = m.begin("capture", 10);
  const auto layer = m.begin("layer", 20);
  m.create(1);
  m.end(layer, 30);
  m.create(2);
  m.end(capture, 40);
  m.on(GraphNodeCloned{101, 1});
  m.on(GraphNodeCloned{102, 2});
  const auto decode = m.begin("decode", 100);
  m.on(ApiCall{5, 110, 120});
  m.on(ExternalCorrelation{5, decode.instance});
  for (std::uint64_t i = 0; i < 4; ++i) {
    KernelActivity k;
    k.correlation = 5;
    k.start_ns = 1000 + 100 * i;
    k.end_ns = k.start_ns + 10 + i;
    k.name = "_Z4gemmPf";
    k.grid = {1, 1, 1};
    k.block = {128, 1, 1};
    k.graph_node_id = i == 3 ? 55 : 101 + i % 2;  // node 55: unknown
    k.graph_id = 3;
    k.device_launched = i == 0;  // the tail's last byte
    m.on(k);
  }
  KernelActivity plain;  // a kernel outside graphs in the same trace
  plain.correlation = 5;
  plain.start_ns = 2000;
  plain.end_ns = 2050;
  plain.name = "_Z4normPf";
  m.on(plain);
  m.end(decode, 3000);
  const auto [live, replayed] = m.finish();
  const RangeStats* d = replayed.find("decode");
  REQUIRE(d != nullptr);
  CHECK(d->self.kernel_calls == 5);
  REQUIRE(d->graph.size() == 3);
  CHECK(d->graph[0].path == "capture/layer");
  CHECK(d->graph[0].kernel_calls == 2);
  CHECK(d->graph[0].kernel_ns == 22);
  CHECK(d->graph[1].path == cuscope::kUnknownGraphNodeName);  // 13 ns
  CHECK(d->graph[2].path == "capture");                       // 11 ns
  CHECK(d->graph[2].kernel_calls == 1);
  CHECK(replayed.diagnostics.graph_kernels_unknown_node == 1);
  CHECK(replayed.diagnostics.graph_kernels_device_launched == 1);
  CHECK(live.diagnostics.graph_kernels_device_launched == 1);
  const RangeStats* live_decode = live.find("decode");
  REQUIRE(live_decode != nullptr);
  REQUIRE(live_decode->graph.size() == d->graph.size());
  for (std::size_t i = 0; i < d->graph.size(); ++i) {
    CHECK(live_decode->graph[i].path == d->graph[i].path);
    CHECK(live_decode->graph[i].kernel_calls == d->graph[i].kernel_calls);
    CHECK(live_decode->graph[i].gpu_busy_ns == d->graph[i].gpu_busy_ns);
  }
}

// The H100 run found trace mode without exec updates: an updated exec's later launches replayed
// under the old graph's capture ranges. And a node made on a thread with no scope replayed as unknown.
TEST_CASE("a trace keeps an exec's nodes, its update and a node made outside scopes: replay equals live",
          "[graphs][trace]") {
  TracedModel m("cuscope_test_graph_update.cuscope");
  const auto v1 = m.begin("v1", 10);
  m.create(1);
  m.create(2);
  m.end(v1, 20);
  m.create(9, false);  // another thread, with no scope state
  m.on(GraphNodeCloned{101, 1, 7});
  m.on(GraphNodeCloned{102, 2, 7});
  m.on(GraphNodeCloned{109, 9, 7});
  m.on(GraphExecNodes{7, {101, 102, 109}});
  const auto v2 = m.begin("v2", 30);
  m.create(3);
  m.create(4);
  m.create(5);
  m.end(v2, 40);
  const auto decode = m.begin("decode", 100);
  auto launch = [&](std::uint64_t correlation) {
    m.on(ApiCall{correlation, 100 + correlation, 101 + correlation});
    m.on(ExternalCorrelation{correlation, decode.instance});
  };
  launch(5);
  m.on(GraphExecUpdated{7, 6, {3, 4, 5}});  // the update call's correlation: 6; a graph of one range
  launch(8);
  auto kernel = [&](std::uint64_t correlation, std::uint64_t node, std::uint64_t start) {
    KernelActivity k;
    k.correlation = correlation;
    k.start_ns = start;
    k.end_ns = start + 10;
    k.name = "_Z4gemmPf";
    k.grid = {1, 1, 1};
    k.block = {128, 1, 1};
    k.graph_node_id = node;
    k.graph_id = 3;
    m.on(k);
  };
  kernel(5, 101, 1000);  // before the update: v1, v1, (unscoped)
  kernel(5, 102, 1100);
  kernel(5, 109, 1200);
  kernel(8, 101, 2000);  // after it: v2, v2, v2
  kernel(8, 102, 2100);
  kernel(8, 109, 2200);
  m.end(decode, 3000);
  const auto [live, replayed] = m.finish();
  const GraphLines expected{{"v2", 3}, {"v1", 2}, {"(unscoped)", 1}};
  CHECK(graph_lines(live, "decode") == expected);
  CHECK(graph_lines(replayed, "decode") == expected);
  for (const Report* r : {&live, &replayed}) {
    CHECK(r->diagnostics.graph_kernels_unknown_node == 0);
    CHECK(r->diagnostics.graph_kernels_after_update == 0);
    CHECK(r->diagnostics.graph_exec_updates_unmapped == 0);
  }
}

TEST_CASE("a graph record with more node ids than a trace record holds is written with none, counted",
          "[graphs][trace]") {
  const std::string path =
      (std::filesystem::temp_directory_path() / "cuscope_test_graph_ids.cuscope").string();
  Forest forest;
  std::string error;
  std::unique_ptr<cuscope::trace::Writer> writer =
      cuscope::trace::Writer::open(path, cuscope::trace::Writer::kDefaultLimitBytes, forest.names, &error);
  REQUIRE(writer != nullptr);
  GraphExecNodes big{4, std::vector<std::uint64_t>(cuscope::trace::kMaxGraphIds + 1, 77)};
  writer->on(big);
  writer->on(GraphExecNodes{5, {1, 2}});
  writer->finish_events();
  CHECK(writer->dropped() == 1);
  REQUIRE(writer->close(cuscope::trace::Summary{}));
  struct Seen : cuscope::trace::Visitor {
    std::vector<std::pair<std::uint32_t, std::size_t>> execs;
    void on(const GraphExecNodes& n) override { execs.emplace_back(n.exec_id, n.node_ids.size()); }
  } seen;
  cuscope::trace::Reader reader;
  REQUIRE(reader.open(path, &error));
  REQUIRE(reader.read(seen, &error));
  std::remove(path.c_str());
  CHECK(seen.execs == std::vector<std::pair<std::uint32_t, std::size_t>>{{4, 0}, {5, 2}});
}

// cudaGraphExecUpdate on an H100 (CUDA 13.0) reported no clone for the exec's nodes: the update
// comes as GraphExecUpdated, with the update call's correlation as the fence.
TEST_CASE("an exec update whose new graph is of one range: later launches follow it, earlier ones stay",
          "[graphs]") {
  Fixture f;
  auto v1 = f.begin("v1");
  f.create(1);
  f.create(2);
  f.end(v1);
  f.clone(101, 1, 7);  // instantiate: exec 7
  f.clone(102, 2, 7);
  auto v2 = f.begin("v2");
  f.create(3);
  f.create(4);
  f.end(v2);
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t before = f.launch(decode.instance);
  f.update(7, {3, 4});
  const std::uint32_t after = f.launch(decode.instance);
  // Records of the launch before the update come after it was reported: they keep v1.
  f.graph_kernel(before, 101, 100, 110);
  f.graph_kernel(before, 102, 110, 120);
  f.graph_kernel(after, 101, 200, 230);
  f.graph_kernel(after, 102, 230, 260);
  f.graph_kernel(before, 101, 120, 125);  // a late record of the first launch, after the cached hit
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") == GraphLines{{"v2", 2}, {"v1", 3}});
  CHECK(graph_row(r.find("decode"), "v2")->kernel_ns == 60);
  CHECK(graph_row(r.find("decode"), "v1")->kernel_ns == 25);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(r.diagnostics.graph_kernels_after_update == 0);
  CHECK(r.diagnostics.graph_exec_updates_unmapped == 0);
}

TEST_CASE("an exec update that would need CUDA's node pairing: later launches are unknown, counted",
          "[graphs]") {
  Fixture f;
  auto v1 = f.begin("v1");
  f.create(1);
  f.create(2);
  f.end(v1);
  f.clone(101, 1, 7);
  f.clone(102, 2, 7);
  f.created_in("a", {3});
  f.created_in("b", {4});
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t before = f.launch(decode.instance);
  f.update(7, {3, 4});  // two ranges: which exec node runs which is CUDA's pairing
  const std::uint32_t after = f.launch(decode.instance);
  f.graph_kernel(before, 101, 100, 110);
  f.graph_kernel(after, 101, 200, 230);
  f.graph_kernel(after, 102, 230, 240);
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") == GraphLines{{std::string(cuscope::kUnknownGraphNodeName), 2}, {"v1", 1}});
  CHECK(r.find("decode")->self.kernel_calls == 3);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 2);
  CHECK(r.diagnostics.graph_kernels_after_update == 2);
}

TEST_CASE("an exec update: an unknown node of the new graph, or a count that differs, re-maps nothing",
          "[graphs]") {
  Fixture f;
  f.created_in("v1", {1});
  f.clone(101, 1, 7);
  f.created_in("v2", {3, 4});
  auto decode = f.begin("decode");
  f.end(decode);
  f.update(7, {3, 4});  // two nodes for the exec's one
  const std::uint32_t c1 = f.launch(decode.instance);
  f.update(7, {99});  // a node cuscope never saw created
  const std::uint32_t c2 = f.launch(decode.instance);
  f.graph_kernel(c1, 101, 100, 110);
  f.graph_kernel(c2, 101, 200, 210);
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") == GraphLines{{std::string(cuscope::kUnknownGraphNodeName), 2}});
  CHECK(r.diagnostics.graph_kernels_after_update == 2);
}

TEST_CASE("two exec updates: a launch before the first is unknown once the second came", "[graphs]") {
  Fixture f;
  f.created_in("v1", {1});
  f.clone(101, 1, 7);
  auto v2 = f.begin("v2");
  f.create(2);
  f.end(v2);
  auto v3 = f.begin("v3");
  f.create(3);
  f.end(v3);
  auto decode = f.begin("decode");
  f.end(decode);
  const std::uint32_t c1 = f.launch(decode.instance);
  f.update(7, {2});
  const std::uint32_t c2 = f.launch(decode.instance);
  f.update(7, {3});
  const std::uint32_t c3 = f.launch(decode.instance);
  f.graph_kernel(c3, 101, 300, 330);
  f.graph_kernel(c2, 101, 200, 220);
  f.graph_kernel(c1, 101, 100, 110);  // only the last two mappings are kept
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") ==
        GraphLines{{"v3", 1}, {"v2", 1}, {std::string(cuscope::kUnknownGraphNodeName), 1}});
  CHECK(r.diagnostics.graph_kernels_after_update == 1);
}

TEST_CASE("an exec update leaves other execs of the same graph alone; an exec of unknown nodes is counted",
          "[graphs]") {
  Fixture f;
  auto v1 = f.begin("v1");
  f.create(1);
  f.end(v1);
  f.clone(101, 1);  // exec 7, its node claimed at the exec's GRAPHEXEC_CREATED
  agg_nodes(f, 7, {101});
  f.clone(201, 1, 8);  // exec 8, from the same graph
  auto v2 = f.begin("v2");
  f.create(2);
  f.end(v2);
  auto decode = f.begin("decode");
  f.end(decode);
  f.update(7, {2});
  f.update(9, {2});  // exec 9: instantiated before tracing
  const std::uint32_t c = f.launch(decode.instance);
  f.graph_kernel(c, 101, 100, 110);
  f.graph_kernel(c, 201, 110, 120);
  f.consume();
  const Report r = f.report();
  CHECK(graph_lines(r, "decode") == GraphLines{{"v1", 1}, {"v2", 1}});
  CHECK(r.diagnostics.graph_exec_updates_unmapped == 1);
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

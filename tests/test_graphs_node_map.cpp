// CUDA graphs without a GPU, the node map: which range a graph node id stands for once CUDA has
// cloned it (instantiation, a clone of a clone, a clone onto a known id), after its range ended,
// when the bounded map evicts it, while another thread adds nodes, and across exec updates
// (GraphExecUpdated, with the update call's correlation as the fence). Graph kernels go through
// the decode path in CUPTI 13.0 buffers built in memory (docs/cuda-graphs.md).
//
// Never: a session, a GPU or a file (the model is fed by hand, as the CUPTI adapter would feed it),
// nor a thread left running past its case.
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "graphs_kit.hpp"

using cuscope::GraphPathStats;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope_test::graphs_kit::capture_nested;
using cuscope_test::graphs_kit::Fixture;
using cuscope_test::graphs_kit::graph_lines;
using cuscope_test::graphs_kit::graph_row;
using cuscope_test::graphs_kit::GraphLines;
using namespace cuscope::model;

namespace {

// Instantiation tied these clones to `exec` (the adapter claims the clones reported with the exec's
// handle at its GRAPHEXEC_CREATED, the order an H100 showed).
void agg_nodes(Fixture& f, std::uint32_t exec, std::vector<std::uint64_t> nodes) {
  f.agg.on(GraphExecNodes{exec, std::move(nodes)});
}

}  // namespace

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

TEST_CASE("an exec update leaves other execs of the same graph alone, an exec of unknown nodes is counted",
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

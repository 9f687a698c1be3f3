// CUDA graphs from outside the model: the session's node callbacks (a node takes the calling
// thread's innermost scope or NVTX range; CUPTI's subscriber held by another tool turns the
// breakdown off, saying why), and trace mode, which writes the same node, clone, exec and update
// records to a trace whose replay must give the live breakdown (docs/cuda-graphs.md).
//
// Never: depend on a GPU (the test calls the callbacks as CUPTI would; the case that counts notes
// hides a GPU that is there, session_fixture.hpp's WithoutGpu); never a session or a trace file left
// behind past its case.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graphs_kit.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "session_fixture.hpp"
#include "trace/reader.hpp"
#include "trace/replay.hpp"
#include "trace/writer.hpp"

using cuscope::RangeStats;
using cuscope::Report;
using cuscope_test::graphs_kit::graph_lines;
using cuscope_test::graphs_kit::GraphLines;
using namespace cuscope::model;

namespace {

// The path of the range `node` was created in, as the session's node map has it: "" for none.
std::string node_path(cuscope::detail::Session& s, std::uint64_t node) {
  const Node* n = nullptr;
  if (!s.aggregator.graph_nodes().find(node, &n)) return "(not found)";
  std::string p;
  for (; n != nullptr && n->id != 0; n = n->parent)
    p = s.forest.names.name(n->name_id) + (p.empty() ? "" : "/" + p);
  return p;
}

}  // namespace

TEST_CASE("CUPTI's subscriber held by another tool: the breakdown is off, in one line saying why",
          "[graphs]") {
  cuscope_test::WithoutGpu no_gpu;  // on a GPU machine, real CUPTI's subscriber and notes beside the fake's
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
TEST_CASE("a trace keeps an exec's nodes, its update and a node made outside scopes, replay equals live",
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

// What the CUDA graph tests share (test_graphs_breakdown.cpp, test_graphs_node_map.cpp,
// test_graphs_callbacks.cpp): a model fed node creations, clones and exec updates as the CUPTI
// adapter hands them over, with graph kernels in a CUPTI 13.0 buffer built in memory; a range's
// (graph) rows read back; one nested capture. Never a test case here, and nothing that needs a GPU.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cuscope/report.hpp>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cupti_buffer.hpp"
#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "model_fixture.hpp"
#include "producers/cupti/decode.hpp"

namespace cuscope_test::graphs_kit {

struct Fixture : cuscope_test::ModelFixture {
  CuptiBuffer buffer;
  std::uint32_t next_correlation = 1;

  // A node created now on `t` (the fixture's thread by default), as the resource callback reports it.
  void create(std::uint64_t node_id, std::uint32_t graph_id = 1, cuscope::model::ThreadTree* t = nullptr) {
    agg.on(cuscope::model::GraphNodeCreated{node_id, graph_id, (t != nullptr ? t : tree)->innermost()});
  }
  // Nodes created, in this order, inside a scope `name` that opens and closes around them.
  void created_in(const char* name, std::initializer_list<std::uint64_t> node_ids) {
    auto scope = begin(name);
    for (std::uint64_t id : node_ids) create(id);
    end(scope);
  }
  void clone(std::uint64_t node_id, std::uint64_t original, std::uint32_t exec = 0) {
    agg.on(cuscope::model::GraphNodeCloned{node_id, original, exec});
  }
  // cudaGraphExecUpdate(exec, graph of `graph_nodes`) succeeded in an API call made now (its
  // correlation is the next one): later launches have larger correlations.
  void update(std::uint32_t exec, std::vector<std::uint64_t> graph_nodes) {
    agg.on(cuscope::model::GraphExecUpdated{exec, next_correlation++, std::move(graph_nodes)});
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
    cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, agg);
    buffer.clear();
  }
};

inline const cuscope::GraphPathStats* graph_row(const cuscope::RangeStats* r, std::string_view path) {
  if (r == nullptr) return nullptr;
  for (const cuscope::GraphPathStats& g : r->graph) {
    if (g.path == path) return &g;
  }
  return nullptr;
}

// A range's (graph) lines as (path, kernels), longest kernel time first; none for no range.
using GraphLines = std::vector<std::pair<std::string, std::uint64_t>>;
inline GraphLines graph_lines(const cuscope::Report& r, std::string_view range) {
  GraphLines lines;
  if (const cuscope::RangeStats* found = r.find(range))
    for (const cuscope::GraphPathStats& g : found->graph) lines.emplace_back(g.path, g.kernel_calls);
  return lines;
}

// Capture under capture/layer_0/{attention,mlp} and capture/layer_1/attention: nodes 1..4, the
// 4th in capture itself. All scopes end before any replay.
inline void capture_nested(Fixture& f) {
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

}  // namespace cuscope_test::graphs_kit

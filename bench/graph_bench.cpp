// bench/graph_bench.cpp — the cost of the CUDA graph breakdown (docs/cuda-graphs.md), on the CPU:
//
//   BM_graph_replay/1  attributing replayed graph kernels: CUPTI 13.0 buffers of graph launches
//                      (kernel records with graphNodeId) through consume_buffer into the aggregator,
//                      each kernel also added to the launching range's breakdown. records/s.
//   BM_graph_replay/0  the same records without graph ids: the plain path, for comparison.
//   BM_graph_node_created  the node callback's work once CUPTI has handed the ids: the thread's
//                      innermost scope (3 open) and one insert into the bounded node map, in steady
//                      state (the map full, each insert evicting the oldest node). ns per node.
//   BM_graph_node_cloned   a clone (instantiation): one lookup, one insert. ns per node.
//
// Run: cmake --preset release && cmake --build --preset release --target cuscope_graph_bench &&
//      build/release/bench/cuscope_graph_bench
#include <benchmark/benchmark.h>

#include <cstddef>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <memory>
#include <string>
#include <vector>

#include "cupti_buffer.hpp"
#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "session/session.hpp"

namespace {

using cuscope::model::Aggregator;
using cuscope::model::Forest;
using cuscope::model::GraphNodeCloned;
using cuscope::model::GraphNodeCreated;
using cuscope::model::ThreadTree;

constexpr std::size_t aligned(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

// A decode step captured as one graph: 16 layers, attention and mlp each, 4 kernel nodes per
// range (128 nodes, 8 distinct kernels), instantiated (every node cloned). Each buffer holds 78
// replays, each one cudaGraphLaunch in a fresh "decode" scope instance: 9,984 kernel records.
class GraphWorkload {
 public:
  static constexpr std::uint32_t kLayers = 16;
  static constexpr std::uint32_t kNodesPerRange = 4;
  static constexpr std::uint32_t kNodes = kLayers * 2 * kNodesPerRange;
  static constexpr std::uint32_t kReplays = 78;
  static constexpr std::uint32_t kKernels = kReplays * kNodes;
  static constexpr std::uint64_t kCloneBase = 1'000'000;
  static constexpr std::uint64_t kNsPerKernel = 1000;

  explicit GraphWorkload(bool graph_ids)
      : buffer_(kReplays * (aligned(sizeof(CUpti_ActivityExternalCorrelation)) +
                            aligned(sizeof(CUpti_ActivityAPI))) +
                kKernels * aligned(sizeof(CUpti_ActivityKernel10))) {
    forest_->record_instances = true;
    tree_ = forest_->make_tree();
    for (std::uint32_t k = 0; k < 8; ++k) {
      const std::string name = "kernel_" + std::to_string(k);
      names_.push_back("_Z" + std::to_string(name.size()) + name + "PKfPfi");
    }
    const ThreadTree::Token capture = tree_->begin(forest_->names.intern("capture"), 1);
    std::uint64_t node = 1;
    for (std::uint32_t l = 0; l < kLayers; ++l) {
      const ThreadTree::Token layer = tree_->begin(forest_->names.intern("layer_" + std::to_string(l)), 1);
      for (const char* part : {"attention", "mlp"}) {
        const ThreadTree::Token t = tree_->begin(forest_->names.intern(part), 1);
        for (std::uint32_t n = 0; n < kNodesPerRange; ++n, ++node)
          aggregator_.on(GraphNodeCreated{node, 1, tree_->innermost()});
        tree_->end(t.depth, 2);
      }
      tree_->end(layer.depth, 2);
    }
    tree_->end(capture.depth, 2);
    for (std::uint64_t n = 1; n <= kNodes; ++n) aggregator_.on(GraphNodeCloned{kCloneBase + n, n});
    decode_ = forest_->names.intern("decode");

    for (std::uint32_t r = 0; r < kReplays; ++r) {
      const std::uint32_t correlation = r + 1;
      const std::uint64_t t = std::uint64_t{r} * kNodes * kNsPerKernel + 1;
      correlation_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityExternalCorrelation, correlationId));
      external_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityExternalCorrelation, externalId));
      buffer_.external(correlation, 0);
      correlation_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityAPI, correlationId));
      buffer_.api(correlation, t);
      for (std::uint32_t n = 0; n < kNodes; ++n) {
        CUpti_ActivityKernel10 k{};
        k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
        k.correlationId = correlation;
        k.start = t + n * kNsPerKernel + 100;
        k.end = k.start + 500;
        k.name = names_[n % names_.size()].c_str();
        k.gridX = 64;
        k.gridY = k.gridZ = 1;
        k.blockX = 256;
        k.blockY = k.blockZ = 1;
        k.streamId = 7;
        k.graphNodeId = graph_ids ? kCloneBase + 1 + n : 0;
        k.graphId = graph_ids ? 2 : 0;
        correlation_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityKernel10, correlationId));
        time_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityKernel10, start));
        time_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityKernel10, end));
        buffer_.add(k);
      }
    }
  }

  /// Untimed: fresh decode instances, correlation ids and timestamps, so every pass is new work.
  void next_pass() {
    for (std::size_t at : external_at_) {
      const ThreadTree::Token t = tree_->begin(decode_, clock_);
      tree_->end(t.depth, clock_ + 1);
      buffer_.set_field<std::uint64_t>(at, t.instance);
    }
    buffer_.advance<std::uint32_t>(correlation_at_, kReplays);
    buffer_.advance<std::uint64_t>(time_at_, kKernels * kNsPerKernel);
    clock_ += kKernels * kNsPerKernel;
  }
  void consume() { cuscope::detail::consume_buffer(buffer_.data(), buffer_.size(), 0, aggregator_); }

  /// Every kernel in decode, and with graph ids every one also in its capture-time path's row.
  [[nodiscard]] bool check(std::uint64_t fed, bool graph_ids) const {
    cuscope::Report r;
    aggregator_.build(r);
    const cuscope::RangeStats* d = r.find("decode");
    if (d == nullptr || d->self.kernel_calls != fed) return false;
    std::uint64_t broken_down = 0;
    for (const cuscope::GraphPathStats& g : d->graph) broken_down += g.kernel_calls;
    return graph_ids ? broken_down == fed && d->graph.size() == kLayers * 2 &&
                           r.diagnostics.graph_kernels_unknown_node == 0
                     : d->graph.empty();
  }

 private:
  std::unique_ptr<Forest> forest_ = std::make_unique<Forest>();
  Aggregator aggregator_{*forest_};
  ThreadTree* tree_ = nullptr;
  std::uint32_t decode_ = 0;
  std::vector<std::string> names_;
  cuscope_test::CuptiBuffer buffer_;
  std::vector<std::size_t> correlation_at_, external_at_, time_at_;
  std::uint64_t clock_ = 1'000'000'000;
};

void BM_graph_replay(benchmark::State& state) {
  const bool graph_ids = state.range(0) != 0;
  GraphWorkload w(graph_ids);
  std::uint64_t fed = 0;
  for (int warm = 0; warm < 4; ++warm, fed += GraphWorkload::kKernels) {
    w.next_pass();
    w.consume();
  }
  if (!w.check(fed, graph_ids)) {
    state.SkipWithError("the replayed kernels were not all attributed and broken down");
    return;
  }
  for (auto _ : state) {
    state.PauseTiming();
    w.next_pass();
    state.ResumeTiming();
    w.consume();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * GraphWorkload::kKernels);
}
BENCHMARK(BM_graph_replay)->Arg(0)->Arg(1)->Unit(benchmark::kMicrosecond);

void start_session() {
  static const bool started = [] {
    cuscope::Options o;
    o.print_at_exit = false;
    cuscope::start(o);
    return true;
  }();
  (void)started;
}

void BM_graph_node_created(benchmark::State& state) {
  start_session();
  auto& session = cuscope::detail::session();
  static std::uint64_t next = 1;  // across runs: the map stays full, every insert evicts
  for (std::uint64_t i = 0; i < cuscope::model::GraphNodeMap::kMaxNodes; ++i)
    cuscope::detail::graph_node_created(session, next++, 1);
  CUSCOPE_SCOPE("capture");
  CUSCOPE_SCOPE("layer_3");
  CUSCOPE_SCOPE("attention");
  for (auto _ : state) cuscope::detail::graph_node_created(session, next++, 1);
}
BENCHMARK(BM_graph_node_created);

void BM_graph_node_cloned(benchmark::State& state) {
  start_session();
  auto& session = cuscope::detail::session();
  static std::uint64_t next = std::uint64_t{1} << 40;
  std::uint64_t original = next++;
  cuscope::detail::graph_node_created(session, original, 1);
  std::uint64_t clones = 0;
  for (auto _ : state) {
    cuscope::detail::graph_node_cloned(session, next++, original);
    // A fresh original before this one is evicted, so that every clone finds its original.
    if (++clones % (cuscope::model::GraphNodeMap::kMaxNodes / 2) == 0) {
      original = next++;
      cuscope::detail::graph_node_created(session, original, 1);
    }
  }
}
BENCHMARK(BM_graph_node_cloned);

}  // namespace

BENCHMARK_MAIN();

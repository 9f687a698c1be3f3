// GPU tests of the CUDA graph breakdown (docs/cuda-graphs.md): a replayed graph's kernels stay in
// the launching scope and are broken down by the scope each node was created in, with exact counts.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <string_view>
#include <thread>

#include "session_fixture.hpp"

#define CHECK_CUDA(call) REQUIRE((call) == cudaSuccess)

namespace {

template <int Which>
__global__ void graph_kernel(float* x) {
  x[threadIdx.x] += static_cast<float>(Which);
}

const cuscope::RangeStats& range(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* found = r.find(path);
  REQUIRE(found != nullptr);
  return *found;
}

const cuscope::GraphPathStats* graph_row(const cuscope::RangeStats& r, std::string_view path) {
  for (const cuscope::GraphPathStats& g : r.graph) {
    if (g.path == path) return &g;
  }
  return nullptr;
}

std::uint64_t graph_calls(const cuscope::RangeStats& r, std::string_view path) {
  const cuscope::GraphPathStats* g = graph_row(r, path);
  return g != nullptr ? g->kernel_calls : 0;
}

void require_breakdown_on(const cuscope::Report& r) {
  for (const std::string& note : r.notes) {
    INFO(note);
    REQUIRE(note.find("CUDA graph breakdown off") == std::string::npos);
  }
}

// Launches `exec` `times` times on `stream`, each launch in its own scope `name`, and waits.
void launch_in(const char* name, cudaGraphExec_t exec, cudaStream_t stream, int times) {
  for (int i = 0; i < times; ++i) {
    const cuscope::Scope scope(name, stream);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
}

// The report once every record so far has come, with the graph breakdown on.
cuscope::Report flushed_report() {
  cuscope::flush();
  cuscope::Report r = cuscope::snapshot();
  require_breakdown_on(r);
  return r;
}

// A kernel node running kernel(x) added to `graph`, after `dep` when there is one.
cudaGraphNode_t add_kernel_node(cudaGraph_t graph, void (*kernel)(float*), float*& x,
                                cudaGraphNode_t dep = nullptr) {
  void* args[] = {&x};
  cudaKernelNodeParams p{};
  p.func = reinterpret_cast<void*>(kernel);
  p.gridDim = dim3(1);
  p.blockDim = dim3(32);
  p.kernelParams = args;
  cudaGraphNode_t node = nullptr;
  CHECK_CUDA(
      cudaGraphAddKernelNode(&node, graph, dep != nullptr ? &dep : nullptr, dep != nullptr ? 1 : 0, &p));
  return node;
}

// A session, a stream and `floats` zeroed floats on the device, for one test case.
struct GraphCase {
  explicit GraphCase(std::size_t floats = 32) {
    CHECK_CUDA(cudaStreamCreate(&stream));
    CHECK_CUDA(cudaMalloc(&x, floats * sizeof(float)));
    CHECK_CUDA(cudaMemset(x, 0, floats * sizeof(float)));
  }
  ~GraphCase() {
    cudaFree(x);
    cudaStreamDestroy(stream);
  }
  GraphCase(const GraphCase&) = delete;
  GraphCase& operator=(const GraphCase&) = delete;
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  float* x = nullptr;
};

}  // namespace

TEST_CASE("a captured graph replayed 100 times: exact kernel counts per capture-time path", "[gpu][graphs]") {
  GraphCase c;
  cudaStream_t stream = c.stream;
  float* x = c.x;
  graph_kernel<0><<<1, 32, 0, stream>>>(x);  // module loading and CUPTI's instrumentation
  CHECK_CUDA(cudaStreamSynchronize(stream));

  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  {
    CUSCOPE_SCOPE("capture", stream);
    graph_kernel<1><<<1, 32, 0, stream>>>(x);
    {
      CUSCOPE_SCOPE("layer", stream);
      for (int i = 0; i < 2; ++i) graph_kernel<2><<<1, 32, 0, stream>>>(x);
      {
        CUSCOPE_SCOPE("attention", stream);
        for (int i = 0; i < 3; ++i) graph_kernel<3><<<1, 32, 0, stream>>>(x);
      }
    }
  }
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  launch_in("decode", exec, stream, 100);
  const cuscope::Report r = flushed_report();
  INFO("the report:\n" << cuscope::format_table(r));
  const cuscope::RangeStats& decode = range(r, "decode");
  CHECK(decode.self.kernel_calls == 600);
  CHECK(range(r, "capture").total.kernel_calls == 0);  // captured, never run there
  CHECK(graph_calls(decode, "capture") == 100);
  CHECK(graph_calls(decode, "capture/layer") == 200);
  CHECK(graph_calls(decode, "capture/layer/attention") == 300);
  CHECK(graph_row(decode, cuscope::kUnknownGraphNodeName) == nullptr);
  CHECK(decode.graph.size() == 3);
  const cuscope::GraphPathStats* attention = graph_row(decode, "capture/layer/attention");
  REQUIRE(attention != nullptr);
  REQUIRE(attention->kernels.size() == 1);
  CHECK(attention->kernels[0].name.find("graph_kernel<3>") != std::string::npos);
  CHECK(attention->kernels[0].duration.count == 300);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(r.diagnostics.graph_nodes_evicted == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

TEST_CASE(
    "a graph built by hand takes the scope open at each cudaGraphAddKernelNode, replayed from another thread",
    "[gpu][graphs]") {
  cuscope_test::Session session;
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, 32 * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, 32 * sizeof(float)));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  {
    CUSCOPE_SCOPE("build");
    cudaGraphNode_t a = nullptr;
    {
      CUSCOPE_SCOPE("node_a");
      a = add_kernel_node(graph, graph_kernel<1>, x);
    }
    add_kernel_node(graph, graph_kernel<2>, x, a);
  }
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  std::thread worker([&] {
    cudaStream_t stream = nullptr;
    if (cudaStreamCreate(&stream) != cudaSuccess) return;
    for (int replay = 0; replay < 10; ++replay) {
      CUSCOPE_SCOPE("worker", stream);
      cudaGraphLaunch(exec, stream);
    }
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  });
  worker.join();
  CHECK_CUDA(cudaDeviceSynchronize());
  const cuscope::Report r = flushed_report();
  const cuscope::RangeStats& w = range(r, "worker");
  CHECK(w.self.kernel_calls == 20);
  CHECK(graph_calls(w, "build/node_a") == 10);
  CHECK(graph_calls(w, "build") == 10);
  CHECK(w.graph.size() == 2);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaFree(x);
}

TEST_CASE("cudaGraphExecUpdate: later replays follow the updating graph's capture scopes", "[gpu][graphs]") {
  GraphCase c(64);
  cudaStream_t stream = c.stream;
  float* x = c.x;
  auto capture = [&](const char* name, float* arg) {
    cudaGraph_t g = nullptr;
    CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
    {
      const cuscope::Scope scope(name, stream);
      graph_kernel<4><<<1, 32, 0, stream>>>(arg);
    }
    CHECK_CUDA(cudaStreamEndCapture(stream, &g));
    return g;
  };
  cudaGraph_t v1 = capture("v1", x);
  cudaGraph_t v2 = capture("v2", x + 32);
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, v1, 0));
  launch_in("decode", exec, stream, 10);
  cudaGraphExecUpdateResultInfo info{};
  CHECK_CUDA(cudaGraphExecUpdate(exec, v2, &info));
  launch_in("decode", exec, stream, 10);
  const cuscope::Report r = flushed_report();
  INFO("the report:\n" << cuscope::format_table(r));
  const cuscope::RangeStats& decode = range(r, "decode");
  CHECK(decode.self.kernel_calls == 20);
  CHECK(graph_calls(decode, "v1") == 10);
  // The update is reported by its API callback (not as clones: an H100 run, CUDA 13.0); v2 holds one
  // node, of one scope, so no pairing of nodes is needed to re-map the exec's node.
  CHECK(graph_calls(decode, "v2") == 10);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(r.diagnostics.graph_kernels_after_update == 0);
  CHECK(r.diagnostics.graph_exec_updates_unmapped == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(v1);
  cudaGraphDestroy(v2);
}

TEST_CASE("a conditional node's body kernels: counted as graph kernels without their launch",
          "[gpu][graphs]") {
  GraphCase c;
  cudaStream_t stream = c.stream;
  float* x = c.x;
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaGraphCreate(&graph, 0));
  {
    CUSCOPE_SCOPE("loop");
    cudaGraphConditionalHandle handle{};
    CHECK_CUDA(cudaGraphConditionalHandleCreate(&handle, graph, 1, cudaGraphCondAssignDefault));
    cudaGraphNodeParams cond{};
    cond.type = cudaGraphNodeTypeConditional;
    cond.conditional.handle = handle;
    cond.conditional.type = cudaGraphCondTypeIf;  // the body runs once per launch (default value 1)
    cond.conditional.size = 1;
    cudaGraphNode_t node = nullptr;
    CHECK_CUDA(cudaGraphAddNode(&node, graph, nullptr, nullptr, 0, &cond));
    CUSCOPE_SCOPE("body");
    add_kernel_node(cond.conditional.phGraph_out[0], graph_kernel<6>, x);
  }
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  launch_in("run", exec, stream, 10);
  const cuscope::Report r = flushed_report();
  INFO("the report:\n" << cuscope::format_table(r));
  const cuscope::RangeStats& run = range(r, "run");
  // Every H100 run (CUDA 13.0, docs/validation/2026-11-24-h100*.log) gave the body's 10 kernel records
  // correlation id 0 and no launch: Aggregator::on_kernel counts such a graph kernel as
  // graph_kernels_no_launch and in no range. Exactly that split, nothing matched elsewhere; should a
  // later CUDA give them their launch's correlation, this fails and the expectation moves to loop/body.
  CHECK(r.diagnostics.graph_kernels_no_launch == 10);
  CHECK(run.self.kernel_calls == 0);
  CHECK(graph_calls(run, "loop/body") == 0);
  CHECK(graph_calls(run, cuscope::kUnknownGraphNodeName) == 0);
  CHECK(r.diagnostics.graph_kernels_unknown_node == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
}

// GPU tests of the CUDA graph breakdown (README, "CUDA graphs"): a replayed graph's kernels stay in
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

}  // namespace

TEST_CASE("a captured graph replayed 100 times: exact kernel counts per capture-time path", "[gpu][graphs]") {
  cuscope_test::Session session;
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  float* x = nullptr;
  CHECK_CUDA(cudaMalloc(&x, 32 * sizeof(float)));
  CHECK_CUDA(cudaMemset(x, 0, 32 * sizeof(float)));
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
  for (int replay = 0; replay < 100; ++replay) {
    CUSCOPE_SCOPE("decode", stream);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  require_breakdown_on(r);
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
  cudaFree(x);
  cudaStreamDestroy(stream);
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
  auto add = [&](void (*kernel)(float*), cudaGraphNode_t* node, const cudaGraphNode_t* dep) {
    void* args[] = {&x};
    cudaKernelNodeParams p{};
    p.func = reinterpret_cast<void*>(kernel);
    p.gridDim = dim3(1);
    p.blockDim = dim3(32);
    p.kernelParams = args;
    CHECK_CUDA(cudaGraphAddKernelNode(node, graph, dep, dep != nullptr ? 1 : 0, &p));
  };
  cudaGraphNode_t a = nullptr, b = nullptr;
  {
    CUSCOPE_SCOPE("build");
    {
      CUSCOPE_SCOPE("node_a");
      add(graph_kernel<1>, &a, nullptr);
    }
    add(graph_kernel<2>, &b, &a);
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
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  require_breakdown_on(r);
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

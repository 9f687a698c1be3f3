// bench/transformer_step.cu — see transformer_step.hpp. The demo's source is included with its
// main() renamed, so the benchmark times exactly the step the demo runs: the same kernels, the
// same cuBLAS calls, the same thirteen scopes.
#define main cuscope_demo_main
#include "cuda/transformer_demo.cu"
#undef main

#include <chrono>

#include "transformer_step.hpp"

namespace {
Layer g_layer;
}  // namespace

namespace cuscope_bench {

void transformer_setup() {
  g_layer.gpu = true;
  init_gpu(g_layer);
}

std::uint64_t transformer_step_ns() {
  const auto start = std::chrono::steady_clock::now();
  run_step(g_layer);
  CHECK_CUDA(cudaStreamSynchronize(g_layer.stream));
  cuscope::step();
  const auto elapsed = std::chrono::steady_clock::now() - start;
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(elapsed).count());
}

void transformer_teardown() { release_gpu(g_layer); }

}  // namespace cuscope_bench

// bench/transformer_step.hpp — the demo's transformer-layer step (cuda/transformer_demo.cu), for
// the GPU benchmark to time with and without cuscope. The step is the demo's own code, compiled
// into the benchmark (transformer_step.cu), not a copy of it.
#pragma once

#include <cstdint>

namespace cuscope_bench {

/// Allocates and fills the layer on the current device (the demo's init_gpu).
void transformer_setup();
/// One step: the demo's run_step, then cudaStreamSynchronize and cuscope::step(), as the demo's
/// loop does. Returns the host wall time of all three, in nanoseconds.
std::uint64_t transformer_step_ns();
/// Frees the layer (the demo's release_gpu).
void transformer_teardown();

}  // namespace cuscope_bench

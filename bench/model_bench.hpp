// bench/model_bench.hpp — what cpu_bench.cpp's main() needs of model_bench.cpp: the memory
// benchmark's child process.
#pragma once

namespace cuscope_bench {

/// The argument that makes cuscope_bench the memory benchmark's child (BM_memory re-runs it).
inline constexpr const char* kMemoryChild = "--memory-child";
/// The child's side of BM_memory: aggregates 10 M kernel records and prints the resident memory
/// after the first 1 M and after all 10 M, and the largest of the samples up to each.
int run_memory_child();

}  // namespace cuscope_bench

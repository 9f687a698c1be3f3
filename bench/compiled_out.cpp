// bench/compiled_out.cpp — the scope benchmark with cuscope compiled out: CUSCOPE_DISABLE is
// defined before the include, so CUSCOPE_SCOPE expands to nothing here while every other
// translation unit of the benchmark gets the real scopes.
#define CUSCOPE_DISABLE
#include <benchmark/benchmark.h>

#include <cuscope/cuscope.hpp>

namespace {

// Must stay the same loop as the empty-loop floor in cpu_bench.cpp, plus the scope.
void BM_scope_compiled_out(benchmark::State& state) {
  for (auto _ : state) {
    CUSCOPE_SCOPE("compiled_out");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_scope_compiled_out);

}  // namespace

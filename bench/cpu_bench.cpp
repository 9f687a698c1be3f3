// bench/cpu_bench.cpp — cuscope's CPU benchmarks of a scope (bench/README.md): what a scope costs
// against the floors it is built from, injected NVTX ranges as zero-code mode receives them, trace
// mode, the scope while CUPTI traces (fake hooks), nesting and threads. The model's benchmarks are
// model_bench.cpp's; the run and its summary, cpu_bench_main.cpp's.
//
// Every benchmark runs in one process, repetitions interleaved at random, so the ratios of the
// summary come from the same run on the same (possibly noisy) machine. Scopes run in a session
// with CUDA-event timing and CUPTI tracing off, so the enabled scope is the host-only scope on
// any machine, GPU or not.
// Never: a summary, a target or output of its own (cpu_bench_main.cpp has them).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <nvtx3/nvtx3.hpp>
#include <string>

#include "host_session.hpp"
#include "injected.hpp"
#include "producers/clock.hpp"
#include "session/session.hpp"
#include "trace/writer.hpp"

namespace {

// ---------------------------------------------------------------------------------------------
// Floors: what a scope cannot cost less than.

void BM_floor_empty_loop(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_floor_empty_loop);

void BM_floor_two_clock_reads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuscope::detail::now_ns());
    benchmark::DoNotOptimize(cuscope::detail::now_ns());
  }
}
BENCHMARK(BM_floor_two_clock_reads);

void BM_floor_two_clock_gettime(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(cuscope::detail::monotonic_ns());
    benchmark::DoNotOptimize(cuscope::detail::monotonic_ns());
  }
}
BENCHMARK(BM_floor_two_clock_gettime);

// Two counter reads, each converted to nanoseconds by one multiply and shift: the cheapest clock.
void BM_floor_two_rdtsc(benchmark::State& state) {
  cuscope::detail::ClockSegment segment{cuscope::detail::cycle_counter(), 0, std::uint64_t{3} << 30};
  benchmark::DoNotOptimize(segment);
  for (auto _ : state) {
    benchmark::DoNotOptimize(segment.to_ns(cuscope::detail::cycle_counter()));
    benchmark::DoNotOptimize(segment.to_ns(cuscope::detail::cycle_counter()));
  }
}
BENCHMARK(BM_floor_two_rdtsc);

void BM_floor_nvtx_range(benchmark::State& state) {
  for (auto _ : state) {
    nvtx3::scoped_range range{"floor"};
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_floor_nvtx_range);

void BM_floor_clock_and_nvtx(benchmark::State& state) {
  for (auto _ : state) {
    nvtx3::scoped_range range{"floor"};
    benchmark::DoNotOptimize(cuscope::detail::now_ns());
    benchmark::DoNotOptimize(cuscope::detail::now_ns());
  }
}
BENCHMARK(BM_floor_clock_and_nvtx);

// ---------------------------------------------------------------------------------------------
// Scopes: enter + exit. The compiled-out case is in compiled_out.cpp.

void BM_scope_disabled(benchmark::State& state) {
  cuscope::set_enabled(false);
  for (auto _ : state) {
    CUSCOPE_SCOPE("disabled");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_scope_disabled);

void BM_scope_enabled(benchmark::State& state) {
  cuscope::set_enabled(true);
  for (auto _ : state) {
    CUSCOPE_SCOPE("enabled");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_scope_enabled);

void BM_inject_push_pop(benchmark::State& state) {
  cuscope_bench::Injected& in = cuscope_bench::injected();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  for (auto _ : state) {
    in.push_a("injected");
    in.pop();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_inject_push_pop);

// emit_nvtx()-style messages (bench/injected.hpp): a new text at one address on every push. The
// 160-byte copy that puts it there is in the time.
void BM_inject_operators(benchmark::State& state) {
  cuscope_bench::Injected& in = cuscope_bench::injected();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  const cuscope_bench::OperatorMessages& texts = cuscope_bench::operator_messages();
  static char buffer[cuscope_bench::kOperatorMessageBytes];
  int i = 0;
  for (auto _ : state) {
    std::memcpy(buffer, texts[i], sizeof(buffer));
    i = (i + 1) % cuscope_bench::kOperatorMessages;
    in.push_a(buffer);
    in.pop();
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_inject_operators);

void BM_inject_registered(benchmark::State& state) {
  cuscope_bench::Injected& in = cuscope_bench::injected();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  // Inside an open range of the same domain, as a library's ranges nest: the first open range of a
  // domain also opens the range named after the domain, which would double what is measured. The
  // outer range has a name of its own: under one of the same name, each push would be recursion.
  in.domain_push(in.domain, &in.registered_outer);
  for (auto _ : state) {
    in.domain_push(in.domain, &in.registered);
    in.domain_pop(in.domain);
    benchmark::ClobberMemory();
  }
  in.domain_pop(in.domain);
}
BENCHMARK(BM_inject_registered);

// The least an NVTX call costs: the same two calls, through function pointers, to functions that
// return at once (what excluded - this adds is the left-out domain's own test).
[[gnu::noinline]] int empty_domain_push(nvtxDomainHandle_t, const nvtxEventAttributes_t*) {
  benchmark::ClobberMemory();
  return 0;
}
[[gnu::noinline]] int empty_domain_pop(nvtxDomainHandle_t) {
  benchmark::ClobberMemory();
  return 0;
}

void BM_floor_two_nvtx_calls(benchmark::State& state) {
  cuscope_bench::Injected& in = cuscope_bench::injected();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  int (*volatile push)(nvtxDomainHandle_t, const nvtxEventAttributes_t*) = &empty_domain_push;
  int (*volatile pop)(nvtxDomainHandle_t) = &empty_domain_pop;
  auto* push_fn = push;
  auto* pop_fn = pop;
  for (auto _ : state) {
    push_fn(in.excluded, &in.registered);
    pop_fn(in.excluded);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_floor_two_nvtx_calls);

void BM_inject_excluded(benchmark::State& state) {
  cuscope_bench::Injected& in = cuscope_bench::injected();
  if (!in.error.empty()) return state.SkipWithError(in.error.c_str());
  for (auto _ : state) {
    in.domain_push(in.excluded, &in.registered);
    in.domain_pop(in.excluded);
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_inject_excluded);

// The enabled scope in trace mode, as CUSCOPE_TRACE sets it up (a writer, its thread, the kTrace
// flag), writing to /dev/null: the hot path's cost, not the disk's. Every 30,000 scopes (60,000
// events, less than a thread's ring) the clock stops until the writer thread has drained the ring,
// so no event is dropped and every one pays the full recording path (`dropped` shows it).
void BM_scope_traced(benchmark::State& state) {
  namespace d = cuscope::detail;
  std::string error;
  auto writer = cuscope::trace::Writer::open("/dev/null", UINT64_MAX, d::session().forest.names, &error);
  if (!writer) {
    state.SkipWithError(error.c_str());
    return;
  }
  writer->start();
  cuscope::trace::g_writer.store(writer.get());
  cuscope::set_enabled(true);
  d::g_flags.fetch_or(d::kTrace);
  std::int64_t n = 0;
  for (auto _ : state) {
    CUSCOPE_SCOPE("traced");
    benchmark::ClobberMemory();
    if (++n % 30'000 == 0) {
      state.PauseTiming();
      // Drained once the file stops growing over more than one writer pass (5 ms).
      std::uint64_t before = 0;
      do {
        before = writer->bytes_written();
        std::this_thread::sleep_for(std::chrono::milliseconds(7));
      } while (writer->bytes_written() != before);
      state.ResumeTiming();
    }
  }
  d::g_flags.fetch_and(~std::uint32_t{d::kTrace});
  cuscope::trace::g_writer.store(nullptr);
  writer->finish_events();
  writer->close({});
  state.counters["dropped"] = static_cast<double>(writer->dropped());
}
BENCHMARK(BM_scope_traced);

// A scope in a session that CUPTI traces, with cuscope's defaults there (no CUDA events): its
// instance published for the decoder and pushed as the external correlation id into empty
// functions in place of CUPTI's (Arg 0), or left to the launch callbacks (Arg 1,
// CUSCOPE_ATTRIBUTION=launch). The session is put back as it was after.
[[gnu::noinline]] void empty_correlation_push(std::uint64_t) noexcept { benchmark::ClobberMemory(); }
[[gnu::noinline]] void empty_correlation_pop() noexcept { benchmark::ClobberMemory(); }

void BM_scope_cupti(benchmark::State& state) {
  namespace d = cuscope::detail;
  cuscope::set_enabled(true);
  const std::uint32_t flags = d::g_flags.load();
  d::trace_with_fake_cupti_for_testing(empty_correlation_push, empty_correlation_pop, state.range(0) == 1);
  for (auto _ : state) {
    CUSCOPE_SCOPE("cupti");
    benchmark::ClobberMemory();
  }
  d::Session& s = d::session();
  s.tracing.store(false);
  s.launch_attributed.store(false);
  s.forest.record_instances.store(false);
  d::g_push_correlation.store(nullptr);
  d::g_pop_correlation.store(nullptr);
  d::g_flags.store(flags);
}
BENCHMARK(BM_scope_cupti)->Arg(0)->Arg(1);

void BM_scope_nested_8(benchmark::State& state) {
  cuscope::set_enabled(true);
  for (auto _ : state) {
    CUSCOPE_SCOPE("level_1");
    CUSCOPE_SCOPE("level_2");
    CUSCOPE_SCOPE("level_3");
    CUSCOPE_SCOPE("level_4");
    CUSCOPE_SCOPE("level_5");
    CUSCOPE_SCOPE("level_6");
    CUSCOPE_SCOPE("level_7");
    CUSCOPE_SCOPE("level_8");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_scope_nested_8);

void BM_scope_threads(benchmark::State& state) {
  if (state.thread_index() == 0) cuscope::set_enabled(true);
  for (auto _ : state) {
    CUSCOPE_SCOPE("threaded");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_scope_threads)->Threads(8);

}  // namespace

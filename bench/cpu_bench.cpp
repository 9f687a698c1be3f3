// bench/cpu_bench.cpp — cuscope's CPU benchmarks (bench/README.md): what a scope costs against the
// floors it is built from, how fast CUPTI records are decoded and aggregated, whether memory stays
// flat in the number of records, and what a snapshot and a table of a large tree cost.
//
// Every benchmark runs in one process, repetitions interleaved at random, so the ratios of the
// summary come from the same run on the same (possibly noisy) machine. Google Benchmark's own
// console output is replaced by one table (bench/summary.hpp) printed at the end; --json=PATH
// writes the same numbers as JSON. Scopes run in a session with CUDA-event timing and CUPTI
// tracing off, so the enabled scope is the host-only scope on any machine, GPU or not.
#include <benchmark/benchmark.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <fstream>
#include <map>
#include <memory>
#include <nvtx3/nvtx3.hpp>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "cupti_buffer.hpp"
#include "host_session.hpp"
#include "injected.hpp"
#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/decode.hpp"
#include "session/handover.hpp"
#include "session/session.hpp"
#include "summary.hpp"
#include "trace/writer.hpp"

namespace {

using cuscope::model::Aggregator;
using cuscope::model::Forest;
using cuscope::model::ThreadTree;

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

// ---------------------------------------------------------------------------------------------
// Activity processing: CUPTI 13.0 records through consume_buffer into an Aggregator.

constexpr std::size_t aligned(std::size_t n) { return (n + 7) & ~std::size_t{7}; }
constexpr std::size_t kBytesPerKernel = aligned(sizeof(CUpti_ActivityExternalCorrelation)) +
                                        aligned(sizeof(CUpti_ActivityAPI)) +
                                        aligned(sizeof(CUpti_ActivityKernel10));
constexpr std::uint64_t kNsPerKernel = 1000;  // the synthetic timeline: one launch every microsecond

/// The records a traced step loop produces: every step opens each range once (a fresh scope
/// instance) and each range launches its kernels once; per kernel an external-correlation
/// record, the API record of the launch and the kernel record. The buffer is built once; before
/// each pass, untimed, the instances are opened anew in the range tree and the correlation ids,
/// instance ids and timestamps in the buffer are moved on, so every pass is new work.
class ActivityWorkload {
 public:
  static constexpr std::uint32_t kKernelsPerBuffer = 10'000;

  /// Range r's j-th kernel is kernel (r * kernels_per_range + j) % distinct_kernels.
  ActivityWorkload(std::uint32_t ranges, std::uint32_t kernels_per_range, std::uint32_t distinct_kernels)
      : ranges_(ranges), kernels_per_range_(kernels_per_range), buffer_(kKernelsPerBuffer * kBytesPerKernel) {
    forest_->record_instances = true;
    tree_ = forest_->make_tree();
    for (std::uint32_t r = 0; r < ranges; ++r)
      range_names_.push_back(forest_->names.intern("range_" + std::to_string(r)));
    for (std::uint32_t k = 0; k < distinct_kernels; ++k) {
      // Mangled like CUPTI reports them: kernel_<k>(float const*, float*, int).
      const std::string name = "kernel_" + std::to_string(k);
      kernel_names_.push_back("_Z" + std::to_string(name.size()) + name + "PKfPfi");
    }
    instances_.resize(kKernelsPerBuffer / kernels_per_range);
    for (std::uint32_t i = 0; i < kKernelsPerBuffer; ++i) {
      const std::uint32_t range = (i / kernels_per_range) % ranges;
      const std::uint32_t kernel = (range * kernels_per_range + i % kernels_per_range) % distinct_kernels;
      const std::uint32_t correlation = i + 1;
      const std::uint64_t t = (i + 1) * kNsPerKernel;
      add_offsets<CUpti_ActivityExternalCorrelation>();
      external_at_.push_back(buffer_.size() + offsetof(CUpti_ActivityExternalCorrelation, externalId));
      buffer_.external(correlation, 0);
      add_offsets<CUpti_ActivityAPI>();
      buffer_.api(correlation, t);
      add_offsets<CUpti_ActivityKernel10>();
      buffer_.kernel(correlation, t + 100, t + 600, kernel_names_[kernel].c_str(), 64, 256);
    }
  }

  /// Untimed: the next pass's instances, correlation ids and timestamps.
  void next_pass() {
    for (std::uint64_t& instance : instances_) {
      const std::uint32_t range = static_cast<std::uint32_t>(&instance - instances_.data()) % ranges_;
      const ThreadTree::Token token = tree_->begin(range_names_[range], clock_);
      tree_->end(token.depth, clock_ + 1);
      instance = token.instance;
    }
    for (std::uint32_t i = 0; i < kKernelsPerBuffer; ++i) {
      store<std::uint64_t>(external_at_[i], instances_[i / kernels_per_range_]);
    }
    for (std::size_t at : correlation_at_)
      store<std::uint32_t>(at, load<std::uint32_t>(at) + kKernelsPerBuffer);
    for (std::size_t at : time_at_)
      store<std::uint64_t>(at, load<std::uint64_t>(at) + kKernelsPerBuffer * kNsPerKernel);
    clock_ += kKernelsPerBuffer * kNsPerKernel;
  }

  /// Timed: what CUPTI's buffer-completed callback does with the buffer.
  void consume() { cuscope::detail::consume_buffer(buffer_.data(), buffer_.size(), 0, aggregator_); }

  void feed(std::uint64_t kernels) {
    for (std::uint64_t done = 0; done < kernels; done += kKernelsPerBuffer) {
      next_pass();
      consume();
      fed_ += kKernelsPerBuffer;
    }
  }

  /// True when every kernel fed so far was attributed to a range, none left waiting or unresolved:
  /// the benchmark measures the path real records take, not an error path.
  [[nodiscard]] bool all_attributed() const {
    cuscope::Report report;
    aggregator_.build(report);
    std::uint64_t kernels = 0;
    for (const cuscope::RangeStats& r : report.ranges) kernels += r.self.kernel_calls;
    return kernels == fed_ && aggregator_.pending() == 0 && report.diagnostics.unresolved_records == 0 &&
           report.find("(unscoped)") == nullptr;
  }

 private:
  template <class Record>
  void add_offsets() {
    const std::size_t at = buffer_.size();
    correlation_at_.push_back(at + offsetof(Record, correlationId));
    if constexpr (!std::is_same_v<Record, CUpti_ActivityExternalCorrelation>) {
      time_at_.push_back(at + offsetof(Record, start));
      time_at_.push_back(at + offsetof(Record, end));
    }
  }
  template <class T>
  T load(std::size_t at) {
    T v;
    std::memcpy(&v, buffer_.data() + at, sizeof v);
    return v;
  }
  template <class T>
  void store(std::size_t at, T v) {
    std::memcpy(buffer_.data() + at, &v, sizeof v);
  }

  std::uint32_t ranges_;
  std::uint32_t kernels_per_range_;
  std::unique_ptr<Forest> forest_ = std::make_unique<Forest>();
  Aggregator aggregator_{*forest_};
  ThreadTree* tree_ = nullptr;
  std::vector<std::uint32_t> range_names_;
  std::vector<std::string> kernel_names_;  // never changed after construction: CUPTI-like stable pointers
  cuscope_test::CuptiBuffer buffer_;
  std::vector<std::size_t> correlation_at_, time_at_, external_at_;
  std::vector<std::uint64_t> instances_;  // instance of each (step, range) of the buffer
  std::uint64_t clock_ = 1;
  std::uint64_t fed_ = 0;
};

/// The workload for `pairs` distinct (range, kernel) pairs: sqrt(pairs) ranges, each launching
/// the same sqrt(pairs) kernels. Built, warmed and checked once per process, so passes measure
/// the steady state (full correlation maps, every kernel name known). Nullptr if the check failed.
ActivityWorkload* workload_for(std::int64_t pairs) {
  static std::map<std::int64_t, std::unique_ptr<ActivityWorkload>> workloads;
  auto [it, inserted] = workloads.try_emplace(pairs);
  if (inserted) {
    const auto side = static_cast<std::uint32_t>(std::lround(std::sqrt(static_cast<double>(pairs))));
    auto w = std::make_unique<ActivityWorkload>(side, side, side);
    w->feed(Aggregator::kCorrelationSlots * 2);  // past one wrap of the correlation table
    if (w->all_attributed()) it->second = std::move(w);
  }
  return it->second.get();
}

void BM_activity(benchmark::State& state) {
  ActivityWorkload* workload = workload_for(state.range(0));
  if (workload == nullptr) {
    state.SkipWithError("the workload's kernels were not all attributed to their ranges");
    return;
  }
  ActivityWorkload& w = *workload;
  for (auto _ : state) {
    state.PauseTiming();
    w.next_pass();
    state.ResumeTiming();
    w.consume();
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) *
                          ActivityWorkload::kKernelsPerBuffer);
}
BENCHMARK(BM_activity)->Arg(1)->Arg(100)->Arg(10'000)->Unit(benchmark::kMicrosecond);

// Memory: 100 distinct kernels over 50 ranges, two per range, a fresh instance per range and step.
// Measured in a fresh process (this program, re-run with --memory-child), so the heap the other
// benchmarks left behind cannot hide or add growth.

constexpr const char* kMemoryChild = "--memory-child";

/// Resident memory of the process (/proc/self/statm, second field), in bytes.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

/// The child's side: aggregates 10 M kernel records and prints the resident memory after the first
/// 1 M and after all 10 M, and the largest of the samples taken after every buffer up to each.
int run_memory_child() {
  ActivityWorkload w(50, 2, 100);
  std::uint64_t peak = 0, peak_1m = 0, at_1m = 0;
  for (std::uint64_t done = 0; done < 10'000'000;) {
    w.feed(ActivityWorkload::kKernelsPerBuffer);
    done += ActivityWorkload::kKernelsPerBuffer;
    const std::uint64_t now = resident_bytes();
    peak = std::max(peak, now);
    if (done == 1'000'000) {
      peak_1m = peak;
      at_1m = now;
    }
  }
  std::printf("%llu %llu %llu %llu\n", static_cast<unsigned long long>(at_1m),
              static_cast<unsigned long long>(peak_1m), static_cast<unsigned long long>(resident_bytes()),
              static_cast<unsigned long long>(peak));
  return 0;
}

void BM_memory(benchmark::State& state) {
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0 || std::strchr(self, '\'') != nullptr) {
    state.SkipWithError("cannot find this program's path to re-run it");
    return;
  }
  for (auto _ : state) {
    const std::string command = std::string("'") + self + "' " + kMemoryChild;
    FILE* child = popen(command.c_str(), "r");
    unsigned long long v[4] = {};
    const bool read =
        child != nullptr && std::fscanf(child, "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]) == 4;
    if (child == nullptr || pclose(child) != 0 || !read) {
      state.SkipWithError("the memory child process failed");
      return;
    }
    state.counters["rss_1m"] = static_cast<double>(v[0]);
    state.counters["peak_1m"] = static_cast<double>(v[1]);
    state.counters["rss_10m"] = static_cast<double>(v[2]);
    state.counters["peak_10m"] = static_cast<double>(v[3]);
  }
}
BENCHMARK(BM_memory)->Iterations(1)->Repetitions(1)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// Report: a snapshot (Aggregator::build) and the table of a tree of 10,000 ranges.

/// 100 top-level ranges of 99 children each (10,000 ranges), each entered once and holding one kernel.
struct ReportWorkload {
  static constexpr std::uint32_t kTop = 100;
  static constexpr std::uint32_t kChildren = 99;

  std::unique_ptr<Forest> forest = std::make_unique<Forest>();
  Aggregator aggregator{*forest};
  cuscope::Report report;

  ReportWorkload() {
    forest->record_instances = true;
    ThreadTree* tree = forest->make_tree();
    cuscope_test::CuptiBuffer buffer(kTop * (kChildren + 1) * kBytesPerKernel);
    std::uint64_t t = 1;
    std::uint32_t correlation = 1;
    auto launch = [&](const ThreadTree::Token& token) {
      buffer.external(correlation, token.instance)
          .api(correlation, t)
          .kernel(correlation, t + 10, t + 500, "_Z4gemmPKfS0_Pf");
      ++correlation;
    };
    for (std::uint32_t p = 0; p < kTop; ++p) {
      const ThreadTree::Token top = tree->begin(forest->names.intern("layer_" + std::to_string(p)), t++);
      launch(top);
      for (std::uint32_t c = 0; c < kChildren; ++c) {
        const ThreadTree::Token child = tree->begin(forest->names.intern("op_" + std::to_string(c)), t);
        launch(child);
        t += 1000;
        tree->end(child.depth, t);
      }
      tree->end(top.depth, t++);
    }
    cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, aggregator);
    aggregator.build(report);
  }
};

ReportWorkload& report_workload() {
  static ReportWorkload w;
  return w;
}

void BM_report_snapshot(benchmark::State& state) {
  ReportWorkload& w = report_workload();
  for (auto _ : state) {
    cuscope::Report r;
    w.aggregator.build(r);
    benchmark::DoNotOptimize(r.ranges.data());
  }
}
BENCHMARK(BM_report_snapshot)->Unit(benchmark::kMillisecond);

void BM_report_table(benchmark::State& state) {
  ReportWorkload& w = report_workload();
  cuscope::TableOptions options;
  options.max_rows = static_cast<std::size_t>(state.range(0));
  for (auto _ : state) {
    std::string table = cuscope::format_table(w.report, options);
    benchmark::DoNotOptimize(table.data());
  }
}
BENCHMARK(BM_report_table)->Arg(50)->Arg(0)->Unit(benchmark::kMillisecond);

// ---------------------------------------------------------------------------------------------
// The summary: one table, one JSON file.

/// Every repetition of every benchmark, by name ("BM_activity/100"); prints nothing.
class Collector : public benchmark::BenchmarkReporter {
 public:
  struct Samples {
    std::vector<double> cpu_ns;  ///< CPU time per iteration, per repetition
    std::map<std::string, std::vector<double>> counters;
    std::int64_t threads = 1;
    std::string error;
  };

  bool ReportContext(const Context&) override { return true; }
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      if (run.run_type != Run::RT_Iteration) continue;
      const std::string name =
          run.run_name.function_name + (run.run_name.args.empty() ? "" : "/" + run.run_name.args);
      Samples& s = samples[name];
      if (run.error_occurred) {
        s.error = run.error_message;
        continue;
      }
      s.threads = run.threads;
      s.cpu_ns.push_back(run.cpu_accumulated_time * 1e9 / static_cast<double>(run.iterations));
      for (const auto& [key, counter] : run.counters) s.counters[key].push_back(counter.value);
    }
  }

  std::map<std::string, Samples> samples;
};

cuscope_bench::Summary summarize(const Collector& c, const std::string& commit) {
  using cuscope_bench::Measurement;
  using cuscope_bench::Target;
  cuscope_bench::Summary s;
  s.title = "cuscope CPU benchmarks (bench/README.md)";
  cuscope_bench::add_machine_context(s, commit, CUSCOPE_BENCH_COMPILER, CUSCOPE_BENCH_BUILD_TYPE);
  s.add_context("scope clock", cuscope::snapshot().clock);
  s.add_context("NVTX tool", std::getenv("NVTX_INJECTION64_PATH") ? std::getenv("NVTX_INJECTION64_PATH")
                                                                  : "none attached");

  auto find = [&](const std::string& name) -> const Collector::Samples* {
    auto it = c.samples.find(name);
    return it == c.samples.end() || it->second.cpu_ns.empty() ? nullptr : &it->second;
  };
  // CPU ns per iteration, divided by `per` (scopes per iteration). With threads, Google Benchmark
  // sums the threads' CPU time over their summed iterations: CPU time per scope per thread.
  auto time = [&](const char* key, const char* label, const std::string& name, double per = 1) {
    const Collector::Samples* x = find(name);
    Measurement m{key, label, NAN, "ns"};
    if (x != nullptr) {
      m.value = cuscope_bench::median(x->cpu_ns) / per;
      m.cv = cuscope_bench::coefficient_of_variation(x->cpu_ns);
    }
    s.measurements.push_back(m);
    return m.value;
  };
  auto counter = [&](const char* key, const char* label, const std::string& name, const char* counter_name,
                     const char* unit) {
    const Collector::Samples* x = find(name);
    Measurement m{key, label, NAN, unit};
    if (x != nullptr && x->counters.count(counter_name)) {
      m.value = cuscope_bench::median(x->counters.at(counter_name));
      m.cv = cuscope_bench::coefficient_of_variation(x->counters.at(counter_name));
    }
    s.measurements.push_back(m);
    return m.value;
  };

  const double empty = time("floor.empty_loop", "floor: empty loop", "BM_floor_empty_loop");
  time("floor.two_clock_reads", "floor: two clock reads (now_ns, the scopes' clock)",
       "BM_floor_two_clock_reads");
  const double gettime = time("floor.two_clock_gettime", "floor: two clock_gettime(CLOCK_MONOTONIC)",
                              "BM_floor_two_clock_gettime");
  const double rdtsc = time("floor.two_rdtsc", "floor: two rdtsc, converted to ns", "BM_floor_two_rdtsc");
  time("floor.nvtx_range", "floor: nvtx3::scoped_range, no tool", "BM_floor_nvtx_range");
  const double floor =
      time("floor.clock_and_nvtx", "floor: two clock reads + NVTX range", "BM_floor_clock_and_nvtx");
  const double compiled_out = time("scope.compiled_out", "scope: compiled out", "BM_scope_compiled_out");
  const double disabled = time("scope.disabled", "scope: runtime-disabled", "BM_scope_disabled");
  const double enabled = time("scope.enabled", "scope: enabled, host only", "BM_scope_enabled");
  const double traced = time("scope.traced", "scope: enabled, trace mode (CUSCOPE_TRACE)", "BM_scope_traced");
  const double cupti = time("scope.cupti", "scope: CUPTI traces, defaults, correlation push/pop into empty functions",
                            "BM_scope_cupti/0");
  const double launch_notes =
      time("scope.launch_notes", "scope: CUPTI traces, defaults, CUSCOPE_ATTRIBUTION=launch", "BM_scope_cupti/1");
  const double trace_dropped = counter("scope.traced_dropped", "scope: trace mode, events dropped",
                                       "BM_scope_traced", "dropped", "events");
  const double inject_ascii =
      time("inject.push_pop", "zero-code: injected NVTX push/pop (ASCII message)", "BM_inject_push_pop");
  const double inject_registered =
      time("inject.registered", "zero-code: injected push/pop (registered, domain)", "BM_inject_registered");
  time("inject.operators", "zero-code: injected push/pop, emit_nvtx() messages (new text each call)",
       "BM_inject_operators");
  const double inject_excluded =
      time("inject.excluded", "zero-code: push/pop of a left-out domain", "BM_inject_excluded");
  const double nvtx_calls =
      time("floor.two_nvtx_calls", "floor: two calls to empty NVTX callbacks", "BM_floor_two_nvtx_calls");
  time("scope.nested_8", "scope: nested 8 deep, per scope", "BM_scope_nested_8", 8);
  time("scope.threads_8", "scope: 8 threads at once, per scope (CPU)", "BM_scope_threads");
  const char* pairs_labels[][3] = {{"1", "activity: 1 (range, kernel) pair", "activity.pairs_1"},
                                   {"100", "activity: 100 pairs", "activity.pairs_100"},
                                   {"10000", "activity: 10,000 pairs", "activity.pairs_10000"}};
  double rates[3];
  for (int i = 0; i < 3; ++i) {
    rates[i] = counter(pairs_labels[i][2], pairs_labels[i][1],
                       std::string("BM_activity/") + pairs_labels[i][0], "items_per_second", "records/s");
  }
  const double rss_1m =
      counter("memory.rss_1m", "memory: RSS after 1 M records", "BM_memory", "rss_1m", "bytes");
  const double rss_10m =
      counter("memory.rss_10m", "memory: RSS after 10 M records", "BM_memory", "rss_10m", "bytes");
  const double peak_1m =
      counter("memory.peak_1m", "memory: peak RSS, first 1 M records", "BM_memory", "peak_1m", "bytes");
  const double peak_10m =
      counter("memory.peak_10m", "memory: peak RSS, all 10 M records", "BM_memory", "peak_10m", "bytes");
  time("report.snapshot", "report: snapshot, 10,000 ranges", "BM_report_snapshot");
  time("report.table_50", "report: table (50 rows), 10,000 ranges", "BM_report_table/50");
  time("report.table_all", "report: table (all rows), 10,000 ranges", "BM_report_table/0");

  s.targets.push_back({"scope.enabled_over_floor", "enabled scope / (two clock reads + NVTX range)",
                       enabled / floor, "x", "<= 2.00x", enabled / floor <= 2.0});
  s.targets.push_back({"scope.enabled_over_clock_gettime", "enabled scope / two clock_gettime",
                       enabled / gettime, "x", "<= 0.55x", enabled / gettime <= 0.55});
  s.targets.push_back({"scope.enabled_over_rdtsc", "enabled scope / two rdtsc", enabled / rdtsc, "x",
                       "<= 1.30x", enabled / rdtsc <= 1.3});
  s.targets.push_back({"scope.enabled_ns", "enabled scope (guide)", enabled, "ns", "< 30 ns", enabled < 30});
  s.targets.push_back({"inject.push_pop_over_scope", "injected NVTX push/pop (ASCII) / enabled scope",
                       inject_ascii / enabled, "x", "<= 1.00x", inject_ascii / enabled <= 1.0});
  s.targets.push_back({"inject.registered_over_scope", "injected push/pop (registered) / enabled scope",
                       inject_registered / enabled, "x", "<= 1.00x", inject_registered / enabled <= 1.0});
  s.targets.push_back({"inject.excluded_minus_empty", "left-out domain's push/pop - empty loop",
                       inject_excluded - empty, "ns", "<= 3 ns", inject_excluded - empty <= 3.0});
  s.targets.push_back({"inject.excluded_minus_nvtx_calls",
                       "left-out domain's push/pop - two empty NVTX calls", inject_excluded - nvtx_calls,
                       "ns", "<= 1 ns", inject_excluded - nvtx_calls <= 1.0});
  s.targets.push_back({"scope.traced_over_enabled", "enabled scope: trace mode / without", traced / enabled,
                       "x", "<= 1.50x", traced / enabled <= 1.5});
  s.targets.push_back({"scope.cupti_over_enabled",
                       "scope while CUPTI traces (fake hooks) / host-only scope", cupti / enabled, "x",
                       "<= 1.50x", cupti / enabled <= 1.5});
  s.targets.push_back({"scope.launch_notes_over_enabled",
                       "scope while CUPTI traces with launch notes / host-only scope", launch_notes / enabled,
                       "x", "<= 1.50x", launch_notes / enabled <= 1.5});
  s.targets.push_back({"scope.traced_minus_enabled", "enabled scope: trace mode - without", traced - enabled,
                       "ns", "<= 10 ns", traced - enabled <= 10.0});
  s.targets.push_back({"scope.traced_dropped", "trace mode: events dropped in the benchmark", trace_dropped,
                       "events", "0", trace_dropped == 0});
  s.targets.push_back({"scope.disabled_minus_empty", "runtime-disabled scope - empty loop", disabled - empty,
                       "ns", "<= 1 ns", disabled - empty <= 1.0});
  s.targets.push_back({"scope.compiled_out_minus_empty", "compiled-out scope - empty loop",
                       compiled_out - empty, "ns", "|d| <= 0.1 ns", std::fabs(compiled_out - empty) <= 0.1});
  for (int i = 0; i < 3; ++i) {
    s.targets.push_back({std::string(pairs_labels[i][2]) + "_rate", pairs_labels[i][1], rates[i], "records/s",
                         ">= 25 M/s", rates[i] >= 25e6});
  }
  s.targets.push_back({"memory.rss_growth", "memory: RSS growth, 1 M -> 10 M records", rss_10m - rss_1m,
                       "bytes", "< 1 MB", rss_10m - rss_1m < 1e6});
  s.targets.push_back({"memory.peak_growth", "memory: peak RSS growth, 1 M -> 10 M records",
                       peak_10m - peak_1m, "bytes", "< 1 MB", peak_10m - peak_1m < 1e6});
  s.notes = {
      "Times are CPU time per operation, median over the repetitions; cv = their standard deviation / mean.",
      "Activity rates are kernel records per second on one core; each kernel record comes with its",
      "external-correlation and API records, all decoded (consume_buffer) and aggregated.",
      "Memory is resident memory (/proc/self/statm) of a fresh process, sampled after every 10,000 records."};
  for (const auto& [name, samples] : c.samples) {
    if (!samples.error.empty()) s.notes.push_back(name + " failed: " + samples.error);
  }
  return s;
}

/// Takes "--name=value" out of argv; returns value, or "" when absent.
std::string take_flag(int& argc, char** argv, const char* name) {
  const std::string prefix = std::string("--") + name + "=";
  std::string value;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) {
      value = argv[i] + prefix.size();
    } else {
      argv[kept++] = argv[i];
    }
  }
  argc = kept;
  return value;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], kMemoryChild) == 0) return run_memory_child();
  const std::string json_path = take_flag(argc, argv, "json");
  const std::string commit = take_flag(argc, argv, "git-commit");

  // Defaults first, so that flags given on the command line win.
  std::vector<char*> args{argv[0]};
  char repetitions[] = "--benchmark_repetitions=5";
  char min_time[] = "--benchmark_min_time=0.1";
  char interleave[] = "--benchmark_enable_random_interleaving=true";
  args.insert(args.end(), {repetitions, min_time, interleave});
  args.insert(args.end(), argv + 1, argv + argc);
  int n = static_cast<int>(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 2;

  cuscope_bench::start_host_only_session(1000);

  std::fprintf(stderr, "cuscope_bench: running the CPU set (under a minute)...\n");
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  const cuscope_bench::Summary summary = summarize(collector, commit);
  std::fputs(cuscope_bench::format_table(summary).c_str(), stdout);
  if (!json_path.empty() && !cuscope_bench::write_file(json_path, cuscope_bench::format_json(summary)))
    return 1;
  return 0;
}

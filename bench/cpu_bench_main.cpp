// bench/cpu_bench_main.cpp — the CPU set's run (bench/README.md): its flags, the run of every
// benchmark registered in cpu_bench.cpp, model_bench.cpp and compiled_out.cpp, and their summary:
// the measurements, the ratios to the floors of the same run, the targets, one table and the JSON.
// Google Benchmark's own console output is replaced by that table (bench/summary.hpp), printed at
// the end; --json=PATH writes the same numbers as JSON.
//
// Never: a benchmark of its own, or a ratio of numbers from two runs.
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <map>
#include <string>
#include <vector>

#include "host_session.hpp"
#include "model_bench.hpp"
#include "summary.hpp"

namespace {

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
  if (argc == 2 && std::strcmp(argv[1], cuscope_bench::kMemoryChild) == 0) return cuscope_bench::run_memory_child();
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

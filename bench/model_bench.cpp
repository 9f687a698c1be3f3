// bench/model_bench.cpp — the CPU benchmarks of the model's side (bench/README.md), run by
// cuscope_bench beside the scope benchmarks of cpu_bench.cpp, whose summary names them: how fast
// CUPTI records are decoded and aggregated, whether memory stays flat in the number of records
// (in a child process), and what a snapshot and a table of a large tree cost.
//
// Never here: the summary or main() (cpu_bench.cpp), a scope's own cost.
#include "model_bench.hpp"

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
      buffer_.set_field<std::uint64_t>(external_at_[i], instances_[i / kernels_per_range_]);
    }
    buffer_.advance<std::uint32_t>(correlation_at_, kKernelsPerBuffer);
    buffer_.advance<std::uint64_t>(time_at_, kKernelsPerBuffer * kNsPerKernel);
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

/// Resident memory of the process (/proc/self/statm, second field), in bytes.
std::uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE));
}

}  // namespace

int cuscope_bench::run_memory_child() {
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

namespace {

void BM_memory(benchmark::State& state) {
  char self[4096] = {};
  if (readlink("/proc/self/exe", self, sizeof self - 1) <= 0 || std::strchr(self, '\'') != nullptr) {
    state.SkipWithError("cannot find this program's path to re-run it");
    return;
  }
  for (auto _ : state) {
    const std::string command = std::string("'") + self + "' " + cuscope_bench::kMemoryChild;
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

}  // namespace

// What the trace tests share (test_trace_replay.cpp, test_trace_file.cpp, test_trace_session.cpp,
// and the session tests that replay their traces): temporary paths and whole-file reads, a session's
// trace replayed against its exit report, a live model whose every input is also written to a trace
// (Recorded), a small recorded run of two ranges, and a visitor that collects a trace's copies.
// Never a test case here; never a session (the session's cases make their own).
#pragma once

#include <bit>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cstdio>
#include <cuscope/report.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "session/hardware.hpp"
#include "trace/reader.hpp"
#include "trace/replay.hpp"
#include "trace/writer.hpp"

namespace cuscope_test::trace_kit {

using cuscope::Report;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cuscope_test_" + name)).string();
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A session's trace replayed: it must give the session's exit report (the JSON at `json_path`) to
// the byte. Both files go; the replayed report comes back for the case's own checks.
inline Report replay_as_exit(const std::string& trace_path, const std::string& json_path) {
  struct Remove {  // on every way out, a failed REQUIRE's too
    const std::string& a;
    const std::string& b;
    ~Remove() {
      std::remove(a.c_str());
      std::remove(b.c_str());
    }
  } remove{trace_path, json_path};
  const std::string exit_json = read_file(json_path);
  Report replayed;
  std::string error;
  const bool replayed_ok = trace::replay_file(trace_path, &replayed, &error);
  INFO("replaying " << trace_path << ": " << error);
  REQUIRE(replayed_ok);
  CHECK(cuscope::format_json(replayed) == exit_json);
  return replayed;
}

// A live model (one thread's tree and an aggregator) whose every input is also written to a trace.
struct Recorded {
  std::string path;
  model::Forest forest;
  model::Aggregator agg{forest};
  model::ThreadTree* tree = nullptr;
  std::unique_ptr<trace::Writer> writer;

  explicit Recorded(const std::string& name, std::uint64_t limit = trace::Writer::kDefaultLimitBytes)
      : path(temp_path(name)) {
    forest.record_instances = true;
    tree = forest.make_tree();
    std::string error;
    writer = trace::Writer::open(path, limit, forest.names, &error);
    REQUIRE(writer != nullptr);
    writer->meta("max_depth", "64");
  }
  ~Recorded() { std::remove(path.c_str()); }

  std::uint64_t begin(const char* name, std::uint64_t t) {
    const std::uint32_t id = forest.names.intern(name);
    const auto tok = tree->begin(id, t);
    writer->record(trace::ScopeKind::Enter, tree->slot(), id, t, tok.instance);
    return tok.instance;
  }
  void end(std::uint32_t depth, std::uint64_t t) {
    tree->end(depth, t);
    writer->record(trace::ScopeKind::Exit, tree->slot(), depth, t, 0);
  }
  void count(const char* name, double amount) {
    const std::uint32_t id = forest.names.intern(name);
    tree->count(id, amount);
    writer->record(trace::ScopeKind::Count, tree->slot(), id, 0, std::bit_cast<std::uint64_t>(amount));
  }
  template <class Record>
  void on(const Record& r) {
    writer->on(r);
    agg.on(r);
  }
  void buffer_end() {
    writer->buffer_end(0, 0);
    agg.settle(2, false);
  }
  Report live() {
    agg.settle(1);
    Report r;
    agg.build(r);
    r.diagnostics.trace_records_dropped = writer->dropped();
    cuscope::detail::apply_verdicts(r, {}, {});  // as the session's snapshot does
    return r;
  }
  // Closes the trace with the session fields of `live` (what the session's close_trace does).
  void close(const Report& live = {}) {
    writer->finish_events();
    trace::Summary sum;
    sum.device = live.device;
    sum.gpu_timing = live.gpu_timing;
    sum.activity_status = live.activity_status;
    sum.counters_status = live.counters_status;
    REQUIRE(writer->close(sum));
  }
};

inline model::KernelActivity kernel(std::uint64_t correlation, std::uint64_t start, std::uint64_t end,
                                    const char* name, std::uint32_t stream = 7) {
  model::KernelActivity k;
  k.correlation = correlation;
  k.start_ns = start;
  k.end_ns = end;
  k.name = name;
  k.grid = {64, 1, 1};
  k.block = {256, 1, 1};
  k.stream = stream;
  return k;
}

// A small session of two ranges with kernels, copies, a set, a sync and a count, in a trace.
inline void record_run(Recorded& rec) {
  for (std::uint64_t i = 0; i < 3; ++i) {
    const std::uint64_t t = 1'000'000 * (i + 1);
    rec.begin("step", t);
    const std::uint64_t fwd = rec.begin("forward", t + 10);
    rec.count("tokens", 128);
    rec.on(model::ApiCall{10 * i + 1, t + 20, t + 30});
    rec.on(model::ExternalCorrelation{10 * i + 1, fwd});
    rec.on(kernel(10 * i + 1, t + 100, t + 5'100, "_Z4gemmPf"));
    rec.on(model::ApiCall{10 * i + 2, t + 40, t + 50});
    rec.on(model::ExternalCorrelation{10 * i + 2, fwd});
    rec.on(model::MemcpyActivity{10 * i + 2, t + 6'000, t + 7'000, 4096, cuscope::CopyKind::HtoD, 0, 7});
    model::Node* forward = rec.tree->innermost();
    forward->gpu.add(7'000 + i);  // what the CUDA-event resolver adds, and tells the writer
    rec.writer->gpu_time(forward, 7'000 + i);
    rec.end(2, t + 8'000);
    rec.on(model::ApiCall{10 * i + 3, t + 8'100, t + 8'200});
    rec.on(model::MemsetActivity{10 * i + 3, t + 8'300, t + 8'400, 512, 0, 7});
    rec.on(model::SyncActivity{10 * i + 4, t + 8'500, t + 9'000});
    rec.end(1, t + 10'000 + (i == 1 ? 2'000 : 0));  // the 2nd step the slowest
    rec.buffer_end();
  }
}

// Collects the copies a trace holds.
struct Copies : trace::Visitor {
  std::vector<model::MemcpyActivity> copies;
  void on(const model::MemcpyActivity& m) override { copies.push_back(m); }
};

}  // namespace cuscope_test::trace_kit

// Trace mode: the writer, the reader and the replay into the model, on synthetic event streams;
// the reader on bad input; the file's bound; trace mode in a live session.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cupti_buffer.hpp"
#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "producers/cupti/decode.hpp"
#include "session/hardware.hpp"
#include "session_fixture.hpp"
#include "trace/reader.hpp"
#include "trace/replay.hpp"
#include "trace/writer.hpp"

namespace {

using cuscope::Report;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("cuscope_test_" + name)).string();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
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

model::KernelActivity kernel(std::uint64_t correlation, std::uint64_t start, std::uint64_t end,
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
void record_run(Recorded& rec) {
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

}  // namespace

TEST_CASE("a trace replays to the report its live model built", "[trace]") {
  Recorded rec("replay.cuscope");
  record_run(rec);
  const Report live = rec.live();
  rec.close(live);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(error.empty());
  CHECK(cuscope::format_json(replayed) == cuscope::format_json(live));
  const cuscope::RangeStats* fwd = replayed.find("step/forward");
  REQUIRE(fwd != nullptr);
  CHECK(fwd->calls == 3);
  CHECK(fwd->self.kernel_calls == 3);
  CHECK(fwd->self.kernel_ns == 15'000);
  REQUIRE(fwd->kernels.size() == 1);
  CHECK(fwd->kernels[0].name == "gemm(float*)");
  CHECK(fwd->counts.at(0).total == 384);
  CHECK(fwd->gpu.count == 3);
  CHECK(fwd->gpu.total_ns == 21'003);
  CHECK(replayed.find("(unscoped)")->self.memset_count == 3);  // launched outside every scope
  CHECK(replayed.find("step")->host.max_ns == 12'000);
  CHECK(replayed.find("step")->host.max_call == 2);  // the same tree, the same begin/end order
}

TEST_CASE("a tree that a second thread takes over counts both threads in the replay too",
          "[trace][threads]") {
  Recorded rec("reuse.cuscope");
  rec.begin("work", 1'000);
  rec.end(1, 2'000);
  // The first thread has exited; another takes its tree (what attach_thread does) and records.
  std::thread second([&] {
    rec.tree->abandon_open();
    rec.tree->new_owner();
    rec.begin("work", 3'000);
    rec.end(1, 4'000);
  });
  second.join();
  const Report live = rec.live();
  REQUIRE(live.find("work") != nullptr);
  CHECK(live.find("work")->threads == 2);
  rec.close(live);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  REQUIRE(replayed.find("work") != nullptr);
  CHECK(replayed.find("work")->threads == 2);
  CHECK(cuscope::format_json(replayed) == cuscope::format_json(live));
}

TEST_CASE("NVTX start/end ranges go through the trace's summary to the replayed report", "[trace]") {
  Recorded rec("spans.cuscope");
  rec.begin("work", 1'000);
  rec.end(1, 2'000);
  Report live = rec.live();
  live.spans = {{"", "load", {2, 300, 100, 200}, 1, 1}, {"NCCL", "bcast", {1, 50, 50, 50}, 0, 0}};
  live.diagnostics.unmatched_span_ends = 4;
  live.diagnostics.spans_dropped = 5;
  rec.writer->finish_events();
  trace::Summary sum;
  sum.spans = live.spans;
  sum.unmatched_span_ends = 4;
  sum.spans_dropped = 5;
  REQUIRE(rec.writer->close(sum));
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  REQUIRE(replayed.spans.size() == 2);
  CHECK(replayed.spans[0].name == "load");
  CHECK(replayed.spans[0].host.count == 2);
  CHECK(replayed.spans[0].host.total_ns == 300);
  CHECK(replayed.spans[0].host.max_ns == 200);
  CHECK(replayed.spans[0].open == 1);
  CHECK(replayed.spans[0].cross_thread == 1);
  CHECK(replayed.spans[1].domain == "NCCL");
  CHECK(replayed.spans[1].name == "bcast");
  CHECK(replayed.diagnostics.unmatched_span_ends == 4);
  CHECK(replayed.diagnostics.spans_dropped == 5);
  CHECK(replayed.diagnostics.trace_records_dropped == 0);
}

TEST_CASE("a trace file starts with its header and ends with its end record", "[trace]") {
  Recorded rec("layout.cuscope");
  record_run(rec);
  rec.close();
  const std::string bytes = read_file(rec.path);
  REQUIRE(bytes.size() > trace::kHeaderBytes + 16);
  CHECK(bytes.compare(0, 16, std::string(trace::kMagic, 16)) == 0);
  std::uint32_t version = 0;
  std::memcpy(&version, bytes.data() + 16, 4);
  CHECK(version == trace::kVersion);
  std::uint32_t type = 0, size = 0;
  std::memcpy(&type, bytes.data() + bytes.size() - 16, 4);
  std::memcpy(&size, bytes.data() + bytes.size() - 12, 4);
  CHECK(type == static_cast<std::uint32_t>(trace::RecordType::End));
  CHECK(size == 8);
  CHECK(rec.writer->bytes_written() == bytes.size());
}

TEST_CASE("the trace reader rejects bad input with one line", "[trace]") {
  Recorded rec("good.cuscope");
  record_run(rec);
  rec.close();
  const std::string good = read_file(rec.path);
  const std::string path = temp_path("bad.cuscope");
  Report r;
  std::string error;

  SECTION("a missing file") {
    CHECK_FALSE(trace::replay_file(temp_path("does_not_exist.cuscope"), &r, &error));
    CHECK(error.rfind("cannot open '", 0) == 0);
    CHECK(error.find("No such file or directory") != std::string::npos);
  }
  SECTION("not a trace") {
    write_file(path, "{\"traceEvents\": []}\n");
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == "not a cuscope trace (no CUSCOPE-TRACE header)");
  }
  SECTION("an empty file") {
    write_file(path, "");
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == "not a cuscope trace (no CUSCOPE-TRACE header)");
  }
  SECTION("another version") {
    std::string v2 = good;
    v2[16] = 2;
    write_file(path, v2);
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == "trace format version 2 is not supported (this cuscope reads version 1)");
  }
  SECTION("cut inside a record") {
    write_file(path, good.substr(0, good.size() - 3));
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == fmt::format("truncated: the file ends inside an end record at byte {}", good.size() - 16));
  }
  SECTION("cut between records (no end record)") {
    write_file(path, good.substr(0, good.size() - 16));
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error ==
          fmt::format("truncated: no end record after byte {} (the program did not finish the trace)",
                      good.size() - 16));
  }
  SECTION("an unknown record type") {
    std::string bad = good;
    bad[trace::kHeaderBytes] = 99;
    write_file(path, bad);
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == "malformed: unknown record type 99 at byte 24");
  }
  SECTION("data after the end") {
    write_file(path, good + "x");
    CHECK_FALSE(trace::replay_file(path, &r, &error));
    CHECK(error == fmt::format("malformed: data after the end record at byte {}", good.size()));
  }
  std::remove(path.c_str());
}

TEST_CASE("every prefix of a trace is rejected as truncated, and nothing else", "[trace]") {
  Recorded rec("prefix.cuscope");
  record_run(rec);
  rec.close();
  const std::string good = read_file(rec.path);
  for (std::size_t n = trace::kHeaderBytes; n < good.size(); ++n) {
    trace::Reader reader;
    std::string error;
    REQUIRE(reader.open_memory(reinterpret_cast<const std::uint8_t*>(good.data()), n, &error));
    trace::Visitor ignore;
    REQUIRE_FALSE(reader.read(ignore, &error));
    INFO("prefix of " << n << " bytes: " << error);
    REQUIRE(error.rfind("truncated: ", 0) == 0);
  }
}

TEST_CASE("records past the trace's bound are dropped, counted, and the file says so", "[trace]") {
  constexpr std::uint64_t kLimit = 4096;  // the End record keeps half of it
  Recorded rec("bounded.cuscope", kLimit);
  for (std::uint64_t i = 0; i < 200; ++i) {
    rec.begin("step", 10 * i);
    rec.end(1, 10 * i + 5);
  }
  // One batch: the thread's Attach and 400 scope events, 9.6 KB, more than fits.
  rec.writer->finish_events();
  CHECK(rec.writer->dropped() == 401);
  const Report live = rec.live();
  REQUIRE(rec.writer->close(trace::Summary{}));
  CHECK(std::filesystem::file_size(rec.path) <= kLimit);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.diagnostics.trace_records_dropped == 401);
  CHECK(live.diagnostics.trace_records_dropped == 401);
  CHECK(cuscope::format_table(replayed).find("401 trace records dropped (trace truncated)") !=
        std::string::npos);
  CHECK(replayed.find("step") == nullptr);
}

TEST_CASE("a thread's full ring drops events, counted, and never blocks the scope", "[trace]") {
  Recorded rec("ring.cuscope");
  // No writer thread: the ring fills. Its first slot holds the thread's Attach event.
  const std::uint32_t id = rec.forest.names.intern("step");
  for (std::uint32_t i = 0; i < trace::Writer::kRingEvents + 100; ++i)
    rec.writer->record(trace::ScopeKind::Count, 1, id, i, 0);
  CHECK(rec.writer->dropped() == 101);
  rec.close();
  CHECK(rec.writer->dropped() == 101);
}

TEST_CASE("threads record into their own rings while the writer thread writes", "[trace][threads]") {
  Recorded rec("threads.cuscope");
  rec.writer->start();
  constexpr int kThreads = 4;
  constexpr int kScopes = 5000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&rec] {
      model::ThreadTree* tree = rec.forest.make_tree();
      const std::uint32_t outer = rec.forest.names.intern("outer");
      const std::uint32_t inner = rec.forest.names.intern("inner");
      for (int i = 0; i < kScopes; ++i) {
        const auto a = tree->begin(outer, 10 * i);
        rec.writer->record(trace::ScopeKind::Enter, tree->slot(), outer, 10 * i, a.instance);
        const auto b = tree->begin(inner, 10 * i + 1);
        rec.writer->record(trace::ScopeKind::Enter, tree->slot(), inner, 10 * i + 1, b.instance);
        tree->end(b.depth, 10 * i + 2);
        rec.writer->record(trace::ScopeKind::Exit, tree->slot(), b.depth, 10 * i + 2, 0);
        tree->end(a.depth, 10 * i + 3);
        rec.writer->record(trace::ScopeKind::Exit, tree->slot(), a.depth, 10 * i + 3, 0);
      }
    });
  }
  for (auto& t : threads) t.join();
  const Report live = rec.live();
  rec.close(live);
  CHECK(rec.writer->dropped() == 0);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.find("outer")->calls == kThreads * kScopes);
  CHECK(replayed.find("outer/inner")->calls == kThreads * kScopes);
  CHECK(replayed.find("outer")->threads == kThreads);
  CHECK(cuscope::format_json(replayed) == cuscope::format_json(live));
}

TEST_CASE("trace mode in a session: scopes, counts, steps and CUPTI buffers replay to the exit report",
          "[trace][session]") {
  const std::string trace_path = temp_path("session.cuscope");
  const std::string json_path = temp_path("session.json");
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.json_path = json_path;
  o.warmup_steps = 1;
  o.max_depth = 2;
  o.gpu_events = false;  // CUDA-event times are not in a trace: keep them out of the live report
  o.activities = false;  // the test hands CUPTI buffers to the decoder itself
  cuscope_test::Session session(o);
  auto& s = cuscope::detail::session();
  s.forest.record_instances = true;
  // Scopes take the common path once the counter clock is calibrated (about 100 ms after start):
  // wait for it, so that trace mode's common path, and its way out when instances are recorded,
  // is what this test runs every time (on a machine without an invariant counter it never is).
  for (int waited = 0;
       waited < 3000 && cuscope::snapshot().clock.rfind("CLOCK_MONOTONIC (calibrating", 0) == 0; waited += 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 4; ++i) {
    cuscope_test::CuptiBuffer buffer;
    {
      CUSCOPE_SCOPE("step");
      CUSCOPE_SCOPE("layer");
      {
        CUSCOPE_SCOPE("too_deep");  // past max_depth 2: timed into "layer", counted
      }
      CUSCOPE_COUNT("tokens", 64);
      // Instances of this thread's tree (slot 1) in order: step, layer, pushed per recorded step.
      const std::uint64_t instance = i == 0 ? model::kOutsideWindow : (std::uint64_t{1} << 48) | (3 * i - 1);
      buffer.api(100 + i, 1).external(100 + i, instance).kernel(100 + i, 10, 20 + i, "k");
    }
    cuscope::push("pushed");
    cuscope::pop();
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    cuscope::step();
  }
  cuscope::shutdown();
  const std::string exit_json = read_file(json_path);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(trace_path, &replayed, &error));
  CHECK(cuscope::format_json(replayed) == exit_json);
  REQUIRE(replayed.find("step/layer") != nullptr);
  REQUIRE(replayed.find("pushed") != nullptr);
  CHECK(replayed.find("step/layer")->self.kernel_calls == 3);
  CHECK(replayed.diagnostics.outside_window_records == 1);
  CHECK(replayed.diagnostics.depth_overflows == 3);
  CHECK(replayed.find("pushed")->calls == 3);
  std::remove(trace_path.c_str());
  std::remove(json_path.c_str());
}

// The H100 run's test traces (each ended by reset_for_testing, not a shutdown) named no device and
// said activity was off.
TEST_CASE("a session's trace ended by a reset carries the session's summary, as one ended at exit",
          "[trace][session]") {
  const std::string trace_path = temp_path("reset.cuscope");
  Report live;
  {
    cuscope::Options o = cuscope_test::quiet_options();
    o.trace_path = trace_path;
    cuscope_test::Session session(o);
    {
      CUSCOPE_SCOPE("work");
    }
    live = cuscope::snapshot();
    cuscope::detail::reset_for_testing();
  }
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(trace_path, &replayed, &error));
  std::remove(trace_path.c_str());
  REQUIRE_FALSE(live.activity_status.empty());
  CHECK(replayed.device == live.device);
  CHECK(replayed.gpu_timing == live.gpu_timing);
  CHECK(replayed.activity_status == live.activity_status);
  CHECK_FALSE(replayed.clock.empty());  // not equal: the clock's calibration may end in between
  REQUIRE(replayed.find("work") != nullptr);
  CHECK(replayed.find("work")->calls == 1);
}

TEST_CASE("a trace path that cannot be written turns trace mode off with a note", "[trace][session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = "/nonexistent-dir/x.cuscope";
  o.gpu_events = false;
  o.activities = false;
  cuscope_test::Session session(o);
  { CUSCOPE_SCOPE("still_recorded"); }
  const Report r = cuscope::snapshot();
  CHECK(r.find("still_recorded")->calls == 1);
  const std::string note =
      "trace mode is off: cannot open '/nonexistent-dir/x.cuscope' for writing (CUSCOPE_TRACE)";
  CHECK(std::count(r.notes.begin(), r.notes.end(), note) == 1);
}

TEST_CASE("CUSCOPE_TRACE and CUSCOPE_TRACE_LIMIT set trace mode's options", "[trace][options]") {
  static const char* limit = nullptr;
  const auto lookup = [](const char* name) -> const char* {
    if (std::string_view(name) == "CUSCOPE_TRACE") return "/tmp/run.cuscope";
    if (std::string_view(name) == "CUSCOPE_TRACE_LIMIT") return limit;
    return nullptr;
  };
  std::vector<cuscope::OptionError> errors;
  CHECK(cuscope::Options{}.trace_limit_mb == 256);
  limit = "64";
  cuscope::Options o = cuscope::options_from(lookup, {}, &errors);
  CHECK(errors.empty());
  CHECK(o.trace_path == "/tmp/run.cuscope");
  CHECK(o.trace_limit_mb == 64);
  limit = "0";
  o = cuscope::options_from(lookup, {}, &errors);
  CHECK(o.trace_limit_mb == 256);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "CUSCOPE_TRACE_LIMIT='0' is out of range [1, 1000000]; keeping 256");
}

namespace {

// Collects the copies a trace holds.
struct Copies : trace::Visitor {
  std::vector<model::MemcpyActivity> copies;
  void on(const model::MemcpyActivity& m) override { copies.push_back(m); }
};

// A trace of one Memcpy record with `payload` as its payload, then End.
std::string trace_with_memcpy(const std::string& payload) {
  std::string out(trace::kMagic, sizeof(trace::kMagic));
  trace::Encoder e(out);
  e.put(trace::kVersion);
  e.put(trace::kHeaderBytes);
  std::size_t at = e.begin(trace::RecordType::Memcpy);
  out += payload;
  e.finish(at);
  at = e.begin(trace::RecordType::End);
  e.put(std::uint64_t{0});
  e.finish(at);
  return out;
}

// A Memcpy payload as version 1 wrote it before the memory kinds.
std::string memcpy_payload_without_kinds() {
  std::string p;
  trace::Encoder e(p);
  for (std::uint64_t v : {std::uint64_t{5}, std::uint64_t{100}, std::uint64_t{200}, std::uint64_t{4096}})
    e.put(v);
  e.put(static_cast<std::uint8_t>(cuscope::CopyKind::HtoD));
  e.put(std::uint32_t{0});
  e.put(std::uint32_t{7});
  return p;
}

}  // namespace

TEST_CASE("a copy's memory kinds go through the trace to the replayed report", "[trace][pageable]") {
  Recorded rec("kinds.cuscope");
  const std::uint64_t io = rec.begin("io", 1'000);
  for (std::uint64_t c = 1; c <= 3; ++c) {
    rec.on(model::ApiCall{c, 1'000 + c, 1'001 + c});
    rec.on(model::ExternalCorrelation{c, io});
  }
  using MK = model::MemoryKind;
  rec.on(
      model::MemcpyActivity{1, 2'000, 2'100, 4096, cuscope::CopyKind::HtoD, 0, 7, MK::pageable, MK::device});
  rec.on(model::MemcpyActivity{2, 2'200, 2'300, 512, cuscope::CopyKind::DtoH, 0, 7, MK::device, MK::pinned});
  rec.on(model::MemcpyActivity{3, 2'400, 2'500, 64, cuscope::CopyKind::DtoD, 1, 9, MK::managed_static,
                               MK::device_static});
  rec.end(1, 3'000);
  rec.buffer_end();
  const Report live = rec.live();
  rec.close(live);

  trace::Reader reader;
  std::string error;
  REQUIRE(reader.open(rec.path, &error));
  Copies copies;
  REQUIRE(reader.read(copies, &error));
  REQUIRE(copies.copies.size() == 3);
  CHECK(copies.copies[0].src_kind == MK::pageable);
  CHECK(copies.copies[0].dst_kind == MK::device);
  CHECK(copies.copies[1].src_kind == MK::device);
  CHECK(copies.copies[1].dst_kind == MK::pinned);
  CHECK(copies.copies[2].src_kind == MK::managed_static);
  CHECK(copies.copies[2].dst_kind == MK::device_static);
  CHECK(copies.copies[2].stream == 9);

  Report replayed;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.find("io")->self.pageable_copies == 1);
  CHECK(replayed.find("io")->self.pageable_bytes == 4096);
  CHECK(cuscope::format_json(replayed) == cuscope::format_json(live));
}

TEST_CASE("a Memcpy record without memory kinds (older traces) reads as unknown kinds; bad kinds are refused",
          "[trace][pageable]") {
  const std::string path = temp_path("old_memcpy.cuscope");
  trace::Reader reader;
  std::string error;
  Copies copies;
  SECTION("no kinds") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds()));
    REQUIRE(reader.open(path, &error));
    REQUIRE(reader.read(copies, &error));
    REQUIRE(copies.copies.size() == 1);
    CHECK(copies.copies[0].bytes == 4096);
    CHECK(copies.copies[0].stream == 7);
    CHECK(copies.copies[0].src_kind == model::MemoryKind::unknown);
    CHECK(copies.copies[0].dst_kind == model::MemoryKind::unknown);
  }
  SECTION("a kind past the last") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds() + std::string{1, 8}));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(copies, &error));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  SECTION("one kind of two") {
    write_file(path, trace_with_memcpy(memcpy_payload_without_kinds() + std::string(1, '\1')));
    REQUIRE(reader.open(path, &error));
    CHECK_FALSE(reader.read(copies, &error));
    CHECK(error == "malformed: a memcpy record at byte 24");
  }
  std::remove(path.c_str());
}

TEST_CASE("a session's trace records its rank and world size, and its replay reports them",
          "[trace][session][ranks]") {
  const std::string trace_path = temp_path("rank.cuscope");
  const std::string json_path = temp_path("rank.json");
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.json_path = json_path;
  o.gpu_events = false;
  o.activities = false;  // the test hands a CUPTI buffer to the decoder itself
  {
    cuscope_test::Session session(o);
    auto& s = cuscope::detail::session();
    s.forest.record_instances = true;
    cuscope_test::CuptiBuffer buffer;
    {
      CUSCOPE_SCOPE("load");
      // The first instance of this thread's tree (slot 1): the scope above.
      buffer.api(7, 1).external(7, (std::uint64_t{1} << 48) | 1);
      buffer.memcpy(7, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 10, 20, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    }
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    cuscope::shutdown();
  }
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  const std::string exit_json = read_file(json_path);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(trace_path, &replayed, &error));
  CHECK(replayed.rank == 3);
  CHECK(replayed.world_size == 4);
  CHECK(replayed.find("load")->self.pageable_copies == 1);  // the decoder's kinds, through the trace
  CHECK(replayed.find("load")->self.pageable_bytes == 1u << 20);
  CHECK(cuscope::format_json(replayed) == exit_json);
  CHECK(cuscope::format_table(replayed).find(" — rank 3 of 4") != std::string::npos);
  std::remove(trace_path.c_str());
  std::remove(json_path.c_str());
}

TEST_CASE("a trace without rank metadata replays without a rank; a bad value is left unknown",
          "[trace][ranks]") {
  Recorded rec("norank.cuscope");
  SECTION("none") {}
  SECTION("not a number") {
    rec.writer->meta("rank", "three");
    rec.writer->meta("world_size", "-4");
  }
  rec.begin("work", 1'000);
  rec.end(1, 2'000);
  rec.close(rec.live());
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.rank == -1);
  CHECK(replayed.world_size == 0);
}

TEST_CASE("rank metadata of a trace reaches its replayed report", "[trace][ranks]") {
  Recorded rec("rank_meta.cuscope");
  rec.writer->meta("rank", "0");
  rec.writer->meta("world_size", "16");
  rec.begin("work", 1'000);
  rec.end(1, 2'000);
  rec.close(rec.live());
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.rank == 0);
  CHECK(replayed.world_size == 16);
}

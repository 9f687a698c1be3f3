// The trace file itself: its layout (header, end record), the reader on bad input (one line each,
// every prefix truncated, a summary without its own-work tail; a record's own fields:
// test_trace_records.cpp), a cut trace's steps, the bound on the file's size, the writer's passes in the
// file as they happen, and the threads' rings (full rings drop, never block; many threads at once).
//
// Never: a session or a GPU; never a trace file left behind.
#include <fmt/format.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "trace/reader.hpp"
#include "trace/replay.hpp"
#include "trace/writer.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope::Report;
using cuscope_test::trace_kit::read_file;
using cuscope_test::trace_kit::record_run;
using cuscope_test::trace_kit::Recorded;
using cuscope_test::trace_kit::temp_path;
using cuscope_test::trace_kit::write_file;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

}  // namespace

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

namespace {

// Where the first record of `type` starts in the trace `file` (its size when there is none).
std::size_t offset_of(const std::string& file, trace::RecordType type) {
  std::size_t at = trace::kHeaderBytes;
  while (at + trace::kRecordHeaderBytes <= file.size()) {
    std::uint32_t t = 0, size = 0;
    std::memcpy(&t, file.data() + at, 4);
    std::memcpy(&size, file.data() + at + 4, 4);
    if (t == static_cast<std::uint32_t>(type)) return at;
    at += trace::kRecordHeaderBytes + size;
  }
  return file.size();
}

}  // namespace

TEST_CASE(
    "accept_cut: a trace cut anywhere is read up to its last whole record, saying where, and a malformed "
    "one is still refused",
    "[trace][partial]") {
  Recorded rec("partial.cuscope");
  record_run(rec);
  rec.close();
  const std::string good = read_file(rec.path);
  struct Counting : trace::Visitor {
    std::size_t scopes = 0, kernels = 0;
    void scope(const trace::ScopeEvent&) override { ++scopes; }
    void on(const model::KernelActivity&) override { ++kernels; }
  };
  Counting before;
  for (std::size_t n = trace::kHeaderBytes; n <= good.size(); ++n) {
    trace::Reader reader;
    reader.accept_cut(true);
    std::string error;
    REQUIRE(reader.open_memory(reinterpret_cast<const std::uint8_t*>(good.data()), n, &error));
    Counting c;
    INFO("prefix of " << n << " bytes: " << reader.cut());
    REQUIRE(reader.read(c, &error));
    REQUIRE(error.empty());
    REQUIRE(reader.cut().rfind(n == good.size() ? "" : "truncated: ", 0) == 0);
    REQUIRE(reader.cut().empty() == (n == good.size()));
    // A longer prefix never holds less.
    REQUIRE(c.scopes >= before.scopes);
    REQUIRE(c.kernels >= before.kernels);
    before = c;
  }
  CHECK(before.kernels == 3);
  std::string bad = good;
  bad[trace::kHeaderBytes] = 99;
  trace::Reader reader;
  reader.accept_cut(true);
  std::string error;
  REQUIRE(reader.open_memory(reinterpret_cast<const std::uint8_t*>(bad.data()), bad.size(), &error));
  trace::Visitor ignore;
  CHECK_FALSE(reader.read(ignore, &error));
  CHECK(error == "malformed: unknown record type 99 at byte 24");
}

TEST_CASE("a trace cut before its end or its summary replays what it held, partial only, with a note",
          "[trace][partial]") {
  Recorded rec("cut_replay.cuscope");
  record_run(rec);
  Report live = rec.live();
  live.device = "a device";
  rec.close(live);
  const std::string good = read_file(rec.path);
  const std::string path = temp_path("cut_replay_prefix.cuscope");
  Report r;
  std::string error;
  SECTION("no end record") {
    write_file(path, good.substr(0, good.size() - 16));
    CHECK_FALSE(trace::replay_file(path, &r, &error));  // without partial: an error, as ever
    REQUIRE(trace::replay_file(path, &r, &error, true));
    CHECK(r.find("step")->calls == 3);
    CHECK(r.find("step/forward")->self.kernel_calls == 3);
    CHECK(r.device == "a device");  // the summary came before the cut
    REQUIRE_FALSE(r.notes.empty());
    CHECK(r.notes.back() ==
          fmt::format("this trace was cut short (truncated: no end record after byte {} (the program did not "
                      "finish the trace)): the program was killed, crashed or still runs; the report holds "
                      "what the file held before the cut, and how many records the session dropped at the "
                      "trace's size limit is not known (the end record counts them)",
                      good.size() - 16));
    CHECK(cuscope::format_table(r).find("this trace was cut short") != std::string::npos);
  }
  SECTION("cut before its summary") {
    write_file(path, good.substr(0, offset_of(good, trace::RecordType::Summary)));
    REQUIRE(trace::replay_file(path, &r, &error, true));
    CHECK(r.find("step")->calls == 3);
    CHECK(r.gpu_timing == "not known: the trace was cut before its summary");
    CHECK(r.activity_status == "not known: the trace was cut before its summary");
    REQUIRE(r.notes.size() == 1);
    CHECK(r.notes[0].rfind("this trace was cut short (truncated: no end record after byte ", 0) == 0);
  }
  std::remove(path.c_str());
}

TEST_CASE("a trace cut before its summary counts its steps from its step marks, as the session did",
          "[trace][partial][window]") {
  Recorded rec("cut_steps.cuscope");
  rec.writer->meta("options",
                   "gpu_events=1 activities=1 wait=1 warmup=1 active=1 repeat=2 max_depth=64 "
                   "metrics='wait=9' trace_limit_mb=256");
  // The marks a session with that window writes over 8 steps: wait, warm-up, active, twice, then done.
  // Mark k says whether the steps from k on record: steps 2 and 5 (0-based) are recorded.
  for (std::uint64_t k = 0; k <= 8; ++k) {
    if (k == 2 || k == 5) {
      rec.begin("step", 100 * k);
      rec.end(1, 100 * k + 50);
    }
    rec.writer->step(100 * k + 90, k, k == 2 || k == 5);
  }
  rec.close();
  const std::string good = read_file(rec.path);
  const std::string path = temp_path("cut_steps_prefix.cuscope");
  write_file(path, good.substr(0, offset_of(good, trace::RecordType::Summary)));
  Report r;
  std::string error;
  REQUIRE(trace::replay_file(path, &r, &error, true));
  CHECK(r.steps == 8);
  CHECK(r.recorded_steps == 2);
  CHECK(r.window_start_step == 2);  // wait + warm-up, from the options line (its metrics are not read)
  CHECK(r.find("step")->calls == 2);
  std::remove(path.c_str());
}

TEST_CASE("each pass of the writer thread reaches the file, so a program killed mid-run leaves it",
          "[trace][partial]") {
  Recorded rec("passes.cuscope");
  rec.writer->start();
  rec.begin("step", 10);
  rec.end(1, 20);
  rec.writer->step(30, 1, true);
  // A pass every 5 ms: read the file as `cuscope show --partial` would while the writer still runs.
  Report r;
  std::string error;
  bool read = false;
  for (int waited_ms = 0; waited_ms < 5000 && !read; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    error.clear();
    read = trace::replay_file(rec.path, &r, &error, true) && r.find("step") != nullptr;
  }
  CHECK(read);
  CHECK(error == "");
  rec.close();
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

TEST_CASE(
    "the summary carries cuscope's own processing and the clock's steps, and a trace from before each "
    "replays it as 0",
    "[trace]") {
  Recorded rec("own_work.cuscope");
  rec.begin("step", 10);
  rec.end(1, 20);
  trace::Summary summary;
  summary.activity_buffers = 3;
  summary.activity_processing_ns = 4'567;
  summary.steps = 4;
  summary.clock_steps = 4;
  summary.step_ms = 250;
  REQUIRE(rec.writer->close(summary));
  const std::string good = read_file(rec.path);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.diagnostics.activity_buffers == 3);
  CHECK(replayed.diagnostics.activity_processing_ns == 4'567);
  CHECK(replayed.clock_steps == 4);
  CHECK(replayed.step_ms == 250);
  CHECK(cuscope::format_table(replayed).find("cuscope's own work: 3 CUPTI buffers processed in 4.57 µs") !=
        std::string::npos);
  CHECK(cuscope::format_table(replayed).find("(ended by cuscope's clock every 250 ms)") != std::string::npos);

  // The same file as written before a tail: the summary record `bytes` shorter.
  const std::size_t at = offset_of(good, trace::RecordType::Summary);
  std::uint32_t size = 0;
  std::memcpy(&size, good.data() + at + 4, 4);
  const auto replay_without = [&](std::uint32_t bytes) {
    const std::uint32_t older = size - bytes;
    std::string old = good.substr(0, at + 4);
    old.append(reinterpret_cast<const char*>(&older), 4);
    old += good.substr(at + trace::kRecordHeaderBytes, older);
    old += good.substr(at + trace::kRecordHeaderBytes + size);
    write_file(rec.path, old);
    Report before;
    REQUIRE(trace::replay_file(rec.path, &before, &error));
    CHECK(before.find("step") != nullptr);
    return before;
  };
  const Report before_clock = replay_without(16);  // before 2026-11-28's clock steps
  CHECK(before_clock.clock_steps == 0);
  CHECK(before_clock.step_ms == 0);
  CHECK(before_clock.diagnostics.activity_buffers == 3);
  CHECK(cuscope::format_table(before_clock).find("cuscope's clock") == std::string::npos);
  const Report before = replay_without(32);  // before 2026-11-27's own processing too
  CHECK(before.diagnostics.activity_buffers == 0);
  CHECK(before.diagnostics.activity_processing_ns == 0);
  CHECK(cuscope::format_table(before).find("cuscope's own work") == std::string::npos);
  std::remove(rec.path.c_str());
}

// A re-attach's mark (Reattach) must be in the file before any event the new attach makes: ring
// events (scopes, graph nodes) recorded after pass_now() come after it, though each pass writes the
// rings' events before the marks it took with them.
TEST_CASE("pass_now: what was marked before it is in the file before ring events recorded after it",
          "[trace][detach]") {
  Recorded rec("pass_now.cuscope");
  rec.writer->start();
  rec.writer->reattached(5);
  rec.writer->pass_now();
  rec.begin("after", 10);
  rec.end(1, 20);
  rec.writer->finish_events();
  REQUIRE(rec.writer->close(trace::Summary{}));
  struct Order : trace::Visitor {
    std::vector<std::string> seen;
    void scope(const trace::ScopeEvent&) override { seen.emplace_back("scope"); }
    void reattached(std::uint64_t) override { seen.emplace_back("reattach"); }
  } order;
  trace::Reader reader;
  std::string error;
  REQUIRE(reader.open(rec.path, &error));
  REQUIRE(reader.read(order, &error));
  REQUIRE_FALSE(order.seen.empty());
  CHECK(order.seen.front() == "reattach");
  CHECK(std::count(order.seen.begin(), order.seen.end(), "scope") >= 2);  // the Enter and the Exit
}

// Trace mode's replay: a trace written beside a live model (tests/trace_kit.hpp's Recorded), on
// synthetic event streams, replays to the report the live model built: ranges, kernels, copies
// with their memory kinds, a tree taken over by a second thread, NVTX start/end ranges, rank
// metadata.
//
// Never: a session or a GPU (test_trace_session.cpp has the live sessions); never a trace file
// left behind (Recorded removes its own).
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <string>
#include <thread>

#include "trace/replay.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope::Report;
using cuscope_test::trace_kit::Copies;
using cuscope_test::trace_kit::record_run;
using cuscope_test::trace_kit::Recorded;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

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

TEST_CASE("a copy's memory kinds and blocking go through the trace to the replayed report",
          "[trace][pageable][blocking]") {
  Recorded rec("kinds.cuscope");
  const std::uint64_t io = rec.begin("io", 1'000);
  for (std::uint64_t c = 1; c <= 3; ++c) {
    rec.on(model::ApiCall{c, 1'000 + c, 1'001 + c});
    rec.on(model::ExternalCorrelation{c, io});
  }
  using MK = model::MemoryKind;
  rec.on(
      model::MemcpyActivity{1, 2'000, 2'100, 4096, cuscope::CopyKind::HtoD, 0, 7, MK::pageable, MK::device});
  rec.on(model::MemcpyActivity{2, 2'200, 2'300, 512, cuscope::CopyKind::DtoH, 0, 7, MK::device, MK::pinned,
                               true});
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
  CHECK_FALSE(copies.copies[0].blocking);
  CHECK(copies.copies[1].blocking);
  CHECK_FALSE(copies.copies[2].blocking);

  Report replayed;
  REQUIRE(trace::replay_file(rec.path, &replayed, &error));
  CHECK(replayed.find("io")->self.pageable_copies == 1);
  CHECK(replayed.find("io")->self.pageable_bytes == 4096);
  CHECK(replayed.find("io")->self.blocking_copies == 1);
  CHECK(replayed.find("io")->self.blocking_bytes == 512);
  CHECK(cuscope::format_json(replayed) == cuscope::format_json(live));
}

TEST_CASE("a trace without rank metadata replays without a rank, a bad value is left unknown",
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

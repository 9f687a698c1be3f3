// The CUPTI decoding path without a GPU, what each record adds: copies per direction and memory
// kind (pageable host sides, peer-to-peer), blocking copies (the async flag), sets, syncs and device
// allocations; and what is counted rather than used: zero timestamps, work still running at shutdown, CUPTI's
// dropped and overhead records. Buffers of real CUPTI 13.0 record layouts, built in memory, go through the
// same code that handles CUPTI's completed buffers.
//
// Never: a session, a GPU or a CUPTI subscription (the model is fed by consume_buffer alone).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <string>

#include "cupti_decode_kit.hpp"

using cuscope::CopyKind;
using cuscope::Report;
using cuscope_test::cupti_decode_kit::Fixture;

TEST_CASE("copies, sets, syncs and device allocations are decoded per direction and kind", "[cupti]") {
  Fixture f;
  auto io = f.begin("io");
  f.end(io);
  for (std::uint32_t c = 70; c < 78; ++c) f.buffer.external(c, io.instance);
  f.buffer.memcpy(70, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1000, 10, 20)
      .memcpy(71, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 300, 30, 33)
      .memcpy(72, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 50, 40, 41)
      .memcpy(73, CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, 7, 40, 41)
      .memset(74, 4096, 50, 60)
      .sync(75, 100, 900)
      .memory(76, true, 0xA000, 1 << 20, 5)
      .memory(77, true, 0xB000, 256, 6, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);  // host memory: not counted
  const auto counts = f.consume();
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  const auto& s = r.find("io")->self;
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::HtoD)].bytes == 1000);
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::HtoD)].total_ns == 10);
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::DtoH)].bytes == 300);
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::DtoD)].bytes == 50);
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::Other)].bytes == 7);
  CHECK(s.memset_bytes == 4096);
  CHECK(s.memset_ns == 10);
  CHECK(s.sync_count == 1);
  CHECK(s.sync_ns == 800);
  CHECK(s.alloc_count == 1);
  CHECK(s.alloc_bytes == 1u << 20);
  CHECK(s.peak_bytes == 1u << 20);
}

TEST_CASE("records with a zero timestamp are counted, not used", "[cupti]") {
  Fixture f;
  auto a = f.begin("z");
  f.end(a);
  f.buffer.external(80, a.instance)
      .kernel(80, 0, 100, "_Z1kv")
      .kernel(80, 100, 0, "_Z1kv")
      .kernel(80, 5, 9, "_Z1kv");
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.zero_timestamp_records == 2);
  CHECK(r.find("z")->self.kernel_calls == 1);
}

TEST_CASE("dropped record counts from CUPTI add up in the report", "[cupti]") {
  Fixture f;
  f.consume(3);
  f.consume(0);
  f.consume(4);
  CHECK(f.report().diagnostics.dropped_records == 7);
}

TEST_CASE("overhead records are summed", "[cupti]") {
  Fixture f;
  f.buffer.overhead(100, 400).overhead(1000, 1100);
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.overhead_records == 2);
  CHECK(r.diagnostics.overhead_ns == 400);
}

// --- the GPU-side review's points, shown on synthetic records ---------------------------------

TEST_CASE("peer-to-peer copies (MEMCPY2) are recorded as PtoP", "[cupti]") {
  Fixture f;
  auto a = f.begin("p2p");
  f.end(a);
  f.buffer.external(70, a.instance).api(70, 5).peer_copy(70, 1 << 20, 10, 110);
  const auto counts = f.consume();
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  const auto& c = r.find("p2p")->self.memcpy[static_cast<std::size_t>(CopyKind::PtoP)];
  CHECK(c.count == 1);
  CHECK(c.bytes == (1u << 20));
  CHECK(c.total_ns == 100);
}

TEST_CASE("work still running at shutdown is counted apart from zero-timestamp records", "[cupti]") {
  Fixture f;
  auto a = f.begin("running");
  f.end(a);
  f.buffer.external(90, a.instance).api(90, 5).kernel(90, 0, 0, "_Z1kv");
  f.consume();
  f.agg.set_final_flush(true);  // what the forced flush at shutdown hands back
  f.buffer.kernel(90, 10, 0, "_Z1kv");
  f.consume();
  const Report r = f.report();
  CHECK(r.diagnostics.zero_timestamp_records == 1);
  CHECK(r.diagnostics.incomplete_at_exit == 1);
  CHECK(cuscope::format_table(r).find("1 record still running at exit") != std::string::npos);
}

TEST_CASE("copies' memory kinds are decoded: a pageable host side is counted with its bytes",
          "[cupti][pageable]") {
  Fixture f;
  auto io = f.begin("io");
  f.end(io);
  for (std::uint32_t c = 80; c < 86; ++c) f.buffer.external(c, io.instance).api(c, 5);
  f.buffer
      .memcpy(80, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1000, 10, 20, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
      .memcpy(81, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 300, 30, 40, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
              CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE)
      .memcpy(82, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 5000, 50, 60, CUPTI_ACTIVITY_MEMORY_KIND_PINNED,
              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
      .memcpy(83, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, 70, 70, 80, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
              CUPTI_ACTIVITY_MEMORY_KIND_MANAGED)
      .memcpy(84, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 9, 90, 95)  // kinds unknown: not counted as pageable
      .peer_copy(85, 1 << 20, 100, 200);
  const auto counts = f.consume();
  CHECK(counts.records == 18);
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  const auto& s = r.find("io")->self;
  CHECK(s.pageable_copies == 2);
  CHECK(s.pageable_bytes == 1300);
  CHECK(s.memcpy[static_cast<std::size_t>(CopyKind::HtoD)].count == 3);
  CHECK(r.find("io")->total.pageable_copies == 2);
  CHECK(r.find("io")->total.pageable_bytes == 1300);
}

TEST_CASE(
    "a copy is blocking when its record lacks the async flag, it is between host and device or array, "
    "and no graph replayed it",
    "[cupti][blocking]") {
  // CUPTI 13.0's copy kinds 0 (unknown) to 10 (peer to peer), and 11, past the last.
  for (std::uint8_t k = 0; k < 12; ++k) {
    for (int how = 0; how < 3; ++how) {  // synchronous, async, a graph's copy node without the flag
      const bool async = how == 1, in_graph = how == 2;
      Fixture f;
      auto io = f.begin("io");
      f.end(io);
      f.buffer.external(1, io.instance)
          .api(1, 5)
          .memcpy(1, static_cast<CUpti_ActivityMemcpyKind>(k), 64, 10, 20, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
                  CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0,
                  in_graph ? 7 : 0);
      f.consume();
      INFO("CUPTI copy kind " << int(k) << (async ? ", async" : in_graph ? ", a graph's" : ", synchronous"));
      const bool host_and_device =
          k == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || k == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ||
          k == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA || k == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
      const bool blocking = how == 0 && host_and_device;
      const Report r = f.report();
      const auto& s = r.find("io")->self;
      CHECK(s.blocking_copies == (blocking ? 1u : 0u));
      CHECK(s.blocking_bytes == (blocking ? 64u : 0u));
      CHECK(s.sync_count == 0);
    }
  }
}

TEST_CASE("only CUPTI's PAGEABLE memory kind, on either side, makes a copy pageable", "[cupti][pageable]") {
  for (std::uint8_t k = 0; k < 9; ++k) {  // 8: a kind past those CUPTI 13.0 defines
    for (bool source : {true, false}) {
      Fixture f;
      auto io = f.begin("io");
      f.end(io);
      const auto kind = static_cast<CUpti_ActivityMemoryKind>(k);
      const auto device = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
      f.buffer.external(1, io.instance)
          .api(1, 5)
          .memcpy(1, source ? CUPTI_ACTIVITY_MEMCPY_KIND_HTOD : CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 64, 10, 20,
                  source ? kind : device, source ? device : kind);
      f.consume();
      INFO("CUPTI memory kind " << int(k) << (source ? " as the source" : " as the destination"));
      const Report r = f.report();
      const auto& s = r.find("io")->self;
      CHECK(s.pageable_copies == (k == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? 1u : 0u));
      CHECK(s.pageable_bytes == (k == CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE ? 64u : 0u));
    }
  }
}

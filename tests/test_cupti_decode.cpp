// The CUPTI decoding path without a GPU: buffers of real CUPTI 13.0 record layouts, built in
// memory, through the same code that handles CUPTI's completed buffers.
#include <catch2/catch.hpp>
#include <memory>

#include "cupti_buffer.hpp"
#include "model_fixture.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "producers/cupti/errors.hpp"
#include "session_fixture.hpp"

using cuscope::CopyKind;
using cuscope::Report;
using cuscope::detail::consume_buffer;
using cuscope_test::CuptiBuffer;
using namespace cuscope::model;

namespace {

struct Fixture : cuscope_test::ModelFixture {
  CuptiBuffer buffer;

  cuscope::detail::DecodeCounts consume(std::uint64_t dropped = 0) {
    const auto counts = consume_buffer(buffer.data(), buffer.size(), dropped, agg);
    buffer.clear();
    return counts;
  }
};

}  // namespace

TEST_CASE("kernel records are attributed through external correlation records", "[cupti]") {
  Fixture f;
  auto step = f.begin("step");
  auto attn = f.begin("attention");
  f.end(attn);
  f.end(step);
  f.buffer.external(10, attn.instance).api(10, 100).external(11, step.instance).api(11, 150);
  f.buffer.kernel(10, 1000, 1400, "_Z9attentionPKfPf", 64, 256).kernel(11, 1500, 1600, "_Z4normPf");
  const auto counts = f.consume();
  CHECK(counts.records == 6);
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  const auto* a = r.find("step/attention");
  REQUIRE(a != nullptr);
  REQUIRE(a->kernels.size() == 1);
  CHECK(a->kernels[0].name == "attention(float const*, float*)");
  CHECK(a->kernels[0].grid == std::array<std::uint32_t, 3>{64, 1, 1});
  CHECK(a->kernels[0].block == std::array<std::uint32_t, 3>{256, 1, 1});
  CHECK(a->kernels[0].registers_per_thread == 40);
  CHECK(a->kernels[0].static_shared_bytes == 512);
  CHECK(a->kernels[0].dynamic_shared_bytes == 4096);
  CHECK(a->self.kernel_ns == 400);
  CHECK(r.find("step")->self.kernel_calls == 1);
  CHECK(r.find("step")->total.kernel_calls == 2);
  CHECK(r.find("step")->total.gpu_span_ns == 600);
}

TEST_CASE("a correlation record in a later buffer than its kernels still resolves", "[cupti]") {
  Fixture f;
  auto a = f.begin("late");
  f.end(a);
  f.buffer.kernel(20, 500, 700, "_Z1kv");
  f.consume();
  CHECK(f.agg.pending() == 1);
  f.buffer.external(20, a.instance).api(20, 400);
  f.consume();
  CHECK(f.agg.pending() == 0);
  const Report r = f.report();
  CHECK(r.find("late")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("waiting records age only at flushes, not per buffer", "[cupti]") {
  Fixture f;
  auto a = f.begin("patient");
  f.end(a);
  f.buffer.kernel(30, 500, 700, "_Z1kv");
  f.consume();
  for (int i = 0; i < 10; ++i) f.consume();  // ten empty buffers later
  f.agg.settle();                            // one flush
  f.buffer.external(30, a.instance);
  f.consume();
  CHECK(f.report().find("patient")->self.kernel_calls == 1);
}

TEST_CASE("every kernel of a graph launch goes to the scope that launched the graph", "[cupti]") {
  Fixture f;
  auto g = f.begin("graph_step");
  f.end(g);
  f.buffer.external(40, g.instance).api(40, 10);  // one cudaGraphLaunch
  for (std::uint64_t i = 0; i < 50; ++i) f.buffer.kernel(40, 1000 + i * 100, 1050 + i * 100, "_Z4nodev");
  f.consume();
  const Report r = f.report();
  CHECK(r.find("graph_step")->self.kernel_calls == 50);
  CHECK(r.find("graph_step")->self.gpu_busy_ns == 2500);
  CHECK(r.find("graph_step")->self.gpu_span_ns == 4950);
}

TEST_CASE("a driver-API launch (cuLaunchKernel) is attributed like a runtime one", "[cupti]") {
  Fixture f;
  auto t = f.begin("triton");
  f.end(t);
  f.buffer.external(50, t.instance).api(50, 10, /*driver=*/true).kernel(50, 100, 180, "triton_fused_add");
  f.consume();
  const Report r = f.report();
  REQUIRE(r.find("triton")->kernels.size() == 1);
  CHECK(r.find("triton")->kernels[0].name == "triton_fused_add");
}

TEST_CASE("launches outside every scope go to (unscoped), other tools' ids are ignored", "[cupti]") {
  Fixture f;
  auto a = f.begin("scoped");
  f.end(a);
  f.buffer.external(60, 12345, CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1)
      .api(60, 10)
      .kernel(60, 100, 200, "_Z1uv");
  const auto counts = f.consume();
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(r.find("scoped")->self.kernel_calls == 0);
}

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

TEST_CASE("a record kind cuscope does not decode is skipped and counted, the rest still read", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(90, a.instance).context_record().kernel(90, 10, 20, "_Z1kv");
  const auto counts = f.consume();
  CHECK(counts.records == 3);
  CHECK(counts.unknown == 1);
  const Report r = f.report();
  CHECK(r.diagnostics.unknown_records == 1);
  CHECK(r.find("k")->self.kernel_calls == 1);
}

TEST_CASE("a kind no CUPTI knows ends the buffer, counted, without crashing", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(91, a.instance).kernel(91, 10, 20, "_Z1kv").garbage().kernel(91, 30, 40, "_Z1kv");
  const auto counts = f.consume();
  CHECK(counts.records == 2);
  CHECK(counts.unknown == 1);
  CHECK(f.report().find("k")->self.kernel_calls == 1);
}

TEST_CASE("a record cut off at the end of the buffer is counted", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(92, a.instance).kernel(92, 10, 20, "_Z1kv").kernel(92, 30, 40, "_Z1kv");
  const std::size_t cut = f.buffer.size() - 100;
  const auto counts = consume_buffer(f.buffer.data(), cut, 0, f.agg);
  CHECK(counts.records == 2);
  CHECK(counts.unknown == 1);
  const Report r = f.report();
  CHECK(r.find("k")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unknown_records == 1);
}

TEST_CASE("an empty buffer is fine", "[cupti]") {
  Fixture f;
  const auto counts = f.consume();
  CHECK(counts.records == 0);
  CHECK(counts.unknown == 0);
}

TEST_CASE("CUPTI refusals say why in the user's terms and name the call and the error", "[cupti]") {
  using cuscope::detail::cupti_refusal;
  CHECK(cupti_refusal("cuptiActivityEnable(CONCURRENT_KERNEL)",
                      CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) ==
        "CUPTI is already in use by another tool (Nsight Systems, Nsight Compute or compute-sanitizer): "
        "cuptiActivityEnable(CONCURRENT_KERNEL) returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  CHECK(cupti_refusal("cuptiRangeProfilerEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            .rfind("no permission for GPU performance counters (ERR_NVGPUCTRPERM; run as root", 0) == 0);
  CHECK(cupti_refusal("cuptiRangeProfilerEnable", CUPTI_ERROR_HARDWARE_BUSY) ==
        "the GPU's performance counters are busy (another profiler or DCGM holds them): "
        "cuptiRangeProfilerEnable "
        "returned CUPTI_ERROR_HARDWARE_BUSY");
  CHECK(cupti_refusal("cuptiActivityEnable(MEMCPY)", CUPTI_ERROR_UNKNOWN) ==
        "CUPTI refused: cuptiActivityEnable(MEMCPY) returned CUPTI_ERROR_UNKNOWN");
}

TEST_CASE("activity tracing starts, or says why not and leaves nothing hooked", "[cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;  // started by hand below
  cuscope_test::Session fixture(o);
  auto& s = cuscope::detail::session();
  const std::string status = cuscope::detail::start_activity_tracing(s);
  INFO("status: " << status);
  if (status == "on") {  // a machine with a driver
    CHECK(s.tracing.load());
    CHECK(cuscope::detail::g_push_correlation.load() != nullptr);
    cuscope::detail::stop_activity_tracing(false);
  } else {  // no driver: CUPTI refuses at its first call
    CHECK(status.rfind("CUPTI refused: cuptiActivity", 0) == 0);
    CHECK(status.find(" returned CUPTI_ERROR_") != std::string::npos);
  }
  CHECK_FALSE(s.tracing.load());
  CHECK(cuscope::detail::g_push_correlation.load() == nullptr);
  CHECK(cuscope::detail::g_pop_correlation.load() == nullptr);
}

TEST_CASE("CUPTI's own iterator steps over every decoded kind by its 8-aligned size", "[cupti]") {
  // decode_buffer walks decoded kinds by size; this pins that CUPTI packs them the same way.
  CuptiBuffer b;
  b.kernel(1, 10, 20, "_Z1kv")
      .external(1, 5)
      .api(1, 1)
      .api(2, 1, true)
      .memcpy(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 8, 1, 2);
  b.memset(4, 8, 1, 2).memory(5, true, 0x10, 8, 1).sync(6, 1, 2).overhead(1, 2);
  const std::size_t sizes[] = {sizeof(CUpti_ActivityKernel10), sizeof(CUpti_ActivityExternalCorrelation),
                               sizeof(CUpti_ActivityAPI),      sizeof(CUpti_ActivityAPI),
                               sizeof(CUpti_ActivityMemcpy6),  sizeof(CUpti_ActivityMemset4),
                               sizeof(CUpti_ActivityMemory4),  sizeof(CUpti_ActivitySynchronization2),
                               sizeof(CUpti_ActivityOverhead3)};
  CUpti_Activity* record = nullptr;
  std::size_t expected = 0;
  for (std::size_t size : sizes) {
    REQUIRE(cuptiActivityGetNextRecord(b.data(), b.size(), &record) == CUPTI_SUCCESS);
    CHECK(static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(record) - b.data()) == expected);
    expected += (size + 7) & ~std::size_t{7};
  }
  CHECK(cuptiActivityGetNextRecord(b.data(), b.size(), &record) == CUPTI_ERROR_MAX_LIMIT_REACHED);
  CHECK(expected == b.size());
}

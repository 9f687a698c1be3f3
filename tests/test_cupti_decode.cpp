// The CUPTI decoding path without a GPU: buffers of real CUPTI 13.0 record layouts, built in
// memory, through the same code that handles CUPTI's completed buffers.
#include <catch2/catch.hpp>
#include <memory>

#include "cupti_buffer.hpp"
#include "model_fixture.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/gpu_events.hpp"
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
    cuscope::detail::stop_activity_tracing();
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
  b.peer_copy(7, 8, 1, 2).internal_launch(8, 1);
  const std::size_t sizes[] = {sizeof(CUpti_ActivityKernel10),  sizeof(CUpti_ActivityExternalCorrelation),
                               sizeof(CUpti_ActivityAPI),       sizeof(CUpti_ActivityAPI),
                               sizeof(CUpti_ActivityMemcpy6),   sizeof(CUpti_ActivityMemset4),
                               sizeof(CUpti_ActivityMemory4),   sizeof(CUpti_ActivitySynchronization2),
                               sizeof(CUpti_ActivityOverhead3), sizeof(CUpti_ActivityMemcpyPtoP4),
                               sizeof(CUpti_ActivityAPI)};
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

// --- the GPU-side review's points, shown on synthetic records ---------------------------------

TEST_CASE("1 M kernels interleaved with sync records of untraced calls: none left unresolved", "[cupti]") {
  // Per-thread buffers deliver a kernel before its correlation; SYNCHRONIZATION records of calls
  // whose API is not traced never resolve. They must delay nothing and block nothing.
  Fixture f;
  auto a = f.begin("step");
  f.end(a);
  constexpr std::uint32_t kKernels = 1'000'000;
  constexpr std::uint32_t kPerBuffer = 2'000;  // fits the 1 MiB test buffer
  std::uint32_t correlation = 1;
  std::uint64_t t = 1000;
  for (std::uint32_t done = 0; done < kKernels; done += kPerBuffer) {
    for (std::uint32_t i = 0; i < kPerBuffer; ++i) {
      const std::uint32_t sync_corr = correlation++;  // its cudaStreamWaitEvent was not traced
      const std::uint32_t kernel_corr = correlation++;
      f.buffer.sync(sync_corr, t, t + 5, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT);
      f.buffer.kernel(kernel_corr, t + 10, t + 20, "_Z1kv");
      f.buffer.external(kernel_corr, a.instance).api(kernel_corr, t);
      t += 100;
    }
    f.consume();
    f.agg.settle();  // the collector's periodic poll
  }
  const Report r = f.report();
  CHECK(r.find("step")->self.kernel_calls == kKernels);
  CHECK(r.find("step")->self.sync_count == 0);
  CHECK(f.agg.pending() <= cuscope::model::Aggregator::kMaxPending);
  CHECK(r.diagnostics.unresolved_records + f.agg.pending() == kKernels);  // the syncs, counted
}

TEST_CASE("waiting records age on the periodic poll, about a second of patience", "[cupti]") {
  Fixture f;
  auto a = f.begin("late");
  f.end(a);
  f.buffer.kernel(50, 500, 700, "_Z1kv");
  f.consume();
  for (unsigned i = 1; i < cuscope::model::Aggregator::kMaxAge; ++i) f.agg.settle();
  CHECK(f.agg.pending() == 1);
  f.agg.settle();
  CHECK(f.agg.pending() == 0);
  CHECK(f.report().diagnostics.unresolved_records == 1);
}

TEST_CASE("a full waiting queue makes room by dropping its oldest record, counted", "[cupti]") {
  Fixture f;
  auto a = f.begin("room");
  f.end(a);
  const std::uint32_t n = cuscope::model::Aggregator::kMaxPending;
  CuptiBuffer syncs(std::size_t{n} * 64);
  for (std::uint32_t c = 1; c <= n; ++c) syncs.sync(c, 10, 20);  // never resolve
  consume_buffer(syncs.data(), syncs.size(), 0, f.agg);
  CHECK(f.agg.pending() == n);
  f.buffer.kernel(n + 1, 30, 40, "_Z1kv").external(n + 1, a.instance);
  f.consume();
  const Report r = f.report();
  CHECK(r.find("room")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unresolved_records == 1);  // the oldest sync
  CHECK(f.agg.pending() == n - 1);
}

TEST_CASE("a record with correlation id 0 is unresolved, not (unscoped)", "[cupti]") {
  Fixture f;
  f.buffer.api(0, 5).kernel(0, 10, 20, "_Z1kv").memcpy(0, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 64, 30, 40);
  f.consume();
  const Report r = f.report();
  CHECK(r.find("(unscoped)") == nullptr);
  CHECK(r.diagnostics.unresolved_records == 2);
  CHECK(f.agg.pending() == 0);
}

TEST_CASE("cuscope's own CUDA calls are kept out of the report", "[cupti]") {
  Fixture f;
  f.buffer.external(60, cuscope::model::kCuscopeInternal).api(60, 5).sync(60, 10, 20);
  f.buffer.sync(61, 30, 40).external(61, cuscope::model::kCuscopeInternal).api(61, 25);
  f.consume();
  f.agg.settle();
  const Report r = f.report();
  CHECK(r.find("(unscoped)") == nullptr);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.outside_window_records == 0);
  CHECK(f.agg.pending() == 0);
}

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

TEST_CASE("launches CUDA makes internally (INTERNAL_LAUNCH_API) are attributed", "[cupti]") {
  Fixture f;
  auto a = f.begin("library_call");
  f.end(a);
  f.buffer.external(80, a.instance).internal_launch(80, 5).kernel(80, 10, 30, "_Z8internalv");
  f.buffer.internal_launch(81, 40).kernel(81, 50, 60, "_Z8internalv");  // outside every scope
  const auto counts = f.consume();
  CHECK(counts.unknown == 0);
  const Report r = f.report();
  CHECK(r.find("library_call")->self.kernel_calls == 1);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unresolved_records == 0);
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

TEST_CASE("the loaded libcupti's version decides how buffers are walked", "[cupti]") {
  using cuscope::detail::check_layouts;
  using cuscope::detail::Walk;
  const auto same = check_layouts(130001, 130001);
  CHECK(same.walk == Walk::BySize);
  CHECK(same.refusal.empty());
  CHECK(same.note.empty());
  const auto newer = check_layouts(130200, 130001);
  CHECK(newer.walk == Walk::ByCupti);
  CHECK(newer.refusal.empty());
  CHECK(newer.note ==
        "libcupti API version 130200 is newer than the 130001 cuscope was built with: activity records "
        "are stepped with CUPTI's iterator");
  const auto older = check_layouts(120800, 130001);
  CHECK(older.refusal ==
        "libcupti API version 120800 is older than the 130001 cuscope was built with: its record layouts "
        "cannot be read safely (load the libcupti of the CUDA toolkit cuscope was built with)");
  std::uint32_t loaded = 0;
  REQUIRE(cuptiGetVersion(&loaded) == CUPTI_SUCCESS);
  CHECK(loaded == CUPTI_API_VERSION);  // this machine's libcupti is the one built against
}

TEST_CASE("walking with CUPTI's iterator reads the same records as walking by size", "[cupti]") {
  auto fill = [](Fixture& f, std::uint64_t instance) {
    f.buffer.external(1, instance).api(1, 5).kernel(1, 10, 20, "_Z1kv").context_record();
    f.buffer.memcpy(1, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 32, 30, 40).peer_copy(1, 64, 50, 60);
    f.buffer.memset(1, 16, 70, 80).sync(1, 90, 95).internal_launch(2, 96).overhead(97, 99);
  };
  Fixture by_size;
  Fixture by_cupti;
  auto a = by_size.begin("w");
  by_size.end(a);
  auto b = by_cupti.begin("w");
  by_cupti.end(b);
  fill(by_size, a.instance);
  fill(by_cupti, b.instance);
  const auto size_counts = cuscope::detail::decode_buffer(by_size.buffer.data(), by_size.buffer.size(),
                                                          by_size.agg, cuscope::detail::Walk::BySize);
  const auto cupti_counts = cuscope::detail::decode_buffer(by_cupti.buffer.data(), by_cupti.buffer.size(),
                                                           by_cupti.agg, cuscope::detail::Walk::ByCupti);
  CHECK(size_counts.records == 10);
  CHECK(cupti_counts.records == 10);
  CHECK(size_counts.unknown == 1);
  CHECK(cupti_counts.unknown == 1);
  CHECK(cuscope::format_json(by_size.report()) == cuscope::format_json(by_cupti.report()));
}

TEST_CASE("an older libcupti than cuscope was built with: tracing refused in one line", "[cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;
  cuscope_test::Session fixture(o);
  cuscope::detail::set_cupti_version_for_testing(120800);
  const std::string status = cuscope::detail::start_activity_tracing(cuscope::detail::session());
  cuscope::detail::set_cupti_version_for_testing(0);
  CHECK(status.rfind("libcupti API version 120800 is older than the ", 0) == 0);
  CHECK(status.find('\n') == std::string::npos);
  CHECK_FALSE(cuscope::detail::session().tracing.load());
  CHECK(cuscope::detail::g_push_correlation.load() == nullptr);
}

TEST_CASE("a scope without a stream, or on the legacy stream, records no CUDA event", "[cupti]") {
  using cuscope::detail::events_allowed_on;
  CHECK_FALSE(events_allowed_on(nullptr));
  CHECK_FALSE(events_allowed_on(cudaStreamLegacy));
  CHECK(events_allowed_on(cudaStreamPerThread));
  cuscope::detail::GpuEvents events;
  CHECK_FALSE(events.begin(1, nullptr));
  CHECK_FALSE(events.begin(1, cudaStreamLegacy));
  CHECK(events.failures.load() == 0);  // by design, not a failure
  CHECK(events.in_capture.load() == 0);
  CHECK(events.resolve());
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

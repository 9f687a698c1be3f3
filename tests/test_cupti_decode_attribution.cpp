// The CUPTI decoding path without a GPU, attribution: which scope a decoded record lands in
// (external correlation records, graph launches, driver-API and internal launches, (unscoped),
// cuscope's own calls, correlation id 0), and the records that wait for their correlation: in a
// later buffer, aging at flushes and on the periodic poll, a full queue dropping its oldest.
// Buffers of real CUPTI 13.0 record layouts, built in memory, go through the same code that
// handles CUPTI's completed buffers.
//
// Never: a session, a GPU or a CUPTI subscription (the model is fed by consume_buffer alone).
#include <catch2/catch.hpp>
#include <cstdint>

#include "cupti_buffer.hpp"
#include "cupti_decode_kit.hpp"
#include "model/aggregator.hpp"
#include "model/range_tree.hpp"
#include "producers/cupti/decode.hpp"

using cuscope::Report;
using cuscope::detail::consume_buffer;
using cuscope_test::CuptiBuffer;
using cuscope_test::cupti_decode_kit::Fixture;

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

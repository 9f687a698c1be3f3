// The CUDA-event timer (producers/gpu_events) against fake CUDA (fake_cuda.hpp): which CUDA calls a
// scope makes, per device pools, the pool's bound, and the times it resolves; and the streams that
// allow no CUDA event (none, the legacy stream).
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>

#include "event_rounds.hpp"
#include "fake_cuda.hpp"
#include "model/range_tree.hpp"
#include "producers/gpu_events.hpp"
#include "session_fixture.hpp"

using cuscope::detail::GpuEvents;
using cuscope_test::FakeCuda;

namespace {

// A scope of `ns` on `device`'s stream at depth 1, timed by `events`.
void timed_scope(GpuEvents& events, FakeCuda& cuda, cuscope::model::Node& node, int device,
                 std::uint64_t ns) {
  REQUIRE(events.begin(1, FakeCuda::stream(device)));
  cuda.advance_ns(ns);
  events.end(1, &node);
}

}  // namespace

TEST_CASE(
    "scopes alternating between two devices reuse each device's pairs: none destroyed, no device switch",
    "[gpu_events]") {
  FakeCuda cuda;
  GpuEvents events;
  cuscope::model::Node node(1, 1, nullptr, 1);
  timed_scope(events, cuda, node, 0, 250'000);
  timed_scope(events, cuda, node, 1, 250'000);
  REQUIRE(events.resolve());
  const FakeCuda::Counts warm = cuda.calls();
  // Warm-up: one batch of pairs per device, two events a pair; the batch for device 1 (not the
  // thread's current device) is made with device 1 current, then device 0 is put back.
  CHECK(warm.create == 2 * 2 * GpuEvents::kBatch);
  CHECK(warm.set_device == 2);

  constexpr int kScopes = 1000;
  for (int i = 0; i < kScopes; ++i) {
    timed_scope(events, cuda, node, i % 2, 250'000);
    if (i % 7 == 6) REQUIRE(events.resolve());  // an odd period: pairs come back out of step
  }
  REQUIRE(events.resolve());
  const FakeCuda::Counts c = cuda.calls();
  CHECK(c.create == warm.create);
  CHECK(c.destroy == 0);
  CHECK(c.set_device == warm.set_device);
  CHECK(c.get_device == warm.get_device);
  // What a scope costs in CUDA calls: its stream's device, a capture check and a record at each end.
  CHECK(c.stream_get_device - warm.stream_get_device == kScopes);
  CHECK(c.stream_is_capturing - warm.stream_is_capturing == 2 * kScopes);
  CHECK(c.record - warm.record == 2 * kScopes);
  CHECK(node.gpu.count.get() == kScopes + 2);
  CHECK(node.gpu.total_ns.get() == (kScopes + 2) * 250'000ull);
  CHECK(events.failures.load() == 0);
}

TEST_CASE("a lagging resolver: the pool stops at its bound and counts each scope it refuses",
          "[gpu_events]") {
  FakeCuda cuda;
  cuda.complete_on_record(false);  // the GPU never gets there
  GpuEvents events;
  cuscope::model::Node node(1, 1, nullptr, 1);
  constexpr std::uint64_t kRefused = 100;
  for (std::uint64_t i = 0; i < GpuEvents::kMaxPairs + kRefused; ++i) {
    if (events.begin(1, FakeCuda::stream(i % 2))) events.end(1, &node);
    CHECK_FALSE(events.resolve());
  }
  CHECK(cuda.calls().create == 2 * GpuEvents::kMaxPairs);
  CHECK(events.refused.load() == kRefused);
  CHECK(events.failures.load() == kRefused);  // shown as gpu_event_failures: timing lost, not hidden
  CHECK(node.gpu.count.get() == 0);

  cuda.complete_all();  // the GPU catches up: every pair is read and comes back to its pool
  CHECK(events.resolve());
  CHECK(node.gpu.count.get() == GpuEvents::kMaxPairs);
  for (int i = 0; i < 100; ++i) {
    if (events.begin(1, FakeCuda::stream(i % 2))) events.end(1, &node);
  }
  cuda.complete_all();
  CHECK(events.resolve());
  CHECK(node.gpu.count.get() == GpuEvents::kMaxPairs + 100);
  CHECK(cuda.calls().create == 2 * GpuEvents::kMaxPairs);
  CHECK(cuda.calls().destroy == 0);
  CHECK(events.refused.load() == kRefused);
}

TEST_CASE("at the bound, a dry device takes an idle pair of another device, remade on its own",
          "[gpu_events]") {
  FakeCuda cuda;
  cuda.complete_on_record(false);
  GpuEvents events;
  cuscope::model::Node node(1, 1, nullptr, 1);
  for (std::size_t i = 0; i < GpuEvents::kMaxPairs; ++i) {
    REQUIRE(events.begin(1, FakeCuda::stream(0)));
    events.end(1, &node);
  }
  cuda.complete_all();
  REQUIRE(events.resolve());
  const FakeCuda::Counts before = cuda.calls();
  timed_scope(events, cuda, node, 1, 1'000'000);
  cuda.complete_all();
  REQUIRE(events.resolve());
  const FakeCuda::Counts c = cuda.calls();
  CHECK(c.destroy - before.destroy == 2);
  CHECK(c.create - before.create == 2);
  CHECK(c.set_device - before.set_device == 2);  // made with device 1 current, then device 0 back
  CHECK(events.refused.load() == 0);
  CHECK(events.failures.load() == 0);
  CHECK(node.gpu.count.get() == GpuEvents::kMaxPairs + 1);
  CHECK(node.gpu.max_ns.get() == 1'000'000);
}

TEST_CASE("no event time, counted, on a capturing stream or a device past the pools", "[gpu_events]") {
  FakeCuda cuda(GpuEvents::kMaxDevices + 1);
  GpuEvents events;
  cuda.capture(FakeCuda::stream(0));
  CHECK_FALSE(events.begin(1, FakeCuda::stream(0)));
  CHECK(events.in_capture.load() == 1);
  CHECK_FALSE(events.begin(1, FakeCuda::stream(GpuEvents::kMaxDevices)));
  CHECK(events.failures.load() == 1);
  CHECK_FALSE(events.begin(1, nullptr));
  CHECK(cuda.calls().create == 0);
  CHECK(cuda.calls().record == 0);
}

TEST_CASE("event times are the fake device clock's, exactly, nested and across devices", "[gpu_events]") {
  FakeCuda cuda;
  GpuEvents events;
  cuscope::model::Node outer(1, 1, nullptr, 1);
  cuscope::model::Node inner(2, 2, &outer, 2);
  cuscope_test::nested_rounds(cuda, events, outer, inner);
  REQUIRE(events.resolve());
  cuscope_test::check_nested_rounds(outer, inner);
}

TEST_CASE("a session on fake CUDA times stream scopes with events, resolved by its collector",
          "[gpu_events][session]") {
  FakeCuda cuda;
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;
  cuscope_test::Session session(o);
  for (int i = 0; i < 100; ++i) {
    {
      CUSCOPE_SCOPE("on_device_0", FakeCuda::stream(0));
      cuda.advance_ns(500'000);
    }
    {
      CUSCOPE_SCOPE("on_device_1", FakeCuda::stream(1));
      cuda.advance_ns(500'000);
    }
    if (i % 5 == 4) cuscope::flush();  // resolves here too: at most 5 pairs in flight per device
  }
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("on_device_0") != nullptr);
  REQUIRE(r.find("on_device_1") != nullptr);
  CHECK(r.find("on_device_0")->gpu.count == 100);
  CHECK(r.find("on_device_0")->gpu.total_ns == 100 * 500'000);
  CHECK(r.find("on_device_1")->gpu.total_ns == 100 * 500'000);
  CHECK(r.diagnostics.gpu_event_failures == 0);
  CHECK(cuda.calls().create == 2 * 2 * GpuEvents::kBatch);
  CHECK(cuda.calls().destroy == 0);
  CHECK(cuda.calls().set_device == 2);  // the batch for device 1, once
}

TEST_CASE("pairs given up unfinished are counted as failures and forgotten", "[gpu_events]") {
  FakeCuda cuda;
  cuda.complete_on_record(false);  // the GPU never gets there
  GpuEvents events;
  cuscope::model::Node node(1, 1, nullptr, 1);
  timed_scope(events, cuda, node, 0, 250'000);
  timed_scope(events, cuda, node, 1, 250'000);
  CHECK_FALSE(events.resolve());
  timed_scope(events, cuda, node, 0, 250'000);  // still queued, not yet taken by a resolve()
  events.give_up();
  CHECK(events.failures.load() == 3);
  CHECK(events.resolve());  // nothing left waiting
  CHECK(node.gpu.count.get() == 0);
}

TEST_CASE("a scope whose GPU work has not finished when the session ends counts as an event failure",
          "[gpu_events][session]") {
  // shutdown() waits a bounded time for the events; what is still unfinished then is lost, and
  // must be counted (gpu_event_failures), never dropped silently.
  FakeCuda cuda;
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;
  cuscope_test::Session session(o);
  {
    CUSCOPE_SCOPE("finished", FakeCuda::stream(0));
    cuda.advance_ns(500'000);
  }
  cuscope::flush();
  cuda.complete_on_record(false);
  {
    CUSCOPE_SCOPE("unfinished", FakeCuda::stream(0));
    cuda.advance_ns(500'000);
  }
  cuscope::shutdown();
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("finished") != nullptr);
  REQUIRE(r.find("unfinished") != nullptr);
  CHECK(r.find("finished")->gpu.count == 1);
  CHECK(r.find("unfinished")->gpu.count == 0);
  CHECK(r.diagnostics.gpu_event_failures == 1);
  CHECK(std::count(r.notes.begin(), r.notes.end(),
                   "CUDA event failures (1): 1 still pending on the GPU when the session ended") == 1);
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

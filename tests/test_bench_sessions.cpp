// The GPU bench's sequence of sessions without a GPU: one session per launch configuration of
// bench/gpu_bench.cu (events off, always, sampled or automatic; timed by CUDA or by CUPTI's
// records; no tracing, or tracing with external correlation or launch notes), one after another in
// one process, each with two launching threads, the collector at work, a thread playing CUPTI's
// deliveries, and flush() and snapshot() from the main thread. On fake CUDA (tests/fake_cuda.hpp)
// and fake CUPTI hooks. Each session must end (no thread left waiting on another), and count every
// scope and every noted launch; under ThreadSanitizer (the [threads] stage) no two of cuscope's
// locks may be taken in both orders. The 2026-11-26 H200 bench hung with every thread asleep on a
// lock; this is the part of that run that needs no GPU.
#include <atomic>
#include <chrono>
#include <catch2/catch.hpp>
#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake_cuda.hpp"
#include "model/events.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/gpu_events.hpp"
#include "producers/launch_notes.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

using cuscope_test::FakeCuda;

struct BenchConfig {
  const char* key;
  bool enabled;
  cuscope::EventTiming events;
  bool tracing;
  cuscope::Attribution attribution = cuscope::Attribution::external;
  std::uint32_t sample_every = 0;
  bool cupti_clock = false;
};

// bench/gpu_bench.cu's kLaunchConfigs, less the minimal CUPTI client (no cuscope session).
const BenchConfig kConfigs[] = {
    {"bare", false, cuscope::EventTiming::off, false},
    {"scopes_host", true, cuscope::EventTiming::off, false},
    {"scopes_events", true, cuscope::EventTiming::always, false},
    {"full_tracing", true, cuscope::EventTiming::always, true},
    {"tracing_no_events", true, cuscope::EventTiming::off, true},
    {"defaults", true, cuscope::EventTiming::automatic, true},
    {"launch_notes", true, cuscope::EventTiming::automatic, true, cuscope::Attribution::launch},
    {"sampled", true, cuscope::EventTiming::sampled, true, cuscope::Attribution::external, 100},
    {"events_cupti", true, cuscope::EventTiming::always, true, cuscope::Attribution::external, 0, true},
};

void no_push(std::uint64_t) noexcept {}
void no_pop() noexcept {}

constexpr int kThreads = 2;
constexpr int kLaunches = 1500;  // per thread

}  // namespace

TEST_CASE("the GPU bench's sessions one after another, on fake CUDA and CUPTI, each ends and counts all",
          "[session][threads]") {
  for (int round = 0; round < 2; ++round) {  // as the bench's rounds: every configuration again
    for (const BenchConfig& c : kConfigs) {
      INFO("round " << round << ", configuration " << c.key);
      FakeCuda cuda;  // a CUDA of its own per session: its events are few (FakeCuda::kMaxEvents)
      cuda.cupti_event_records(true);
      cuscope::Options o = cuscope_test::quiet_options();
      o.enabled = c.enabled;
      o.events = c.events;
      o.events_sample_every = c.sample_every;
      o.attribution = c.attribution;
      o.activities = false;  // CUPTI's part is played below
      o.sync_records = o.memory_records = false;
      o.event_timestamps = c.cupti_clock ? cuscope::EventTimestamps::cupti : cuscope::EventTimestamps::cuda;
      cuscope::detail::event_timestamps().clear();
      cuscope_test::Session session(o);
      const bool launch_notes = c.tracing && c.attribution == cuscope::Attribution::launch;
      cuscope::detail::set_event_timestamps_from_cupti(c.cupti_clock);  // as CUPTI's start makes it
      if (c.tracing) cuscope::detail::trace_with_fake_cupti_for_testing(no_push, no_pop, launch_notes);
      auto& sink = cuscope::detail::session();

      // CUPTI's thread: deliveries of CUDA_EVENT records, and buffers of kernel records for the
      // launches noted so far (drained first, as take_buffer does), every few hundred microseconds.
      std::atomic<std::uint64_t> noted{0};
      std::atomic<bool> launching_done{false};
      std::uint64_t kernels_fed = 0;
      const auto feed = [&] {
        cuda.deliver_cupti_records();
        if (!launch_notes) return;
        const std::uint64_t upto = noted.load(std::memory_order_acquire);
        std::lock_guard lock(sink.aggregator_mutex);
        cuscope::detail::drain_launches(sink);
        for (; kernels_fed < upto; ++kernels_fed) {
          cuscope::model::KernelActivity k;
          k.correlation = kernels_fed + 1;
          k.start_ns = 1'000 + 100 * kernels_fed;
          k.end_ns = k.start_ns + 10;
          k.name = "k";
          sink.aggregator.on(k);
        }
      };
      std::thread cupti([&] {
        while (!launching_done.load(std::memory_order_acquire)) {
          feed();
          std::this_thread::sleep_for(std::chrono::microseconds(300));
        }
      });
      // The launching threads: a scope per launch on a stream of their own; the launch noted inside
      // it with the next correlation id, as the driver's launch callback does.
      std::atomic<std::uint64_t> next_correlation{1};
      const auto launch_loop = [&](int t) {
        for (int i = 0; i < kLaunches; ++i) {
          CUSCOPE_SCOPE("launch", FakeCuda::stream(t % 2, t));
          if (launch_notes) {
            const std::uint64_t correlation = next_correlation.fetch_add(1, std::memory_order_relaxed);
            cuscope::detail::note_launch(sink, correlation);
            noted.fetch_add(1, std::memory_order_release);
          }
          cuda.advance_ns(1'000);
          // Long enough for the collector's ticks (10 ms) to meet the launches, a few times each.
          if (i % 100 == 99) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
      };
      std::vector<std::thread> launchers;
      for (int t = 1; t < kThreads; ++t) launchers.emplace_back(launch_loop, t);
      launch_loop(0);
      cuscope::flush();  // as the bench's loop ends: while the other thread may still launch
      (void)cuscope::snapshot();
      for (auto& t : launchers) t.join();
      launching_done.store(true, std::memory_order_release);
      cupti.join();
      feed();  // what the last launches noted
      cuscope::flush();
      {
        std::lock_guard lock(sink.aggregator_mutex);
        sink.aggregator.settle(1, true);
      }
      const cuscope::Report r = cuscope::snapshot();
      const cuscope::RangeStats* range = r.find("launch");
      if (!c.enabled) {
        CHECK(range == nullptr);
        continue;
      }
      REQUIRE(range != nullptr);
      INFO("gpu_timing: " << r.gpu_timing << "; event failures " << r.diagnostics.gpu_event_failures);
      CHECK(r.diagnostics.gpu_event_failures == 0);
      CHECK(range->calls == std::uint64_t{kThreads} * kLaunches);
      CHECK(range->self.kernel_calls == (launch_notes ? std::uint64_t{kThreads} * kLaunches : 0));
      // Events on every call where always asks for them; none where CUPTI's spans stand for them.
      if (c.events == cuscope::EventTiming::always) CHECK(range->gpu.count == range->calls);
      if (c.events == cuscope::EventTiming::off || (c.events == cuscope::EventTiming::automatic && c.tracing))
        CHECK(range->gpu.count == 0);
      CHECK(cuscope::detail::take_lost_launch_notes(cuscope::detail::session()) == 0);
      cuscope::detail::set_event_timestamps_from_cupti(false);
    }
  }
}

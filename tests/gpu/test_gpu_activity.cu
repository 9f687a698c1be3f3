// GPU tests of the CUPTI subscriber: exact kernel counts per range, attribution across streams,
// threads, graphs and driver-API launches, roll-ups, the step window, and no drops. Copies,
// allocations, mappings and waits are test_gpu_memory.cu's.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "gpu_kit.cuh"
#include "producers/cupti/adapter.hpp"
#include "session_fixture.hpp"

TEST_CASE("CUPTI tracing is on with a GPU", "[gpu][cupti]") {
  cuscope_test::Session session;
  CHECK(cuscope::snapshot().activity_status == "on");
}

TEST_CASE("kernel counts per range are exact", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  for (int step = 0; step < 4; ++step) {
    CUSCOPE_SCOPE("counted");
    {
      CUSCOPE_SCOPE("three");
      for (int i = 0; i < 3; ++i) empty_kernel<<<1, 32>>>();
    }
    {
      CUSCOPE_SCOPE("five");
      for (int i = 0; i < 5; ++i) empty_kernel<<<2, 64>>>();
    }
  }
  const cuscope::Report r = settled();
  CHECK(range(r, "counted/three").self.kernel_calls == 12);
  CHECK(range(r, "counted/five").self.kernel_calls == 20);
  CHECK(range(r, "counted").self.kernel_calls == 0);
  CHECK(range(r, "counted").total.kernel_calls == 32);
  REQUIRE(range(r, "counted/five").kernels.size() == 1);
  CHECK(range(r, "counted/five").kernels[0].grid[0] == 2);
  CHECK(range(r, "counted/five").kernels[0].block[0] == 64);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("kernels on two streams from two threads go to their own scopes", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  auto worker = [](const char* name, int kernels) {
    cudaStream_t s = nullptr;
    REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess);
    {
      cuscope::Scope scope{std::string_view(name), s};
      for (int i = 0; i < kernels; ++i) spin_kernel<<<1, 1, 0, s>>>(1000);
    }
    REQUIRE(cudaStreamSynchronize(s) == cudaSuccess);
    cudaStreamDestroy(s);
  };
  std::thread a(worker, "thread_a", 7);
  std::thread b(worker, "thread_b", 11);
  a.join();
  b.join();
  const cuscope::Report r = settled();
  CHECK(range(r, "thread_a").self.kernel_calls == 7);
  CHECK(range(r, "thread_b").self.kernel_calls == 11);
}

TEST_CASE("a CUDA graph's kernels belong to the scope of its launch", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  cudaGraph_t graph = nullptr;
  CHECK_CUDA(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  for (int i = 0; i < 4; ++i) empty_kernel<<<1, 1, 0, stream>>>();
  CHECK_CUDA(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  CHECK_CUDA(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("replay", stream);
    CHECK_CUDA(cudaGraphLaunch(exec, stream));
  }
  CHECK_CUDA(cudaStreamSynchronize(stream));
  const cuscope::Report r = settled();
  CHECK(range(r, "replay").self.kernel_calls == 12);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(stream);
}

TEST_CASE("a kernel launched with cuLaunchKernel is attributed", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  cudaFunction_t fn = nullptr;
  CHECK_CUDA(cudaGetFuncBySymbol(&fn, reinterpret_cast<const void*>(&empty_kernel)));
  // The driver entry point through the runtime, so the suite loads without libcuda (and skips).
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK_CUDA(cudaGetDriverEntryPointByVersion("cuLaunchKernel", &entry, 4000, cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSuccess);
  const auto launch = reinterpret_cast<PFN_cuLaunchKernel_v4000>(entry);
  {
    CUSCOPE_SCOPE("driver_launch");
    REQUIRE(launch(reinterpret_cast<CUfunction>(fn), 3, 1, 1, 32, 1, 1, 0, nullptr, nullptr, nullptr) ==
            CUDA_SUCCESS);
  }
  const cuscope::Report r = settled();
  CHECK(range(r, "driver_launch").self.kernel_calls == 1);
  CHECK(range(r, "driver_launch").kernels[0].grid[0] == 3);
}

TEST_CASE("work outside every scope is (unscoped); nested scopes roll up", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  empty_kernel<<<1, 1>>>();
  {
    CUSCOPE_SCOPE("outer");
    empty_kernel<<<1, 1>>>();
    {
      CUSCOPE_SCOPE("inner");
      empty_kernel<<<1, 1>>>();
      empty_kernel<<<1, 1>>>();
    }
  }
  const cuscope::Report r = settled();
  CHECK(range(r, "(unscoped)").self.kernel_calls == 2);  // the warm-up launch and the one above
  CHECK(range(r, "outer").self.kernel_calls == 1);
  CHECK(range(r, "outer").total.kernel_calls == 3);
  CHECK(range(r, "outer/inner").total.kernel_calls == 2);
  CHECK(range(r, "outer").total.gpu_busy_ns >= range(r, "outer/inner").total.gpu_busy_ns);
}

TEST_CASE("warm-up steps' GPU work is left out and counted", "[gpu][cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 2;
  o.active_steps = 3;
  o.detach = false;  // paused after the window, as between windows (test_gpu_detach.cu: the detach)
  cuscope_test::Session session(o);
  for (int i = 0; i < 6; ++i) {
    {
      CUSCOPE_SCOPE("windowed_step");
      empty_kernel<<<1, 1>>>();
      empty_kernel<<<1, 1>>>();
    }
    cuscope::step();
  }
  const cuscope::Report r = settled();
  CHECK(range(r, "windowed_step").self.kernel_calls == 6);
  // The warm-up steps' 4; the last step's none: CUPTI is paused after the window, and the window's
  // last kernels, still running at the pause, arrive all the same.
  CHECK(r.diagnostics.outside_window_records == 4);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.activity_status.find(", paused outside the step window") != std::string::npos);
}

TEST_CASE("a repeated window traces its warm-up and active steps only, exactly, by either attribution",
          "[gpu][cupti]") {
  for (const cuscope::Attribution how : {cuscope::Attribution::launch, cuscope::Attribution::external}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.attribution = how;
    o.wait_steps = 1;
    o.warmup_steps = 1;
    o.active_steps = 1;
    o.repeat = 2;  // steps: wait, warm-up, active, wait, warm-up, active, then paused for good
    cuscope_test::Session session(o);
    for (int i = 0; i < 8; ++i) {
      {
        CUSCOPE_SCOPE("cycled_step");
        spin_kernel<<<1, 1>>>(100000);  // still running when the step ends and CUPTI pauses
        empty_kernel<<<1, 1>>>();
      }
      cuscope::step();
    }
    const cuscope::Report r = settled();
    INFO("attribution " << (how == cuscope::Attribution::launch ? "launch" : "external"));
    CHECK(r.recorded_steps == 2);
    CHECK(range(r, "cycled_step").calls == 2);
    CHECK(range(r, "cycled_step").self.kernel_calls == 4);
    CHECK(r.diagnostics.outside_window_records == 4);  // the two warm-up steps'; none of the paused steps'
    CHECK(r.diagnostics.unresolved_records == 0);
    CHECK(r.diagnostics.dropped_records == 0);
    CHECK(r.diagnostics.launch_notes_lost == 0);
    CHECK(r.find("(unscoped)") == nullptr);
    for (const std::string& note : r.notes) CHECK(note.find("step windows") == std::string::npos);  // none refused
  }
}

// Recording switched off (set_enabled(false)) pauses CUPTI's tracing as a wait step does: what is
// launched or synchronized while off, in a scope or outside every scope, leaves no record (no range,
// no unscoped kernel, nothing outside the window); switched on again, tracing resumes and the next
// scope's kernel is attributed. "(unscoped)" holds the synchronizes made while on (an H200,
// 2026-11-28, at b622bfb, failed this case's first form, which expected no such row). The GPU is
// idle at each switch (the pause's in-flight work is the repeated window's case above).
TEST_CASE("recording switched off leaves the GPU work launched meanwhile unrecorded, by either attribution",
          "[gpu][cupti]") {
  for (const cuscope::Attribution how : {cuscope::Attribution::launch, cuscope::Attribution::external}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.attribution = how;
    cuscope_test::Session session(o);
    {
      CUSCOPE_SCOPE("on_before");
      empty_kernel<<<1, 1>>>();
    }
    CHECK_CUDA(cudaDeviceSynchronize());
    cuscope::set_enabled(false);
    {
      CUSCOPE_SCOPE("while_off");
      empty_kernel<<<1, 1>>>();
      empty_kernel<<<1, 1>>>();
    }
    empty_kernel<<<1, 1>>>();  // outside every scope
    CHECK_CUDA(cudaDeviceSynchronize());
    CHECK(cuscope::snapshot().activity_status.find("paused while recording is off") != std::string::npos);
    cuscope::set_enabled(true);
    {
      CUSCOPE_SCOPE("on_after");
      empty_kernel<<<1, 1>>>();
    }
    const cuscope::Report r = settled();
    INFO("attribution " << (how == cuscope::Attribution::launch ? "launch" : "external"));
    CHECK(range(r, "on_before").self.kernel_calls == 1);
    CHECK(range(r, "on_after").self.kernel_calls == 1);
    CHECK(r.find("while_off") == nullptr);
    // Outside every scope: no kernel, and the synchronizes made while recording is on (the first,
    // and settled()'s), host-timed by default. The one made while off is not seen at all: the pause
    // turns its driver callback off with the launch callbacks (an H200, 2026-11-28: 0 outside the
    // window, by either attribution).
    CHECK(range(r, "(unscoped)").self.kernel_calls == 0);
    CHECK(range(r, "(unscoped)").self.sync_count == 2);
    CHECK(r.diagnostics.outside_window_records == 0);
    CHECK(r.diagnostics.unresolved_records == 0);
    CHECK(r.diagnostics.dropped_records == 0);
    CHECK(r.diagnostics.launch_notes_lost == 0);
    CHECK(r.activity_status.find("paused while recording is off") == std::string::npos);
    for (const std::string& note : r.notes) CHECK(note.find("step windows") == std::string::npos);  // none refused
  }
}

namespace {

// `launches` kernels in one scope named `name`, with no wait between them: every one counted in
// that scope, one kernel row, nothing dropped, unresolved or left unnoted.
void check_tight_loop(const char* name, int launches) {
  cuscope_test::Session session;
  warm_up();
  {
    cuscope::Scope scope(name);
    for (int i = 0; i < launches; ++i) empty_kernel<<<1, 1>>>();
  }
  const cuscope::Report r = settled();
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(range(r, name).self.kernel_calls == static_cast<std::uint64_t>(launches));
  CHECK(range(r, name).kernels.size() == 1);
}

}  // namespace

TEST_CASE("a million kernel launches: none dropped, all counted", "[gpu][cupti][.slow]") {
  check_tight_loop("million", 1'000'000);
}

// With launch notes (the default) a thread's ring of 4,096 notes fills in about 10 ms at this
// rate: the collector's drains between CUPTI's deliveries empty it, and where they come late the
// launching thread drains it itself when the drainer's locks are free.
TEST_CASE("100,000 launches without a wait: every kernel attributed, no launch note lost", "[gpu][cupti]") {
  check_tight_loop("tight_loop", 100'000);
}

// A CUDA event on the legacy stream is a barrier with every blocking stream: a scope that recorded
// there would serialize the two kernels below. Without a stream, a scope records no event.
TEST_CASE("scopes without a stream leave kernels on two blocking streams overlapping", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  CHECK_CUDA(cudaStreamCreate(&s1));
  CHECK_CUDA(cudaStreamCreate(&s2));
  const long long cycles = cycles_for_ms(20.0);
  {
    CUSCOPE_SCOPE("both");
    {
      CUSCOPE_SCOPE("on_s1");
      spin_kernel<<<1, 1, 0, s1>>>(cycles);
    }
    {
      CUSCOPE_SCOPE("on_s2");
      spin_kernel<<<1, 1, 0, s2>>>(cycles);
    }
  }
  const cuscope::Report r = settled();
  const auto& both = range(r, "both");
  REQUIRE(both.total.kernel_calls == 2);
  CHECK(double(both.total.gpu_busy_ns) < 0.75 * double(both.total.kernel_ns));  // they overlapped
  CHECK(both.gpu.count == 0);  // no events: its GPU time is the span of its kernels
  CHECK(both.total.gpu_span_ns > 0);
  CHECK(r.diagnostics.gpu_event_failures == 0);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// A forced flush would hand back the running kernel's record with zero timestamps (lost).
TEST_CASE("flush while a kernel runs loses nothing: its record arrives complete later", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  cudaStream_t stream = nullptr;
  CHECK_CUDA(cudaStreamCreate(&stream));
  {
    CUSCOPE_SCOPE("long", stream);
    spin_kernel<<<1, 1, 0, stream>>>(cycles_for_ms(300.0));
  }
  cuscope::flush();  // the kernel still runs
  CHECK(cuscope::snapshot().diagnostics.zero_timestamp_records == 0);
  const cuscope::Report r = settled();
  CHECK(range(r, "long").self.kernel_calls == 1);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
  cudaStreamDestroy(stream);
}

// CUPTI 13.0 keeps a buffer per CUDA-calling thread: a cap on the number of buffers would drop
// the records of every thread past it.
TEST_CASE("a hundred CUDA-calling threads: every kernel counted, none dropped", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  std::vector<std::thread> threads;
  for (int t = 0; t < 100; ++t) {
    threads.emplace_back([] {
      cudaStream_t s = nullptr;
      if (cudaStreamCreate(&s) != cudaSuccess) return;
      {
        CUSCOPE_SCOPE("threaded", s);
        for (int i = 0; i < 10; ++i) empty_kernel<<<1, 1, 0, s>>>();
      }
      cudaStreamSynchronize(s);
      cudaStreamDestroy(s);
    });
  }
  for (auto& t : threads) t.join();
  const cuscope::Report r = settled();
  CHECK(range(r, "threaded").self.kernel_calls == 1000);
  CHECK(range(r, "threaded").threads == 100);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.activity_buffers_refused == 0);
  CHECK(r.diagnostics.unresolved_records == 0);
}

TEST_CASE("two streams: a serialized-streams finding when each waits on the other, none when they overlap",
          "[gpu][cupti][streams]") {
  cuscope_test::Session session;
  warm_up();
  cudaStream_t s1 = nullptr, s2 = nullptr;
  cudaEvent_t done = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CHECK_CUDA(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  CHECK_CUDA(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
  const long long cycles = cycles_for_ms(0.2);
  {
    CUSCOPE_SCOPE("serialized");
    for (int i = 0; i < 8; ++i) {
      spin_kernel<<<1, 1, 0, s1>>>(cycles);
      CHECK_CUDA(cudaEventRecord(done, s1));
      CHECK_CUDA(cudaStreamWaitEvent(s2, done, 0));
      spin_kernel<<<1, 1, 0, s2>>>(cycles);
      CHECK_CUDA(cudaEventRecord(done, s2));
      CHECK_CUDA(cudaStreamWaitEvent(s1, done, 0));
    }
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    CUSCOPE_SCOPE("overlapped");
    for (int i = 0; i < 8; ++i) {
      spin_kernel<<<1, 1, 0, s1>>>(cycles);
      spin_kernel<<<1, 1, 0, s2>>>(cycles);
    }
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  const cuscope::Report r = settled();
  auto has = [](const cuscope::RangeStats& range, const char* id) {
    for (const cuscope::Finding& f : range.findings)
      if (f.id == id) return true;
    return false;
  };
  const auto& serial = range(r, "serialized");
  CHECK(serial.self.kernel_calls == 16);
  CHECK(serial.self.kernel_streams == 2);
  CHECK(serial.self.busiest_stream_ns < serial.self.kernel_ns);
  CHECK(has(serial, "serialized-streams"));
  const auto& overlap = range(r, "overlapped");
  CHECK(overlap.self.kernel_calls == 16);
  CHECK(overlap.self.kernel_streams == 2);
  CHECK(overlap.self.gpu_busy_ns < overlap.self.kernel_ns * 3 / 4);  // the streams ran side by side
  CHECK_FALSE(has(overlap, "serialized-streams"));
  cudaEventDestroy(done);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
}

// cuscope hands CUPTI zeroed buffers and tells it so (producers/cupti/buffer_pool.hpp): a returned
// buffer is zeroed again only where CUPTI said its records were. Checked here against CUPTI: after
// normal and forced deliveries of partly filled buffers mid-session, no byte past the valid ones.
TEST_CASE("CUPTI writes nothing past the valid bytes of a buffer it hands back", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  for (int round = 0; round < 20; ++round) {
    {
      CUSCOPE_SCOPE("burst");
      for (int i = 0; i < 200; ++i) empty_kernel<<<1, 32>>>();
    }
    cuscope::flush();  // a normal delivery: partly filled buffers come back
    if (round % 5 == 4) {
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
      cuscope::detail::flush_activity_forced();  // and forced ones
    }
  }
  const cuscope::Report r = settled();
  CHECK(range(r, "burst").self.kernel_calls == 4000);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(cuscope::detail::activity_buffers_written_past_valid() == 0);
}

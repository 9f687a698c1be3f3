// GPU tests of the detach after the last step window (CUSCOPE_DETACH, docs/cupti-windows.md),
// between windows (CUSCOPE_DETACH_BETWEEN, CUPTI attached again at each next window) and while
// recording is off (CUSCOPE_ENABLE=0 attaching nothing until switched on): the counts exact across
// the pause and the detach, CUPTI detached at the exit of the collector's own CUDA call, and the
// program's launches after it still run; and a sample (CUSCOPE_SAMPLE_MS), whole at the start, then
// detached between its sampled steps. The last window's case passed on an H200 (2026-11-28); the
// case between windows, the one whose steps the clock ends (CUSCOPE_STEP_MS), the one while
// recording is off and the sample's are not yet run on a GPU.
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <thread>

#include "gpu_kit.cuh"
#include "producers/cupti/detach.hpp"
#include "session_fixture.hpp"

namespace {

__global__ void write_value(int* out, int value) { *out = value; }

constexpr int kLaunchesPerStep = 4;

}  // namespace

TEST_CASE("after the last step window CUPTI detaches, the window's counts exact, later launches run",
          "[gpu][cupti][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::automatic;
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 2;  // repeat 1: wait 0, warm-up 1, active 2 and 3, then detached
  cuscope_test::Session session(o);
  warm_up();  // in the wait step: paused, no record
  const long long ms = cycles_for_ms(1.0);
  for (int step = 0; step < 4; ++step) {
    {
      CUSCOPE_SCOPE("detach_step");
      spin_kernel<<<1, 1>>>(ms);  // the last active step's still running at the pause
      for (int i = 1; i < kLaunchesPerStep; ++i) empty_kernel<<<1, 1>>>();
    }
    cuscope::step();
  }
  // The program goes on launching; the detach comes at the exit of a CUDA call of the collector's,
  // once the window's records are in (1 s after the pause, kDetachWaitNs): a bounded wait for it.
  bool detached = false;
  for (int i = 0; i < 5000 && !detached; ++i) {
    {
      CUSCOPE_SCOPE("after_window");
      empty_kernel<<<1, 1>>>();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    detached = cuscope::snapshot().activity_status.ends_with(", detached after the last step window");
  }
  INFO("activity status: " << cuscope::snapshot().activity_status);
  REQUIRE(detached);
  CHECK(cuscope::detail::detach_stage() == cuscope::detail::DetachStage::detached);

  int* value = nullptr;  // CUDA after the detach: launches and copies run as without CUPTI
  CHECK_CUDA(cudaMalloc(&value, sizeof(int)));
  write_value<<<1, 1>>>(value, 42);
  int back = 0;
  CHECK_CUDA(cudaMemcpy(&back, value, sizeof(int), cudaMemcpyDeviceToHost));
  CHECK(back == 42);
  CHECK_CUDA(cudaFree(value));

  const cuscope::Report r = settled();  // its flush calls no CUPTI (the CPU tests check that)
  CHECK(r.recorded_steps == 2);
  CHECK(range(r, "detach_step").calls == 2);
  CHECK(range(r, "detach_step").self.kernel_calls == 2 * kLaunchesPerStep);
  CHECK(r.diagnostics.outside_window_records == kLaunchesPerStep);  // the warm-up step's
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.incomplete_at_exit == 0);  // everything had finished by the detach
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(r.find("after_window") == nullptr);  // after the window: not recorded
  CHECK(r.find("(unscoped)") == nullptr);
  for (const std::string& note : r.notes) CHECK(note.find("not detached") == std::string::npos);
}

// CUSCOPE_DETACH_BETWEEN: each wait step detaches CUPTI once the window's records are in (1 s after
// the pause) and the next warm-up step attaches it again, whose correlation ids start again at 1:
// every window's counts exact across two re-attaches, nothing of the wait steps recorded, then the
// detach after the last window.
TEST_CASE("between step windows CUPTI detaches and attaches again, every window's counts exact",
          "[gpu][cupti][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::automatic;
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 2;
  o.repeat = 3;  // steps 0-3, 4-7, 8-11: wait, warm-up, active, active; then detached for good
  o.detach_between = true;
  cuscope_test::Session session(o);
  warm_up();  // in the first wait step: CUPTI not attached yet, no record
  const auto status_has = [](const char* what) {
    return cuscope::snapshot().activity_status.find(what) != std::string::npos;
  };
  for (int step = 0; step < 12; ++step) {
    if (step % 4 == 0 && step > 0) {
      // A wait step after a window: the program launches on while CUPTI detaches (bounded wait).
      bool detached = false;
      for (int i = 0; i < 5000 && !detached; ++i) {
        {
          CUSCOPE_SCOPE("between");
          empty_kernel<<<1, 1>>>();
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        detached = status_has(", detached between step windows until the next one");
      }
      INFO("step " << step << ", activity status: " << cuscope::snapshot().activity_status);
      REQUIRE(detached);
    } else {
      CUSCOPE_SCOPE("detach_step");
      for (int i = 0; i < kLaunchesPerStep; ++i) empty_kernel<<<1, 1>>>();
    }
    cuscope::step();
  }
  bool detached = false;
  for (int i = 0; i < 5000 && !detached; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    detached = status_has(", detached after the last step window");
  }
  INFO("activity status: " << cuscope::snapshot().activity_status);
  REQUIRE(detached);
  CHECK(status_has("detached between step windows and attached again 2 times"));

  const cuscope::Report r = settled();
  CHECK(r.recorded_steps == 6);
  CHECK(range(r, "detach_step").calls == 6);  // the warm-up steps' scopes record nothing
  CHECK(range(r, "detach_step").self.kernel_calls == 6 * kLaunchesPerStep);
  CHECK(r.diagnostics.outside_window_records == 3 * kLaunchesPerStep);  // the warm-up steps'
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.incomplete_at_exit == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(r.find("between") == nullptr);
  CHECK(r.find("(unscoped)") == nullptr);
  for (const std::string& note : r.notes) {
    CHECK(note.find("not detached") == std::string::npos);
    // Buffers CUPTI never handed back before a finalize are taken back at the next attach: not a fault,
    // but what the log should show (docs/cupti-windows.md).
    if (note.find("CUPTI kept") != std::string::npos) WARN(note);
  }
}

// CUSCOPE_STEP_MS with CUSCOPE_DETACH_BETWEEN, in a program that never calls step(): the stepper
// thread pauses, detaches and attaches CUPTI again while the program's thread launches all the
// while. A step's end falls anywhere, so only what a boundary can move is loose: a work scope the
// window's end cuts off before its launch (recorded, its kernel not traced), or one entered before
// the window whose launch falls in it (at most one of each per window); every traced kernel is
// resolved, and the work recorded goes under "main", which was open when each window opened (a call
// of it per window: each closes at its window's end).
TEST_CASE("steps ended by the clock detach CUPTI between windows and attach it again, on the stepper thread",
          "[gpu][cupti][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::automatic;
  o.step_ms = 1500;  // each wait well past the detach's 1 s wait for the window's records
  o.wait_steps = 1;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 2;  // steps 0-2 and 3-5: wait, warm-up, active; then detached for good
  o.detach_between = true;
  cuscope_test::Session session(o);
  warm_up();
  const auto status_has = [](const char* what) {
    return cuscope::snapshot().activity_status.find(what) != std::string::npos;
  };
  bool done = false;
  {
    CUSCOPE_SCOPE("main");
    // About 10 s expected (six 1.5 s steps, then the last window's detach); 20 s at most, so that a
    // failure ends here, within gpu-check's 40 s watchdog a case and 45 s for the five.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!done && std::chrono::steady_clock::now() < deadline) {
      {
        CUSCOPE_SCOPE("work");
        empty_kernel<<<1, 1>>>();
      }
      std::this_thread::sleep_for(std::chrono::microseconds(100));
      done = cuscope::snapshot().steps >= 6 && status_has(", detached after the last step window");
    }
  }
  INFO("activity status: " << cuscope::snapshot().activity_status);
  REQUIRE(done);
  CHECK(status_has("detached between step windows and attached again 1 time"));

  const cuscope::Report r = settled();
  CHECK(r.recorded_steps == 2);
  const cuscope::RangeStats& work = range(r, "main/work");
  CHECK(work.calls >= 1);
  CHECK(work.self.kernel_calls <= work.calls);
  CHECK(work.calls - work.self.kernel_calls <= 2);  // cut off by a window's end
  if (const cuscope::RangeStats* unscoped = r.find("(unscoped)"))
    CHECK(unscoped->self.kernel_calls <= 2);  // launched in a window by a scope entered before it
  CHECK(range(r, "main").calls == 2);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  for (const std::string& note : r.notes) {
    CHECK(note.find("not detached") == std::string::npos);
    // Buffers CUPTI never handed back before a finalize are taken back at the next attach: not a fault,
    // but what the log should show (docs/cupti-windows.md).
    if (note.find("CUPTI kept") != std::string::npos) WARN(note);
  }
}

// CUSCOPE_ENABLE=0 at the start: CUPTI is not attached until recording is switched on; with
// CUSCOPE_DETACH_BETWEEN each switch off detaches it once the last records are in (1 s), and the next
// switch on attaches it again, whose correlation ids start again at 1: each stretch with recording
// on counted exactly, nothing of the stretches off, every record resolved.
TEST_CASE("recording off attaches no CUPTI until switched on, and each switch off detaches it, counts exact",
          "[gpu][cupti][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::automatic;
  o.enabled = false;
  o.detach_between = true;  // no step window: detached only while recording is off
  cuscope_test::Session session(o);
  const auto status_has = [](const char* what) {
    return cuscope::snapshot().activity_status.find(what) != std::string::npos;
  };
  INFO("activity status: " << cuscope::snapshot().activity_status);
  REQUIRE(status_has("not attached yet: CUPTI attaches when recording is switched on"));
  CHECK(cuscope::detail::detach_stage() == cuscope::detail::DetachStage::detached);
  warm_up();  // CUDA's start while off: nothing of CUPTI's
  for (int stretch = 0; stretch < 2; ++stretch) {
    {
      CUSCOPE_SCOPE("while_off");
      empty_kernel<<<1, 1>>>();
    }
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    cuscope::set_enabled(true);  // attached (again) here, on the program's thread
    INFO("stretch " << stretch << ", activity status: " << cuscope::snapshot().activity_status);
    REQUIRE(cuscope::snapshot().activity_status.starts_with("on"));
    if (stretch == 1) CHECK(status_has("detached while recording was off and attached again 1 time"));
    for (int call = 0; call < 3; ++call) {
      CUSCOPE_SCOPE("while_on");
      for (int i = 0; i < kLaunchesPerStep; ++i) empty_kernel<<<1, 1>>>();
    }
    {
      CUSCOPE_SCOPE("settle");
      REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    }
    cuscope::set_enabled(false);
    bool detached = false;  // bounded wait: the program launches on meanwhile, unrecorded
    for (int i = 0; i < 5000 && !detached; ++i) {
      {
        CUSCOPE_SCOPE("while_off");
        empty_kernel<<<1, 1>>>();
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      detached = status_has(", detached while recording is off");
    }
    REQUIRE(detached);
  }

  const cuscope::Report r = settled();
  CHECK(range(r, "while_on").calls == 6);
  CHECK(range(r, "while_on").self.kernel_calls == 6 * kLaunchesPerStep);
  CHECK(range(r, "settle").self.kernel_calls == 0);
  CHECK(r.find("while_off") == nullptr);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.incomplete_at_exit == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  for (const std::string& note : r.notes) {
    CHECK(note.find("not detached") == std::string::npos);
    // Buffers CUPTI never handed back before a finalize are taken back at the next attach: not a fault,
    // but what the log should show (docs/cupti-windows.md).
    if (note.find("CUPTI kept") != std::string::npos) WARN(note);
  }
}

// CUSCOPE_SAMPLE_MS (leave it on): the program whole from the start (CUPTI attached there), then,
// once a step ends past sample_ms, a wait of at least sample_ms in which CUPTI detaches (1 s after
// the pause), a warm-up step that attaches it again and one recorded step, twice: every recorded
// step of the program counted with exactly its launches, across two re-attaches, nothing of the
// waits, the warm-up steps' launches outside the window. The sample's own clock steps (100 ms, for a
// program that never calls step()) may end steps during CUDA's start, all of them whole.
TEST_CASE(
    "a sample records the start whole, then a step per sample with CUPTI detached between, counts exact",
    "[gpu][cupti][detach]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::automatic;
  o.sample_ms = 1500;  // each wait well past the detach's 1 s wait for the window's records
  cuscope_test::Session session(o);
  {
    CUSCOPE_SCOPE("start_up");
    warm_up();  // whole: recorded
  }
  const cuscope::Report started = cuscope::snapshot();
  INFO("steps " << started.steps << ", recorded " << started.recorded_steps << " after CUDA's start");
  REQUIRE(started.recorded_steps == started.steps);  // still whole: CUDA's start took under 1.5 s
  const auto status_has = [](const char* what) {
    return cuscope::snapshot().activity_status.find(what) != std::string::npos;
  };
  // Steps until the second re-attach (made at the step into that sample's warm-up step), then the
  // warm-up step and the recorded one.
  int after = -1;
  // About 6 s expected (the whole start and two waits of 1.5 s); 12 s at most, so that a failure ends
  // here, within gpu-check's 45 s for the five detach cases.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(12);
  while (after != 0 && std::chrono::steady_clock::now() < deadline) {
    {
      CUSCOPE_SCOPE("sample_step");
      for (int i = 0; i < kLaunchesPerStep; ++i) empty_kernel<<<1, 1>>>();
    }
    cuscope::step();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    if (after > 0) --after;
    if (after < 0 && status_has("attached again 2 times")) after = 2;
  }
  INFO("activity status: " << cuscope::snapshot().activity_status);
  REQUIRE(after == 0);
  bool detached = false;  // the second sample's records in, CUPTI detached again (bounded wait)
  for (int i = 0; i < 5000 && !detached; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    detached = status_has(", detached between step windows until the next one");
  }
  REQUIRE(detached);

  const cuscope::Report r = settled();
  const std::uint64_t program_recorded = r.recorded_steps - r.clock_steps;  // the clock's: all whole
  CHECK(program_recorded >= 3);  // at least one whole step, and the two samples
  CHECK(range(r, "start_up").self.kernel_calls == 1);
  CHECK(range(r, "sample_step").calls == program_recorded);
  CHECK(range(r, "sample_step").self.kernel_calls == kLaunchesPerStep * program_recorded);
  CHECK(r.steps > r.recorded_steps + 2);  // the waits' steps, taken again until each has lasted
  CHECK(r.diagnostics.outside_window_records == 2 * kLaunchesPerStep);  // the warm-up steps'
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.zero_timestamp_records == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
  CHECK(r.find("(unscoped)") == nullptr);
  for (const std::string& note : r.notes) {
    CHECK(note.find("not detached") == std::string::npos);
    // Buffers CUPTI never handed back before a finalize are taken back at the next attach: not a fault,
    // but what the log should show (docs/cupti-windows.md).
    if (note.find("CUPTI kept") != std::string::npos) WARN(note);
  }
}

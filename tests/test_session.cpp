// The session: what it says without a GPU, the step window, explicit and at-exit output.
#include <cuda_runtime_api.h>
#include <cupti_result.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "producers/cuda_probe.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "session/hardware.hpp"
#include "session_fixture.hpp"

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string temp_path(const char* name) { return std::string(P_tmpdir) + "/cuscope_test_" + name; }

}  // namespace

TEST_CASE("the report says in one line why GPU timing is off", "[session]") {
  cuscope_test::Session session;
  { CUSCOPE_SCOPE("host_only"); }
  const cuscope::Report r = cuscope::snapshot();
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  cudaGetLastError();
  if (err != cudaSuccess || count == 0) {
    CHECK(r.device == "no GPU");
    CHECK(r.gpu_timing != "on");
    CHECK_FALSE(r.gpu_timing.empty());
    CHECK(r.gpu_timing.find('\n') == std::string::npos);
    if (err != cudaSuccess) {
      CHECK(r.gpu_timing.find("cudaGetDeviceCount: error " + std::to_string(static_cast<int>(err))) !=
            std::string::npos);
    }
    CHECK(r.activity_status == r.gpu_timing);
    CHECK(r.find("host_only")->gpu.count == 0);
    const std::string table = cuscope::format_table(r);
    CHECK(table.find("GPU timing and activity: off — " + r.gpu_timing + "\n") != std::string::npos);
    CHECK(table.find("GPU timing: off") == std::string::npos);  // said once
  } else {
    CHECK(cudaGetLastError() == cudaSuccess);  // the probe left no error for the program to trip on
    CHECK(r.gpu_timing == "on");
    CHECK(r.device.find("sm_") != std::string::npos);
  }
  CHECK(r.find("host_only")->calls == 1);
}

TEST_CASE("hardware counters asked for without a GPU say why they are off", "[session][metrics]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.metrics = "sol";
  cuscope_test::Session session(o);
  const cuscope::detail::GpuProbe probe = cuscope::detail::probe_gpu();
  if (probe.available) return;  // counters on a GPU: tests/gpu/test_gpu_counters.cu
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(!probe.reason.empty());
  CHECK(r.counters_status == probe.reason);  // the one reason: no GPU, not "not requested"
  CHECK(r.gpu_timing == probe.reason);
}

TEST_CASE("another tool holding the GPU's profiler turns counters off in one line, and scopes go on",
          "[session][metrics]") {
  cuscope_test::Session session;  // counters not started (on a GPU they would have initialized)
  cuscope::detail::session().options.metrics = "sol";
  // Without the profiler interface, no other profiler call is made: under Nsight Compute the chip's
  // name crashed inside libcupti.
  CHECK(cuscope::detail::device_chip_name(0).empty());
  cuscope::detail::set_profiler_initialize_result_for_testing(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
  const std::string held = cuscope::detail::start_counters(cuscope::detail::session());
  cuscope::detail::set_profiler_initialize_result_for_testing(CUPTI_ERROR_INSUFFICIENT_PRIVILEGES);
  const std::string denied = cuscope::detail::start_counters(cuscope::detail::session());
  cuscope::detail::set_profiler_initialize_result_for_testing(0);
  CHECK(
      held ==
      "another tool holds the GPU's profiler (Nsight Compute or compute-sanitizer?): cuptiProfilerInitialize "
      "returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  CHECK(denied ==
        "no permission for GPU performance counters (ERR_NVGPUCTRPERM; run as root, or load the driver with "
        "NVreg_RestrictProfilingToAdminUsers=0: https://developer.nvidia.com/ERR_NVGPUCTRPERM): "
        "cuptiProfilerInitialize returned CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  CHECK(cuscope::detail::device_chip_name(0).empty());
  { CUSCOPE_SCOPE("decode"); }
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("decode") != nullptr);
  CHECK(r.find("decode")->calls == 1);
}

TEST_CASE("hardware counters not asked for say so", "[session][metrics]") {
  cuscope_test::Session session;
  CHECK(cuscope::snapshot().counters_status == cuscope::kCountersNotRequested);
}

TEST_CASE("GPU timing and tracing switched off by option say so", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.gpu_events = false;
  o.activities = false;
  cuscope_test::Session session(o);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.gpu_timing == "disabled by option (CUSCOPE_GPU_EVENTS=0)");
  CHECK(r.activity_status == "disabled by option (CUSCOPE_ACTIVITIES=0)");
  CHECK(r.device == "not queried (GPU timing and tracing are off)");
}

TEST_CASE("warm-up steps are left out and only active steps are recorded", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 2;
  o.active_steps = 3;
  cuscope_test::Session session(o);
  for (int i = 0; i < 8; ++i) {
    CUSCOPE_SCOPE("train_step");
    cuscope::step();  // inside the scope, as a loop body often does
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 8);
  CHECK(r.recorded_steps == 3);
  CHECK(r.find("train_step")->calls == 3);
}

TEST_CASE("wait, warm-up, then every later step when active is 0", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.warmup_steps = 1;
  cuscope_test::Session session(o);
  for (int i = 0; i < 6; ++i) {
    { CUSCOPE_SCOPE("windowed"); }
    cuscope::step();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("windowed")->calls == 4);
  CHECK(r.recorded_steps == 4);
}

TEST_CASE("the first scope starts the session from the environment", "[session]") {
  cuscope_test::Session session(cuscope_test::quiet_options(), false);
  CHECK(cuscope::snapshot().wall_ns == 0);
  { CUSCOPE_SCOPE("implicit_start"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("implicit_start")->calls == 1);
  CHECK(r.wall_ns > 0);
  CHECK(r.notes.empty());
  // Already started: the options are not applied, and the program is told once; start() asks for
  // nothing of its own.
  CHECK_FALSE(cuscope::start(cuscope_test::quiet_options()));
  CHECK_FALSE(cuscope::start(cuscope_test::quiet_options()));
  CHECK_FALSE(cuscope::start());
  CHECK(cuscope::snapshot().notes ==
        std::vector<std::string>{
            "cuscope::start(options) came after the session had started (a scope, step(), set_enabled() or "
            "start() before it starts one from the CUSCOPE_* environment); its options are not applied: call "
            "it "
            "before any of those"});
}

TEST_CASE("shutdown writes the table and the JSON where the options say, once", "[session]") {
  cuscope::Options o;
  o.output_path = temp_path("table.txt");
  o.json_path = temp_path("report.json");
  std::remove(o.output_path.c_str());
  std::remove(o.json_path.c_str());
  cuscope_test::Session session(o);
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("summarized");
  }
  cuscope::shutdown();
  const std::string table = read_file(o.output_path);
  CHECK(table.rfind("cuscope ", 0) == 0);
  CHECK(table.find("summarized") != std::string::npos);
  const auto json = nlohmann::json::parse(read_file(o.json_path));
  bool found = false;
  for (const auto& range : json["ranges"]) {
    if (range["path"] == "summarized") {
      found = true;
      CHECK(range["calls"] == 3);
    }
  }
  CHECK(found);

  std::remove(o.output_path.c_str());
  cuscope::shutdown();  // idempotent: writes nothing more
  CHECK(read_file(o.output_path).empty());
  { CUSCOPE_SCOPE("after_shutdown"); }
  CHECK(cuscope::snapshot().find("after_shutdown") == nullptr);
  std::remove(o.json_path.c_str());
}

TEST_CASE("an output path that cannot be written falls back to stderr with a note", "[session]") {
  cuscope::Options o;
  o.output_path = "/nonexistent-dir/cuscope/table.txt";
  cuscope_test::Session session(o);
  { CUSCOPE_SCOPE("fallback"); }
  cuscope::shutdown();
  const auto notes = cuscope::snapshot().notes;
  REQUIRE(notes.size() == 1);
  CHECK(notes[0] ==
        "could not write the table to '/nonexistent-dir/cuscope/table.txt' (No such file or directory); "
        "printing "
        "it to stderr instead");
}

TEST_CASE("a max_depth outside 1-256 given to start() falls back to the default with a note", "[session]") {
  for (const std::uint32_t bad : {0u, 257u}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.max_depth = bad;
    cuscope_test::Session session(o);
    CHECK(cuscope::current_options().max_depth == 64);
    CHECK(cuscope::snapshot().notes == std::vector<std::string>{"Options::max_depth=" + std::to_string(bad) +
                                                                " is out of range [1, 256]; using 64"});
    {
      CUSCOPE_SCOPE("depth_a");
      CUSCOPE_SCOPE("depth_b");
    }
    const cuscope::Report r = cuscope::snapshot();
    CHECK(r.find("depth_a/depth_b")->calls == 1);
    CHECK(r.diagnostics.depth_overflows == 0);
  }
  for (const std::uint32_t good : {1u, 256u}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.max_depth = good;
    cuscope_test::Session session(o);
    CHECK(cuscope::current_options().max_depth == good);
    CHECK(cuscope::snapshot().notes.empty());
  }
}

TEST_CASE("enabled() before the session starts says whether the first scope will record", "[session]") {
  {
    cuscope_test::Session session(cuscope_test::quiet_options(), false);
    CHECK(cuscope::enabled());
    { CUSCOPE_SCOPE("enabled_first"); }
    CHECK(cuscope::enabled());
    CHECK(cuscope::snapshot().find("enabled_first")->calls == 1);
  }
  {
    cuscope_test::Session session(cuscope_test::quiet_options(), false);
    ::setenv("CUSCOPE_ENABLE", "0", 1);
    const bool before = cuscope::enabled();
    { CUSCOPE_SCOPE("disabled_first"); }
    ::unsetenv("CUSCOPE_ENABLE");
    CHECK_FALSE(before);
    CHECK_FALSE(cuscope::enabled());
    CHECK(cuscope::snapshot().find("disabled_first") == nullptr);
  }
}

// Two macros on one line, as a macro of the program's own expands them.
#define TWO_SCOPES_ON_ONE_LINE \
  CUSCOPE_SCOPE("line_outer"); \
  CUSCOPE_SCOPE("line_inner")

TEST_CASE("two scope macros on one line compile and nest", "[session]") {
  cuscope_test::Session session;
  for (int i = 0; i < 2; ++i) {
    TWO_SCOPES_ON_ONE_LINE;
  }
  // clang-format off
  { CUSCOPE_SCOPE("same_a"); CUSCOPE_SCOPE("same_b"); CUSCOPE_FUNCTION(); }
  // clang-format on
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("line_outer")->calls == 2);
  CHECK(r.find("line_outer/line_inner")->calls == 2);
  CHECK(r.find("same_a/same_b")->calls == 1);
  CHECK(r.find("same_a/same_b")->children.size() == 1);
}

TEST_CASE("count() refuses inf and NaN, counts them, and the JSON stays typed", "[session]") {
  cuscope_test::Session session;
  {
    CUSCOPE_SCOPE("counted");
    cuscope::count("items", 2.5);
    cuscope::count("items", std::numeric_limits<double>::infinity());
    cuscope::count("items", -std::numeric_limits<double>::infinity());
    cuscope::count("items", std::numeric_limits<double>::quiet_NaN());
    CUSCOPE_COUNT("items", std::nan(""));
    CUSCOPE_COUNT("items", 1);
    cuscope::count("never_finite", std::numeric_limits<double>::infinity());
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.rejected_counts == 5);
  const cuscope::RangeStats* counted = r.find("counted");
  REQUIRE(counted->counts.size() == 1);  // a refused amount makes no counter
  CHECK(counted->counts[0].name == "items");
  CHECK(counted->counts[0].total == 3.5);
  const std::string table = cuscope::format_table(r);
  INFO(table);
  // (Other cases' adjusted names are process-wide, so this one's counter is looked for in the line.)
  CHECK(table.find("\nlost or off: ") != std::string::npos);
  CHECK(table.find(" 5 counts of inf or NaN refused") != std::string::npos);
  const auto json = nlohmann::json::parse(cuscope::format_json(r));
  CHECK(json["diagnostics"]["rejected_counts"] == 5);
  for (const auto& range : json["ranges"]) {
    for (const auto& c : range["counts"]) {
      for (const char* field : {"self", "total", "per_host_second", "per_gpu_second"}) {
        CHECK(c[field].is_number_float());
      }
    }
  }
}

TEST_CASE("scopes outside the step window are counted, and the table says when it never opened",
          "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.wait_steps = 1;
  o.warmup_steps = 2;
  cuscope_test::Session session(o);
  for (int i = 0; i < 5; ++i) {
    CUSCOPE_SCOPE("before_window");
  }
  cuscope::push("pushed_before_window");
  cuscope::pop();
  cuscope::step();
  { CUSCOPE_SCOPE("before_window"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 1);
  CHECK(r.window_start_step == 3);
  CHECK(r.diagnostics.outside_window_scopes == 7);
  CHECK(r.find("before_window") == nullptr);
  const std::string table = cuscope::format_table(r);
  INFO(table);
  CHECK(table.find("\nlost or off: 7 scopes outside the window") != std::string::npos);
  CHECK(table.substr(table.rfind('\n', table.size() - 2) + 1) ==
        "(no ranges recorded: the step window was never reached — it opens after step 3, and 1 step was "
        "marked with cuscope::step(); 7 scopes left out)\n");
  CHECK(nlohmann::json::parse(cuscope::format_json(r))["diagnostics"]["outside_window_scopes"] == 7);
}

TEST_CASE("scopes of warm-up steps and of steps after the active ones are counted as left out", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 2;
  o.active_steps = 3;
  cuscope_test::Session session(o);
  for (int i = 0; i < 8; ++i) {
    { CUSCOPE_SCOPE("stepped"); }
    cuscope::step();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("stepped")->calls == 3);
  CHECK(r.diagnostics.outside_window_scopes == 5);
}

TEST_CASE("a child made by fork() has cuscope off and leaves the parent's session alone",
          "[session][threads]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.json_path = temp_path("fork_child.json");
  std::remove(o.json_path.c_str());
  cuscope_test::Session session(o);
  { CUSCOPE_SCOPE("before_fork"); }
  std::thread busy([] {
    for (int i = 0; i < 1000; ++i) {
      CUSCOPE_SCOPE("busy_thread");
    }
  });
  const pid_t parent = ::getpid();
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // No Catch2 here: the child reports by its exit status, one bit per failed check.
    int failed = 0;
    { CUSCOPE_SCOPE("in_child"); }
    cuscope::count("child_items", 1);
    cuscope::push("child_push");
    cuscope::pop();
    cuscope::step();
    cuscope::set_enabled(true);
    cuscope::flush();
    const cuscope::Report r = cuscope::snapshot();
    if (cuscope::enabled()) failed |= 1;
    if (r.ranges.size() != 1) failed |= 2;
    if (r.notes != std::vector<std::string>{
                       "cuscope is off in this process: it was created by fork() from process " +
                       std::to_string(parent) + ", whose session goes on there (see docs/api.md, Lifetime)"})
      failed |= 4;
    if (cuscope::start(cuscope_test::quiet_options())) failed |= 8;
    if (!cuscope::current_options().json_path.empty()) failed |= 16;
    cuscope::shutdown();
    std::FILE* json = std::fopen(o.json_path.c_str(), "r");
    if (json != nullptr) {
      failed |= 32;
      std::fclose(json);
    }
    ::_exit(failed);
  }
  busy.join();
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  REQUIRE(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 0);
  { CUSCOPE_SCOPE("after_fork"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("before_fork")->calls == 1);
  CHECK(r.find("after_fork")->calls == 1);
  CHECK(r.find("busy_thread")->calls == 1000);
  CHECK(r.find("in_child") == nullptr);
  CHECK(cuscope::enabled());
  cuscope::shutdown();
  CHECK(nlohmann::json::parse(read_file(o.json_path))["ranges"].size() == 4);  // root + the three
  std::remove(o.json_path.c_str());
}

TEST_CASE("after shutdown the report is final: step(), flush() and scopes change nothing", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 1;
  cuscope_test::Session session(o);
  cuscope::step();
  { CUSCOPE_SCOPE("recorded_before_shutdown"); }
  const cuscope::Report running = cuscope::snapshot();
  CHECK_FALSE(running.final);  // built while the program runs: later work is not in it
  CHECK(cuscope::format_table(running).find(" — while running\n") != std::string::npos);
  cuscope::shutdown();
  cuscope::step();
  cuscope::flush();
  { CUSCOPE_SCOPE("after_final"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.steps == 1);
  CHECK(r.recorded_steps == 0);
  CHECK(r.find("recorded_before_shutdown")->calls == 1);
  CHECK(r.find("after_final") == nullptr);
  CHECK(r.diagnostics.outside_window_scopes == 0);
  CHECK(r.final);
  CHECK(cuscope::format_table(r).find("while running") == std::string::npos);
  CHECK_FALSE(cuscope::enabled());
}

TEST_CASE("CUSCOPE_EVENTS decides whether scopes record CUDA events, and the status says why", "[session]") {
  using cuscope::EventTiming;
  using cuscope::detail::event_timing;
  cuscope::Options o;
  const std::string no_gpu = "no CUDA driver";
  // auto: events only where CUPTI does not trace.
  CHECK(event_timing(o, true, no_gpu, true) ==
        "projected: each call's span of GPU work as CUPTI traces it, no CUDA events (CUSCOPE_EVENTS=auto; "
        "'always' adds them)");
  CHECK(event_timing(o, true, no_gpu, false) == "on");
  CHECK(event_timing(o, false, no_gpu, false) == "no CUDA driver");
  o.events = EventTiming::always;
  CHECK(event_timing(o, true, no_gpu, true) == "on");
  o.events = EventTiming::sampled;
  o.events_sample_every = 50;
  CHECK(event_timing(o, true, no_gpu, true) ==
        "on, sampled: the first 10 calls of each range, then one in 50");
  o.events = EventTiming::off;
  CHECK(event_timing(o, true, no_gpu, false) == "off by option (CUSCOPE_EVENTS=off)");
  o.events = EventTiming::always;
  o.gpu_events = false;  // the older switch wins
  CHECK(event_timing(o, true, no_gpu, true) == "disabled by option (CUSCOPE_GPU_EVENTS=0)");
}

TEST_CASE("sampled events given to start() with N outside 2-1e9 fall back to auto with a note", "[session]") {
  // N = 0 timed every call under a header saying "then one in 0"; CUSCOPE_EVENTS refuses both.
  for (const std::uint32_t bad : {0u, 1u, 1'000'000'001u}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.events = cuscope::EventTiming::sampled;
    o.events_sample_every = bad;
    cuscope_test::Session session(o);
    CHECK(cuscope::current_options().events == cuscope::EventTiming::automatic);
    CHECK(cuscope::current_options().events_sample_every == 0);
    CHECK(cuscope::snapshot().notes ==
          std::vector<std::string>{"Options::events_sample_every=" + std::to_string(bad) +
                                   " is out of range [2, 1000000000] for sampled events; using auto"});
  }
  for (const std::uint32_t good : {2u, 1'000'000'000u}) {
    cuscope::Options o = cuscope_test::quiet_options();
    o.events = cuscope::EventTiming::sampled;
    o.events_sample_every = good;
    cuscope_test::Session session(o);
    CHECK(cuscope::current_options().events == cuscope::EventTiming::sampled);
    CHECK(cuscope::current_options().events_sample_every == good);
    CHECK(cuscope::snapshot().notes.empty());
  }
}

TEST_CASE("CUSCOPE_EVENTS=off says so, without a GPU too", "[session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.events = cuscope::EventTiming::off;
  cuscope_test::Session session(o);
  CHECK(cuscope::snapshot().gpu_timing == "off by option (CUSCOPE_EVENTS=off)");
}

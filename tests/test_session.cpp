// The session: what it says without a GPU, the step window, explicit and at-exit output.
#include <cuda_runtime_api.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

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
  const cuscope::Report r = cuscope::snapshot();
  if (r.gpu_timing != "on") {
    CHECK(r.counters_status == r.gpu_timing);  // the one reason: no GPU
  } else {
    CHECK(r.counters_status != std::string(cuscope::kCountersNotRequested));
  }
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
  CHECK_FALSE(cuscope::start(cuscope_test::quiet_options()));  // already started
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
        "could not write the table to '/nonexistent-dir/cuscope/table.txt'; printing it to stderr instead");
}

// A fresh cuscope session per test case, so the cases also run together in one process.
#pragma once

#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <string>

#include "producers/cuda_probe.hpp"
#include "session/session.hpp"

namespace cuscope_test {

// The GPU tests check CUDA-event times beside CUPTI's: events on every call (CUSCOPE_EVENTS=always),
// unless a test asks for the default (default_events()). GPU_TEST_ATTRIBUTION=launch
// (tests/gpu-check.sh's second run of the GPU tests): every session ties GPU work to scopes by
// launch notes instead of external correlation (CUSCOPE_ATTRIBUTION=launch); GPU_TEST_EVENT_TIMESTAMPS=cupti,
// events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti). Not CUSCOPE_ names: cuscope warns of those
// it does not know.
inline cuscope::Options quiet_options() {
  cuscope::Options o;
  o.print_at_exit = false;
  o.events = cuscope::EventTiming::always;
  o.sync_records = o.memory_records = true;  // the tests check every kind of record (off by default)
  // GPU_TEST_ATTRIBUTION (tests/gpu-check.sh runs the GPU tests both ways): "external" or "launch";
  // unset, the default's.
  const char* attribution = std::getenv("GPU_TEST_ATTRIBUTION");
  if (attribution != nullptr && std::string(attribution) == "launch")
    o.attribution = cuscope::Attribution::launch;
  if (attribution != nullptr && std::string(attribution) == "external")
    o.attribution = cuscope::Attribution::external;
  // GPU_TEST_EVENT_TIMESTAMPS=cupti (tests/gpu-check.sh's trial run): the events timed by CUPTI's
  // CUDA_EVENT records, the candidate default for `always` and `sampled`
  // (docs/cupti-event-clock.md).
  const char* timestamps = std::getenv("GPU_TEST_EVENT_TIMESTAMPS");
  if (timestamps != nullptr && std::string(timestamps) == "cupti")
    o.event_timestamps = cuscope::EventTimestamps::cupti;
  return o;
}
inline cuscope::Options default_events(cuscope::Options o = quiet_options()) {
  o.events = cuscope::EventTiming::automatic;
  return o;
}
// A session whose trace must replay to its exit report: both files, and CUPTI faked (a test hands
// buffers to the decoder itself; CUDA events are not in a trace).
inline cuscope::Options replayable_options(const std::string& trace_path, const std::string& json_path) {
  cuscope::Options o = quiet_options();
  o.trace_path = trace_path;
  o.json_path = json_path;
  o.gpu_events = false;
  o.activities = false;
  return o;
}

// GPU_TEST_TRACE_DIR (tests/gpu-check.sh): each test case's session also writes a trace there,
// named after the case, which CPU tests replay (tests/data/gpu/); a case's later sessions get
// _2, _3, ... (the repeated-window case runs one per attribution: the second once overwrote the
// first). Not a CUSCOPE_ name: cuscope warns of those it does not know.
inline cuscope::Options traced_if_asked(cuscope::Options o) {
#ifdef CATCH_VERSION_MAJOR
  const char* dir = std::getenv("GPU_TEST_TRACE_DIR");
  if (dir == nullptr || *dir == '\0' || !o.trace_path.empty()) return o;
  std::string name = Catch::getResultCapture().getCurrentTestName();
  for (char& c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  const std::string stem = std::string(dir) + "/" + name.substr(0, 60);
  o.trace_path = stem + ".cuscope";
  for (int n = 2; std::filesystem::exists(o.trace_path); ++n)
    o.trace_path = stem + "_" + std::to_string(n) + ".cuscope";
#endif
  return o;
}

// While alive, a session that starts finds no GPU, whatever this machine has: it starts no CUPTI and
// records no CUDA events. For cases that feed the session fakes only (CUPTI's records, callbacks or
// hooks played by the test): on a machine with a GPU, real CUPTI tracing and CUDA events beside the
// fakes would add their own flags, records and processing to what the case counts. Make it before
// the Session (tests/fake_cuda.hpp is the other way round: a GPU that is not there).
struct WithoutGpu {
  cuscope::detail::GpuProbe probe;
  WithoutGpu() {
    probe.device = "no GPU";
    probe.reason = "no GPU (hidden from this test case: tests/session_fixture.hpp, WithoutGpu)";
    cuscope::detail::set_gpu_probe_for_testing(&probe);
  }
  ~WithoutGpu() { cuscope::detail::set_gpu_probe_for_testing(nullptr); }
  WithoutGpu(const WithoutGpu&) = delete;
  WithoutGpu& operator=(const WithoutGpu&) = delete;
};

struct Session {
  explicit Session(const cuscope::Options& o = quiet_options(), bool start = true) {
    cuscope::detail::reset_for_testing();
    if (start) cuscope::start(traced_if_asked(o));
  }
  ~Session() { cuscope::detail::reset_for_testing(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

// The calls of range `path` in `r`; 0 where it has none.
inline std::uint64_t calls(const cuscope::Report& r, const char* path) {
  const cuscope::RangeStats* range = r.find(path);
  return range != nullptr ? range->calls : 0;
}

// A scope "work" in each of `n` steps, ended one after another (cuscope::step()).
inline void work_steps(int n) {
  for (int i = 0; i < n; ++i) {
    { CUSCOPE_SCOPE("work"); }
    cuscope::step();
  }
}

}  // namespace cuscope_test

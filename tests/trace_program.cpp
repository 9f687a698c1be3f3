// A program that records a trace of a known synthetic GPU run, with no GPU: real scopes and steps,
// and CUPTI activity buffers (the 13.0 record layouts, built in memory) handed to the decoder the
// way CUPTI's buffer callback hands them. It also writes what it launched, so that tests can
// check what the trace's readers make of it (cuscope json, cuscope trace, HolisticTraceAnalysis).
//
// usage: cuscope_trace_program TRACE REPORT.json TABLE.txt EXPECTED.json
// Exits non-zero when its own assumptions (instance ids) do not hold.
#include <fmt/format.h>

#include <cstdio>
#include <cuscope/cuscope.hpp>
#include <map>
#include <string>

#include "cupti_buffer.hpp"
#include "model/aggregator.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/decode.hpp"
#include "session/session.hpp"

namespace {

struct Launch {
  const char* name;  // as CUPTI reports it (mangled or not)
  const char* demangled;
  std::uint64_t duration_ns;
  std::uint32_t stream;
  bool overlaps_previous;  // starts before the previous kernel on its stream ends
};

constexpr Launch kForward[] = {
    {"gemm_kernel", "gemm_kernel", 40'000, 7, false},
    {"_Z10layer_normPfi", "layer_norm(float*, int)", 5'000, 7, false},
    {"softmax_kernel", "softmax_kernel", 12'000, 13, false},
    {"gemm_kernel", "gemm_kernel", 40'000, 7, true},
};
constexpr int kSteps = 5;

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s TRACE REPORT.json TABLE.txt EXPECTED.json\n", argv[0]);
    return 2;
  }
  cuscope::Options o;
  o.trace_path = argv[1];
  o.json_path = argv[2];
  o.output_path = argv[3];
  o.warmup_steps = 1;  // the first step runs traced and is left out, in the trace as in the report
  // No real CUPTI and no CUDA events, on a machine with a GPU too: the run is the buffers below, and
  // real tracing would add its own deliveries and their processing to what the checks count.
  o.activities = false;
  o.gpu_events = false;
  cuscope::start(o);
  auto& s = cuscope::detail::session();
  s.forest.record_instances.store(true);  // as CUPTI tracing does when it starts

  std::string launched;  // every kernel and copy of the run, as JSON objects
  const auto launch = [&](const char* name, const char* kind, std::uint64_t start, std::uint64_t end) {
    launched += fmt::format(R"({}{{"name": "{}", "kind": "{}", "start_ns": {}, "end_ns": {}}})",
                            launched.empty() ? "" : ",\n  ", name, kind, start, end);
  };
  std::uint32_t correlation = 0;
  std::uint64_t seq = 0;  // instances of this thread's tree (slot 1), in order of entry
  for (int step = 0; step < kSteps; ++step) {
    cuscope_test::CuptiBuffer buffer;
    {
      CUSCOPE_SCOPE("step");
      if (step > 0) ++seq;
      CUSCOPE_SCOPE("forward");
      if (step > 0) ++seq;
      const std::uint64_t instance = (std::uint64_t{1} << 48) | seq;
      if (step > 0) {
        const cuscope::model::Node* node = s.forest.node_for_testing(instance);
        if (node == nullptr || s.forest.names.name(node->name_id) != "forward") {
          std::fprintf(stderr, "trace program: instance %llu is not 'forward'\n",
                       static_cast<unsigned long long>(instance));
          return 1;
        }
      }
      CUSCOPE_COUNT("tokens", 512);
      std::uint64_t t = cuscope::detail::now_ns();
      std::map<std::uint32_t, std::uint64_t> stream_end;
      for (const Launch& l : kForward) {
        ++correlation;
        buffer.api(correlation, t)
            .external(correlation, step > 0 ? instance : cuscope::model::kOutsideWindow);
        std::uint64_t start = std::max(t + 2'000, stream_end[l.stream]);
        if (l.overlaps_previous) start = stream_end[l.stream] - 10'000;
        buffer.kernel(correlation, start, start + l.duration_ns, l.name, 64, 256, l.stream);
        stream_end[l.stream] = start + l.duration_ns;
        launch(l.demangled, "kernel", start, start + l.duration_ns);
        t += 3'000;
      }
      ++correlation;
      buffer.api(correlation, t).external(correlation, step > 0 ? instance : cuscope::model::kOutsideWindow);
      // Every other step's copy is a cudaMemcpyAsync: the trace and its readers tell the two apart.
      buffer.memcpy(correlation, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, t + 100'000, t + 120'000,
                    CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
                    step % 2 == 0 ? 0 : CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC);
      launch("Memcpy HtoD", "memcpy", t + 100'000, t + 120'000);
      // The synthetic API calls must lie inside the scope that made them, as real ones do.
      while (cuscope::detail::now_ns() <= t + 1) {
      }
    }
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    cuscope::step();
  }
  cuscope::shutdown();

  std::FILE* f = std::fopen(argv[4], "w");
  if (f == nullptr) return 1;
  std::fprintf(f, "{\"steps\": %d, \"launched\": [\n  %s\n]}\n", kSteps, launched.c_str());
  return std::fclose(f) == 0 ? 0 : 1;
}

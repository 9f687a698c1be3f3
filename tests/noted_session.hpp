// A started session as CUPTI tracing with launch callbacks leaves it, without CUPTI: what the
// launch and call notes tests (test_launch_notes.cpp, test_call_notes.cpp) note into, drain and
// read back. Never here: a GPU (hidden where there is one: WithoutGpu), or a session left behind
// past its case.
#pragma once

#include <cstdint>
#include <cuscope/cuscope.hpp>
#include <mutex>
#include <vector>

#include "model/events.hpp"
#include "producers/launch_notes.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace cuscope_test {

inline void no_push(std::uint64_t) noexcept {}
inline void no_pop() noexcept {}

struct NotedSession {
  WithoutGpu no_gpu;  // before the session: no real CUPTI, no CUDA events beside the fakes
  Session session;
  explicit NotedSession(const cuscope::Options& o = quiet_options()) : session(o) {
    cuscope::detail::trace_with_fake_cupti_for_testing(no_push, no_pop, true);  // the hooks mark own calls
  }
  cuscope::detail::Session& sink() { return cuscope::detail::session(); }
  void note(std::uint64_t correlation) { cuscope::detail::note_launch(sink(), correlation); }
  // Drains the notes, then one kernel record per correlation id, as the buffer callback does.
  void kernels(const std::vector<std::uint64_t>& correlations) {
    auto& s = sink();
    std::lock_guard lock(s.aggregator_mutex);
    cuscope::detail::drain_launches(s);
    std::uint64_t t = 1'000;
    for (std::uint64_t c : correlations) {
      cuscope::model::KernelActivity k;
      k.correlation = c;
      k.start_ns = t;
      k.end_ns = t + 10;
      k.name = "k";
      s.aggregator.on(k);
      t += 100;
    }
    s.aggregator.settle(1, true);  // what is still waiting now never resolves
  }
};

}  // namespace cuscope_test

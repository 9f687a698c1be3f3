// Scopes in a session that CUPTI traces, with fake correlation hooks in place of CUPTI's: each
// recorded entry pushes its instance id and its exit pops it, on the first visit and on the common
// path alike, and cuscope's own calls stay out of the range's host time.
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <vector>

#include "fake_cuda.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"

namespace {

struct Hooks {
  std::vector<std::uint64_t> pushed;  // instance ids, in order
  int pops = 0;
  std::chrono::nanoseconds busy{0};  // how long each hook call keeps the thread
};
Hooks* g_hooks = nullptr;

void spin(std::chrono::nanoseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}
void fake_push(std::uint64_t instance) noexcept {
  g_hooks->pushed.push_back(instance);
  spin(g_hooks->busy);
}
void fake_pop() noexcept {
  ++g_hooks->pops;
  spin(g_hooks->busy);
}

struct TracedSession {
  cuscope_test::WithoutGpu no_gpu;  // before the session: no real CUPTI, no CUDA events beside the fakes
  cuscope_test::Session session;
  Hooks hooks;
  TracedSession() {
    g_hooks = &hooks;
    cuscope::detail::trace_with_fake_cupti_for_testing(fake_push, fake_pop);
  }
  ~TracedSession() { g_hooks = nullptr; }
  TracedSession(const TracedSession&) = delete;
  TracedSession& operator=(const TracedSession&) = delete;
};

// The range path of an instance id, and its parent instance, as the CUPTI decoder resolves them.
std::string path_of(std::uint64_t instance, std::uint64_t* parent) {
  auto& forest = cuscope::detail::session().forest;
  cuscope::model::Node* node = nullptr;
  if (!forest.resolve_instance(instance, &node, parent)) return "(unresolved)";
  return std::string(forest.names.name(node->name_id));
}

}  // namespace

TEST_CASE("a traced session's scopes push their instance at entry and pop it at exit",
          "[scopes][tracing]") {
  TracedSession t;
  using cuscope::detail::g_flags;
  // CUSCOPE_EVENTS=always, but no GPU (hidden where there is one): the flags are the recording and
  // the correlation only, the mode the common path takes.
  CHECK(g_flags.load() ==
        (cuscope::detail::kRecording | cuscope::detail::kInstances | cuscope::detail::kCorrelation));
  constexpr int kCalls = 1000;
  for (int i = 0; i < kCalls; ++i) {
    CUSCOPE_SCOPE("outer");
    CUSCOPE_SCOPE("inner");
  }
  REQUIRE(t.hooks.pushed.size() == 2 * kCalls);
  CHECK(t.hooks.pops == 2 * kCalls);
  // Instance ids increase per thread; the last calls are still in the thread's instance ring.
  for (std::size_t i = 1; i < t.hooks.pushed.size(); ++i) CHECK(t.hooks.pushed[i] == t.hooks.pushed[i - 1] + 1);
  std::uint64_t parent = 0;
  const std::uint64_t outer = t.hooks.pushed[2 * kCalls - 2];
  CHECK(path_of(outer, &parent) == "outer");
  CHECK(parent == 0);
  CHECK(path_of(t.hooks.pushed[2 * kCalls - 1], &parent) == "inner");
  CHECK(parent == outer);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("outer")->calls == kCalls);
  CHECK(r.find("outer/inner")->calls == kCalls);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("a traced scope's host time leaves out the correlation push and pop", "[scopes][tracing]") {
  TracedSession t;
  t.hooks.busy = std::chrono::milliseconds(3);
  // The first call takes the general path (the call site's first visit), the others the common one.
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("empty");
  }
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(t.hooks.pushed.size() == 3);
  CHECK(t.hooks.pops == 3);
  const auto* empty = r.find("empty");
  REQUIRE(empty != nullptr);
  CHECK(empty->calls == 3);
  // Each push and each pop kept the thread 3 ms; the scope itself does nothing.
  CHECK(empty->host.max_ns < 1'000'000);
}

TEST_CASE("a traced scope entered by name pushes and pops as a call site's does", "[scopes][tracing]") {
  TracedSession t;
  for (int i = 0; i < 3; ++i) {
    cuscope::Scope s{std::string_view{"dynamic"}};
  }
  cuscope::push("pushed");
  cuscope::pop();
  CHECK(t.hooks.pushed.size() == 4);
  CHECK(t.hooks.pops == 4);
  std::uint64_t parent = 1;
  CHECK(path_of(t.hooks.pushed[3], &parent) == "pushed");
  CHECK(parent == 0);
}

TEST_CASE("a stream scope's host time leaves out its CUDA event records", "[scopes][gpu_events]") {
  cuscope_test::FakeCuda cuda;
  cuda.record_takes(std::chrono::milliseconds(3));
  cuscope::Options o = cuscope_test::quiet_options();  // CUSCOPE_EVENTS=always
  o.activities = false;
  cuscope_test::Session session(o);
  for (int i = 0; i < 3; ++i) {
    CUSCOPE_SCOPE("timed", cuscope_test::FakeCuda::stream(0));
    cuda.advance_ns(1'000);
  }
  cuscope::flush();
  const cuscope::Report r = cuscope::snapshot();
  const auto* timed = r.find("timed");
  REQUIRE(timed != nullptr);
  CHECK(timed->calls == 3);
  CHECK(timed->gpu.count == 3);  // each call timed by its two records, 3 ms each
  CHECK(cuda.calls().record == 6);
  CHECK(timed->host.max_ns < 1'000'000);
}

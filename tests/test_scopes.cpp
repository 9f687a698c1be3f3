// Scopes through the public API: nesting, exact counts, exceptions, names, misuse, switches.
#include <catch2/catch.hpp>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>

#include "producers/cuda_probe.hpp"
#include "session_fixture.hpp"

namespace {

void named_after_me() { CUSCOPE_FUNCTION(); }

int fib(int n) {
  CUSCOPE_FUNCTION();
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int descend(int n) {
  CUSCOPE_FUNCTION();
  return n == 0 ? 0 : 1 + descend(n - 1);
}

}  // namespace

TEST_CASE("scopes nest per thread and time the host", "[scopes]") {
  cuscope_test::Session session;
  {
    CUSCOPE_SCOPE("outer");
    {
      CUSCOPE_SCOPE("inner");
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  const auto* outer = r.find("outer");
  const auto* inner = r.find("outer/inner");
  REQUIRE(outer != nullptr);
  REQUIRE(inner != nullptr);
  CHECK(outer->calls == 1);
  CHECK(inner->calls == 1);
  CHECK(inner->host.total_ns >= 2'000'000);
  CHECK(outer->host.total_ns >= inner->host.total_ns);
  CHECK(outer->host_self_ns == outer->host.total_ns - inner->host.total_ns);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("every entry of a scope in a loop is counted exactly", "[scopes]") {
  cuscope_test::Session session;
  for (int i = 0; i < 10'000; ++i) {
    CUSCOPE_SCOPE("loop");
    if (i % 10 == 0) {
      CUSCOPE_SCOPE("tenth");
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("loop")->calls == 10'000);
  CHECK(r.find("loop")->host.count == 10'000);
  CHECK(r.find("loop/tenth")->calls == 1'000);
}

TEST_CASE("an exception unwinding through scopes closes each of them once", "[scopes]") {
  cuscope_test::Session session;
  try {
    CUSCOPE_SCOPE("throws");
    CUSCOPE_SCOPE("deeper");
    throw std::runtime_error("boom");
  } catch (const std::runtime_error&) {
  }
  { CUSCOPE_SCOPE("after"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("throws")->calls == 1);
  CHECK(r.find("throws/deeper")->calls == 1);
  CHECK(r.find("after") != nullptr);
  CHECK(r.find("throws/after") == nullptr);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

TEST_CASE("CUSCOPE_FUNCTION names the scope after the enclosing function", "[scopes]") {
  cuscope_test::Session session;
  named_after_me();
  named_after_me();
  CHECK(cuscope::snapshot().find("named_after_me")->calls == 2);
}

TEST_CASE("a recursive function is one range with all its calls", "[scopes]") {
  cuscope_test::Session session;
  CHECK(fib(6) == 8);
  const cuscope::Report report = cuscope::snapshot();
  const auto* f = report.find("fib");
  REQUIRE(f != nullptr);
  CHECK(f->calls == 25);  // fib(6) makes 25 calls
  CHECK(f->recursive_calls == 24);
  CHECK(f->host.count == 1);
  CHECK(f->children.empty());
}

TEST_CASE("scopes named at run time share a range with the same literal name", "[scopes]") {
  cuscope_test::Session session;
  const std::string name = std::string("layer_") + std::to_string(3);
  { cuscope::Scope s{std::string_view(name)}; }
  { CUSCOPE_SCOPE("layer_3"); }
  CHECK(cuscope::snapshot().find("layer_3")->calls == 2);
}

TEST_CASE("odd scope names are adjusted, counted, and still recorded", "[scopes]") {
  cuscope_test::Session session;
  const auto before = cuscope::snapshot().diagnostics.adjusted_names;  // counted once per process
  { cuscope::Scope s{std::string_view("")}; }
  { cuscope::Scope s{std::string_view("read/write")}; }
  { cuscope::Scope s{std::string_view("line\nbreak")}; }
  { cuscope::Scope s{std::string_view("line\nbreak")}; }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("(unnamed)") != nullptr);
  CHECK(r.find("read\u2215write") != nullptr);
  CHECK(r.find("line?break")->calls == 2);
  CHECK(r.diagnostics.adjusted_names - before == 3);
}

TEST_CASE("push and pop pair up, a pop with nothing open is counted", "[scopes]") {
  cuscope_test::Session session;
  cuscope::push("pushed");
  cuscope::push("child");
  cuscope::pop();
  cuscope::pop();
  cuscope::pop();
  cuscope::push("left_open");
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("pushed")->calls == 1);
  CHECK(r.find("pushed/child")->calls == 1);
  CHECK(r.diagnostics.unbalanced_ends == 1);
  CHECK(r.diagnostics.open_scopes == 1);
  cuscope::pop();
}

TEST_CASE("a pop on a thread that never opened a scope is counted", "[scopes]") {
  cuscope_test::Session session;
  std::thread([] { cuscope::pop(); }).join();
  CHECK(cuscope::snapshot().diagnostics.unbalanced_ends == 1);
}

TEST_CASE("a scope ended on another thread is counted, and does not corrupt that thread",
          "[scopes][threads]") {
  cuscope_test::Session session;
  static cuscope::detail::Site site{"wanderer", __FILE__, __LINE__};
  std::optional<cuscope::Scope> scope;
  scope.emplace(site);
  std::thread([&] {
    { CUSCOPE_SCOPE("other_thread_work"); }
    scope.reset();
    { CUSCOPE_SCOPE("other_thread_work"); }
  }).join();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.cross_thread_ends == 1);
  CHECK(r.find("other_thread_work")->calls == 2);
  CHECK(r.diagnostics.open_scopes == 1);  // closed on its own thread at that thread's next boundary
  CHECK(r.find("wanderer")->calls == 0);
  { CUSCOPE_SCOPE("next_on_this_thread"); }
  const cuscope::Report after = cuscope::snapshot();
  CHECK(after.find("wanderer")->calls == 1);
  CHECK(after.find("wanderer")->host.count == 1);
  CHECK(after.find("next_on_this_thread")->calls == 1);  // top-level, not under "wanderer"
  CHECK(after.find("wanderer/next_on_this_thread") == nullptr);
  CHECK(after.diagnostics.open_scopes == 0);
  CHECK(after.diagnostics.unbalanced_ends == 0);
}

TEST_CASE("the run-time switch turns recording off and on", "[scopes]") {
  cuscope_test::Session session;
  cuscope::set_enabled(false);
  CHECK_FALSE(cuscope::enabled());
  { CUSCOPE_SCOPE("while_off"); }
  cuscope::set_enabled(true);
  CHECK(cuscope::enabled());
  { CUSCOPE_SCOPE("while_on"); }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("while_off") == nullptr);
  CHECK(r.find("while_on")->calls == 1);
}

TEST_CASE("a scope open while recording is switched off still closes cleanly", "[scopes]") {
  cuscope_test::Session session;
  {
    CUSCOPE_SCOPE("spanning");
    cuscope::set_enabled(false);
  }
  cuscope::set_enabled(true);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("spanning")->calls == 1);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("options with enabled = false make scopes record nothing", "[scopes]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.enabled = false;
  cuscope_test::Session session(o);
  { CUSCOPE_SCOPE("disabled_by_option"); }
  CHECK(cuscope::snapshot().find("disabled_by_option") == nullptr);
  CHECK_FALSE(cuscope::enabled());
}

TEST_CASE("user counters add to the innermost open scope and roll up with rates", "[scopes][counts]") {
  cuscope_test::Session session;
  {
    CUSCOPE_SCOPE("generate");
    cuscope::count("tokens", 100);
    {
      CUSCOPE_SCOPE("decode");
      CUSCOPE_COUNT("tokens", 50);
      CUSCOPE_COUNT("batches", 1);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }
  const cuscope::Report r = cuscope::snapshot();
  const auto* gen = r.find("generate");
  const auto* dec = r.find("generate/decode");
  REQUIRE(gen->counts.size() == 2);  // by name: batches, tokens
  CHECK(gen->counts[0].name == "batches");
  CHECK(gen->counts[0].self == 0);
  CHECK(gen->counts[0].total == 1);
  CHECK(gen->counts[1].name == "tokens");
  CHECK(gen->counts[1].self == 100);
  CHECK(gen->counts[1].total == 150);
  REQUIRE(dec->counts.size() == 2);
  CHECK(dec->counts[1].total == 50);
  CHECK(gen->counts[1].per_host_second == Approx(150.0 / (double(gen->host.total_ns) / 1e9)));
  CHECK(r.root().counts[1].total == 150);
  if (gen->gpu.count == 0 && gen->total.gpu_busy_ns == 0) CHECK(gen->counts[1].per_gpu_second == 0);
  CHECK(cuscope::format_table(r).find("# tokens 150  ") != std::string::npos);
}

TEST_CASE("counts outside every scope go to the root, warm-up counts are left out", "[scopes][counts]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.warmup_steps = 1;
  cuscope_test::Session session(o);
  CUSCOPE_COUNT("requests", 5);  // warm-up step: not recorded
  cuscope::step();
  CUSCOPE_COUNT("requests", 7);
  cuscope::count("requests", 0.5);
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.root().counts.size() == 1);
  CHECK(r.root().counts[0].self == 7.5);
  CHECK(r.root().counts[0].total == 7.5);
}

TEST_CASE("direct recursion 10,001 deep is one range: every call counted, time once", "[scopes]") {
  cuscope_test::Session session;
  CHECK(descend(10'000) == 10'000);
  const cuscope::Report r = cuscope::snapshot();
  const auto* d = r.find("descend");
  REQUIRE(d != nullptr);
  CHECK(d->calls == 10'001);
  CHECK(d->recursive_calls == 10'000);
  CHECK(d->host.count == 1);
  CHECK(d->children.empty());
  CHECK(r.diagnostics.depth_overflows == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("recursive pushes re-enter the open range at any depth", "[scopes]") {
  cuscope_test::Session session;
  for (int i = 0; i < 10'001; ++i) cuscope::push("again");
  CHECK(cuscope::snapshot().diagnostics.open_scopes == 10'001);
  for (int i = 0; i < 10'001; ++i) cuscope::pop();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("again")->calls == 10'001);
  CHECK(r.find("again")->recursive_calls == 10'000);
  CHECK(r.diagnostics.depth_overflows == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
}

TEST_CASE("balanced pushes deeper than the depth limit are counted once and end balanced", "[scopes]") {
  cuscope_test::Session session;  // max_depth 64
  constexpr int kDepth = 1'000;
  for (int i = 0; i < kDepth; ++i) cuscope::push("level_" + std::to_string(i));
  for (int i = 0; i < kDepth; ++i) cuscope::pop();
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.depth_overflows == kDepth - 64);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.ranges.size() == 65);
  CHECK(r.ranges.back().calls == 1);
  CHECK(r.ranges.back().depth == 64);
}

TEST_CASE("push and pop stay paired while recording is off by option", "[scopes]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.enabled = false;
  cuscope_test::Session session(o);
  for (int i = 0; i < 100'000; ++i) {
    cuscope::push("off");
    cuscope::pop();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.find("off") == nullptr);
}

TEST_CASE("a pop matches its push whatever the recording state was at either end", "[scopes]") {
  cuscope_test::Session session;
  cuscope::push("opened_on");
  cuscope::set_enabled(false);
  cuscope::push("opened_off");
  cuscope::set_enabled(true);
  cuscope::push("opened_on_again");
  cuscope::pop();  // opened_on_again
  cuscope::pop();  // opened_off: nothing to close
  cuscope::set_enabled(false);
  cuscope::pop();  // opened_on: closed although recording is off
  cuscope::set_enabled(true);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.find("opened_on")->calls == 1);
  CHECK(r.find("opened_on/opened_on_again")->calls == 1);
  CHECK(r.find("opened_on/opened_off") == nullptr);
  CHECK(r.diagnostics.unbalanced_ends == 0);
  CHECK(r.diagnostics.open_scopes == 0);
  cuscope::pop();  // a real stray pop is still counted
  CHECK(cuscope::snapshot().diagnostics.unbalanced_ends == 1);
}

TEST_CASE("push and pop after shutdown are not misuse", "[scopes]") {
  cuscope_test::Session session;
  cuscope::push("before_shutdown");
  cuscope::shutdown();
  cuscope::pop();
  for (int i = 0; i < 1'000; ++i) {
    cuscope::push("after_shutdown");
    cuscope::pop();
  }
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.unbalanced_ends == 0);
  // The report is final at shutdown (issue 26): the scope open then stays open in it.
  REQUIRE(r.find("before_shutdown") != nullptr);
  CHECK(r.find("before_shutdown")->calls == 0);
  CHECK(r.diagnostics.open_scopes == 1);
  CHECK(r.find("after_shutdown") == nullptr);
}

TEST_CASE("a genuine name and an adjusted one that prints alike are two ranges", "[scopes]") {
  cuscope_test::Session session;
  { cuscope::Scope s{std::string_view("a/b")}; }
  for (int i = 0; i < 2; ++i) {
    cuscope::Scope s{std::string_view("a\u2215b")};
  }
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.root().children.size() == 2);
  const auto& first = r.ranges[r.root().children[0]];
  const auto& second = r.ranges[r.root().children[1]];
  CHECK(first.name == "a\u2215b");
  CHECK(first.calls == 1);
  CHECK(second.name == "a\u2215b");
  CHECK(second.calls == 2);
}

// Steps with hardware counters run their kernels replayed and serialized: their scopes are
// reported apart under "(counted steps)", and the normal ranges hold only uncounted steps.
TEST_CASE("scopes of steps with hardware counters are reported apart under (counted steps)", "[scopes]") {
  cuscope_test::Session session;
  using cuscope::detail::g_flags;
  const std::uint32_t normal = g_flags.load();
  REQUIRE((normal & cuscope::detail::kRecording) != 0);
  for (int step = 0; step < 5; ++step) {
    // What flags_for() sets during the first CUSCOPE_METRIC_STEPS recorded steps.
    if (step < 2) g_flags.store(normal | cuscope::detail::kCounters);
    {
      CUSCOPE_SCOPE("step");
      { CUSCOPE_SCOPE("mlp"); }
    }
    g_flags.store(normal);
  }
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.find("step") != nullptr);
  CHECK(r.find("step")->calls == 3);
  CHECK(r.find("step/mlp")->calls == 3);
  REQUIRE(r.find("(counted steps)") != nullptr);
  CHECK(r.find("(counted steps)")->calls == 2);
  CHECK(r.find("(counted steps)/step")->calls == 2);
  CHECK(r.find("(counted steps)/step/mlp")->calls == 2);
  CHECK(r.diagnostics.open_scopes == 0);
  CHECK(r.diagnostics.unbalanced_ends == 0);
}

// What the Python scope asks before it looks up torch's current stream: whether a scope entered now
// would record CUDA events (and so needs a stream).
TEST_CASE("a scope needs a stream only while the session times CUDA events", "[scopes]") {
  cuscope_test::Session session;  // CUSCOPE_EVENTS=always
  using cuscope::detail::g_flags;
  using cuscope::detail::scope_streams_used;
  // Events time every scope where there is a GPU; without one (CI), none.
  const bool gpu = cuscope::detail::probe_gpu().available;
  const std::uint32_t normal = g_flags.load();
  CHECK(((normal & cuscope::detail::kGpuEvents) != 0) == gpu);
  CHECK(scope_streams_used() == gpu);
  g_flags.store(normal | cuscope::detail::kGpuEvents);  // what flags_for() sets where events time scopes
  CHECK(scope_streams_used());
  g_flags.store(normal);
  cuscope::set_enabled(false);
  CHECK_FALSE(scope_streams_used());  // a disabled session records nothing
  cuscope::set_enabled(true);
  CHECK(scope_streams_used() == gpu);
}

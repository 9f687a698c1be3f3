// Trace mode in a live session: scopes, counts, steps and CUPTI buffers (handed to the decoder by
// the test) replay to the exit report; a trace ended by a reset carries the session's summary; a
// repeated window's trace read before the session ends (as a killed program leaves it); its rank
// and world size; a path that cannot be written (and a file there never removed); CUSCOPE_TRACE
// and CUSCOPE_TRACE_LIMIT.
//
// Never: depend on a GPU (the CUPTI buffers are built in memory and handed to the decoder); never
// a session, a trace file, a JSON file or RANK/WORLD_SIZE left behind past its case.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cupti_buffer.hpp"
#include "model/range_tree.hpp"
#include "producers/cupti/decode.hpp"
#include "session_fixture.hpp"
#include "trace/replay.hpp"
#include "trace_kit.hpp"

namespace {

using cuscope::Report;
using cuscope_test::trace_kit::read_file;
using cuscope_test::trace_kit::replay_as_exit;
using cuscope_test::trace_kit::temp_path;
namespace trace = cuscope::trace;
namespace model = cuscope::model;

}  // namespace

TEST_CASE("trace mode in a session: scopes, counts, steps and CUPTI buffers replay to the exit report",
          "[trace][session]") {
  const std::string trace_path = temp_path("session.cuscope");
  const std::string json_path = temp_path("session.json");
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.json_path = json_path;
  o.warmup_steps = 1;
  o.max_depth = 2;
  o.gpu_events = false;  // CUDA-event times are not in a trace: keep them out of the live report
  o.activities = false;  // the test hands CUPTI buffers to the decoder itself
  cuscope_test::Session session(o);
  auto& s = cuscope::detail::session();
  s.forest.record_instances = true;
  // Scopes take the common path once the counter clock is calibrated (about 100 ms after start):
  // wait for it, so that trace mode's common path, and its way out when instances are recorded,
  // is what this test runs every time (on a machine without an invariant counter it never is).
  for (int waited = 0;
       waited < 3000 && cuscope::snapshot().clock.rfind("CLOCK_MONOTONIC (calibrating", 0) == 0; waited += 10)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  for (int i = 0; i < 4; ++i) {
    cuscope_test::CuptiBuffer buffer;
    {
      CUSCOPE_SCOPE("step");
      CUSCOPE_SCOPE("layer");
      {
        CUSCOPE_SCOPE("too_deep");  // past max_depth 2: timed into "layer", counted
      }
      CUSCOPE_COUNT("tokens", 64);
      // Instances of this thread's tree (slot 1) in order: step, layer, pushed per recorded step.
      const std::uint64_t instance = i == 0 ? model::kOutsideWindow : (std::uint64_t{1} << 48) | (3 * i - 1);
      buffer.api(100 + i, 1).external(100 + i, instance).kernel(100 + i, 10, 20 + i, "k");
    }
    cuscope::push("pushed");
    cuscope::pop();
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    cuscope::step();
  }
  cuscope::shutdown();
  const Report replayed = replay_as_exit(trace_path, json_path);
  REQUIRE(replayed.find("step/layer") != nullptr);
  REQUIRE(replayed.find("pushed") != nullptr);
  CHECK(replayed.find("step/layer")->self.kernel_calls == 3);
  CHECK(replayed.diagnostics.outside_window_records == 1);
  CHECK(replayed.diagnostics.depth_overflows == 3);
  CHECK(replayed.find("pushed")->calls == 3);
}

// The H100 run's test traces (each ended by reset_for_testing, not a shutdown) named no device and
// said activity was off.
TEST_CASE("a session's trace ended by a reset carries the session's summary, as one ended at exit",
          "[trace][session]") {
  const std::string trace_path = temp_path("reset.cuscope");
  Report live;
  {
    cuscope::Options o = cuscope_test::quiet_options();
    o.trace_path = trace_path;
    cuscope_test::Session session(o);
    {
      CUSCOPE_SCOPE("work");
    }
    live = cuscope::snapshot();
    cuscope::detail::reset_for_testing();
  }
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(trace_path, &replayed, &error));
  std::remove(trace_path.c_str());
  REQUIRE_FALSE(live.activity_status.empty());
  CHECK(replayed.device == live.device);
  CHECK(replayed.gpu_timing == live.gpu_timing);
  CHECK(replayed.activity_status == live.activity_status);
  CHECK_FALSE(replayed.clock.empty());  // not equal: the clock's calibration may end in between
  REQUIRE(replayed.find("work") != nullptr);
  CHECK(replayed.find("work")->calls == 1);
}

TEST_CASE("a repeated window's trace read while the program runs has the session's steps and calls",
          "[trace][session][window][partial]") {
  const std::string trace_path = temp_path("cycles.cuscope");
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.wait_steps = 2;
  o.warmup_steps = 1;
  o.active_steps = 2;
  o.repeat = 3;  // steps 3, 4, 8, 9, 13 and 14 recorded
  cuscope_test::Session session(o);
  for (int i = 0; i < 20; ++i) {
    { CUSCOPE_SCOPE("cycled"); }
    cuscope::step();
  }
  const Report live = cuscope::snapshot();
  // What `cuscope show --partial` finds of a program killed now: the writer's passes, every 5 ms.
  Report cut;
  std::string error;
  for (int waited_ms = 0; waited_ms < 5000 && cut.steps != live.steps; waited_ms += 10) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    cut = Report{};
    trace::replay_file(trace_path, &cut, &error, true);
  }
  std::remove(trace_path.c_str());
  CHECK(live.steps == 20);
  CHECK(live.recorded_steps == 6);
  CHECK(cut.steps == live.steps);
  CHECK(cut.recorded_steps == live.recorded_steps);
  CHECK_FALSE(cut.final);  // the trace holds no end of the session yet
  CHECK_FALSE(live.final);
  CHECK(cut.window_start_step == live.window_start_step);
  REQUIRE(cut.find("cycled") != nullptr);
  CHECK(cut.find("cycled")->calls == 6);
}

// A thread's trace ring (1.5 MiB) is made as the thread attaches to the session, before its first
// scope reads the clock: never inside a range's time. Made by the scope's own Enter event, as before,
// it cost that scope about 1 ms, and its Attach event carried the Enter's time.
TEST_CASE("trace mode: a thread's ring is made as it attaches and before its first scope reads the clock",
          "[trace][session]") {
  const std::string trace_path = temp_path("attach.cuscope");
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.gpu_events = false;
  o.activities = false;
  cuscope_test::Session session(o);
  trace::Writer* writer = trace::g_writer.load();
  REQUIRE(writer != nullptr);
  bool before = true, inside = false;
  std::thread fresh([&] {  // a thread of its own: no ring yet
    before = writer->this_thread_attached();
    CUSCOPE_SCOPE("first_scope");
    inside = writer->this_thread_attached();
  });
  fresh.join();
  CHECK_FALSE(before);
  CHECK(inside);
  cuscope::shutdown();

  struct Events : trace::Visitor {
    std::uint32_t first_id = 0;
    std::vector<trace::ScopeEvent> events;
    void name(std::uint32_t id, std::string_view text) override {
      if (text == "first_scope") first_id = id;
    }
    void scope(const trace::ScopeEvent& e) override { events.push_back(e); }
  } seen;
  trace::Reader reader;
  std::string error;
  REQUIRE(reader.open(trace_path, &error));
  REQUIRE(reader.read(seen, &error));
  const auto enter = std::find_if(seen.events.begin(), seen.events.end(), [&](const trace::ScopeEvent& e) {
    return trace::kind_of(e) == trace::ScopeKind::Enter && e.arg == seen.first_id;
  });
  REQUIRE(enter != seen.events.end());
  const auto attach = std::find_if(seen.events.begin(), enter, [&](const trace::ScopeEvent& e) {
    return trace::kind_of(e) == trace::ScopeKind::Attach && trace::slot_of(e) == trace::slot_of(*enter);
  });
  REQUIRE(attach != enter);
  // The scope's clock was read after the ring was made (by the Enter event, the two were one time).
  CHECK(attach->ns < enter->ns);
  std::remove(trace_path.c_str());
}

// A thread's ring goes back at its exit after its thread_local destructors, as the thread's other
// objects do: a thread_local built before the thread's first scope is destroyed after anything built
// then, and its destructor may open a scope. Handed back by a thread_local of its own, the ring went
// first, that scope made another, and nobody handed it back: the writer held it for good.
TEST_CASE("trace mode: a scope in a thread_local destructor leaves no ring behind its thread",
          "[trace][session][lifetime]") {
  const std::string trace_path = temp_path("tls_ring.cuscope");
  const std::string json_path = temp_path("tls_ring.json");
  cuscope_test::Session session(cuscope_test::replayable_options(trace_path, json_path));
  trace::Writer* writer = trace::g_writer.load();
  REQUIRE(writer != nullptr);
  { CUSCOPE_SCOPE("main_thread"); }  // this thread's ring, made before counting
  const std::size_t held = writer->rings_for_testing();
  struct ScopeAtExit {
    ~ScopeAtExit() { CUSCOPE_SCOPE("in_a_thread_local_destructor"); }
  };
  std::thread exiting([] {
    static thread_local ScopeAtExit at_exit;  // built before the thread's first scope
    static_cast<void>(&at_exit);
    CUSCOPE_SCOPE("first_scope");
  });
  exiting.join();
  // Each writer pass (every 5 ms) frees the rings handed back once drained.
  for (int waited = 0; waited < 400 && writer->rings_for_testing() != held; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(writer->rings_for_testing() == held);
  cuscope::shutdown();
  const Report replayed = replay_as_exit(trace_path, json_path);
  REQUIRE(replayed.find("in_a_thread_local_destructor") != nullptr);
  CHECK(replayed.find("in_a_thread_local_destructor")->calls == 1);
}

// An end with nothing to end (a pop() with no push()) is no scope event: it was counted in the
// thread's tree where the thread had one, and so lost to the trace, whose replay then counted fewer
// unbalanced ends than the exit report. Now one session count, which the trace's summary carries.
TEST_CASE("trace mode: ends with nothing to end replay as the exit report counts them", "[trace][session]") {
  const std::string trace_path = temp_path("stray.cuscope");
  const std::string json_path = temp_path("stray.json");
  cuscope_test::Session session(cuscope_test::replayable_options(trace_path, json_path));
  {
    CUSCOPE_SCOPE("before");  // this thread has its tree now
  }
  cuscope::pop();
  std::thread never_in_a_scope([] { cuscope::pop(); });
  never_in_a_scope.join();
  cuscope::shutdown();
  const Report replayed = replay_as_exit(trace_path, json_path);
  CHECK(replayed.final);  // the session's end is in the file
  CHECK(replayed.diagnostics.unbalanced_ends == 2);
}

TEST_CASE("a trace path that cannot be written turns trace mode off with a note", "[trace][session]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = "/nonexistent-dir/x.cuscope";
  o.gpu_events = false;
  o.activities = false;
  cuscope_test::Session session(o);
  { CUSCOPE_SCOPE("still_recorded"); }
  const Report r = cuscope::snapshot();
  CHECK(r.find("still_recorded")->calls == 1);
  const std::string note =
      "trace mode is off: cannot open '/nonexistent-dir/x.cuscope' for writing (CUSCOPE_TRACE)";
  CHECK(std::count(r.notes.begin(), r.notes.end(), note) == 1);
}

TEST_CASE("below a cuscope run, a process that recorded nothing removes no trace file it could not open",
          "[trace][session]") {
  // The user's trace from before, made read-only to keep it: the session cannot open it (run as
  // root, the session starts as another user), so it writes none, and its exit leaves the file.
  const std::string trace_path = temp_path("kept_read_only.cuscope");
  std::remove(trace_path.c_str());
  std::ofstream(trace_path) << "the user's trace";
  REQUIRE(::chmod(trace_path.c_str(), 0444) == 0);
  // Below a run (another process's id) that began after the file was written: the file's own path.
  const auto now = std::chrono::system_clock::now().time_since_epoch();
  const auto hour_on =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now + std::chrono::hours(1)).count();
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = trace_path;
  o.gpu_events = false;
  o.activities = false;
  cuscope_test::Session session(o, false);
  const bool root = ::geteuid() == 0;
  if (root) REQUIRE(::seteuid(65534) == 0);  // nobody: the file is not theirs to write
  ::setenv("CUSCOPE_RUN_ID", ("1-" + std::to_string(hour_on)).c_str(), 1);
  cuscope::start(o);
  ::unsetenv("CUSCOPE_RUN_ID");
  if (root) REQUIRE(::seteuid(0) == 0);
  const std::string note = "trace mode is off: cannot open '" + trace_path + "' for writing (CUSCOPE_TRACE)";
  const Report r = cuscope::snapshot();
  CHECK(std::count(r.notes.begin(), r.notes.end(), note) == 1);
  cuscope::shutdown();  // nothing recorded: no files of its own, and none of the user's removed
  CHECK(read_file(trace_path) == "the user's trace");
  std::remove(trace_path.c_str());
}

TEST_CASE("CUSCOPE_TRACE and CUSCOPE_TRACE_LIMIT set trace mode's options", "[trace][options]") {
  static const char* limit = nullptr;
  const auto lookup = [](const char* name) -> const char* {
    if (std::string_view(name) == "CUSCOPE_TRACE") return "/tmp/run.cuscope";
    if (std::string_view(name) == "CUSCOPE_TRACE_LIMIT") return limit;
    return nullptr;
  };
  std::vector<cuscope::OptionError> errors;
  CHECK(cuscope::Options{}.trace_limit_mb == 256);
  limit = "64";
  cuscope::Options o = cuscope::options_from(lookup, {}, &errors);
  CHECK(errors.empty());
  CHECK(o.trace_path == "/tmp/run.cuscope");
  CHECK(o.trace_limit_mb == 64);
  limit = "0";
  o = cuscope::options_from(lookup, {}, &errors);
  CHECK(o.trace_limit_mb == 256);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "CUSCOPE_TRACE_LIMIT='0' is out of range [1, 1000000]; keeping 256");
}

TEST_CASE("a session's trace records its rank and world size, and its replay reports them",
          "[trace][session][ranks]") {
  // Paths without %r: as every rank would write them, this rank writes its own, and says so.
  const std::string trace_path = temp_path("rank-3.cuscope");
  const std::string json_path = temp_path("rank-3.json");
  std::remove(trace_path.c_str());
  std::remove(json_path.c_str());
  ::setenv("RANK", "3", 1);
  ::setenv("WORLD_SIZE", "4", 1);
  cuscope::Options o = cuscope_test::quiet_options();
  o.trace_path = temp_path("rank.cuscope");
  o.json_path = temp_path("rank.json");
  o.gpu_events = false;
  o.activities = false;  // the test hands a CUPTI buffer to the decoder itself
  {
    cuscope_test::Session session(o);
    auto& s = cuscope::detail::session();
    s.forest.record_instances = true;
    cuscope_test::CuptiBuffer buffer;
    {
      CUSCOPE_SCOPE("load");
      // The first instance of this thread's tree (slot 1): the scope above.
      buffer.api(7, 1).external(7, (std::uint64_t{1} << 48) | 1);
      buffer.memcpy(7, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 1 << 20, 10, 20, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
                    CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
    }
    {
      std::lock_guard lock(s.aggregator_mutex);
      cuscope::detail::consume_buffer(buffer.data(), buffer.size(), 0, s.aggregator);
    }
    cuscope::shutdown();
  }
  ::unsetenv("RANK");
  ::unsetenv("WORLD_SIZE");
  const std::string exit_json = read_file(json_path);
  Report replayed;
  std::string error;
  REQUIRE(trace::replay_file(trace_path, &replayed, &error));
  CHECK(replayed.rank == 3);
  CHECK(replayed.world_size == 4);
  CHECK(replayed.pid == getpid());  // the trace names its process and host, as the live report does
  char host[256] = {};
  REQUIRE(gethostname(host, sizeof(host) - 1) == 0);
  CHECK(replayed.host == host);
  CHECK(replayed.find("load")->self.pageable_copies == 1);  // the decoder's kinds, through the trace
  CHECK(replayed.find("load")->self.pageable_bytes == 1u << 20);
  CHECK(cuscope::format_json(replayed) == exit_json);
  CHECK(cuscope::format_table(replayed).find(" — rank 3 of 4") != std::string::npos);
  const std::string note = "CUSCOPE_JSON=" + o.json_path +
                           " names neither the rank (%r) nor the process (%p), and this is rank 3 of 4: it writes " +
                           json_path + ", as each rank writes its own";
  CHECK(std::count(replayed.notes.begin(), replayed.notes.end(), note) == 1);
  CHECK_FALSE(std::filesystem::exists(o.json_path));
  CHECK_FALSE(std::filesystem::exists(o.trace_path));
  std::remove(trace_path.c_str());
  std::remove(json_path.c_str());
}

// Options from CUSCOPE_* variables: every variable, and bad values with one clear error each.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "producers/log.hpp"
#include "producers/scope_state.hpp"
#include "session_fixture.hpp"

namespace {

std::map<std::string, std::string> g_env;

const char* lookup(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}

cuscope::Options parse(std::map<std::string, std::string> env, std::vector<cuscope::OptionError>& errors) {
  g_env = std::move(env);
  return cuscope::options_from(lookup, cuscope::Options{}, &errors);
}

}  // namespace

TEST_CASE("no variables keep every default", "[options]") {
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = parse({}, errors);
  const cuscope::Options d;
  CHECK(errors.empty());
  CHECK(o.enabled == d.enabled);
  CHECK(o.gpu_events == d.gpu_events);
  CHECK(o.graphs);
  CHECK_FALSE(o.sync_records);  // off by default since the H200 run of 2026-11-26 (docs/cupti.md)
  CHECK_FALSE(o.memory_records);
  CHECK(o.warmup_steps == 0);
  CHECK(o.repeat == 1);  // the window once
  CHECK(o.table.max_rows == 50);
  CHECK(o.max_depth == 64);
  CHECK(o.output_path.empty());
  CHECK(o.report_every_s == 0);  // the report's files at exit only
}

TEST_CASE("every variable sets its option", "[options]") {
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = parse({{"CUSCOPE_ENABLE", "off"},
                                    {"CUSCOPE_GPU_EVENTS", "No"},
                                    {"CUSCOPE_ACTIVITIES", "false"},
                                    {"CUSCOPE_GRAPHS", "off"},
                                    {"CUSCOPE_SYNC_RECORDS", "1"},
                                    {"CUSCOPE_MEMORY_RECORDS", "yes"},
                                    {"CUSCOPE_WAIT", "1"},
                                    {"CUSCOPE_WARMUP", " 3 "},
                                    {"CUSCOPE_ACTIVE", "10"},
                                    {"CUSCOPE_REPEAT", "0"},
                                    {"CUSCOPE_DETACH", "0"},
                                    {"CUSCOPE_PRINT", "0"},
                                    {"CUSCOPE_OUTPUT", "/tmp/table.txt"},
                                    {"CUSCOPE_JSON", "/tmp/report.json"},
                                    {"CUSCOPE_REPORT_EVERY", "60"},
                                    {"CUSCOPE_SORT", "GPU_BUSY"},
                                    {"CUSCOPE_ROWS", "0"},
                                    {"CUSCOPE_TOP_KERNELS", "7"},
                                    {"CUSCOPE_MAX_DEPTH", "256"},
                                    {"CUSCOPE_METRICS", "sol,memory"},
                                    {"CUSCOPE_METRIC_RANGES", " step/mlp , /step/attention/,, "},
                                    {"CUSCOPE_METRIC_STEPS", "3"}},
                                   errors);
  CHECK(errors.empty());
  CHECK_FALSE(o.enabled);
  CHECK_FALSE(o.gpu_events);
  CHECK_FALSE(o.activities);
  CHECK_FALSE(o.graphs);
  CHECK(o.sync_records);  // on only when asked for
  CHECK(o.memory_records);
  CHECK(o.wait_steps == 1);
  CHECK(o.warmup_steps == 3);
  CHECK(o.active_steps == 10);
  CHECK(o.repeat == 0);  // without end
  CHECK_FALSE(o.detach);
  CHECK_FALSE(o.print_at_exit);
  CHECK(o.output_path == "/tmp/table.txt");
  CHECK(o.json_path == "/tmp/report.json");
  CHECK(o.report_every_s == 60);
  CHECK(o.table.sort == cuscope::SortKey::gpu_busy);
  CHECK(o.table.max_rows == 0);
  CHECK(o.table.top_kernels == 7);
  CHECK(o.max_depth == 256);
  CHECK(o.metrics == "sol,memory");
  CHECK(o.metric_ranges == std::vector<std::string>{"step/mlp", "step/attention"});
  CHECK(o.metric_steps == 3);
}

TEST_CASE("a bad value names the variable and the value and keeps the default", "[options]") {
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = parse({{"CUSCOPE_ROWS", "ten"},
                                    {"CUSCOPE_MAX_DEPTH", "0"},
                                    {"CUSCOPE_PRINT", "maybe"},
                                    {"CUSCOPE_SORT", "fastest"},
                                    {"CUSCOPE_WARMUP", "-2"},
                                    {"CUSCOPE_ACTIVE", "99999999999999999999999"}},
                                   errors);
  CHECK(o.table.max_rows == 50);
  CHECK(o.max_depth == 64);
  CHECK(o.print_at_exit);
  CHECK(o.table.sort == cuscope::SortKey::host_total);
  CHECK(o.warmup_steps == 0);
  CHECK(o.active_steps == 0);
  REQUIRE(errors.size() == 6);
  // In the order the variables are read.
  CHECK(errors[0].variable == "CUSCOPE_WARMUP");
  CHECK(errors[0].value == "-2");
  CHECK(errors[0].message == "CUSCOPE_WARMUP='-2' is out of range [0, 1000000000]; keeping 0");
  CHECK(errors[1].message ==
        "CUSCOPE_ACTIVE='99999999999999999999999' is out of range [0, 1000000000]; keeping 0");
  CHECK(errors[2].message ==
        "CUSCOPE_PRINT='maybe' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping 1");
  CHECK(errors[3].message ==
        "CUSCOPE_SORT='fastest' is not a sort key (one of: host_total, host_self, gpu_total, kernel_total, "
        "gpu_busy, "
        "calls, name); keeping host_total");
  CHECK(errors[4].variable == "CUSCOPE_ROWS");
  CHECK(errors[4].message == "CUSCOPE_ROWS='ten' is not a whole number; keeping 50");
  CHECK(errors[5].message == "CUSCOPE_MAX_DEPTH='0' is out of range [1, 256]; keeping 64");
}

TEST_CASE("CUSCOPE_REPEAT: cycles of the step window, 0 without end, a bad value keeps one", "[options]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(parse({{"CUSCOPE_REPEAT", "5"}}, errors).repeat == 5);
  CHECK(parse({{"CUSCOPE_REPEAT", "0"}}, errors).repeat == 0);
  CHECK(errors.empty());
  CHECK(parse({{"CUSCOPE_REPEAT", "forever"}}, errors).repeat == 1);
  CHECK(parse({{"CUSCOPE_REPEAT", "1000000001"}}, errors).repeat == 1);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].message == "CUSCOPE_REPEAT='forever' is not a whole number; keeping 1");
  CHECK(errors[1].message == "CUSCOPE_REPEAT='1000000001' is out of range [0, 1000000000]; keeping 1");
}

TEST_CASE("CUSCOPE_DETACH: on by default, 0 pauses only, a bad value keeps the default", "[options]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(parse({}, errors).detach);  // detach CUPTI after the last step window
  CHECK_FALSE(parse({{"CUSCOPE_DETACH", "0"}}, errors).detach);
  CHECK_FALSE(parse({{"CUSCOPE_DETACH", " off "}}, errors).detach);
  CHECK(parse({{"CUSCOPE_DETACH", "yes"}}, errors).detach);
  CHECK(errors.empty());
  CHECK(parse({{"CUSCOPE_DETACH", "later"}}, errors).detach);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_DETACH");
  CHECK(errors[0].message ==
        "CUSCOPE_DETACH='later' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping 1");
}

TEST_CASE("CUSCOPE_DETACH_BETWEEN: off by default, 1 detaches between windows, a bad value keeps the default",
          "[options]") {
  std::vector<cuscope::OptionError> errors;
  CHECK_FALSE(parse({}, errors).detach_between);  // paused between windows, as before
  CHECK(parse({{"CUSCOPE_DETACH_BETWEEN", "1"}}, errors).detach_between);
  CHECK(parse({{"CUSCOPE_DETACH_BETWEEN", " ON "}}, errors).detach_between);
  CHECK(parse({{"CUSCOPE_DETACH_BETWEEN", "1"}, {"CUSCOPE_DETACH", "0"}}, errors).detach_between);
  CHECK(errors.empty());
  CHECK_FALSE(parse({{"CUSCOPE_DETACH_BETWEEN", "always"}}, errors).detach_between);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_DETACH_BETWEEN");
  CHECK(errors[0].message ==
        "CUSCOPE_DETACH_BETWEEN='always' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping 0");
}

TEST_CASE("a bad value keeps the base given, not the built-in default", "[options]") {
  g_env = {{"CUSCOPE_ROWS", "lots"}};
  cuscope::Options base;
  base.table.max_rows = 12;
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = cuscope::options_from(lookup, base, &errors);
  CHECK(o.table.max_rows == 12);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "CUSCOPE_ROWS='lots' is not a whole number; keeping 12");
}

TEST_CASE("environment problems are warned once and shown in the report's notes", "[options]") {
  cuscope_test::Session session(cuscope_test::quiet_options(), false);
  ::setenv("CUSCOPE_ROWS", "ten", 1);
  ::setenv("CUSCOPE_WARMPU", "2", 1);
  // What `cuscope run` sets for the processes below it: theirs, not options, and no problem.
  ::setenv("CUSCOPE_INJECT_LIBRARY", "/opt/cuscope/lib/libcuscope_inject.so", 1);
  ::setenv("CUSCOPE_RUN_ID", "4242-1795753334871843606", 1);
  std::vector<cuscope::OptionError> errors;
  cuscope::Options o = cuscope::options_from_env(cuscope_test::quiet_options(), &errors);
  (void)cuscope::options_from_env(cuscope_test::quiet_options());  // the same problems again
  for (const char* set : {"CUSCOPE_ROWS", "CUSCOPE_WARMPU", "CUSCOPE_INJECT_LIBRARY", "CUSCOPE_RUN_ID"})
    ::unsetenv(set);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].variable == "CUSCOPE_ROWS");
  CHECK(errors[1].variable == "CUSCOPE_WARMPU");
  CHECK(errors[1].value == "2");
  CHECK(errors[1].message == "CUSCOPE_WARMPU='2' is not a cuscope option; ignored (see docs/options.md)");
  cuscope::start(o);
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.notes.size() == 2);
  CHECK(std::count(r.notes.begin(), r.notes.end(), "CUSCOPE_ROWS='ten' is not a whole number; keeping 50") ==
        1);
  CHECK(cuscope::format_table(r).find("note: CUSCOPE_WARMPU='2' is not a cuscope option") !=
        std::string::npos);
}

TEST_CASE("a value with a newline, a control byte or a stray byte is quoted on one line", "[options]") {
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = parse({{"CUSCOPE_ROWS", "1\n2"},
                                    {"CUSCOPE_PRINT", "ye\ts\r"},
                                    {"CUSCOPE_SORT", "caf\xe9\x01"},
                                    {"CUSCOPE_MAX_DEPTH", "\xc3\xa9t\xc3\xa9"}},  // valid UTF-8: kept
                                   errors);
  CHECK(o.table.max_rows == 50);
  REQUIRE(errors.size() == 4);
  CHECK(errors[0].value == "ye\ts\r");  // the value as given; the message is what gets escaped
  CHECK(errors[0].message ==
        "CUSCOPE_PRINT='ye\\ts\\r' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping 1");
  CHECK(errors[1].message ==
        "CUSCOPE_SORT='caf\\xe9\\x01' is not a sort key (one of: host_total, host_self, gpu_total, "
        "kernel_total, gpu_busy, calls, name); keeping host_total");
  CHECK(errors[2].message == "CUSCOPE_ROWS='1\\n2' is not a whole number; keeping 50");
  CHECK(errors[3].message == "CUSCOPE_MAX_DEPTH='\xc3\xa9t\xc3\xa9' is not a whole number; keeping 64");
}

TEST_CASE("an unknown variable is warned with its value, on one line, and kept as a note", "[options]") {
  cuscope_test::Session session(cuscope_test::quiet_options(), false);
  ::setenv("CUSCOPE_TPYO", "first\nsecond\xff", 1);
  std::vector<cuscope::OptionError> errors;
  (void)cuscope::options_from_env(cuscope_test::quiet_options(), &errors);
  ::unsetenv("CUSCOPE_TPYO");
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_TPYO");
  CHECK(errors[0].value == "first\nsecond\xff");
  const std::string expected =
      "CUSCOPE_TPYO='first\\nsecond\\xff' is not a cuscope option; ignored (see docs/options.md)";
  CHECK(errors[0].message == expected);
  cuscope::start(cuscope_test::quiet_options());
  CHECK(cuscope::snapshot().notes == std::vector<std::string>{expected});
}

TEST_CASE("one_line escapes what would break a line and keeps valid UTF-8", "[options]") {
  using cuscope::detail::one_line;
  CHECK(one_line("plain µs — ok") == "plain µs — ok");
  CHECK(one_line("a\nb\rc\td\x7f\x1b") == "a\\nb\\rc\\td\\x7f\\x1b");
  // Stray continuation byte, overlong '/', surrogate, past U+10FFFF, cut short at the end.
  CHECK(one_line("\x80|\xc0\xaf|\xed\xa0\x80|\xf4\x90\x80\x80|\xe2\x82") ==
        "\\x80|\\xc0\\xaf|\\xed\\xa0\\x80|\\xf4\\x90\\x80\\x80|\\xe2\\x82");
  CHECK(one_line(one_line("x\ny\xff")) == one_line("x\ny\xff"));
}

TEST_CASE("CUSCOPE_NVTX_DOMAINS keeps or leaves out domains, not both", "[options]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(parse({{"CUSCOPE_NVTX_DOMAINS", " default , Megatron "}}, errors).nvtx_domains ==
        std::vector<std::string>{"default", "Megatron"});
  CHECK(parse({{"CUSCOPE_NVTX_DOMAINS", "-NCCL,-cuBLAS"}}, errors).nvtx_domains ==
        std::vector<std::string>{"-NCCL", "-cuBLAS"});
  CHECK(parse({{"CUSCOPE_NVTX_DOMAINS", "  "}}, errors).nvtx_domains.empty());  // set but empty: all
  CHECK(errors.empty());

  const cuscope::Options bad = parse({{"CUSCOPE_NVTX_DOMAINS", "NCCL,,x"}}, errors);
  CHECK(bad.nvtx_domains.empty());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_NVTX_DOMAINS");
  CHECK(errors[0].message ==
        "CUSCOPE_NVTX_DOMAINS='NCCL,,x' has an empty domain name (item 2); keeping every domain");
  errors.clear();
  CHECK(parse({{"CUSCOPE_NVTX_DOMAINS", "a,-"}}, errors).nvtx_domains.empty());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message ==
        "CUSCOPE_NVTX_DOMAINS='a,-' has an empty domain name (item 2); keeping every domain");
  errors.clear();
  CHECK(parse({{"CUSCOPE_NVTX_DOMAINS", "a,"}}, errors).nvtx_domains.empty());
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message ==
        "CUSCOPE_NVTX_DOMAINS='a,' has an empty domain name (item 2); keeping every domain");
  errors.clear();

  g_env = {{"CUSCOPE_NVTX_DOMAINS", "NCCL,-cuBLAS"}};
  cuscope::Options base;
  base.nvtx_domains = {"-NCCL"};
  const cuscope::Options mixed = cuscope::options_from(lookup, base, &errors);
  CHECK(mixed.nvtx_domains == std::vector<std::string>{"-NCCL"});
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message ==
        "CUSCOPE_NVTX_DOMAINS='NCCL,-cuBLAS' names both domains to keep and ('-') domains to leave out; use "
        "one "
        "or the other; keeping '-NCCL'");
}

TEST_CASE("CUSCOPE_EVENTS: auto, always, off and sampled:N, anything else keeps the value and says why",
          "[options]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(cuscope::Options{}.events == cuscope::EventTiming::automatic);
  CHECK(parse({{"CUSCOPE_EVENTS", "always"}}, errors).events == cuscope::EventTiming::always);
  CHECK(parse({{"CUSCOPE_EVENTS", " OFF "}}, errors).events == cuscope::EventTiming::off);
  CHECK(parse({{"CUSCOPE_EVENTS", "auto"}}, errors).events == cuscope::EventTiming::automatic);
  const cuscope::Options sampled = parse({{"CUSCOPE_EVENTS", "sampled:100"}}, errors);
  CHECK(sampled.events == cuscope::EventTiming::sampled);
  CHECK(sampled.events_sample_every == 100);
  REQUIRE(errors.empty());
  for (const char* bad :
       {"sometimes", "sampled:", "sampled:1", "sampled:x", "sampled:10x", "sampled:2000000000"}) {
    errors.clear();
    const cuscope::Options o = parse({{"CUSCOPE_EVENTS", bad}}, errors);
    CHECK(o.events == cuscope::EventTiming::automatic);
    CHECK(o.events_sample_every == 0);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].variable == "CUSCOPE_EVENTS");
    CHECK(errors[0].message == std::string("CUSCOPE_EVENTS='") + bad +
                                   "' is not an event mode (auto, always, off, or sampled:N with N from 2 to "
                                   "1000000000); keeping auto");
  }
  errors.clear();
  cuscope::Options base;
  base.events = cuscope::EventTiming::sampled;
  base.events_sample_every = 7;
  g_env = {{"CUSCOPE_EVENTS", "never"}};
  const cuscope::Options kept = cuscope::options_from(lookup, base, &errors);
  CHECK(kept.events == cuscope::EventTiming::sampled);
  CHECK(kept.events_sample_every == 7);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message ==
        "CUSCOPE_EVENTS='never' is not an event mode (auto, always, off, or sampled:N with N from 2 to "
        "1000000000); "
        "keeping sampled:7");
}

TEST_CASE("sampled:N times the first 10 calls of a range, then one call in N", "[options]") {
  using cuscope::detail::event_sampled;
  int timed = 0;
  for (std::uint64_t done = 0; done < 10; ++done) timed += event_sampled(done, 100);
  CHECK(timed == 10);
  CHECK_FALSE(event_sampled(10, 100));
  CHECK(event_sampled(109, 100));  // the 110th call: the first after 100 more
  CHECK_FALSE(event_sampled(110, 100));
  timed = 0;
  for (std::uint64_t done = 10; done < 10 + 100 * 50; ++done) timed += event_sampled(done, 100);
  CHECK(timed == 50);
  for (std::uint64_t done = 0; done < 1000; ++done) CHECK(event_sampled(done, 0));  // not sampling
}

TEST_CASE("CUSCOPE_SYNC_RECORDS and CUSCOPE_MEMORY_RECORDS: a bad value keeps the records off and says why",
          "[options]") {
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o =
      parse({{"CUSCOPE_SYNC_RECORDS", "some"}, {"CUSCOPE_MEMORY_RECORDS", ""}}, errors);
  CHECK_FALSE(o.sync_records);
  CHECK_FALSE(o.memory_records);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].message ==
        "CUSCOPE_SYNC_RECORDS='some' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping 0");
  CHECK(errors[1].variable == "CUSCOPE_MEMORY_RECORDS");
  CHECK(errors[1].value.empty());
}

TEST_CASE(
    "CUSCOPE_ATTRIBUTION and CUSCOPE_EVENT_TIMESTAMPS take their two values, anything else keeps the "
    "value and names both",
    "[options]") {
  std::vector<cuscope::OptionError> errors;
  cuscope::Options o = parse({}, errors);
  CHECK(o.attribution == cuscope::Attribution::launch);  // the default since the H200 run of 2026-11-26
  CHECK(o.event_timestamps == cuscope::EventTimestamps::cuda);
  o = parse({{"CUSCOPE_ATTRIBUTION", " External "}, {"CUSCOPE_EVENT_TIMESTAMPS", "CUPTI"}}, errors);
  CHECK(errors.empty());
  CHECK(o.attribution == cuscope::Attribution::external);
  CHECK(o.event_timestamps == cuscope::EventTimestamps::cupti);
  o = parse({{"CUSCOPE_ATTRIBUTION", "launch"}}, errors);
  CHECK(errors.empty());
  CHECK(o.attribution == cuscope::Attribution::launch);
  o = parse({{"CUSCOPE_ATTRIBUTION", "proton"}, {"CUSCOPE_EVENT_TIMESTAMPS", "gpu"}}, errors);
  CHECK(o.attribution == cuscope::Attribution::launch);
  CHECK(o.event_timestamps == cuscope::EventTimestamps::cuda);
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].message ==
        "CUSCOPE_EVENT_TIMESTAMPS='gpu' is not an event timestamp source (cuda or cupti); keeping cuda");
  CHECK(errors[1].message ==
        "CUSCOPE_ATTRIBUTION='proton' is not an attribution (external or launch); keeping launch");
}

TEST_CASE("CUSCOPE_REPORT_EVERY: whole seconds up to a day, anything else keeps the report at exit only",
          "[options][report_every]") {
  std::vector<cuscope::OptionError> errors;
  CHECK(parse({{"CUSCOPE_REPORT_EVERY", "86400"}}, errors).report_every_s == 86'400);
  CHECK(parse({{"CUSCOPE_REPORT_EVERY", "0"}}, errors).report_every_s == 0);
  CHECK(errors.empty());
  CHECK(parse({{"CUSCOPE_REPORT_EVERY", "86401"}}, errors).report_every_s == 0);
  CHECK(parse({{"CUSCOPE_REPORT_EVERY", "1.5"}}, errors).report_every_s == 0);
  CHECK(parse({{"CUSCOPE_REPORT_EVERY", "1m"}}, errors).report_every_s == 0);
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].message == "CUSCOPE_REPORT_EVERY='86401' is out of range [0, 86400]; keeping 0");
  CHECK(errors[1].message == "CUSCOPE_REPORT_EVERY='1.5' is not a whole number; keeping 0");
  CHECK(errors[2].message == "CUSCOPE_REPORT_EVERY='1m' is not a whole number; keeping 0");
}

namespace {

const char* given_rows(const char* name) { return std::string_view(name) == "CUSCOPE_ROWS" ? "7" : nullptr; }
const char* given_bad_depth(const char* name) {
  return std::string_view(name) == "CUSCOPE_MAX_DEPTH" ? "0" : nullptr;
}

}  // namespace

// Python's start(**options): the program's settings are read in their variables' place. A bad
// environment value that one replaces was reported before as kept ("keeping 50") while the setting's
// value ran: now it is not read. A bad environment value beside them is reported as ever; a bad
// setting goes to the caller only, which refuses it.
TEST_CASE(
    "settings given on top of the environment replace its values, and only the environment's problems "
    "are noted",
    "[options]") {
  cuscope_test::Session session(cuscope_test::quiet_options(), false);
  ::setenv("CUSCOPE_ROWS", "ten", 1);    // replaced by the setting: not read
  ::setenv("CUSCOPE_FINDINGS", "x", 1);  // beside the settings: reported
  std::vector<cuscope::OptionError> errors;
  const cuscope::Options o = cuscope::options_from_env(cuscope_test::quiet_options(), &errors, &given_rows);
  ::unsetenv("CUSCOPE_ROWS");
  std::vector<cuscope::OptionError> bad_setting;
  const cuscope::Options refused =
      cuscope::options_from_env(cuscope_test::quiet_options(), &bad_setting, &given_bad_depth);
  ::unsetenv("CUSCOPE_FINDINGS");
  CHECK(o.table.max_rows == 7);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].variable == "CUSCOPE_FINDINGS");
  REQUIRE(bad_setting.size() == 2);  // the environment's again, and the setting's
  CHECK(bad_setting[1].variable == "CUSCOPE_MAX_DEPTH");
  CHECK(refused.max_depth == cuscope_test::quiet_options().max_depth);
  cuscope::start(o);
  const cuscope::Report r = cuscope::snapshot();
  REQUIRE(r.notes.size() == 1);  // neither CUSCOPE_ROWS nor the refused setting
  CHECK(r.notes[0].rfind("CUSCOPE_FINDINGS='x' is not a whole number", 0) == 0);
}

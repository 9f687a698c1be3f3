// The table view's header: the diagnostics it lists (exactly the non-zero ones, each named), each
// status that is off with its reason, notes said once, hardware counters' status; and the table of
// a report without ranges, with what the step window left out.
//
// Never: a session or a model; reports are built by hand (tests/table_kit.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "cuscope/report.hpp"
#include "table_kit.hpp"

using cuscope::format_table;
using cuscope::Report;
using cuscope_test::table_kit::header_line;
using cuscope_test::table_kit::make_report;
using cuscope_test::table_kit::two_siblings;

TEST_CASE("header lists exactly the non-zero diagnostics", "[table]") {
  Report r = two_siblings();
  REQUIRE(header_line(format_table(r), "lost or off:").empty());

  r.diagnostics.zero_timestamp_records = 1;
  r.diagnostics.cross_thread_ends = 4;
  r.diagnostics.overhead_ns = 1'500'000;
  REQUIRE(header_line(format_table(r), "lost or off:") ==
          "lost or off: 1 record with a zero timestamp, 4 scopes ended on another thread, 1.50 ms of CUPTI "
          "overhead");

  REQUIRE(header_line(format_table(make_report()), "lost or off:") ==
          "lost or off: 3 dropped records, 2 scopes still open, 1 unbalanced end");
}

TEST_CASE("header names every diagnostics counter when all are set", "[table]") {
  Report r = two_siblings();
  cuscope::Diagnostics& d = r.diagnostics;
  d = {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2'000, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2};
  REQUIRE(
      header_line(format_table(r), "lost or off:") ==
      "lost or off: 2 dropped records, 2 records with a zero timestamp, 2 records not matched to a scope, "
      "2 records of an unknown kind, 2 records outside the window, 2 scopes outside the window, "
      "2 scopes still open, 2 unbalanced ends, "
      "2 scopes ended on another thread, 2 entries past the maximum depth, 2 adjusted names, "
      "2 entries past a full name table, 2 scopes not recorded (thread limit or out of memory), 2 CUDA event failures, "
      "2 CUPTI overhead records, 2 replayed kernels without counters, 2 records still running at exit, "
      "2 CUPTI buffers refused (memory bound), 2 scopes inside a graph capture (no CUDA-event time), "
      "2 counts of inf or NaN refused, 2 trace records dropped (trace truncated), "
      "2 NVTX range ends without an open start, 2 NVTX start/end ranges not tracked (too many open), "
      "2.00 µs of CUPTI overhead");
}

TEST_CASE("header prints each status that is off with its reason", "[table]") {
  Report r = two_siblings();
  std::string text = format_table(r);
  REQUIRE(header_line(text, "GPU timing:").empty());
  REQUIRE(header_line(text, "GPU activity:").empty());

  r.gpu_timing = "no CUDA driver (cudaGetDeviceCount: error 35)";
  r.activity_status = "CUPTI not found (libcupti.so.13)";
  text = format_table(r);
  REQUIRE(header_line(text, "GPU timing:") ==
          "GPU timing: off — no CUDA driver (cudaGetDeviceCount: error 35)");
  REQUIRE(header_line(text, "GPU activity:") == "GPU activity: off — CUPTI not found (libcupti.so.13)");
}

TEST_CASE("header prints a reason once even when a note repeats it", "[table]") {
  Report r = two_siblings();
  r.activity_status = "CUPTI not found";
  r.notes = {"CUPTI not found", "bad option", "bad option"};
  const std::string text = format_table(r);
  const std::string header = text.substr(0, text.find("\n\n"));
  REQUIRE(header ==
          "cuscope 0.1.0 — device:  — wall 0 ns — steps 0/0\n"
          "GPU activity: off — CUPTI not found\n"
          "note: bad option\n"
          "total: host 20.0 ms in top-level ranges");

  r.activity_status = "on";
  r.notes = {"on"};
  REQUIRE(header_line(format_table(r), "note:") == "note: on");
}

TEST_CASE("table of a report without ranges is a header and a line saying so", "[table]") {
  Report r;
  r.device = "no GPU";
  r.gpu_timing = "on";
  r.activity_status = "on";
  REQUIRE(format_table(r) ==
          "cuscope 0.1.0 — device: no GPU — wall 0 ns — steps 0/0\n"
          "total: host 0 ns in top-level ranges — kernel time 0 ns — GPU busy 0 ns\n"
          "\n"
          "(no ranges recorded)\n");
}

TEST_CASE("table says why hardware counters are off only when they were asked for", "[table][metrics]") {
  Report r = two_siblings();
  r.gpu_timing = "on";
  CHECK(header_line(format_table(r), "hardware counters:").empty());
  r.counters_status = "no permission for GPU performance counters (ERR_NVGPUCTRPERM)";
  CHECK(header_line(format_table(r), "hardware counters:") ==
        "hardware counters: off — no permission for GPU performance counters (ERR_NVGPUCTRPERM)");
}

TEST_CASE("an empty table says when the step window was never reached and what it left out", "[table]") {
  Report r;
  r.device = "no GPU";
  r.gpu_timing = "on";
  r.activity_status = "on";
  r.window_start_step = 5;
  r.steps = 0;
  r.diagnostics.outside_window_scopes = 12;
  const auto after_header = [](const std::string& text) { return text.substr(text.find("\n\n") + 2); };
  const std::string text = format_table(r);
  REQUIRE(header_line(text, "lost or off:") == "lost or off: 12 scopes outside the window");
  REQUIRE(after_header(text) ==
          "(no ranges recorded: the step window was never reached — it opens after step 5, and 0 steps were "
          "marked with cuscope::step(); 12 scopes left out)\n");

  r.steps = 1;
  r.diagnostics.outside_window_scopes = 1;
  REQUIRE(after_header(format_table(r)) ==
          "(no ranges recorded: the step window was never reached — it opens after step 5, and 1 step was "
          "marked with cuscope::step(); 1 scope left out)\n");

  r.steps = 9;  // the window opened, but every scope ran before or after it
  REQUIRE(after_header(format_table(r)) ==
          "(no ranges recorded: 1 scope outside the step window left out)\n");

  r.diagnostics.outside_window_scopes = 0;  // nothing ran at all
  REQUIRE(after_header(format_table(r)) == "(no ranges recorded)\n");
}

TEST_CASE("header counts refused counts and scopes outside the window", "[table]") {
  Report r = two_siblings();
  r.diagnostics.rejected_counts = 1;
  REQUIRE(header_line(format_table(r), "lost or off:") == "lost or off: 1 count of inf or NaN refused");
  r.diagnostics.rejected_counts = 3;
  r.diagnostics.outside_window_scopes = 1;
  REQUIRE(header_line(format_table(r), "lost or off:") ==
          "lost or off: 1 scope outside the window, 3 counts of inf or NaN refused");
}

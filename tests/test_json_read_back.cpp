// A JSON report read back through cuscope show's reader (cli::report_from_json): the same report,
// byte for byte when written again; fields an older report lacks read as 0 or empty; a malformed
// field is refused with one line.
//
// Never: a session or a model; reports are built by hand (tests/json_kit.hpp).
#include <catch2/catch.hpp>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/cli.hpp"
#include "cuscope/report.hpp"
#include "json_kit.hpp"

using cuscope::format_json;
using cuscope::format_table;
using cuscope::Report;
using cuscope::SpanStats;
using cuscope_test::json_kit::kMax;
using cuscope_test::json_kit::make_report;
using cuscope_test::json_kit::parsed;
using nlohmann::json;

TEST_CASE("json: the slowest host call's ordinal reads back, and is 0 in a report without it",
          "[json][cli]") {
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(format_json(make_report()), &back, &error));
  CHECK(back.ranges[1].host.max_call == 7);
  CHECK(back.ranges[1].host.max_ns == 2);
  json older = parsed(make_report());
  older["ranges"][1]["host"].erase("max_call");
  REQUIRE(cuscope::cli::report_from_json(older.dump(), &back, &error));
  CHECK(back.ranges[1].host.max_call == 0);
  CHECK(back.ranges[1].host.max_ns == 2);
}

TEST_CASE("json: whether the report is final reads back, and a report without the field is final",
          "[json][cli]") {
  Report running = make_report();
  running.final = false;
  CHECK(parsed(running).at("final") == false);
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(format_json(running), &back, &error));
  CHECK_FALSE(back.final);
  CHECK(format_table(back).find(" — while running\n") != std::string::npos);
  json older = parsed(running);
  older.erase("final");  // reports before 2026-11-28: nearly all written at exit
  REQUIRE(cuscope::cli::report_from_json(older.dump(), &back, &error));
  CHECK(back.final);
  CHECK(parsed(make_report()).at("final") == true);
}

TEST_CASE("a JSON report reads back through cuscope show's reader to the same report", "[json][spans][cli]") {
  Report r = make_report();
  r.diagnostics = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
  r.spans = {SpanStats{"io", "load", {3, 10, 2, 5}, 1, 2}, SpanStats{"", "pending", {}, kMax, 0}};
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(format_json(r), &back, &error));
  REQUIRE(error.empty());
  REQUIRE(back.spans.size() == 2);
  CHECK(back.spans[0].domain == "io");
  CHECK(back.spans[0].name == "load");
  CHECK(back.spans[0].host.count == 3);
  CHECK(back.spans[0].host.total_ns == 10);
  CHECK(back.spans[0].host.min_ns == 2);
  CHECK(back.spans[0].host.max_ns == 5);
  CHECK(back.spans[0].open == 1);
  CHECK(back.spans[0].cross_thread == 2);
  CHECK(back.spans[1].domain.empty());
  CHECK(back.spans[1].open == kMax);
  CHECK(back.diagnostics.unmatched_span_ends == 23);
  CHECK(back.diagnostics.spans_dropped == 24);
  CHECK(format_json(back) == format_json(r));
  CHECK(format_table(back) == format_table(r));
}

TEST_CASE("cuscope show's reader takes a JSON report without spans, and refuses spans that are not a list",
          "[json][spans][cli]") {
  json j = parsed(make_report());
  j.erase("spans");
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(j.dump(), &back, &error));
  CHECK(back.spans.empty());
  j["spans"] = 3;
  CHECK_FALSE(cuscope::cli::report_from_json(j.dump(), &back, &error));
  CHECK(error == "malformed JSON report: \"spans\" is not an array");
}

TEST_CASE("json carries each range's findings, and cuscope show reads them back", "[json][findings]") {
  Report r = make_report();
  r.ranges[1].findings = {
      {"synchronization", cuscope::Severity::warning, "7 synchronizations waited 3.2 ms", "an .item()",
       "keep it"},
      {"small-kernels", cuscope::Severity::info, "412 kernels averaging 4.1 µs", "unfused", "fuse"}};
  const json j = parsed(r);
  const json& f = j.at("ranges")[1].at("findings");
  REQUIRE(f.size() == 2);
  CHECK(f[0].at("id") == "synchronization");
  CHECK(f[0].at("severity") == "warning");
  CHECK(f[0].at("observation") == "7 synchronizations waited 3.2 ms");
  CHECK(f[0].at("cause") == "an .item()");
  CHECK(f[0].at("fix") == "keep it");
  CHECK(f[1].at("severity") == "info");
  CHECK(j.at("ranges")[2].at("findings").empty());
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(cuscope::format_json(r), &back, &error));
  REQUIRE(back.ranges[1].findings.size() == 2);
  CHECK(back.ranges[1].findings[1].id == "small-kernels");
  CHECK(back.ranges[1].findings[1].severity == cuscope::Severity::info);
  CHECK(cuscope::format_json(back) == cuscope::format_json(r));
}

TEST_CASE("json carries pageable and blocking copies and streams, and cuscope show reads them back",
          "[json][pageable][blocking][streams]") {
  Report r = make_report();
  auto& self = r.ranges[2].self;
  self.pageable_copies = 11;
  self.pageable_bytes = 12'345;
  self.blocking_copies = 21;
  self.blocking_bytes = 22'222;
  self.kernel_streams = 3;
  self.busiest_stream_ns = 678;
  r.ranges[2].total.pageable_copies = kMax;
  const json j = parsed(r).at("ranges").at(2);
  CHECK(j.at("self").at("pageable_copies") == 11);
  CHECK(j.at("self").at("pageable_bytes") == 12'345);
  CHECK(j.at("self").at("blocking_copies") == 21);
  CHECK(j.at("self").at("blocking_bytes") == 22'222);
  CHECK(j.at("self").at("kernel_streams") == 3);
  CHECK(j.at("self").at("busiest_stream_ns") == 678);
  CHECK(j.at("total").at("pageable_copies") == kMax);
  Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(format_json(r), &back, &error));
  CHECK(back.ranges[2].self.pageable_copies == 11);
  CHECK(back.ranges[2].self.pageable_bytes == 12'345);
  CHECK(back.ranges[2].self.blocking_copies == 21);
  CHECK(back.ranges[2].self.blocking_bytes == 22'222);
  CHECK(back.ranges[2].self.kernel_streams == 3);
  CHECK(back.ranges[2].self.busiest_stream_ns == 678);
  CHECK(back.ranges[2].total.pageable_copies == kMax);
  CHECK(format_json(back) == format_json(r));
  // A report from before these fields reads them as 0.
  json old = parsed(r);
  for (const char* key : {"pageable_copies", "pageable_bytes", "blocking_copies", "blocking_bytes",
                          "kernel_streams", "busiest_stream_ns"})
    old["ranges"][2]["self"].erase(key);
  REQUIRE(cuscope::cli::report_from_json(old.dump(), &back, &error));
  CHECK(back.ranges[2].self.pageable_copies == 0);
  CHECK(back.ranges[2].self.blocking_copies == 0);
  CHECK(back.ranges[2].self.blocking_bytes == 0);
  CHECK(back.ranges[2].self.kernel_streams == 0);
}

// The JSON view's writer, parsed back with nlohmann::json: the schema and header, every range field
// (links, names, durations, means, activity, copies by direction, kernels), every Diagnostics
// field, verdicts and counters, NVTX start/end ranges; and the encoding: uint64 values exact,
// escapes, bytes that are not UTF-8, doubles always finite.
//
// Never: a session or a model; reports are built by hand (tests/json_kit.hpp). Reading a report
// back through cuscope show's reader is test_json_read_back.cpp's.
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "cuscope/report.hpp"
#include "json_kit.hpp"

using cuscope::CopyKind;
using cuscope::format_json;
using cuscope::RangeStats;
using cuscope::Report;
using cuscope::SpanStats;
using cuscope_test::json_kit::kMax;
using cuscope_test::json_kit::make_report;
using cuscope_test::json_kit::parsed;
using nlohmann::json;

TEST_CASE("json carries the schema, version and report header", "[json]") {
  const json j = parsed(make_report());
  REQUIRE(j.at("schema") == "cuscope.report/1");
  REQUIRE(j.at("version") == "0.1.0");
  REQUIRE(j.at("device") == "NVIDIA H100 80GB HBM3 (sm_90)");
  REQUIRE(j.at("gpu_timing") == "no CUDA driver (cudaGetDeviceCount: error 35)");
  REQUIRE(j.at("activity_status") == "on");
  REQUIRE(j.at("notes") == json::array({"first note", "second note"}));
  REQUIRE(j.at("steps").get<std::uint64_t>() == 12);
  REQUIRE(j.at("recorded_steps").get<std::uint64_t>() == 10);
  REQUIRE(j.at("wall_ns").get<std::uint64_t>() == 2'500'000'000);
  REQUIRE(j.at("ranges").size() == 5);
}

TEST_CASE("json keeps uint64 values near 2^64-1 exact", "[json]") {
  Report r = make_report();
  r.wall_ns = kMax;
  r.diagnostics.overhead_ns = kMax - 1;
  r.ranges[1].host = {kMax - 2, kMax, 1, kMax};
  r.ranges[2].kernels[0].duration.total_ns = kMax - 3;
  r.ranges[2].total.memcpy[0].bytes = kMax - 4;
  const json j = parsed(r);
  REQUIRE(j.at("wall_ns").is_number_unsigned());
  REQUIRE(j.at("wall_ns").get<std::uint64_t>() == kMax);
  REQUIRE(j.at("diagnostics").at("overhead_ns").get<std::uint64_t>() == kMax - 1);
  const json& host = j.at("ranges").at(1).at("host");
  REQUIRE(host.at("count").get<std::uint64_t>() == kMax - 2);
  REQUIRE(host.at("total_ns").get<std::uint64_t>() == kMax);
  REQUIRE(host.at("max_ns").get<std::uint64_t>() == kMax);
  const json& forward = j.at("ranges").at(2);
  REQUIRE(forward.at("kernels").at(0).at("duration").at("total_ns").get<std::uint64_t>() == kMax - 3);
  REQUIRE(forward.at("total").at("memcpy").at("HtoD").at("bytes").get<std::uint64_t>() == kMax - 4);
}

TEST_CASE("json escapes quotes, backslashes and control bytes so names round-trip", "[json]") {
  const std::string nasty = "say \"hi\" C:\\dir\nnext\ttab\x01\x1f\x7f end µs —";
  Report r = make_report();
  r.ranges[3].name = nasty;
  r.ranges[2].kernels[0].name = nasty;
  r.device = nasty;
  r.notes = {nasty};
  const std::string text = format_json(r);
  REQUIRE(text.find(R"("say \"hi\" C:\\dir\u000anext\u0009tab\u0001\u001f)") != std::string::npos);
  const json j = json::parse(text);
  REQUIRE(j.at("ranges").at(3).at("name") == nasty);
  REQUIRE(j.at("ranges").at(2).at("kernels").at(0).at("name") == nasty);
  REQUIRE(j.at("device") == nasty);
  REQUIRE(j.at("notes").at(0) == nasty);
}

TEST_CASE("json links parents and children by range id", "[json]") {
  const json ranges = parsed(make_report()).at("ranges");
  REQUIRE(ranges.at(0).at("parent").is_null());
  REQUIRE(ranges.at(0).at("children") == json::array({1, 4}));
  REQUIRE(ranges.at(1).at("children") == json::array({2, 3}));
  for (std::size_t id = 0; id < ranges.size(); ++id) {
    const json& range = ranges.at(id);
    REQUIRE(range.at("id").get<std::size_t>() == id);
    for (const json& child : range.at("children")) {
      REQUIRE(ranges.at(child.get<std::size_t>()).at("parent").get<std::size_t>() == id);
    }
    if (id == 0) continue;
    const json& siblings = ranges.at(range.at("parent").get<std::size_t>()).at("children");
    REQUIRE(std::count(siblings.begin(), siblings.end(), json(id)) == 1);
  }
}

TEST_CASE("json writes name, path and depth of each range", "[json]") {
  const json ranges = parsed(make_report()).at("ranges");
  REQUIRE(ranges.at(0).at("name") == "");
  REQUIRE(ranges.at(0).at("path") == "");
  REQUIRE(ranges.at(0).at("depth") == 0);
  REQUIRE(ranges.at(2).at("name") == "forward");
  REQUIRE(ranges.at(2).at("path") == "step/forward");
  REQUIRE(ranges.at(2).at("depth") == 2);
  REQUIRE(ranges.at(4).at("name") == "(unscoped)");
  REQUIRE(ranges.at(4).at("calls") == 0);
  REQUIRE(ranges.at(4).at("self").at("kernel_calls") == 5);
}

TEST_CASE("json writes calls, threads and host and CUDA-event durations", "[json]") {
  const json step = parsed(make_report()).at("ranges").at(1);
  REQUIRE(step.at("calls") == 10);
  REQUIRE(step.at("recursive_calls") == 2);
  REQUIRE(step.at("threads") == 3);
  REQUIRE(
      step.at("host") ==
      json{{"count", 10}, {"total_ns", 10}, {"min_ns", 1}, {"max_ns", 2}, {"max_call", 7}, {"mean_ns", 1.0}});
  REQUIRE(step.at("host_self_ns") == 4);
  // Only a range's host times record which call was the longest.
  REQUIRE(step.at("gpu") ==
          json{{"count", 0}, {"total_ns", 0}, {"min_ns", 0}, {"max_ns", 0}, {"mean_ns", 0.0}});
}

TEST_CASE("json writes means as doubles that read back exactly", "[json]") {
  Report r = make_report();
  r.ranges[1].host = {3, 10, 3, 4};
  const json j = parsed(r);
  REQUIRE(j.at("ranges").at(1).at("host").at("mean_ns").get<double>() == 10.0 / 3.0);
  REQUIRE(j.at("ranges").at(2).at("kernels").at(0).at("duration").at("mean_ns").is_number_float());
  REQUIRE(j.at("ranges").at(0).at("host").at("mean_ns").is_number_float());
  REQUIRE(format_json(make_report()).find("\"mean_ns\": 75.0\n") != std::string::npos);
}

TEST_CASE("json lists every Diagnostics field by its C++ name", "[json]") {
  Report r = make_report();
  r.diagnostics = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16,
                   17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37};
  const json expected{
      {"dropped_records", 1},
      {"zero_timestamp_records", 2},
      {"unresolved_records", 3},
      {"unknown_records", 4},
      {"outside_window_records", 5},
      {"open_scopes", 6},
      {"unbalanced_ends", 7},
      {"cross_thread_ends", 8},
      {"depth_overflows", 9},
      {"adjusted_names", 10},
      {"name_table_full", 11},
      {"gpu_event_failures", 12},
      {"overhead_records", 13},
      {"overhead_ns", 14},
      {"counter_ranges_dropped", 15},
      {"incomplete_at_exit", 16},
      {"activity_buffers_refused", 17},
      {"scopes_in_capture", 18},
      {"unrecorded_scopes", 19},
      {"outside_window_scopes", 20},
      {"rejected_counts", 21},
      {"trace_records_dropped", 22},
      {"unmatched_span_ends", 23},
      {"spans_dropped", 24},
      {"graph_nodes_evicted", 25},
      {"graph_kernels_unknown_node", 26},
      {"graph_kernels_device_launched", 27},
      {"counted_kernels_untimed", 28},
      {"graph_kernels_no_launch", 29},
      {"graph_kernels_after_update", 30},
      {"graph_exec_updates_unmapped", 31},
      {"gpu_span_records_lost", 32},
      {"allocations_untracked", 33},
      {"launch_notes_lost", 34},
      {"kernel_names_uncached", 35},
      {"activity_buffers", 36},
      {"activity_processing_ns", 37},
  };
  REQUIRE(parsed(r).at("diagnostics") == expected);
}

TEST_CASE("json writes every ActivityStats field and busy_share", "[json]") {
  const json self = parsed(make_report()).at("ranges").at(2).at("self");
  std::set<std::string> keys;
  for (const auto& item : self.items()) keys.insert(item.key());
  const std::set<std::string> expected{
      "kernel_calls",   "kernel_ns",        "gpu_busy_ns",    "gpu_span_ns",     "busy_share",
      "memcpy",         "memset_count",     "memset_bytes",   "memset_ns",       "sync_count",
      "sync_ns",        "alloc_count",      "alloc_bytes",    "free_count",      "free_bytes",
      "peak_bytes",     "pageable_copies",  "pageable_bytes", "blocking_copies", "blocking_bytes",
      "kernel_streams", "busiest_stream_ns"};
  REQUIRE(keys == expected);
  REQUIRE(self.at("busy_share").get<double>() == 0.75);
  REQUIRE(self.at("gpu_busy_ns") == 750);
  REQUIRE(self.at("gpu_span_ns") == 1'000);
}

TEST_CASE("json writes a busy_share of 0 when there is no GPU span", "[json]") {
  const json mlp = parsed(make_report()).at("ranges").at(3);
  REQUIRE(mlp.at("total").at("busy_share").get<double>() == 0.0);
}

TEST_CASE("json keys memcpy by copy direction", "[json]") {
  Report r = make_report();
  r.ranges[1].total.memcpy[static_cast<std::size_t>(CopyKind::DtoH)] = {4, 2'000'000, 1'000'000};
  const json memcpy = parsed(r).at("ranges").at(1).at("total").at("memcpy");
  std::set<std::string> keys;
  for (const auto& item : memcpy.items()) keys.insert(item.key());
  REQUIRE(keys == std::set<std::string>{"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"});
  REQUIRE(memcpy.at("DtoH") ==
          json{{"count", 4}, {"bytes", 2'000'000}, {"total_ns", 1'000'000}, {"bytes_per_s", 2e9}});
  REQUIRE(memcpy.at("HtoD") == json{{"count", 0}, {"bytes", 0}, {"total_ns", 0}, {"bytes_per_s", 0.0}});
}

TEST_CASE("json writes kernels in report order with duration, shape and resources", "[json]") {
  const json kernels = parsed(make_report()).at("ranges").at(2).at("kernels");
  REQUIRE(kernels.size() == 2);
  const json expected{
      {"name", "gemm_kernel<float>"},
      {"duration", {{"count", 20}, {"total_ns", 1'500}, {"min_ns", 50}, {"max_ns", 100}, {"mean_ns", 75.0}}},
      {"grid", {128, 2, 1}},
      {"block", {256, 1, 1}},
      {"registers_per_thread", 64},
      {"static_shared_bytes", 4'096},
      {"dynamic_shared_bytes", 49'152},
      {"device", 1},
  };
  REQUIRE(kernels.at(0) == expected);
  REQUIRE(kernels.at(1).at("name") == "softmax_kernel");
}

TEST_CASE("json of an empty report holds the root range alone", "[json]") {
  const json j = parsed(Report{});
  REQUIRE(j.at("ranges").size() == 1);
  REQUIRE(j.at("ranges")[0].at("path") == "");
  REQUIRE(j.at("ranges")[0].at("parent").is_null());
  REQUIRE(j.at("notes") == json::array());
  REQUIRE(j.at("device") == "");
  REQUIRE(j.at("spans") == json::array());
}

TEST_CASE("json carries verdicts, counters, peaks and the counters' status", "[json][metrics]") {
  Report r = make_report();
  r.counters_status = "on: sol on GH100";
  r.peaks = {3.35e12, 6.7e13, 6.7e13, 6.7e13, "device properties"};
  r.ranges[1].verdict = {cuscope::Bound::compute, 1e11, 5e13, 500.0, 74.5, "SM at 80%: compute-bound"};
  r.ranges[1].profiled_kernels = 4;
  r.ranges[1].metrics = {{"dram__bytes_read.sum", "DRAM read", "byte", 1048576.0}};
  const json j = parsed(r);
  CHECK(j.at("counters_status") == "on: sol on GH100");
  CHECK(j.at("peaks").at("dram_bytes_per_s") == 3.35e12);
  CHECK(j.at("peaks").at("source") == "device properties");
  const json& step = j.at("ranges")[1];
  CHECK(step.at("verdict").at("bound") == "compute-bound");
  CHECK(step.at("verdict").at("arithmetic_intensity") == 500.0);
  CHECK(step.at("verdict").at("roofline_pct") == 74.5);
  CHECK(step.at("verdict").at("reason") == "SM at 80%: compute-bound");
  CHECK(step.at("profiled_kernels") == 4);
  CHECK(step.at("metrics")[0].at("name") == "dram__bytes_read.sum");
  CHECK(step.at("metrics")[0].at("value") == 1048576.0);
  CHECK(j.at("ranges")[2].at("verdict").at("bound") == "unknown");
}

TEST_CASE("json replaces bytes that are not UTF-8 in every string, so the file always parses", "[json]") {
  Report r = make_report();
  r.device = "dev\xff";
  r.gpu_timing = "cut \xe2\x82";  // a sequence cut short
  r.notes = {"CUSCOPE_X='\xc0\xaf'", "surrogate \xed\xa0\x80", "fine: µs — € 😀", "big \xf4\x90\x80\x80"};
  r.ranges[1].name = "step\x80";
  r.ranges[2].kernels[0].name = "gemm\xfe";
  const std::string text = format_json(r);
  const json j = json::parse(text);  // throws on invalid UTF-8
  CHECK(j["device"] == "dev\uFFFD");
  CHECK(j["gpu_timing"] == "cut \uFFFD\uFFFD");
  CHECK(j["notes"] == json{"CUSCOPE_X='\uFFFD\uFFFD'", "surrogate \uFFFD\uFFFD\uFFFD", "fine: µs — € 😀",
                           "big \uFFFD\uFFFD\uFFFD\uFFFD"});
  CHECK(j["ranges"][1]["name"] == "step\uFFFD");
  CHECK(j["ranges"][2]["kernels"][0]["name"] == "gemm\uFFFD");
  CHECK(text.find("\"fine: µs — € 😀\"") != std::string::npos);  // valid UTF-8 is not escaped
}

TEST_CASE("json writes every double as a finite number, even one that overflowed", "[json]") {
  Report r = make_report();
  cuscope::CountStats c;
  c.name = "huge";
  c.self = std::numeric_limits<double>::infinity();
  c.total = -std::numeric_limits<double>::infinity();
  c.per_host_second = std::numeric_limits<double>::quiet_NaN();
  c.per_gpu_second = 1.5;
  r.ranges[1].counts = {c};
  r.ranges[1].verdict.flop_per_s = std::numeric_limits<double>::infinity();
  r.rank = 0;  // a known rank, world size, pid and host: no null from them
  r.world_size = 1;
  r.pid = 1;
  r.host = "node";
  const std::string text = format_json(r);
  const std::size_t first_null = text.find("null");
  CHECK(first_null == text.find("\"parent\": null") + 10);  // the root's parent is the only null
  CHECK(text.find("null", first_null + 1) == std::string::npos);
  const json j = json::parse(text);
  const json& counts = j["ranges"][1]["counts"][0];
  CHECK(counts["self"].get<double>() == std::numeric_limits<double>::max());
  CHECK(counts["total"].get<double>() == -std::numeric_limits<double>::max());
  CHECK(counts["per_host_second"].get<double>() == 0.0);
  CHECK(counts["per_host_second"].is_number_float());
  CHECK(counts["per_gpu_second"].get<double>() == 1.5);
  CHECK(j["ranges"][1]["verdict"]["flop_per_s"].get<double>() == std::numeric_limits<double>::max());
}

TEST_CASE("json carries the step at which the window opens", "[json]") {
  Report r = make_report();
  r.window_start_step = 7;
  CHECK(parsed(r)["window_start_step"] == 7);
}

TEST_CASE("json writes NVTX start/end ranges after the ranges, host time as a duration", "[json][spans]") {
  Report r;
  r.spans = {SpanStats{"io", "load", {3, 10, 2, 5}, 1, 2}, SpanStats{"", "pending", {}, 4, 0}};
  const std::string text = format_json(r);
  const std::string expected = R"(  "spans": [
    {
      "domain": "io",
      "name": "load",
      "host": {
        "count": 3,
        "total_ns": 10,
        "min_ns": 2,
        "max_ns": 5,
        "mean_ns": 3.3333333333333335
      },
      "open": 1,
      "cross_thread": 2
    },
    {
      "domain": "",
      "name": "pending",
      "host": {
        "count": 0,
        "total_ns": 0,
        "min_ns": 0,
        "max_ns": 0,
        "mean_ns": 0.0
      },
      "open": 4,
      "cross_thread": 0
    }
  ]
}
)";
  REQUIRE(text.size() > expected.size());
  REQUIRE(text.substr(text.size() - expected.size()) == expected);
  REQUIRE(text.find("\"ranges\"") < text.find("\"spans\""));
}

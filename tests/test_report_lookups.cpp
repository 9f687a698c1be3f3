// The Report's lookups and names: find() by path, tracing_on(), the stable names of copy kinds and sort keys,
// and the version string.
//
// Never: a session or a model; the report is built by hand (tests/json_kit.hpp).
#include <catch2/catch.hpp>
#include <string>

#include "cuscope/report.hpp"
#include "cuscope/version.hpp"
#include "json_kit.hpp"

using cuscope::CopyKind;
using cuscope::Report;
using cuscope::SortKey;
using cuscope_test::json_kit::make_report;

TEST_CASE("find walks the range tree by path", "[report]") {
  const Report r = make_report();
  REQUIRE(r.find("") == &r.ranges[0]);
  REQUIRE(r.find("step") == &r.ranges[1]);
  REQUIRE(r.find("step/mlp") == &r.ranges[3]);
  REQUIRE(r.find("(unscoped)") == &r.ranges[4]);
  REQUIRE(r.find("mlp") == nullptr);
  REQUIRE(r.find("step/nope") == nullptr);
  REQUIRE(r.find("step/mlp/deeper") == nullptr);
  REQUIRE(r.find("step/") == nullptr);
  REQUIRE(r.find("/step") == nullptr);
  const Report empty;
  REQUIRE(empty.find("") == &empty.ranges[0]);
}

TEST_CASE("copy kinds and sort keys have stable names", "[report]") {
  REQUIRE(to_string(CopyKind::HtoD) == "HtoD");
  REQUIRE(to_string(CopyKind::DtoH) == "DtoH");
  REQUIRE(to_string(CopyKind::DtoD) == "DtoD");
  REQUIRE(to_string(CopyKind::HtoH) == "HtoH");
  REQUIRE(to_string(CopyKind::PtoP) == "PtoP");
  REQUIRE(to_string(CopyKind::Other) == "other");
  REQUIRE(to_string(SortKey::host_total) == "host_total");
  REQUIRE(to_string(SortKey::host_self) == "host_self");
  REQUIRE(to_string(SortKey::gpu_total) == "gpu_total");
  REQUIRE(to_string(SortKey::kernel_total) == "kernel_total");
  REQUIRE(to_string(SortKey::gpu_busy) == "gpu_busy");
  REQUIRE(to_string(SortKey::calls) == "calls");
  REQUIRE(to_string(SortKey::name) == "name");
}

TEST_CASE("version is built from the version macros", "[report]") {
  const std::string from_macros = std::to_string(CUSCOPE_VERSION_MAJOR) + "." +
                                  std::to_string(CUSCOPE_VERSION_MINOR) + "." +
                                  std::to_string(CUSCOPE_VERSION_PATCH);
  REQUIRE(std::string(cuscope::version()) == from_macros);
}

TEST_CASE("tracing_on is true for 'on' and 'on, ...' (the defaults' status), false for every reason",
          "[report]") {
  Report r;
  const auto traced = [&r](const char* status) {
    r.activity_status = status;
    return r.tracing_on();
  };
  CHECK(traced("on"));
  // The defaults (synchronization and memory records off): a demo that compared with "on" skipped
  // its kernel-count check under them on the H200 run of 2026-11-27.
  CHECK(
      traced("on, synchronizes and allocations seen by callbacks, without their records "
             "(CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)"));
  CHECK(traced("on, without synchronization records (CUSCOPE_SYNC_RECORDS=0)"));
  CHECK_FALSE(traced("session not started"));
  CHECK_FALSE(traced("disabled by option (CUSCOPE_ACTIVITIES=0)"));
  CHECK_FALSE(traced("only the host: no CUDA driver"));  // begins "on", as a word's letters only
  CHECK_FALSE(traced("on,without a space"));
  CHECK_FALSE(traced(""));
}

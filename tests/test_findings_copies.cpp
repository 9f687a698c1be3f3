// Findings on copies: many small ones, pageable host sides, and blocking (synchronous) host copies,
// each rule on both sides of its thresholds, over the range's own copies only.
#include <catch2/catch.hpp>
#include <cuscope/report.hpp>
#include <string>

#include "findings_kit.hpp"
#include "model/findings.hpp"

using cuscope::CopyKind;
using cuscope::RangeStats;
using cuscope::Severity;
using cuscope_test::range_at;
namespace model = cuscope::model;

TEST_CASE("many small copies: at least 20 of one direction averaging under 64 KiB", "[findings]") {
  RangeStats r = range_at();
  auto& htod = r.self.memcpy[static_cast<std::size_t>(CopyKind::HtoD)];
  htod = {20, 20 * 1024, 1'000};
  const auto f = model::small_copies_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "20 HtoD copies averaging 1.0 KiB");
  htod = {19, 19 * 1024, 1'000};
  CHECK_FALSE(model::small_copies_rule(r));
  htod = {20, 20 * 64 * 1024, 1'000};
  CHECK_FALSE(model::small_copies_rule(r));
}

TEST_CASE("pageable copies: at least 10 of them, or at least 64 MiB", "[findings][pageable]") {
  RangeStats r = range_at();
  r.self.memcpy[static_cast<std::size_t>(CopyKind::HtoD)].count = 30;
  r.self.memcpy[static_cast<std::size_t>(CopyKind::DtoH)].count = 10;
  r.self.memcpy[static_cast<std::size_t>(CopyKind::DtoD)].count = 99;  // no host side
  r.self.pageable_copies = 10;
  r.self.pageable_bytes = 3 << 20;
  const auto f = model::pageable_copies_rule(r);
  REQUIRE(f);
  CHECK(f->id == "pageable-copies");
  CHECK(f->severity == Severity::warning);
  CHECK(f->observation == "10 of 40 host copies pageable, 3.0 MiB");
  CHECK(f->cause.find("staged through a pinned buffer") != std::string::npos);
  CHECK(f->fix.find("pin_memory=True") != std::string::npos);
  CHECK(f->fix.find("non_blocking=True") != std::string::npos);
  CHECK(f->fix.find("cudaHostAlloc") != std::string::npos);
  r.self.pageable_copies = 9;
  CHECK_FALSE(model::pageable_copies_rule(r));
  r.self.pageable_copies = 1;
  r.self.pageable_bytes = model::kPageableMinBytes - 1;
  CHECK_FALSE(model::pageable_copies_rule(r));
  r.self.pageable_bytes = model::kPageableMinBytes;
  const auto big = model::pageable_copies_rule(r);
  REQUIRE(big);
  CHECK(big->observation == "1 of 40 host copies pageable, 64.0 MiB");
  // Only the range's own copies: its subtree's are its children's to report.
  r.self.pageable_copies = 0;
  r.self.pageable_bytes = 0;
  r.total.pageable_copies = 100;
  r.total.pageable_bytes = 1ull << 30;
  CHECK_FALSE(model::pageable_copies_rule(r));
}

TEST_CASE("pageable copies of no known direction still count among the host copies", "[findings][pageable]") {
  RangeStats r = range_at();
  r.self.memcpy[static_cast<std::size_t>(CopyKind::Other)].count = 12;  // to or from CUDA arrays
  r.self.pageable_copies = 12;
  r.self.pageable_bytes = 12 * 1024;
  const auto f = model::pageable_copies_rule(r);
  REQUIRE(f);
  CHECK(f->observation == "12 of 12 host copies pageable, 12.0 KiB");
}

TEST_CASE("blocking copies: a synchronous host copy per call, over at least 2 calls, own copies only",
          "[findings][blocking]") {
  RangeStats r = range_at();  // 10 calls
  r.self.blocking_copies = 10;
  r.self.blocking_bytes = 40;
  const auto f = model::blocking_copies_rule(r);
  REQUIRE(f);
  CHECK(f->id == "blocking-copies");
  CHECK(f->severity == Severity::info);
  CHECK(f->observation == "10 synchronous host copies in 10 calls (40 B): cudaMemcpy, not cudaMemcpyAsync");
  CHECK(f->cause.find("wait for the GPU's earlier work") != std::string::npos);
  CHECK(f->fix.find("cudaMemcpyAsync") != std::string::npos);
  r.self.blocking_copies = 9;
  CHECK_FALSE(model::blocking_copies_rule(r));
  r.calls = 1;
  r.self.blocking_copies = 5;
  CHECK_FALSE(model::blocking_copies_rule(r));
  r.calls = model::kBlockingMinCalls;
  CHECK(model::blocking_copies_rule(r));
  // Only the range's own copies: its subtree's are its children's to report.
  r.self.blocking_copies = 0;
  r.total.blocking_copies = 100;
  CHECK_FALSE(model::blocking_copies_rule(r));
}

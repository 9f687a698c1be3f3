// The CUPTI decoding path without a GPU, the walk and the start: how a buffer is stepped through
// (a kind cuscope does not decode, one no CUPTI knows, a record cut off, an empty buffer; CUPTI's
// own iterator and the walk by size reading the same records), the loaded libcupti's version
// deciding the walk or refusing tracing, CUPTI's refusals in the user's terms, activity tracing
// starting or leaving nothing hooked.
//
// Never: a GPU; a session only where tracing is started, one per case (tests/session_fixture.hpp).
#include <catch2/catch.hpp>
#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <string>

#include "cupti_buffer.hpp"
#include "cupti_decode_kit.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/decode.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/scope_state.hpp"
#include "session_fixture.hpp"

using cuscope::Report;
using cuscope::detail::consume_buffer;
using cuscope_test::CuptiBuffer;
using cuscope_test::cupti_decode_kit::Fixture;

TEST_CASE("a record kind cuscope does not decode is skipped and counted, the rest still read", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(90, a.instance).context_record().kernel(90, 10, 20, "_Z1kv");
  const auto counts = f.consume();
  CHECK(counts.records == 3);
  CHECK(counts.unknown == 1);
  const Report r = f.report();
  CHECK(r.diagnostics.unknown_records == 1);
  CHECK(r.find("k")->self.kernel_calls == 1);
}

TEST_CASE("a kind no CUPTI knows ends the buffer, counted, without crashing", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(91, a.instance).kernel(91, 10, 20, "_Z1kv").garbage().kernel(91, 30, 40, "_Z1kv");
  const auto counts = f.consume();
  CHECK(counts.records == 2);
  CHECK(counts.unknown == 1);
  CHECK(f.report().find("k")->self.kernel_calls == 1);
}

TEST_CASE("a record cut off at the end of the buffer is counted", "[cupti]") {
  Fixture f;
  auto a = f.begin("k");
  f.end(a);
  f.buffer.external(92, a.instance).kernel(92, 10, 20, "_Z1kv").kernel(92, 30, 40, "_Z1kv");
  const std::size_t cut = f.buffer.size() - 100;
  const auto counts = consume_buffer(f.buffer.data(), cut, 0, f.agg);
  CHECK(counts.records == 2);
  CHECK(counts.unknown == 1);
  const Report r = f.report();
  CHECK(r.find("k")->self.kernel_calls == 1);
  CHECK(r.diagnostics.unknown_records == 1);
}

TEST_CASE("an empty buffer is fine", "[cupti]") {
  Fixture f;
  const auto counts = f.consume();
  CHECK(counts.records == 0);
  CHECK(counts.unknown == 0);
}

TEST_CASE("CUPTI refusals say why in the user's terms and name the call and the error", "[cupti]") {
  using cuscope::detail::cupti_refusal;
  CHECK(cupti_refusal("cuptiActivityEnable(CONCURRENT_KERNEL)",
                      CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) ==
        "CUPTI is already in use by another tool (Nsight Systems, Nsight Compute or compute-sanitizer): "
        "cuptiActivityEnable(CONCURRENT_KERNEL) returned CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED");
  CHECK(cupti_refusal("cuptiRangeProfilerEnable", CUPTI_ERROR_INSUFFICIENT_PRIVILEGES)
            .rfind("no permission for GPU performance counters (ERR_NVGPUCTRPERM; run as root", 0) == 0);
  CHECK(cupti_refusal("cuptiRangeProfilerEnable", CUPTI_ERROR_HARDWARE_BUSY) ==
        "the GPU's performance counters are busy (another profiler or DCGM holds them): "
        "cuptiRangeProfilerEnable "
        "returned CUPTI_ERROR_HARDWARE_BUSY");
  CHECK(cupti_refusal("cuptiActivityEnable(MEMCPY)", CUPTI_ERROR_UNKNOWN) ==
        "CUPTI refused: cuptiActivityEnable(MEMCPY) returned CUPTI_ERROR_UNKNOWN");
}

TEST_CASE("activity tracing starts, or says why not and leaves nothing hooked", "[cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;  // started by hand below
  cuscope_test::Session fixture(o);
  auto& s = cuscope::detail::session();
  const std::string status = cuscope::detail::start_activity_tracing(s);
  INFO("status: " << status);
  if (status == "on") {  // a machine with a driver
    CHECK(s.tracing.load());
    CHECK(cuscope::detail::g_push_correlation.load() != nullptr);
    cuscope::detail::stop_activity_tracing();
  } else {  // no driver: CUPTI refuses at its first call
    CHECK(status.rfind("CUPTI refused: cuptiActivity", 0) == 0);
    CHECK(status.find(" returned CUPTI_ERROR_") != std::string::npos);
  }
  CHECK_FALSE(s.tracing.load());
  CHECK(cuscope::detail::g_push_correlation.load() == nullptr);
  CHECK(cuscope::detail::g_pop_correlation.load() == nullptr);
}

TEST_CASE("CUPTI's own iterator steps over every decoded kind by its 8-aligned size", "[cupti]") {
  // decode_buffer walks decoded kinds by size; this pins that CUPTI packs them the same way.
  CuptiBuffer b;
  b.kernel(1, 10, 20, "_Z1kv")
      .external(1, 5)
      .api(1, 1)
      .api(2, 1, true)
      .memcpy(3, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, 8, 1, 2);
  b.memset(4, 8, 1, 2).memory(5, true, 0x10, 8, 1).sync(6, 1, 2).overhead(1, 2);
  b.peer_copy(7, 8, 1, 2).internal_launch(8, 1);
  const std::size_t sizes[] = {sizeof(CUpti_ActivityKernel10),  sizeof(CUpti_ActivityExternalCorrelation),
                               sizeof(CUpti_ActivityAPI),       sizeof(CUpti_ActivityAPI),
                               sizeof(CUpti_ActivityMemcpy6),   sizeof(CUpti_ActivityMemset4),
                               sizeof(CUpti_ActivityMemory4),   sizeof(CUpti_ActivitySynchronization2),
                               sizeof(CUpti_ActivityOverhead3), sizeof(CUpti_ActivityMemcpyPtoP4),
                               sizeof(CUpti_ActivityAPI)};
  CUpti_Activity* record = nullptr;
  std::size_t expected = 0;
  for (std::size_t size : sizes) {
    REQUIRE(cuptiActivityGetNextRecord(b.data(), b.size(), &record) == CUPTI_SUCCESS);
    CHECK(static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(record) - b.data()) == expected);
    expected += (size + 7) & ~std::size_t{7};
  }
  CHECK(cuptiActivityGetNextRecord(b.data(), b.size(), &record) == CUPTI_ERROR_MAX_LIMIT_REACHED);
  CHECK(expected == b.size());
}

// --- the GPU-side review's points, shown on synthetic records ---------------------------------

TEST_CASE("the loaded libcupti's version decides how buffers are walked", "[cupti]") {
  using cuscope::detail::check_layouts;
  using cuscope::detail::Walk;
  const auto same = check_layouts(130001, 130001);
  CHECK(same.walk == Walk::BySize);
  CHECK(same.refusal.empty());
  CHECK(same.note.empty());
  const auto newer = check_layouts(130200, 130001);
  CHECK(newer.walk == Walk::ByCupti);
  CHECK(newer.refusal.empty());
  CHECK(newer.note ==
        "libcupti API version 130200 is newer than the 130001 cuscope was built with: activity records "
        "are stepped with CUPTI's iterator");
  const auto older = check_layouts(120800, 130001);
  CHECK(older.refusal ==
        "libcupti API version 120800 is older than the 130001 cuscope was built with: its record layouts "
        "cannot be read safely (load the libcupti of the CUDA toolkit cuscope was built with)");
  std::uint32_t loaded = 0;
  REQUIRE(cuptiGetVersion(&loaded) == CUPTI_SUCCESS);
  CHECK(loaded == CUPTI_API_VERSION);  // this machine's libcupti is the one built against
}

TEST_CASE("walking with CUPTI's iterator reads the same records as walking by size", "[cupti]") {
  auto fill = [](Fixture& f, std::uint64_t instance) {
    f.buffer.external(1, instance).api(1, 5).kernel(1, 10, 20, "_Z1kv").context_record();
    f.buffer.memcpy(1, CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, 32, 30, 40).peer_copy(1, 64, 50, 60);
    f.buffer.memset(1, 16, 70, 80).sync(1, 90, 95).internal_launch(2, 96).overhead(97, 99);
  };
  Fixture by_size;
  Fixture by_cupti;
  auto a = by_size.begin("w");
  by_size.end(a);
  auto b = by_cupti.begin("w");
  by_cupti.end(b);
  fill(by_size, a.instance);
  fill(by_cupti, b.instance);
  const auto size_counts = cuscope::detail::decode_buffer(by_size.buffer.data(), by_size.buffer.size(),
                                                          by_size.agg, cuscope::detail::Walk::BySize);
  const auto cupti_counts = cuscope::detail::decode_buffer(by_cupti.buffer.data(), by_cupti.buffer.size(),
                                                           by_cupti.agg, cuscope::detail::Walk::ByCupti);
  CHECK(size_counts.records == 10);
  CHECK(cupti_counts.records == 10);
  CHECK(size_counts.unknown == 1);
  CHECK(cupti_counts.unknown == 1);
  CHECK(cuscope::format_json(by_size.report()) == cuscope::format_json(by_cupti.report()));
}

TEST_CASE("an older libcupti than cuscope was built with: tracing refused in one line", "[cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.activities = false;
  cuscope_test::Session fixture(o);
  cuscope::detail::set_cupti_version_for_testing(120800);
  const std::string status = cuscope::detail::start_activity_tracing(cuscope::detail::session());
  cuscope::detail::set_cupti_version_for_testing(0);
  CHECK(status.rfind("libcupti API version 120800 is older than the ", 0) == 0);
  CHECK(status.find('\n') == std::string::npos);
  CHECK_FALSE(cuscope::detail::session().tracing.load());
  CHECK(cuscope::detail::g_push_correlation.load() == nullptr);
}

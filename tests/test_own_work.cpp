// cuscope's own processing of CUPTI's activity records (Diagnostics::activity_buffers,
// activity_processing_ns): counted per buffer the session takes, timed around the work, in the
// report, its JSON and the table's header. CUPTI-free: buffers are built by tests/cupti_buffer.hpp
// and handed over as the buffer callback hands them (take_buffer()), in sessions that find no GPU
// (WithoutGpu: on a machine with one, real CUPTI's buffers would count too).
// Never: a timed bound that a slow machine could break (times are checked against the wall time
// measured around the same calls, not against a constant).
#include <catch2/catch.hpp>
#include <cuscope/cuscope.hpp>
#include <string>

#include "cli/cli.hpp"
#include "cupti_buffer.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/adapter.hpp"
#include "session/session.hpp"
#include "session_fixture.hpp"
#include "table_kit.hpp"

namespace {

using cuscope_test::CuptiBuffer;
using cuscope_test::table_kit::header_line;

}  // namespace

TEST_CASE("each buffer a session takes counts as cuscope's own work, timed within the call", "[cupti]") {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  cuscope::detail::Session& sink = cuscope::detail::session();
  CuptiBuffer first;
  first.api(11, 1'000).kernel(11, 2'000, 3'000, "k");
  CuptiBuffer second;
  second.api(12, 4'000).kernel(12, 5'000, 6'000, "k").api(13, 7'000).kernel(13, 8'000, 9'000, "k");

  const std::uint64_t before = cuscope::detail::now_ns();
  cuscope::detail::take_buffer(sink, first.data(), first.size(), 0);
  cuscope::detail::take_buffer(sink, second.data(), second.size(), 0);
  const std::uint64_t after = cuscope::detail::now_ns();

  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.activity_buffers == 2);
  CHECK(r.diagnostics.activity_processing_ns > 0);
  CHECK(r.diagnostics.activity_processing_ns <= after - before);
  // The records themselves went where they always go: three launches outside every scope.
  REQUIRE(r.find("(unscoped)") != nullptr);
  CHECK(r.find("(unscoped)")->self.kernel_calls == 3);
}

TEST_CASE("an empty buffer still counts as one taken", "[cupti]") {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  CuptiBuffer empty;
  cuscope::detail::take_buffer(cuscope::detail::session(), empty.data(), 0, 0);
  CHECK(cuscope::snapshot().diagnostics.activity_buffers == 1);
}

TEST_CASE("a session that took no buffer reports no own work and the header says nothing of it",
          "[cupti][table]") {
  cuscope_test::WithoutGpu no_gpu;
  cuscope_test::Session session;
  const cuscope::Report r = cuscope::snapshot();
  CHECK(r.diagnostics.activity_buffers == 0);
  CHECK(r.diagnostics.activity_processing_ns == 0);
  CHECK(header_line(cuscope::format_table(r), "cuscope's own work").empty());
}

TEST_CASE("the header says cuscope's own work with its share of the wall time", "[table]") {
  cuscope::Report r;
  r.wall_ns = 2'000'000'000;
  r.diagnostics.activity_buffers = 41;
  r.diagnostics.activity_processing_ns = 3'200'000;
  CHECK(header_line(cuscope::format_table(r), "cuscope's own work") ==
        "cuscope's own work: 41 CUPTI buffers processed in 3.20 ms (0.16% of the wall time)");

  r.diagnostics.activity_buffers = 1;
  r.wall_ns = 0;  // a report without a wall time (merged or hand-made): no share
  CHECK(header_line(cuscope::format_table(r), "cuscope's own work") ==
        "cuscope's own work: 1 CUPTI buffer processed in 3.20 ms");

  // Not a loss: never in the "lost or off" line.
  CHECK(header_line(cuscope::format_table(r), "lost or off").empty());
}

TEST_CASE("own work reads back from the JSON report", "[json]") {
  cuscope::Report r;
  r.diagnostics.activity_buffers = 7;
  r.diagnostics.activity_processing_ns = 123'456;
  cuscope::Report back;
  std::string error;
  REQUIRE(cuscope::cli::report_from_json(cuscope::format_json(r), &back, &error));
  CHECK(back.diagnostics.activity_buffers == 7);
  CHECK(back.diagnostics.activity_processing_ns == 123'456);
}

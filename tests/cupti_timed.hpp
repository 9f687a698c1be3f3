// tests/cupti_timed.hpp — the fixtures of the CUPTI-timed event tests (CUSCOPE_EVENT_TIMESTAMPS=cupti):
// the CUPTI clock for the pairs made while one lives, and fake CUDA playing CUPTI's part beside a
// thread's pool of pairs. Never: a session (the session-level tests make their own).
#pragma once

#include <catch2/catch.hpp>

#include "fake_cuda.hpp"
#include "model/range_tree.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/gpu_events.hpp"

namespace cuscope_test {

// The CUPTI clock for pairs made while it lives, and a clean table.
struct CuptiClock {
  CuptiClock() {
    cuscope::detail::event_timestamps().clear();
    cuscope::detail::set_event_timestamps_from_cupti(true);
  }
  ~CuptiClock() {
    cuscope::detail::set_event_timestamps_from_cupti(false);
    cuscope::detail::event_timestamps().clear();
  }
};

// Fake CUDA playing CUPTI's part (records by the driver call's id when `by_driver`), the CUPTI
// clock, and a thread's pool of pairs made under it.
struct CuptiTimed {
  explicit CuptiTimed(bool by_driver = false) { cuda.cupti_event_records(true, by_driver); }
  cuscope_test::FakeCuda cuda;
  const CuptiClock clock;
  cuscope::detail::GpuEvents events;
};

// CUPTI holding back a thread's buffer while any record in it is incomplete: "fast" (2 us, stream 1)
// recorded and run, then "slow" (7 us, stream 2) recorded and not run, so fast's records wait in the
// buffer behind slow's. The GPU runs nothing further until cuda.complete_all().
inline void fast_run_slow_held(CuptiTimed& t, cuscope::model::Node& fast, cuscope::model::Node& slow) {
  t.cuda.cupti_holds_unfinished(true);
  t.cuda.complete_on_record(false);
  REQUIRE(t.events.begin(1, FakeCuda::stream(0, 1)));
  t.cuda.advance_ns(2'000);
  t.events.end(1, &fast);
  t.cuda.complete_all();  // "fast" has run
  REQUIRE(t.events.begin(1, FakeCuda::stream(0, 2)));
  t.cuda.advance_ns(7'000);
  t.events.end(1, &slow);  // "slow" has not: CUPTI holds the buffer, fast's records in it
}

}  // namespace cuscope_test

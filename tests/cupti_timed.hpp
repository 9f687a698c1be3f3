// tests/cupti_timed.hpp — the fixtures of the CUPTI-timed event tests (CUSCOPE_EVENT_TIMESTAMPS=cupti):
// the CUPTI clock for the pairs made while one lives, and fake CUDA playing CUPTI's part beside a
// thread's pool of pairs. Never: a session (the session-level tests make their own).
#pragma once

#include "fake_cuda.hpp"
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


}  // namespace cuscope_test

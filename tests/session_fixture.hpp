// A fresh cuscope session per test case, so the cases also run together in one process.
#pragma once

#include <cuscope/cuscope.hpp>

#include "session/session.hpp"

namespace cuscope_test {

inline cuscope::Options quiet_options() {
  cuscope::Options o;
  o.print_at_exit = false;
  return o;
}

struct Session {
  explicit Session(const cuscope::Options& o = quiet_options(), bool start = true) {
    cuscope::detail::reset_for_testing();
    if (start) cuscope::start(o);
  }
  ~Session() { cuscope::detail::reset_for_testing(); }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
};

}  // namespace cuscope_test

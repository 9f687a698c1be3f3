// tests/child_kit.hpp — a forked child waited for a bounded time, for the cases whose child must
// end on its own (a write that must not wait, an exit that must not hang).
//
// Never here: an unbounded wait, or a child left unreaped.
#pragma once

#include <sys/types.h>
#include <sys/wait.h>

#include <chrono>
#include <csignal>
#include <thread>

namespace cuscope_test {

// Waits up to `seconds` for `child` to end, polling every 10 ms, its status in *status: what
// waitpid() returned (the child's pid), or 0 when it had not ended by then, and was killed and reaped.
inline pid_t wait_child(pid_t child, int* status, int seconds = 5) {
  pid_t done = 0;
  for (int waited = 0; waited < seconds * 100 && (done = ::waitpid(child, status, WNOHANG)) == 0; ++waited)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, status, 0);
  }
  return done;
}

}  // namespace cuscope_test

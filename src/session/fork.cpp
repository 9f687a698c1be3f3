// session/fork.cpp — fork(): the handlers that keep the session's locks whole across it, and a
// child's life without cuscope (see cuscope/session.hpp): its other threads are gone and any lock
// they held stays held, so in the child every entry point returns before taking one.
//
// Never: allocate or take a lock in the child's handler beyond releasing what the parent's
// handler took; record anything in a child.
#include <fmt/format.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>

#include "producers/cupti/detach.hpp"
#include "session/internal.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Set in a child created by fork(): cuscope is off there (constant-initialized).
std::atomic<bool> g_forked_child{false};
std::atomic<long> g_parent_pid{0};

// Held across fork(), so that the child finds them free and what they guard whole: the session's
// thread registry (thread exits take it), then the notes (a leaf lock: nothing else is taken
// while it is held, but the logger's).
Session* g_forking = nullptr;  // the session whose thread lock fork() holds

void before_fork() noexcept {
  g_forking = session_if_made();
  if (g_forking) g_forking->threads_mutex.lock();
  lock_notes();
}

void after_fork_in_parent() noexcept {
  unlock_notes();
  if (g_forking) g_forking->threads_mutex.unlock();
}

// The child's only thread is the one that called fork(). Its scopes still open from the parent
// end without touching the tree (ended "on another thread"), and its exit releases nothing, since
// the session's locks may be held by threads that no longer exist.
void after_fork_in_child() noexcept {
  unlock_notes();
  if (g_forking) g_forking->threads_mutex.unlock();
  g_parent_pid.store(static_cast<long>(getppid()), std::memory_order_relaxed);
  g_forked_child.store(true, std::memory_order_relaxed);
  g_state.store(kOff, std::memory_order_release);
  g_flags.store(0, std::memory_order_relaxed);
  forget_detach_in_forked_child();  // no cuptiFinalize in a child: an atomic store, no CUPTI call
  detach_this_thread();             // the child's thread exit releases nothing
}

[[gnu::constructor]] void register_fork_handlers_at_load() { register_fork_handlers(); }

}  // namespace

bool forked_child() noexcept { return g_forked_child.load(std::memory_order_relaxed); }

// Once per process, at load time (above) and again from session() in case a program forks from a
// static constructor that runs before ours.
void register_fork_handlers() noexcept {
  static const bool registered = pthread_atfork(before_fork, after_fork_in_parent, after_fork_in_child) == 0;
  (void)registered;
}

Report forked_child_report() {
  Report r;
  const std::string off = "off in a process created by fork()";
  r.device = "not queried (cuscope is off in a process created by fork())";
  r.gpu_timing = r.activity_status = r.counters_status = off;
  r.notes.push_back(
      fmt::format("cuscope is off in this process: it was created by fork() from process {}, "
                  "whose session goes on there (see docs/api.md, Lifetime)",
                  g_parent_pid.load(std::memory_order_relaxed)));
  return r;
}

}  // namespace cuscope::inline v0::detail

// session/threads.cpp — a thread's scope state: attached on the thread's first scope (a tree of
// the forest, a CUDA-event pool, in trace mode its ring), handed on after its last, and reused by a
// later thread.
//
// Never: hand a tree on while the thread may still open scopes, or drop one (trees live as long as
// the forest). Attaching takes the thread registry's lock once per thread, never per scope.
#include <pthread.h>

#include <memory>
#include <mutex>
#include <stdexcept>

#include "producers/clock.hpp"
#include "session/internal.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

// A thread's tree is handed on only after the thread's last scope: from a pthread key
// destructor, which runs after every C++ thread_local destructor of the thread (a thread_local
// built before the thread's first scope may still open scopes in its destructor). A scope in a
// later key destructor attaches again, and the key releases again (POSIX repeats the round).
void release_thread(void* state) {
  auto* ts = static_cast<ThreadState*>(state);
  forget_this_thread();
  auto& s = static_cast<Session&>(*ts->owner);  // attach_thread() made it: a Session's
  std::lock_guard lock(s.threads_mutex);
  s.released_threads.push_back(ts);
  s.forest.idle_trees.fetch_add(1, std::memory_order_release);
}

pthread_key_t release_key() {
  static const pthread_key_t key = [] {
    pthread_key_t k{};
    if (pthread_key_create(&k, release_thread) != 0) throw std::runtime_error("no pthread key left");
    return k;
  }();
  return key;
}

}  // namespace

namespace {

// attach_thread() but trace mode's ring: the thread's state, under the thread registry's lock.
ThreadState* take_thread_state() noexcept {
  try {
    Session& s = session();
    // Past the thread limit every scope retries: lock-free until a tree is free again.
    if (s.forest.idle_trees.load(std::memory_order_acquire) == 0 && s.forest.full()) return nullptr;
    const pthread_key_t key = release_key();
    std::lock_guard lock(s.threads_mutex);
    ThreadState* ts = nullptr;
    if (!s.released_threads.empty()) {
      ts = s.released_threads.back();
      s.released_threads.pop_back();
      s.forest.idle_trees.fetch_sub(1, std::memory_order_relaxed);
      for (std::uint32_t d = ts->tree->open_depth(); d > 0 && ts->gpu; --d) ts->gpu->abandon(d);
      ts->tree->abandon_open();  // the exited thread left them open
      forget_outside(ts);
      ts->suspended_at = ts->accounted_ns = 0;  // the exited thread's windows
      settle_slow_exit(ts);
      ts->tree->new_owner();
    } else {
      model::ThreadTree* tree = s.forest.make_tree();
      if (tree == nullptr) return nullptr;
      auto fresh = std::make_unique<ThreadState>();
      fresh->owner = &s;
      fresh->tree = tree;
      if (s.records_events()) fresh->gpu = std::make_unique<GpuEvents>();
      ts = fresh.get();
      s.threads.push_back(std::move(fresh));
    }
    pthread_setspecific(key, ts);
    return ts;
  } catch (...) {
    return nullptr;
  }
}

}  // namespace

ThreadState* attach_thread() noexcept {
  ThreadState* ts = take_thread_state();
  // Trace mode: the thread's ring now, outside the registry's lock and before its first scope reads
  // the clock (a ring made by the first event was about 1 ms of that scope's time).
  if (ts != nullptr) trace::attach_this_thread(ts->tree->slot(), now_ns());
  return ts;
}

void detach_this_thread() noexcept {
  forget_this_thread();
  pthread_setspecific(release_key(), nullptr);
}

}  // namespace cuscope::inline v0::detail

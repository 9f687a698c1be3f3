// python/src/gil.cpp — see gil.hpp.
#include "gil.hpp"

#include <unistd.h>

#include <condition_variable>
#include <mutex>

namespace cuscope::python {
namespace {

struct Exit {
  std::mutex mutex;
  std::condition_variable none_taking;
  bool parking = false;  // the interpreter's exit has begun
  int taking = 0;        // threads taking the GIL back now
};

Exit& exit_state() {
  static Exit* e = new Exit();  // never destroyed: daemon threads may reach it after static destructors
  return *e;
}

thread_local bool t_exiting = false;  // the thread that runs the exit: it never parks

[[noreturn]] void park() {
  for (;;) pause();
}

}  // namespace

ReleaseGil::ReleaseGil() noexcept : state_(PyEval_SaveThread()) {}

ReleaseGil::~ReleaseGil() {
  Exit& e = exit_state();
  {
    std::unique_lock lock(e.mutex);
    if (e.parking && !t_exiting) {
      lock.unlock();
      park();
    }
    ++e.taking;
  }
  PyEval_RestoreThread(state_);
  std::lock_guard lock(e.mutex);
  if (--e.taking == 0) e.none_taking.notify_all();
}

void park_other_threads_from_now() noexcept {
  t_exiting = true;
  Exit& e = exit_state();
  {
    std::lock_guard lock(e.mutex);
    e.parking = true;
  }
  // A thread already taking the GIL back waits for it: let it have it and go on, outside this code.
  PyThreadState* state = PyEval_SaveThread();
  {
    std::unique_lock lock(e.mutex);
    e.none_taking.wait(lock, [&] { return e.taking == 0; });
  }
  PyEval_RestoreThread(state);
}

}  // namespace cuscope::python

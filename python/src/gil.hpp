// python/src/gil.hpp — the GIL released around the library's calls that may wait, safe at the
// interpreter's exit.
//
// A daemon thread that takes the GIL back once the interpreter finalizes is ended by Python
// (CPython 3.11 to 3.13 call pthread_exit in PyEval_RestoreThread). Ended inside a C++ frame that
// cannot unwind (a destructor, nanobind's dispatch, which catches everything), that ending is
// std::terminate: the whole process aborts after its table printed, its exit status lost. So from the
// interpreter's exit on (shutdown_at_exit, an atexit handler: before Python finalizes), a thread that
// would take the GIL back here parks for good instead; the process ends around it. One that is
// already taking it back then is waited for, the GIL released, before the exit goes on.
//
// Never here: a call into the library, a Python object.
#pragma once

#include <Python.h>

namespace cuscope::python {

/// Releases the GIL for its lifetime; takes it back at its end, or parks the thread for good where
/// the interpreter's exit has begun (not the exiting thread itself).
class ReleaseGil {
 public:
  ReleaseGil() noexcept;
  ~ReleaseGil();
  ReleaseGil(const ReleaseGil&) = delete;
  ReleaseGil& operator=(const ReleaseGil&) = delete;

 private:
  PyThreadState* state_;
};

/// At the interpreter's exit, on its exiting thread with the GIL held: from now on every other
/// thread parks where a ReleaseGil would take the GIL back; returns once none is taking it back.
void park_other_threads_from_now() noexcept;

}  // namespace cuscope::python

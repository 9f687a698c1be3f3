// inject/entry.cpp — libcuscope_inject.so: cuscope on an unmodified program (zero-code mode). Its
// load, and its entry points other than NVTX's tables (nvtx_callbacks.cpp): the CUDA driver's
// InitializeInjection (CUDA_INJECTION64_PATH).
//
// The library holds a whole cuscope (the engine). A program that links cuscope as well forwards to
// it (session/handover.hpp, whose cuscope_v0_engine the library exports too), so a process has one
// session, one CUPTI subscriber, one table. The library exports these entry points and nothing else
// (exports.map). Nothing here may call CUDA:
// InitializeInjection runs inside cuInit.
#include <atomic>
#include <cuscope/session.hpp>
#include <thread>

#include "inject/static_program.hpp"
#include "session/handover.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail::inject {
namespace {

// Runs when the library is loaded (by NVTX, the CUDA driver or a linked cuscope looking for it):
// this copy is the engine, and its scopes push no NVTX range (NVTX leads back here).
[[gnu::constructor]] void on_load() {
  mark_engine();
  g_nvtx_quiet.store(true, std::memory_order_relaxed);
}

}  // namespace
}  // namespace cuscope::inline v0::detail::inject

extern "C" {

/// The CUDA driver's entry point (CUDA_INJECTION64_PATH), called inside cuInit. CUDA cannot be
/// called from here, so the session starts on its own thread, which waits for cuInit to finish.
__attribute__((visibility("default"))) int InitializeInjection() {
  if (cuscope::detail::inject::declined_static_program()) return 1;  // loaded, and nothing started
  try {
    std::thread([] { cuscope::start(); }).detach();
  } catch (...) {  // no thread: the first NVTX range starts the session instead
  }
  return 1;
}

}  // extern "C"

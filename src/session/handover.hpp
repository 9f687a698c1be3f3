// session/handover.hpp — one session per process when cuscope is in it twice.
//
// Zero-code mode loads libcuscope_inject.so (NVTX_INJECTION64_PATH), which holds a whole cuscope:
// the engine. A program that also links cuscope has a second copy. Two sessions would fight over
// CUPTI and print two tables, so the linked copy hands over: it finds the injected engine once (the
// library that NVTX_INJECTION64_PATH names, when that is libcuscope_inject.so) and forwards its
// scopes and session calls to it for the rest of the process. The engine itself never forwards.
//
// The table (Engine) and the lookups a scope calls are declared in producers/engine.hpp, so that
// scopes forward without including the session; here is what only the session and the injection
// library call.
#pragma once

#include "producers/engine.hpp"

namespace cuscope::inline v0::detail {

/// This copy's entry points (what libcuscope_inject.so exports as the engine).
const Engine& this_engine() noexcept;

/// Called by libcuscope_inject.so before anything else: this copy is the engine, never a forwarder.
void mark_engine() noexcept;

}  // namespace cuscope::inline v0::detail

// session/handover.hpp — one session per process when cuscope is in it twice or more.
//
// Zero-code mode loads libcuscope_inject.so (NVTX_INJECTION64_PATH), which holds a whole cuscope:
// the engine. A program that also links cuscope has a second copy; a Python process may hold more
// (the module cuscope._cuscope, and a C++ extension that links cuscope). Two sessions would fight
// over CUPTI and print two tables, so all copies but one hand over, once, for the rest of the
// process, and forward their scopes and session calls to the one that runs:
//   - the injected engine, when NVTX_INJECTION64_PATH names libcuscope_inject.so; it never forwards;
//   - else the copy that claimed the session first. Each copy exports cuscope_v0_engine(); the first
//     such copy in the loader's list of loaded objects (a list that only grows at its end, so every
//     copy finds the same one) keeps the claim, and each copy asks it before starting a session.
// A copy whose symbols nothing can find (linked into an executable that exports nothing) is not
// found by the others: it joins them when it starts after them, and runs apart when before.
//
// The table (Engine) and the lookups a scope calls are declared in producers/engine.hpp, so that
// scopes forward without including the session; here is what only the session and the injection
// library call.
#pragma once

#include "producers/engine.hpp"

namespace cuscope::inline v0::detail {

/// This copy's entry points: what its cuscope_v0_engine() gives the other copies.
const Engine& this_engine() noexcept;

/// Called by libcuscope_inject.so before anything else: this copy is the engine, never a forwarder.
void mark_engine() noexcept;

}  // namespace cuscope::inline v0::detail

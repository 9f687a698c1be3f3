// session/handover.hpp — one session per process when cuscope is in it twice.
//
// Zero-code mode loads libcuscope_inject.so (NVTX_INJECTION64_PATH), which holds a whole cuscope:
// the engine. A program that also links cuscope has a second copy. Two sessions would fight over
// CUPTI and print two tables, so the linked copy hands over: it finds the injected engine once (the
// library that NVTX_INJECTION64_PATH names, when that is libcuscope_inject.so) and forwards its
// scopes and session calls to it for the rest of the process. The engine itself never forwards.
#pragma once

#include <cstdint>
#include <cuscope/scope.hpp>
#include <cuscope/session.hpp>
#include <string_view>

namespace cuscope::inline v0::detail {

/// The calls a linked copy forwards: the library's public entry points, nothing else.
struct Engine {
  const char* version;   ///< CUSCOPE version string: both copies must be the same build of the API
  std::uint32_t layout;  ///< kEngineLayout of the engine's build
  ThreadState* (*enter)(Site&, cudaStream_t, std::uint32_t&) noexcept;
  ThreadState* (*enter_named)(std::string_view, cudaStream_t, std::uint32_t&) noexcept;
  void (*exit)(ThreadState*, std::uint32_t) noexcept;
  void (*count_site)(Site&, double) noexcept;
  void (*count_name)(std::string_view, double) noexcept;
  void (*push)(std::string_view, cudaStream_t) noexcept;
  void (*pop)() noexcept;
  bool (*start)(const Options&);
  void (*step)();
  void (*set_enabled)(bool);
  bool (*enabled)();
  void (*flush)();
  Report (*snapshot)();
  void (*shutdown)();
  Options (*current_options)();
};

/// This copy's entry points (what libcuscope_inject.so exports as the engine).
const Engine& this_engine() noexcept;

/// The value of g_state while this copy forwards everything to another copy's engine.
inline constexpr int kForward = 3;

/// The engine to forward to, or nullptr when this copy runs its own session. Decided once, on the
/// first call that could start a session (after it, g_state is kForward or not for good).
const Engine* forward_target() noexcept;
/// The engine once forwarding is decided (g_state == kForward), else nullptr: for calls that must
/// not decide it themselves (a scope's end).
const Engine* forwarding() noexcept;

/// Called by libcuscope_inject.so before anything else: this copy is the engine, never a forwarder.
void mark_engine() noexcept;

}  // namespace cuscope::inline v0::detail

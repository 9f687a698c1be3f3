// producers/engine.hpp — the table a linked copy of cuscope forwards its calls through, when
// cuscope is in the process twice (session/handover.hpp says why and decides which copy runs).
// Scopes, counts and push/pop forward through it; the session's calls too.
//
// Never here: finding the engine (the session does, session/handover.cpp); anything but the
// library's public entry points in the table.
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
  void (*unmatched_end)() noexcept;
  bool (*start)(const Options&);
  /// start() from the environment: the engine's copy reads it, so a bad value is said once, in the
  /// report the engine writes (a forwarding copy that read it too said it again on its own).
  bool (*start_from_env)();
  void (*step)();
  void (*set_enabled)(bool);
  bool (*enabled)();
  void (*flush)();
  Report (*snapshot)();
  void (*shutdown)();
  Options (*current_options)();
  /// As the process's first copy: which copy runs the session. `candidate` does, unless one did
  /// before it (or this copy is the injected engine); returns the one that does.
  const Engine* (*claim)(const Engine* candidate) noexcept;
  void (*exit_elsewhere)(ThreadState*, std::uint32_t) noexcept;
};

/// The value of g_state while this copy forwards everything to another copy's engine.
inline constexpr int kForward = 3;

// What the session's handover implements (session/handover.cpp).

/// The engine to forward to, or nullptr when this copy runs its own session. Decided once, on the
/// first call that could start a session (after it, g_state is kForward or not for good).
const Engine* forward_target() noexcept;
/// The engine once forwarding is decided (g_state == kForward), else nullptr: for calls that must
/// not decide it themselves (a scope's end).
const Engine* forwarding() noexcept;

}  // namespace cuscope::inline v0::detail

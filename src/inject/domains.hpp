// inject/domains.hpp — NVTX domains as libcuscope_inject.so hands them out: what a domain handle
// points to, the mark of a domain left out by CUSCOPE_NVTX_DOMAINS (or cuscope's own), and whether
// the default domain counts.
//
// Hot path: left_out() and default_counted() are inline, one test of the handle or one relaxed
// load. A Domain is never freed and never changes once made: NVTX and the program may use a handle
// after destroying it, and the hot path reads it without a lock.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#pragma GCC visibility push(hidden)  // private to libcuscope_inject.so: direct access, no GOT
namespace cuscope::inline v0::detail::inject {

// What a domain handle given out by nvtxDomainCreate points to: never freed (handles may be used
// after destroy).
struct Domain {
  std::uint32_t name_id = 0;  // the range the domain's ranges sit under
  std::uint16_t index = 0;    // into a thread's per-domain counts (0 is the default domain's)
  bool counted = true;        // false: left out by CUSCOPE_NVTX_DOMAINS, or cuscope's own
};

// The handle of a left-out domain is its Domain's address with this bit set, so that its calls cost
// one test of the handle and no load; a counted domain's handle is its address (nullptr is the
// default domain's). Handles are opaque to NVTX and to the program: only this library reads them.
inline constexpr std::uintptr_t kLeftOut = 1;
static_assert(alignof(Domain) > kLeftOut, "the bit is free in a Domain's address");

inline nvtxDomainHandle_t handle_of(const Domain* d) {
  const auto bits = reinterpret_cast<std::uintptr_t>(d);
  return reinterpret_cast<nvtxDomainHandle_t>(d != nullptr && !d->counted ? bits | kLeftOut : bits);
}
[[gnu::always_inline]] inline bool left_out(nvtxDomainHandle_t h) {
  return (reinterpret_cast<std::uintptr_t>(h) & kLeftOut) != 0;
}
inline constexpr std::size_t kMaxDomains = 512;
// Domains past the first kMaxDomains - 2 share this index: their pops pair among themselves, and
// their ranges sit under no range named after a domain.
inline constexpr std::uint16_t kSharedDomain = kMaxDomains - 1;

/// The domain named `name`, made on its first request (under a lock; may throw std::bad_alloc).
Domain* domain_named(std::string name);

// Whether plain (default domain) ranges count: read once, when NVTX first hands its tables over,
// before any callback can run (read_domain_filter()).
extern std::atomic<bool> g_default_counted;
inline bool default_counted() { return g_default_counted.load(std::memory_order_relaxed); }

/// Reads CUSCOPE_NVTX_DOMAINS (on the first call) and sets whether the default domain counts.
void read_domain_filter();

}  // namespace cuscope::inline v0::detail::inject
#pragma GCC visibility pop

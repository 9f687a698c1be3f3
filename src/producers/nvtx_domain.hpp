// producers/nvtx_domain.hpp — cuscope's NVTX domain and registered strings, so Nsight Systems
// shows cuscope ranges under their own "cuscope" domain. Push/pop are inline: with no tool
// injected they are a call through a no-op function pointer.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <string>

namespace cuscope::inline v0::detail {

/// The "cuscope" domain, created on the first call (inline: the steady state is one guard check).
inline nvtxDomainHandle_t nvtx_domain() noexcept {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("cuscope");
  return domain;
}
/// Registers `name` in the domain (once per distinct name, off the hot path).
nvtxStringHandle_t nvtx_register(const std::string& name) noexcept;

inline void nvtx_push(nvtxStringHandle_t name) noexcept {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
  a.message.registered = name;
  nvtxDomainRangePushEx(nvtx_domain(), &a);
}
inline void nvtx_pop() noexcept { nvtxDomainRangePop(nvtx_domain()); }

}  // namespace cuscope::inline v0::detail

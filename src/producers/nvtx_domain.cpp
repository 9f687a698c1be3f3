// producers/nvtx_domain.cpp — the "cuscope" NVTX domain, created once and never destroyed.
#include "producers/nvtx_domain.hpp"

namespace cuscope::inline v0::detail {

nvtxStringHandle_t nvtx_register(const std::string& name) noexcept {
  return nvtxDomainRegisterStringA(nvtx_domain(), name.c_str());
}

}  // namespace cuscope::inline v0::detail

// producers/cupti/noted_calls.hpp — the driver calls whose own callbacks cuscope notes where their
// records are off (call_callbacks.hpp): the synchronizes that block the host on the GPU, the device
// and managed allocations and the mappings of physical memory (cuMemMap, as PyTorch's expandable
// segments map theirs), and their frees and unmaps, by CUPTI callback id. CUPTI's header and the
// standard library only: the raw probe of these calls (docs/validation/probes/
// sync_alloc_callbacks.cu) includes it too, so that it checks this list and not a copy.
#pragma once

#include <cupti.h>

#include <array>

namespace cuscope::inline v0::detail {

inline constexpr std::array<CUpti_CallbackId, 5> kNotedWaits = {
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize};
inline constexpr std::array<CUpti_CallbackId, 8> kNotedAllocs = {
    CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemMap};
inline constexpr std::array<CUpti_CallbackId, 4> kNotedFrees = {
    CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2, CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz, CUPTI_DRIVER_TRACE_CBID_cuMemUnmap};

/// Whether `cbid` is one of `ids`.
template <std::size_t N>
constexpr bool noted_in(const std::array<CUpti_CallbackId, N>& ids, CUpti_CallbackId cbid) {
  for (CUpti_CallbackId id : ids) {
    if (id == cbid) return true;
  }
  return false;
}

}  // namespace cuscope::inline v0::detail

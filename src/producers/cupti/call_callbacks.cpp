// producers/cupti/call_callbacks.cpp — see call_callbacks.hpp.
#include "producers/cupti/call_callbacks.hpp"

#include <cuda.h>

#include <array>
#include <optional>

#include "producers/clock.hpp"
#include "producers/cupti/noted_calls.hpp"

namespace cuscope::inline v0::detail {
namespace {

// The calls being noted, by callback id; written before their callbacks are enabled, cleared
// after the unsubscription.
std::array<std::optional<CallNote::Kind>, CUPTI_DRIVER_TRACE_CBID_SIZE> g_kinds{};

void set_kinds(RecordChoice want) noexcept {
  for (CUpti_CallbackId cbid = 0; cbid < g_kinds.size(); ++cbid) g_kinds[cbid] = timed_call_kind(cbid, want);
}

// An allocation's address (written by the call) and size, from its parameters; false when the
// parameters say nothing (a null output pointer).
bool allocation(CUpti_CallbackId cbid, const void* params, CallNote& note) {
  const auto take = [&note](const auto* p) {
    if (p == nullptr || p->dptr == nullptr) return false;
    note.address = *p->dptr;
    note.bytes = p->bytesize;
    return true;
  };
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2:
      return take(static_cast<const cuMemAlloc_v2_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged:
      return take(static_cast<const cuMemAllocManaged_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync:
      return take(static_cast<const cuMemAllocAsync_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz:
      return take(static_cast<const cuMemAllocAsync_ptsz_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync:
      return take(static_cast<const cuMemAllocFromPoolAsync_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz:
      return take(static_cast<const cuMemAllocFromPoolAsync_ptsz_params*>(params));
    case CUPTI_DRIVER_TRACE_CBID_cuMemMap: {  // physical memory mapped at an address the caller gave
      const auto* p = static_cast<const cuMemMap_params*>(params);
      if (p == nullptr) return false;
      note.address = p->ptr;
      note.bytes = p->size;
      return true;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2: {
      const auto* p = static_cast<const cuMemAllocPitch_v2_params*>(params);
      if (p == nullptr || p->dptr == nullptr || p->pPitch == nullptr) return false;
      note.address = *p->dptr;
      note.bytes = static_cast<std::uint64_t>(*p->pPitch) * p->Height;
      return true;
    }
    default:
      return false;
  }
}

// A free's address, from its parameters, and its size where they give it (an unmap's; a free's is
// its allocation's, LiveMemory's to find); address 0 (freeing nothing) when they say nothing.
void freed(CUpti_CallbackId cbid, const void* params, CallNote& note) {
  if (params == nullptr) return;
  switch (cbid) {
    case CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2:
      note.address = static_cast<const cuMemFree_v2_params*>(params)->dptr;
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync:
      note.address = static_cast<const cuMemFreeAsync_params*>(params)->dptr;
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz:
      note.address = static_cast<const cuMemFreeAsync_ptsz_params*>(params)->dptr;
      return;
    case CUPTI_DRIVER_TRACE_CBID_cuMemUnmap: {
      const auto* p = static_cast<const cuMemUnmap_params*>(params);
      note.address = p->ptr;
      note.bytes = p->size;
      return;
    }
    default:
      return;
  }
}

}  // namespace

std::optional<CallNote::Kind> timed_call_kind(CUpti_CallbackId cbid, RecordChoice want) noexcept {
  if (!want.syncs && noted_in(kNotedWaits, cbid)) return CallNote::Kind::wait;
  if (!want.memory && noted_in(kNotedAllocs, cbid)) return CallNote::Kind::alloc;
  if (!want.memory && noted_in(kNotedFrees, cbid)) return CallNote::Kind::free;
  return std::nullopt;
}

void set_call_callbacks(RecordChoice want) noexcept { set_kinds(want); }

void clear_call_callbacks() noexcept { g_kinds.fill(std::nullopt); }

bool on_timed_call(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) noexcept {
  const std::optional<CallNote::Kind> kind = cbid < g_kinds.size() ? g_kinds[cbid] : std::nullopt;
  if (!kind) return false;
  if (cb.callbackSite == CUPTI_API_ENTER) {
    if (cb.correlationData != nullptr) *cb.correlationData = now_ns();
    return true;
  }
  if (cb.callbackSite != CUPTI_API_EXIT || cb.functionReturnValue == nullptr ||
      *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return true;
  CallNote note;
  note.kind = *kind;
  note.correlation = cb.correlationId;
  note.end_ns = now_ns();
  // The entry's clock; none (the callbacks were enabled during the call), or one past the exit: a
  // call of no length.
  const std::uint64_t entry = cb.correlationData != nullptr ? *cb.correlationData : 0;
  note.start_ns = entry != 0 && entry <= note.end_ns ? entry : note.end_ns;
  if (note.kind == CallNote::Kind::alloc && (!allocation(cbid, cb.functionParams, note) || note.address == 0))
    return true;
  if (note.kind == CallNote::Kind::free) {
    freed(cbid, cb.functionParams, note);
    if (note.address == 0) return true;  // cudaFree(nullptr): frees nothing
  }
  if (note.kind != CallNote::Kind::wait && cb.context != nullptr) {
    std::uint32_t device = 0;
    if (cuptiGetDeviceId(cb.context, &device) == CUPTI_SUCCESS) note.device = device;
  }
  note_call(sink, note);
  return true;
}

}  // namespace cuscope::inline v0::detail

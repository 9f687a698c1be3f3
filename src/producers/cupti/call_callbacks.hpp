// producers/cupti/call_callbacks.hpp — the host's waits and the device allocations and frees, seen
// by driver-API callbacks where their CUPTI records are off (the defaults: CUSCOPE_SYNC_RECORDS=0,
// CUSCOPE_MEMORY_RECORDS=0) and the launch callbacks are on (CUSCOPE_ATTRIBUTION=launch). The
// entry of a synchronize, an allocation or a free reads the clock; a successful exit notes the call
// with its times, address and size (producers/launch_notes.hpp's call notes), which the model takes
// as it takes CUPTI's SYNCHRONIZATION and MEMORY2 records. A mapping of physical memory (cuMemMap)
// is an allocation at its address, its unmap (cuMemUnmap) the free: what PyTorch's expandable
// segments make in place of cudaMalloc. These calls are few and slow (a synchronize waits for the
// GPU, an allocation maps memory), so what the callbacks add to each (two clock reads and a short
// lock) is small beside the call itself.
//
// Never here: the SYNCHRONIZATION or MEMORY2 activity kinds the options left off; the event and
// stream queries and stream waits that those records also cover (frequent, and they do not block
// the host); host (pinned) allocations, which the memory records leave out too; a call that failed.
#pragma once

#include <cupti.h>

#include <optional>

#include "producers/cupti/traced_calls.hpp"
#include "producers/launch_notes.hpp"

namespace cuscope::inline v0::detail {

struct Sink;

/// What cuscope notes of the driver call `cbid` when `want` leaves records off: the synchronizes
/// (context, stream, event) as waits when !want.syncs; the device and managed allocations and
/// mappings, and their frees and unmaps, when !want.memory; nothing otherwise.
std::optional<CallNote::Kind> timed_call_kind(CUpti_CallbackId cbid, RecordChoice want) noexcept;
/// Notes, from now on, the calls timed_call_kind() names for `want` (their callbacks are enabled
/// with the launches', subscriber.cpp's launch_note_callbacks(); tests call on_timed_call() as
/// CUPTI would).
void set_call_callbacks(RecordChoice want) noexcept;
/// Forgets what set_call_callbacks() set (after the unsubscription).
void clear_call_callbacks() noexcept;
/// A driver callback for `sink`'s session: false when `cbid` is not a call being noted; else the
/// call is handled (its entry keeps the clock in cb.correlationData, its successful exit is noted).
bool on_timed_call(Sink& sink, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) noexcept;

}  // namespace cuscope::inline v0::detail

// docs/validation/probes/event_records.hpp — what the two CUDA_EVENT probes (event_record_costs.cu,
// event_device_timestamps.cu) take from CUPTI's buffers: CUDA_EVENT, kernel and API records, counted
// and, when asked, kept; the callback ids of the event record calls; CUDA_EVENT records with device
// timestamps turned on, and every kind turned off. Raw CUPTI: never include cuscope here.
#pragma once

#include <set>

#include "probe_common.hpp"

namespace event_probe {

struct EventRecord {
  std::uint32_t correlation, context, stream, event_id, device;
  std::uint64_t device_ns, sync_id;
};
struct KernelRecord {
  std::uint32_t correlation, stream;
  std::uint64_t start_ns, end_ns;
};

struct Tally {
  bool keep = false;  // keep every event and kernel record, not only counts
  std::uint64_t events = 0, events_with_ts = 0, events_correlation_0 = 0, kernels = 0;
  std::uint64_t api_event_record = 0, api_other = 0;
  std::set<std::uint32_t> event_ids;
  std::vector<EventRecord> event_records;
  std::vector<KernelRecord> kernel_records;
};
inline Tally g_tally;  // guarded by probe::Buffers::records_mutex()

constexpr CUpti_CallbackId kRuntimeEventRecordCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010};
constexpr CUpti_CallbackId kDriverEventRecordCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz};

inline bool is_event_record_call(CUpti_ActivityKind kind, std::uint32_t cbid) {
  const auto in = [cbid](const auto& calls) {
    return std::find(std::begin(calls), std::end(calls), cbid) != std::end(calls);
  };
  return kind == CUPTI_ACTIVITY_KIND_RUNTIME ? in(kRuntimeEventRecordCalls) : in(kDriverEventRecordCalls);
}

inline void parse(const CUpti_Activity* r) {
  Tally& t = g_tally;
  if (r->kind == CUPTI_ACTIVITY_KIND_CUDA_EVENT) {
    const auto* e = reinterpret_cast<const CUpti_ActivityCudaEvent2*>(r);
    ++t.events;
    t.events_with_ts += e->deviceTimestamp != 0;
    t.events_correlation_0 += e->correlationId == 0;
    t.event_ids.insert(e->eventId);
    if (t.keep) {
      t.event_records.push_back({e->correlationId, e->contextId, e->streamId, e->eventId, e->deviceId,
                                 e->deviceTimestamp, e->cudaEventSyncId});
    }
  } else if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
    ++t.kernels;
    if (t.keep) t.kernel_records.push_back({k->correlationId, k->streamId, k->start, k->end});
  } else if (r->kind == CUPTI_ACTIVITY_KIND_RUNTIME || r->kind == CUPTI_ACTIVITY_KIND_DRIVER) {
    const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(r);
    if (is_event_record_call(r->kind, a->cbid)) {
      ++t.api_event_record;
    } else {
      ++t.api_other;
    }
  }
}

inline Tally take_tally(bool keep_next) {
  std::lock_guard lock(probe::Buffers::records_mutex());
  Tally t = std::move(g_tally);
  g_tally = Tally{};
  g_tally.keep = keep_next;
  return t;
}

/// CUDA_EVENT records with device timestamps; a refusal is printed, not fatal (its rows then say so).
/// `kind_first`: the kind, then the timestamps, in cuscope's order (producers/cupti/adapter.cpp
/// start_event_clock); else the timestamps first, as these probes did on 2026-11-26 and 27, when
/// event_record_costs.cu (turning them on in a live context) got no CUDA_EVENT record at all and
/// cuscope, in a live context too, got them.
inline void enable_event_records(bool kind_first = false) {
  CUptiResult ts = CUPTI_SUCCESS, kind = CUPTI_SUCCESS;
  if (kind_first) {
    kind = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
    ts = cuptiActivityEnableCudaEventDeviceTimestamps(1);
  } else {
    ts = cuptiActivityEnableCudaEventDeviceTimestamps(1);
    kind = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  }
  static bool told = false;
  if ((ts == CUPTI_SUCCESS && kind == CUPTI_SUCCESS) || told) return;
  told = true;
  std::printf(
      "NOTE cuptiActivityEnableCudaEventDeviceTimestamps(1): %s; cuptiActivityEnable(CUDA_EVENT): %s\n",
      probe::cupti_text(ts), probe::cupti_text(kind));
}

inline void cupti_off() {
  probe::Buffers::flush_forced();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  probe::disable_api_kinds();
  cuptiActivityEnableCudaEventDeviceTimestamps(0);
  probe::Buffers::flush_forced();
}

}  // namespace event_probe

// producers/cupti/decode.cpp — see decode.hpp. Only this folder includes CUPTI headers.
#include "producers/cupti/decode.hpp"

#include <cupti.h>
#include <fmt/format.h>

#include <atomic>
#include <type_traits>

#include "producers/event_timestamps.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

CopyKind copy_kind(std::uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return CopyKind::HtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return CopyKind::DtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return CopyKind::DtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return CopyKind::HtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return CopyKind::PtoP;
    default:
      return CopyKind::Other;
  }
}

// Whether a copy made the host wait (model::MemcpyActivity::blocking): made by a synchronous call,
// between the host and the device or a CUDA array. A graph's copy node never is: the graph's launch
// returns at once, whatever flag its replayed copy's record carries.
bool blocking_copy(std::uint8_t copy_kind, std::uint8_t flags, std::uint32_t graph_id) {
  if ((flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) != 0 || graph_id != 0) return false;
  return copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOD || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_DTOH ||
         copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_HTOA || copy_kind == CUPTI_ACTIVITY_MEMCPY_KIND_ATOH;
}

model::MemoryKind memory_kind(std::uint8_t k) {
  // CUPTI_ACTIVITY_MEMORY_KIND_* are 0 (unknown) to 7 (managed static), the model's order.
  return k < model::kMemoryKinds ? static_cast<model::MemoryKind>(k) : model::MemoryKind::unknown;
}
static_assert(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE == 1 && CUPTI_ACTIVITY_MEMORY_KIND_PINNED == 2 &&
              CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC == 7);

constexpr std::size_t aligned(std::size_t n) { return (n + 7) & ~std::size_t{7}; }

// The size a record of a decoded layout takes in the buffer (CUPTI 13.0 packs them 8-byte aligned).
template <class Record>
constexpr std::size_t kSize = aligned(sizeof(Record));

// What decode() returns for a record that does not fit in what is left of the buffer.
constexpr std::size_t kCutOff = SIZE_MAX;

// Feeds one record to `sink` and returns the size of its compiled layout: 0 for a kind cuscope
// does not decode, kCutOff when that layout is longer than `room` (then nothing is read). Records
// of a decoded kind that carry nothing cuscope reports (host allocations, other tools' correlation
// ids) are dropped here. The walks inline it: one switch per record, the common kinds first.
template <class Sink>
[[gnu::always_inline]] inline std::size_t decode(const CUpti_Activity* record, std::size_t room, Sink& sink) {
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      if (room < kSize<CUpti_ActivityKernel10>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      model::KernelActivity k;
      k.correlation = r->correlationId;
      k.start_ns = r->start;
      k.end_ns = r->end;
      k.name = r->name;
      k.grid = {static_cast<std::uint32_t>(r->gridX), static_cast<std::uint32_t>(r->gridY),
                static_cast<std::uint32_t>(r->gridZ)};
      k.block = {static_cast<std::uint32_t>(r->blockX), static_cast<std::uint32_t>(r->blockY),
                 static_cast<std::uint32_t>(r->blockZ)};
      k.registers_per_thread = r->registersPerThread;
      k.static_shared_bytes = static_cast<std::uint32_t>(r->staticSharedMemory);
      k.dynamic_shared_bytes = static_cast<std::uint32_t>(r->dynamicSharedMemory);
      k.device = r->deviceId;
      k.stream = r->streamId;
      k.graph_node_id = r->graphNodeId;
      k.graph_id = r->graphId;
      k.device_launched = r->isDeviceLaunched != 0;
      sink.on(k);
      return kSize<CUpti_ActivityKernel10>;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      if (room < kSize<CUpti_ActivityExternalCorrelation>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      if (r->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)  // else another tool's ids
        sink.on(model::ExternalCorrelation{r->correlationId, r->externalId});
      return kSize<CUpti_ActivityExternalCorrelation>;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: {  // launches CUDA makes on the program's behalf
      if (room < kSize<CUpti_ActivityAPI>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      sink.on(model::ApiCall{r->correlationId, r->start, r->end});
      return kSize<CUpti_ActivityAPI>;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      if (room < kSize<CUpti_ActivityMemcpy6>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      sink.on(model::MemcpyActivity{r->correlationId, r->start, r->end, r->bytes, copy_kind(r->copyKind),
                                    r->deviceId, r->streamId, memory_kind(r->srcKind),
                                    memory_kind(r->dstKind),
                                    blocking_copy(r->copyKind, r->flags, r->graphId)});
      return kSize<CUpti_ActivityMemcpy6>;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {  // peer to peer, between two devices
      if (room < kSize<CUpti_ActivityMemcpyPtoP4>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(record);
      sink.on(model::MemcpyActivity{r->correlationId, r->start, r->end, r->bytes, CopyKind::PtoP, r->deviceId,
                                    r->streamId, memory_kind(r->srcKind), memory_kind(r->dstKind)});
      return kSize<CUpti_ActivityMemcpyPtoP4>;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      if (room < kSize<CUpti_ActivityMemset4>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      sink.on(model::MemsetActivity{r->correlationId, r->start, r->end, r->bytes, r->deviceId, r->streamId});
      return kSize<CUpti_ActivityMemset4>;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      if (room < kSize<CUpti_ActivityMemory4>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      const bool device_memory = r->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_DEVICE ||
                                 r->memoryKind == CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
      const bool alloc = r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      const bool release = r->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      if (device_memory && (alloc || release))
        sink.on(
            model::MemoryActivity{r->correlationId, r->timestamp, r->address, r->bytes, alloc, r->deviceId});
      return kSize<CUpti_ActivityMemory4>;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      if (room < kSize<CUpti_ActivitySynchronization2>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      sink.on(model::SyncActivity{r->correlationId, r->start, r->end});
      return kSize<CUpti_ActivitySynchronization2>;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      if (room < kSize<CUpti_ActivityOverhead3>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      sink.on(model::OverheadActivity{r->start, r->end});
      return kSize<CUpti_ActivityOverhead3>;
    }
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT: {  // CUSCOPE_EVENT_TIMESTAMPS=cupti: for the event resolver
      if (room < kSize<CUpti_ActivityCudaEvent2>) return kCutOff;
      const auto* r = reinterpret_cast<const CUpti_ActivityCudaEvent2*>(record);
      if constexpr (std::is_same_v<Sink, model::Aggregator>) event_timestamps().put(r->correlationId, r->deviceTimestamp);
      return kSize<CUpti_ActivityCudaEvent2>;
    }
    default:
      return 0;
  }
}

std::atomic<Walk> g_walk{Walk::BySize};

// Steps with CUPTI's iterator: right for any layout the loaded libcupti writes.
template <class Sink>
DecodeCounts walk_by_cupti(std::uint8_t* buffer, std::size_t valid_bytes, Sink& sink) {
  DecodeCounts counts;
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_bytes, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (status != CUPTI_SUCCESS) {
      ++counts.unknown;  // a kind CUPTI cannot size: the rest of the buffer cannot be read
      break;
    }
    ++counts.records;
    // CUPTI sized the record: a later layout only extends the compiled one, so it fits.
    if (decode(record, kCutOff - 1, sink) == 0) ++counts.unknown;
  }
  return counts;
}

// Steps decoded kinds by their compiled size (the layouts CUPTI 13.0 packs, 8-byte aligned; the
// decode tests check CUPTI's iterator agrees), and every other kind with CUPTI's iterator, so a
// kind only CUPTI knows is skipped correctly.
template <class Sink>
DecodeCounts walk_by_size(std::uint8_t* buffer, std::size_t valid_bytes, Sink& sink) {
  DecodeCounts counts;
  std::size_t at = 0;
  while (at + sizeof(CUpti_ActivityKind) <= valid_bytes) {
    auto* record = reinterpret_cast<CUpti_Activity*>(buffer + at);
    const std::size_t size = decode(record, valid_bytes - at, sink);
    if (size == kCutOff) {
      ++counts.unknown;  // a record cut off at the end of the buffer
      break;
    }
    if (size != 0) {
      ++counts.records;
      at += size;
      continue;
    }
    CUpti_Activity* next = record;
    const CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_bytes, &next);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) {  // it was the last record
      ++counts.records;
      ++counts.unknown;
      break;
    }
    if (status != CUPTI_SUCCESS) {
      ++counts.unknown;  // a kind CUPTI cannot size either: the rest of the buffer cannot be read
      break;
    }
    ++counts.records;
    ++counts.unknown;
    at = static_cast<std::size_t>(reinterpret_cast<std::uint8_t*>(next) - buffer);
  }
  return counts;
}

}  // namespace

LayoutCheck check_layouts(std::uint32_t loaded_version, std::uint32_t compiled_version) {
  LayoutCheck c;
  if (loaded_version == compiled_version) return c;
  if (loaded_version > compiled_version) {
    c.walk = Walk::ByCupti;
    c.note = fmt::format(
        "libcupti API version {} is newer than the {} cuscope was built with: activity records are "
        "stepped with CUPTI's iterator",
        loaded_version, compiled_version);
    return c;
  }
  c.refusal = fmt::format(
      "libcupti API version {} is older than the {} cuscope was built with: its record layouts "
      "cannot be read safely (load the libcupti of the CUDA toolkit cuscope was built with)",
      loaded_version, compiled_version);
  return c;
}

void set_walk(Walk walk) noexcept { g_walk.store(walk, std::memory_order_relaxed); }

DecodeCounts decode_buffer(std::uint8_t* buffer, std::size_t valid_bytes, model::Aggregator& sink,
                           Walk walk) {
  const DecodeCounts counts = walk == Walk::ByCupti ? walk_by_cupti(buffer, valid_bytes, sink)
                                                    : walk_by_size(buffer, valid_bytes, sink);
  sink.add_unknown(counts.unknown);
  return counts;
}

DecodeCounts consume_buffer(std::uint8_t* buffer, std::size_t valid_bytes, std::uint64_t dropped,
                            model::Aggregator& sink) {
  // Trace mode: the same records once more, to the trace file, before the aggregator sees them.
  trace::Writer* tee = trace::g_writer.load(std::memory_order_acquire);
  if (tee != nullptr && valid_bytes > 0) {
    if (g_walk.load(std::memory_order_relaxed) == Walk::ByCupti) {
      walk_by_cupti(buffer, valid_bytes, *tee);
    } else {
      walk_by_size(buffer, valid_bytes, *tee);
    }
  }
  const DecodeCounts counts =
      valid_bytes > 0 ? decode_buffer(buffer, valid_bytes, sink, g_walk.load(std::memory_order_relaxed))
                      : DecodeCounts{};
  sink.add_dropped(dropped);
  sink.settle(2, false);
  if (tee != nullptr) tee->buffer_end(dropped, counts.unknown);
  return counts;
}

}  // namespace cuscope::inline v0::detail

// Builds CUPTI activity buffers in memory with the real CUPTI 13.0 record layouts, packed the way
// CUPTI packs them (each record 8-byte aligned), for tests and benchmarks of the decoding path.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>

namespace cuscope_test {

class CuptiBuffer {
 public:
  explicit CuptiBuffer(std::size_t capacity = 1 << 20)
      : capacity_(capacity), data_(static_cast<std::uint8_t*>(std::aligned_alloc(8, capacity))) {
    std::memset(data_.get(), 0, capacity);
  }

  template <class Record>
  CuptiBuffer& add(const Record& r) {
    const std::size_t size = (sizeof(Record) + 7) & ~std::size_t{7};
    if (used_ + size > capacity_) std::abort();
    std::memcpy(data_.get() + used_, &r, sizeof(Record));
    used_ += size;
    return *this;
  }

  CuptiBuffer& kernel(std::uint32_t correlation, std::uint64_t start, std::uint64_t end, const char* name,
                      std::uint32_t grid_x = 1, std::uint32_t block_x = 128, std::uint32_t stream = 7) {
    CUpti_ActivityKernel10 k{};
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.correlationId = correlation;
    k.start = start;
    k.end = end;
    k.name = name;
    k.gridX = static_cast<std::int32_t>(grid_x);
    k.gridY = 1;
    k.gridZ = 1;
    k.blockX = static_cast<std::int32_t>(block_x);
    k.blockY = 1;
    k.blockZ = 1;
    k.registersPerThread = 40;
    k.staticSharedMemory = 512;
    k.dynamicSharedMemory = 4096;
    k.deviceId = 0;
    k.streamId = stream;
    return add(k);
  }
  CuptiBuffer& external(std::uint32_t correlation, std::uint64_t instance,
                        CUpti_ExternalCorrelationKind kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) {
    CUpti_ActivityExternalCorrelation e{};
    e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
    e.externalKind = kind;
    e.externalId = instance;
    e.correlationId = correlation;
    return add(e);
  }
  CuptiBuffer& api(std::uint32_t correlation, std::uint64_t start, bool driver = false) {
    return api_of_kind(correlation, start, driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME);
  }
  /// The API record of a launch CUDA made internally on the program's behalf.
  CuptiBuffer& internal_launch(std::uint32_t correlation, std::uint64_t start) {
    return api_of_kind(correlation, start, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API);
  }
  CuptiBuffer& api_of_kind(std::uint32_t correlation, std::uint64_t start, CUpti_ActivityKind kind) {
    CUpti_ActivityAPI a{};
    a.kind = kind;
    a.cbid = 1;
    a.start = start;
    a.end = start + 1;
    a.correlationId = correlation;
    return add(a);
  }
  CuptiBuffer& memcpy(std::uint32_t correlation, CUpti_ActivityMemcpyKind kind, std::uint64_t bytes,
                      std::uint64_t start, std::uint64_t end,
                      CUpti_ActivityMemoryKind src = CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
                      CUpti_ActivityMemoryKind dst = CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN,
                      std::uint8_t flags = 0,        // CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC for cudaMemcpyAsync's
                      std::uint32_t graph_id = 0) {  // a graph's copy node's
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.flags = flags;
    m.graphId = graph_id;
    m.copyKind = static_cast<std::uint8_t>(kind);
    m.srcKind = static_cast<std::uint8_t>(src);
    m.dstKind = static_cast<std::uint8_t>(dst);
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = correlation;
    return add(m);
  }
  /// A peer-to-peer copy (CUPTI_ACTIVITY_KIND_MEMCPY2) from device `src` to device `dst`.
  CuptiBuffer& peer_copy(std::uint32_t correlation, std::uint64_t bytes, std::uint64_t start,
                         std::uint64_t end, std::uint32_t src = 0, std::uint32_t dst = 1) {
    CUpti_ActivityMemcpyPtoP4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.deviceId = src;
    m.srcDeviceId = src;
    m.dstDeviceId = dst;
    m.correlationId = correlation;
    return add(m);
  }
  CuptiBuffer& memset(std::uint32_t correlation, std::uint64_t bytes, std::uint64_t start,
                      std::uint64_t end) {
    CUpti_ActivityMemset4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    m.bytes = bytes;
    m.start = start;
    m.end = end;
    m.correlationId = correlation;
    return add(m);
  }
  CuptiBuffer& memory(std::uint32_t correlation, bool alloc, std::uint64_t address, std::uint64_t bytes,
                      std::uint64_t timestamp,
                      CUpti_ActivityMemoryKind kind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE) {
    CUpti_ActivityMemory4 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
    m.memoryOperationType = alloc ? CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
                                  : CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
    m.memoryKind = kind;
    m.correlationId = correlation;
    m.address = address;
    m.bytes = bytes;
    m.timestamp = timestamp;
    return add(m);
  }
  CuptiBuffer& sync(
      std::uint32_t correlation, std::uint64_t start, std::uint64_t end,
      CUpti_ActivitySynchronizationType type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE) {
    CUpti_ActivitySynchronization2 s{};
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = type;
    s.start = start;
    s.end = end;
    s.correlationId = correlation;
    return add(s);
  }
  CuptiBuffer& overhead(std::uint64_t start, std::uint64_t end) {
    CUpti_ActivityOverhead3 o{};
    o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
    o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
    o.start = start;
    o.end = end;
    return add(o);
  }
  /// A record of a kind CUPTI knows but cuscope does not decode.
  CuptiBuffer& context_record() {
    CUpti_ActivityContext3 c{};
    c.kind = CUPTI_ACTIVITY_KIND_CONTEXT;
    return add(c);
  }
  /// Eight bytes that claim a kind no CUPTI knows.
  CuptiBuffer& garbage() {
    const std::uint64_t bad = 0xFFFF;
    return add(bad);
  }

  /// The T field at byte `at` (records are packed: no alignment for T is assumed).
  template <class T>
  [[nodiscard]] T field(std::size_t at) const {
    T v;
    std::memcpy(&v, data_.get() + at, sizeof v);
    return v;
  }
  template <class T>
  void set_field(std::size_t at, T v) {
    std::memcpy(data_.get() + at, &v, sizeof v);
  }
  /// Adds `delta` to the T field at each offset: a buffer replayed as the next one (its correlation
  /// ids and timestamps moved on).
  template <class T, class Offsets>
  void advance(const Offsets& offsets, T delta) {
    for (std::size_t at : offsets) set_field<T>(at, field<T>(at) + delta);
  }

  [[nodiscard]] std::uint8_t* data() { return data_.get(); }
  [[nodiscard]] std::size_t size() const { return used_; }
  void clear() {
    std::memset(data_.get(), 0, used_);
    used_ = 0;
  }

 private:
  struct Free {
    void operator()(std::uint8_t* p) const { std::free(p); }
  };
  std::size_t capacity_;
  std::size_t used_ = 0;
  std::unique_ptr<std::uint8_t, Free> data_;
};

}  // namespace cuscope_test

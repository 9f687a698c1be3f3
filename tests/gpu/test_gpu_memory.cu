// GPU tests of what cuscope sees besides kernels: copy and set bytes per direction, blocking copies,
// allocations and frees, mapped memory (cuMemMap, as PyTorch's expandable segments make it), and
// the host's waits, with and without CUPTI's synchronization and memory records.
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime.h>

#include <catch2/catch.hpp>
#include <vector>

#include "gpu_kit.cuh"
#include "session_fixture.hpp"

TEST_CASE("copy and set bytes are exact per direction, and synchronous host copies are the blocking ones",
          "[gpu][cupti]") {
  cuscope_test::Session session;
  constexpr std::size_t kBytes = 1 << 20;
  std::vector<char> host(kBytes, 1);
  char* pinned = nullptr;
  char* a = nullptr;
  char* b = nullptr;
  CHECK_CUDA(cudaMallocHost(&pinned, kBytes));
  {
    CUSCOPE_SCOPE("alloc");
    CHECK_CUDA(cudaMalloc(&a, kBytes));
    CHECK_CUDA(cudaMalloc(&b, kBytes));
  }
  {
    CUSCOPE_SCOPE("copies");
    CHECK_CUDA(cudaMemcpy(a, host.data(), kBytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(pinned, a, kBytes / 4, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(b, a, kBytes / 16, cudaMemcpyDeviceToDevice));
    CHECK_CUDA(cudaMemcpyAsync(pinned, a, kBytes / 8, cudaMemcpyDeviceToHost, nullptr));
    CHECK_CUDA(cudaMemset(b, 0, 4096));
    CHECK_CUDA(cudaDeviceSynchronize());
  }
  {
    CUSCOPE_SCOPE("release");
    CHECK_CUDA(cudaFree(a));
    CHECK_CUDA(cudaFree(b));
  }
  const cuscope::Report r = settled();
  const auto& c = range(r, "copies").self;
  CHECK(c.memcpy[size_t(cuscope::CopyKind::HtoD)].bytes == kBytes);
  CHECK(c.memcpy[size_t(cuscope::CopyKind::DtoH)].bytes == kBytes / 4 + kBytes / 8);
  CHECK(c.memcpy[size_t(cuscope::CopyKind::DtoD)].bytes == kBytes / 16);
  CHECK(c.pageable_copies == 1);  // the std::vector's copy; the cudaMallocHost one is pinned
  CHECK(c.pageable_bytes == kBytes);
  // The two cudaMemcpy calls with a host side made the host wait; the device-to-device one and
  // cudaMemcpyAsync did not (CUPTI's async flag).
  CHECK(c.blocking_copies == 2);
  CHECK(c.blocking_bytes == kBytes + kBytes / 4);
  CHECK(c.memset_bytes == 4096);
  CHECK(c.sync_count >= 1);
  CHECK(range(r, "alloc").self.alloc_bytes == 2 * kBytes);
  CHECK(range(r, "alloc").self.peak_bytes == 2 * kBytes);
  CHECK(range(r, "release").self.free_count == 2);
  cudaFreeHost(pinned);
}

namespace {

// Two streams and an event made without timing, for a scope whose work waits across them.
struct TwoStreams {
  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  cudaEvent_t e = nullptr;
  TwoStreams() {
    CHECK_CUDA(cudaStreamCreate(&s1));
    CHECK_CUDA(cudaStreamCreate(&s2));
    CHECK_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  ~TwoStreams() {
    cudaEventDestroy(e);
    cudaStreamDestroy(s1);
    cudaStreamDestroy(s2);
  }
  TwoStreams(const TwoStreams&) = delete;
  TwoStreams& operator=(const TwoStreams&) = delete;
  // 100 times: a kernel on s1, the event recorded after it, s2 waiting for it, a kernel on s2, and
  // a query of the event (200 kernels, 100 stream waits, 100 queries).
  void wait_100_times() {
    for (int i = 0; i < 100; ++i) {
      empty_kernel<<<1, 1, 0, s1>>>();
      CHECK_CUDA(cudaEventRecord(e, s1));
      CHECK_CUDA(cudaStreamWaitEvent(s2, e, 0));
      empty_kernel<<<1, 1, 0, s2>>>();
      (void)cudaEventQuery(e);
    }
  }
};

}  // namespace

// cudaStreamWaitEvent and event queries make SYNCHRONIZATION records; their API calls are traced
// so that they resolve, and cuscope's own queries stay out of the report.
TEST_CASE("stream waits and event queries are attributed, never left unresolved", "[gpu][cupti]") {
  cuscope_test::Session session;
  warm_up();
  TwoStreams two;
  {
    CUSCOPE_SCOPE("waits", two.s1);
    two.wait_100_times();
  }
  const cuscope::Report r = settled();
  const auto& waits = range(r, "waits");
  CHECK(waits.self.kernel_calls == 200);
  CHECK(waits.self.sync_count >= 100);
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.dropped_records == 0);
}

// CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0 (docs/cupti.md): neither kind is enabled nor are
// the calls that wait, allocate or free traced; kernels, copies and sets stay exact, and the
// activity status says what was left out. With launch callbacks (the default attribution) the
// synchronizes, allocations and frees are still seen, by their own callbacks
// (producers/cupti/call_callbacks.hpp): the two stream synchronizes (not the event queries or the
// stream waits), the one allocation and its free, sized from the books.
TEST_CASE("without synchronization and memory records, kernels stay exact and the rest is left out",
          "[gpu][cupti]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.sync_records = false;
  o.memory_records = false;
  cuscope_test::Session session(o);
  warm_up();
  TwoStreams two;
  {
    CUSCOPE_SCOPE("lean", two.s1);
    void* p = nullptr;
    CHECK_CUDA(cudaMalloc(&p, 1 << 20));
    two.wait_100_times();
    CHECK_CUDA(cudaMemsetAsync(p, 0, 1 << 20, two.s1));
    CHECK_CUDA(cudaStreamSynchronize(two.s1));
    CHECK_CUDA(cudaStreamSynchronize(two.s2));
    CHECK_CUDA(cudaFree(p));
  }
  const cuscope::Report r = settled();
  const bool noted = o.attribution == cuscope::Attribution::launch;
  CHECK(r.activity_status == (noted ? "on, synchronizes and allocations seen by callbacks, without their "
                                      "records (CUSCOPE_SYNC_RECORDS=0, "
                                      "CUSCOPE_MEMORY_RECORDS=0)"
                                    : "on, without synchronization or memory records "
                                      "(CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)"));
  const auto& lean = range(r, "lean");
  CHECK(lean.self.kernel_calls == 200);
  CHECK(lean.self.memset_count == 1);
  CHECK(lean.self.sync_count == (noted ? 2 : 0));
  CHECK(lean.self.alloc_count == (noted ? 1 : 0));
  CHECK(lean.self.alloc_bytes == (noted ? 1u << 20 : 0));
  CHECK(lean.self.free_count == (noted ? 1 : 0));
  CHECK(lean.self.free_bytes == (noted ? 1u << 20 : 0));
  CHECK(lean.self.peak_bytes == (noted ? 1u << 20 : 0));
  if (noted) {
    CHECK(lean.self.sync_ns > 0);
    CHECK(lean.self.sync_ns < lean.host.total_ns);  // the waits inside the scope's host time
  }
  CHECK(r.diagnostics.unresolved_records == 0);
  CHECK(r.diagnostics.dropped_records == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
}

// The defaults (no synchronization records): a loop that waits for each step's kernel, as
// .item() does, still gets the synchronization finding, its waits seen by their callbacks. With
// external correlation (gpu-check's second run) no callback sees them: no sync, no finding.
TEST_CASE("under the defaults a loop that waits for the GPU every step gets the synchronization finding",
          "[gpu][cupti]") {
  cuscope::Options o = cuscope_test::default_events();
  o.sync_records = false;
  o.memory_records = false;
  cuscope_test::Session session(o);
  warm_up();
  cudaStream_t s = nullptr;
  CHECK_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  const long long cycles = cycles_for_ms(0.2);
  for (int i = 0; i < 10; ++i) {
    CUSCOPE_SCOPE("waits_each_step", s);
    spin_kernel<<<1, 1, 0, s>>>(cycles);
    CHECK_CUDA(cudaStreamSynchronize(s));
  }
  const cuscope::Report r = settled();
  const bool noted = o.attribution == cuscope::Attribution::launch;
  const auto& step = range(r, "waits_each_step");
  CHECK(step.self.kernel_calls == 10);
  CHECK(step.self.sync_count == (noted ? 10 : 0));
  bool finding = false;
  for (const cuscope::Finding& f : step.findings) finding = finding || f.id == "synchronization";
  CHECK(finding == noted);
  if (noted) {
    CHECK(step.self.sync_ns >= step.self.kernel_ns / 2);  // most of each wait was the kernel's 0.2 ms
    CHECK(step.self.sync_ns < step.host.total_ns);
  }
  CHECK(r.diagnostics.unresolved_records == 0);
  cudaStreamDestroy(s);
}

namespace {

// A driver entry point through the runtime, as PyTorch gets its VMM calls (and so that the suite
// loads without libcuda, and skips).
template <class Fn>
Fn driver(const char* name) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  CHECK_CUDA(cudaGetDriverEntryPointByVersion(name, &entry, 12000, cudaEnableDefault, &found));
  REQUIRE(found == cudaDriverEntryPointSuccess);
  return reinterpret_cast<Fn>(entry);
}

}  // namespace

// PyTorch's expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True) reserve one
// range of addresses and map pages of physical memory into it with cuMemMap, unmapping them with
// cuMemUnmap; no cudaMalloc. Without memory records, with launch callbacks (the defaults), each map
// is an allocation at its address and each unmap its free (producers/cupti/call_callbacks.hpp).
// With external correlation no callback sees them.
TEST_CASE("mapped memory: each cuMemMap an allocation at its address, each cuMemUnmap its free",
          "[gpu][cupti][vmm]") {
  cuscope::Options o = cuscope_test::quiet_options();
  o.memory_records = false;
  cuscope_test::Session session(o);
  warm_up();
  const auto granularity = driver<PFN_cuMemGetAllocationGranularity_v10020>("cuMemGetAllocationGranularity");
  const auto reserve = driver<PFN_cuMemAddressReserve_v10020>("cuMemAddressReserve");
  const auto address_free = driver<PFN_cuMemAddressFree_v10020>("cuMemAddressFree");
  const auto create = driver<PFN_cuMemCreate_v10020>("cuMemCreate");
  const auto release = driver<PFN_cuMemRelease_v10020>("cuMemRelease");
  const auto map = driver<PFN_cuMemMap_v10020>("cuMemMap");
  const auto unmap = driver<PFN_cuMemUnmap_v10020>("cuMemUnmap");
  const auto set_access = driver<PFN_cuMemSetAccess_v10020>("cuMemSetAccess");
  int device = 0;
  CHECK_CUDA(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t page = 0;
  REQUIRE(granularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) == CUDA_SUCCESS);
  constexpr int kPages = 4;
  CUdeviceptr va = 0;
  REQUIRE(reserve(&va, kPages * page, 0, 0, 0) == CUDA_SUCCESS);
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<CUmemGenericAllocationHandle> handles(kPages);
  {
    CUSCOPE_SCOPE("grow");
    for (int i = 0; i < kPages; ++i) {
      REQUIRE(create(&handles[i], page, &prop, 0) == CUDA_SUCCESS);
      REQUIRE(map(va + i * page, page, 0, handles[i], 0) == CUDA_SUCCESS);
      REQUIRE(set_access(va + i * page, page, &access, 1) == CUDA_SUCCESS);
    }
    CHECK_CUDA(cudaMemset(reinterpret_cast<void*>(va), 0, kPages * page));  // the pages are usable
  }
  {
    CUSCOPE_SCOPE("shrink");
    for (int i = 0; i < kPages; ++i) {
      REQUIRE(unmap(va + i * page, page) == CUDA_SUCCESS);
      REQUIRE(release(handles[i]) == CUDA_SUCCESS);
    }
  }
  REQUIRE(address_free(va, kPages * page) == CUDA_SUCCESS);
  const cuscope::Report r = settled();
  const bool noted = o.attribution == cuscope::Attribution::launch;
  const auto& grow = range(r, "grow");
  CHECK(grow.self.alloc_count == (noted ? kPages : 0));
  CHECK(grow.self.alloc_bytes == (noted ? kPages * page : 0));
  CHECK(grow.self.peak_bytes == (noted ? kPages * page : 0));
  CHECK(grow.self.memset_bytes == kPages * page);
  const auto& shrink = range(r, "shrink");
  CHECK(shrink.self.free_count == (noted ? kPages : 0));
  CHECK(shrink.self.free_bytes == (noted ? kPages * page : 0));
  CHECK(r.diagnostics.allocations_untracked == 0);
  CHECK(r.diagnostics.launch_notes_lost == 0);
}

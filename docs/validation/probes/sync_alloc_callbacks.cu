// docs/validation/probes/sync_alloc_callbacks.cu — the synchronizes, allocations and frees cuscope
// sees by their own driver callbacks where their CUPTI records are off (the defaults since
// 2026-11-27; src/producers/cupti/call_callbacks.cpp): which driver callbacks each runtime call
// reaches, with what parameters, and what the callbacks cost a call against no CUPTI work and
// against the synchronization and memory records they replace. Raw CUDA and CUPTI, no cuscope;
// exits 77 without a CUDA device.
//
// CHECK: with callbacks on every driver call whose name holds "Synchronize", "MemAlloc" or
// "MemFree", 10 calls each of cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize,
// cudaMalloc + cudaFree (1 MiB), cudaMallocAsync + cudaFreeAsync (1 MiB) and cudaFree(nullptr): one
// line per runtime call with every driver callback it reached (exits, successful), whether each is
// one cuscope's list holds, and whether the allocations' sizes and addresses read from the
// parameters match what the program asked and got. The CONCLUSION says whether every runtime call
// reached exactly one callback of cuscope's list per call (cudaFree(nullptr): none with an address).
//
// CHECK (mapped memory, as PyTorch's expandable segments make it): 10 pages of the allocation
// granularity, each cuMemCreate + cuMemMap at its place in one reserved range, then cuMemUnmap +
// cuMemRelease, through driver entry points from cudaGetDriverEntryPointByVersion (as PyTorch gets
// them): whether each map and unmap reached cuscope's cuMemMap / cuMemUnmap callback with its
// address and size; then the same cycle with MEMORY2 records on, and how many allocation and
// release records CUPTI gave inside the mapped range (whether CUSCOPE_MEMORY_RECORDS=1 sees these
// mappings at all).
//
// RESULT: per call, cudaStreamSynchronize on an idle stream and a cudaMalloc + cudaFree pair, in
// three configurations interleaved round by round: bare (CUPTI attached, idle), callbacks (cuscope's
// call callbacks: the clock at entry, a note under a lock at a successful exit) and records
// (SYNCHRONIZATION and MEMORY2 with the RUNTIME/DRIVER API records of cuscope's traced calls, what
// CUSCOPE_SYNC_RECORDS=1 CUSCOPE_MEMORY_RECORDS=1 turn on with external correlation).
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line.
#include <cudaTypedefs.h>

#include <atomic>
#include <map>

#include "../../../src/producers/cupti/noted_calls.hpp"  // CUPTI and the standard library only
#include "probe_common.hpp"

namespace {

constexpr const char* kName = "sync_alloc_callbacks";
constexpr int kCheckCalls = 10;
constexpr int kOpsPerBatch = 200;
constexpr int kBatches = 10;  // timed per round, after one untimed batch
constexpr int kRounds = 5;
constexpr std::size_t kBytes = 1 << 20;

// Whether cuscope notes the driver call named `name`: its own list (noted_calls.hpp), by name.
bool cuscope_lists(const std::string& name) {
  const auto in = [&name](const auto& ids) {
    for (CUpti_CallbackId id : ids) {
      if (probe::callback_name(CUPTI_CB_DOMAIN_DRIVER_API, id) == name) return true;
    }
    return false;
  };
  using namespace cuscope::detail;
  return in(kNotedWaits) || in(kNotedAllocs) || in(kNotedFrees);
}

// What the callbacks saw: every successful exit, by callback name, with an allocation's size and
// address where the parameters give them.
struct Seen {
  std::string name;
  std::uint64_t bytes = 0, address = 0;
};
std::mutex g_seen_mutex;
std::vector<Seen> g_seen;
bool g_checking = true;  // CHECK: log every exit; RESULT: cuscope's note only

void CUPTIAPI on_call(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite == CUPTI_API_ENTER) {
    if (cb->correlationData != nullptr) *cb->correlationData = probe::now_ns();
    return;
  }
  if (cb->functionReturnValue == nullptr ||
      *static_cast<const CUresult*>(cb->functionReturnValue) != CUDA_SUCCESS)
    return;
  Seen s;
  const std::uint64_t end = probe::now_ns();
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2) {
    const auto* p = static_cast<const cuMemAlloc_v2_params*>(cb->functionParams);
    s.bytes = p->bytesize;
    s.address = *p->dptr;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz) {
    const auto* p = static_cast<const cuMemAllocAsync_params*>(cb->functionParams);  // same layout as _ptsz
    s.bytes = p->bytesize;
    s.address = *p->dptr;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemMap) {
    const auto* p = static_cast<const cuMemMap_params*>(cb->functionParams);
    s.bytes = p->size;
    s.address = p->ptr;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemUnmap) {
    const auto* p = static_cast<const cuMemUnmap_params*>(cb->functionParams);
    s.bytes = p->size;
    s.address = p->ptr;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2) {
    s.address = static_cast<const cuMemFree_v2_params*>(cb->functionParams)->dptr;
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync ||
             cbid == CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz) {
    s.address = static_cast<const cuMemFreeAsync_params*>(cb->functionParams)->dptr;  // same layout as _ptsz
  }
  std::lock_guard lock(g_seen_mutex);
  if (g_checking) {
    s.name = probe::callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    g_seen.push_back(std::move(s));
  } else {
    // cuscope's note: a few words into a bounded queue under a lock.
    static std::vector<std::uint64_t> notes;
    if (notes.size() > (1u << 16)) notes.clear();
    notes.push_back(end - (cb->correlationData != nullptr ? *cb->correlationData : end));
  }
}

// Enables (or disables) the callbacks: every "Synchronize"/"MemAlloc"/"MemFree" call and the
// mapped memory's calls when `all`, else cuscope's list.
void set_callbacks(CUpti_SubscriberHandle sub, bool on, bool all) {
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const std::string name = probe::callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    const bool wanted = all ? name.find("Synchronize") != std::string::npos ||
                                  name.find("MemAlloc") != std::string::npos ||
                                  name.find("MemFree") != std::string::npos || name == "cuMemMap" ||
                                  name == "cuMemUnmap" || name == "cuMemCreate" || name == "cuMemRelease"
                            : cuscope_lists(name);
    if (wanted) PROBE_CUPTI(cuptiEnableCallback(on ? 1 : 0, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
  }
}

void check(cudaStream_t s, cudaEvent_t e) {
  struct Call {
    const char* name;
    void (*run)(cudaStream_t, cudaEvent_t, void**);
  };
  const Call calls[] = {
      {"cudaStreamSynchronize",
       [](cudaStream_t s, cudaEvent_t, void**) { PROBE_CUDA(cudaStreamSynchronize(s)); }},
      {"cudaDeviceSynchronize",
       [](cudaStream_t, cudaEvent_t, void**) { PROBE_CUDA(cudaDeviceSynchronize()); }},
      {"cudaEventSynchronize",
       [](cudaStream_t s, cudaEvent_t e, void**) {
         PROBE_CUDA(cudaEventRecord(e, s));
         PROBE_CUDA(cudaEventSynchronize(e));
       }},
      {"cudaMalloc", [](cudaStream_t, cudaEvent_t, void** p) { PROBE_CUDA(cudaMalloc(p, kBytes)); }},
      {"cudaFree", [](cudaStream_t, cudaEvent_t, void** p) { PROBE_CUDA(cudaFree(*p)); }},
      {"cudaMallocAsync",
       [](cudaStream_t s, cudaEvent_t, void** p) { PROBE_CUDA(cudaMallocAsync(p, kBytes, s)); }},
      {"cudaFreeAsync", [](cudaStream_t s, cudaEvent_t, void** p) { PROBE_CUDA(cudaFreeAsync(*p, s)); }},
      {"cudaFree(nullptr)", [](cudaStream_t, cudaEvent_t, void**) { PROBE_CUDA(cudaFree(nullptr)); }},
  };
  int exact = 0;
  for (const Call& c : calls) {
    std::map<std::string, int> reached;
    int listed = 0, sizes_right = 0, listed_nonzero = 0;
    std::vector<void*> pointers(kCheckCalls, nullptr);
    for (int i = 0; i < kCheckCalls; ++i) {
      // A free needs its allocation, made outside the logged call.
      const bool frees = std::strcmp(c.name, "cudaFree") == 0 || std::strcmp(c.name, "cudaFreeAsync") == 0;
      if (frees) {
        g_checking = false;
        PROBE_CUDA(std::strcmp(c.name, "cudaFree") == 0 ? cudaMalloc(&pointers[i], kBytes)
                                                        : cudaMallocAsync(&pointers[i], kBytes, s));
        PROBE_CUDA(cudaStreamSynchronize(s));
        g_checking = true;
      }
      {
        std::lock_guard lock(g_seen_mutex);
        g_seen.clear();
      }
      c.run(s, e, &pointers[i]);
      std::lock_guard lock(g_seen_mutex);
      for (const Seen& seen : g_seen) {
        ++reached[seen.name];
        if (!cuscope_lists(seen.name)) continue;
        ++listed;
        listed_nonzero += seen.address != 0;
        const bool alloc = seen.name.find("MemAlloc") != std::string::npos;
        const bool free = seen.name.find("MemFree") != std::string::npos;
        if (alloc)
          sizes_right += seen.bytes == kBytes && seen.address == reinterpret_cast<std::uint64_t>(pointers[i]);
        if (free) sizes_right += seen.address == reinterpret_cast<std::uint64_t>(pointers[i]);
      }
    }
    if (std::strcmp(c.name, "cudaMallocAsync") == 0 || std::strcmp(c.name, "cudaMalloc") == 0) {
      g_checking = false;
      for (void* p : pointers)
        PROBE_CUDA(std::strcmp(c.name, "cudaMalloc") == 0 ? cudaFree(p) : cudaFreeAsync(p, s));
      PROBE_CUDA(cudaStreamSynchronize(s));
      g_checking = true;
    }
    const bool memory = std::strstr(c.name, "Malloc") != nullptr || std::strcmp(c.name, "cudaFree") == 0 ||
                        std::strcmp(c.name, "cudaFreeAsync") == 0;
    const bool nothing = std::strcmp(c.name, "cudaFree(nullptr)") == 0;
    // cudaFree(nullptr) may reach cuMemFree_v2 with address 0, which cuscope drops: right when no
    // listed callback carried an address.
    const bool ok =
        nothing ? listed_nonzero == 0 : listed == kCheckCalls && (!memory || sizes_right == kCheckCalls);
    exact += ok;
    std::printf(
        "CHECK %-22s calls=%d listed_callbacks=%d with_address=%d sizes_and_addresses_right=%d reached:",
        c.name, kCheckCalls, listed, listed_nonzero, sizes_right);
    for (const auto& [name, n] : reached)
      std::printf(" %s%s=%d", name.c_str(), cuscope_lists(name) ? "" : "(unlisted)", n);
    std::printf("\n");
  }
  std::printf(
      "CONCLUSION: %d of %zu runtime calls reached exactly one callback of cuscope's list per call, with "
      "the right size and address\n",
      exact, std::size(calls));
}

// The driver's mapped-memory calls, as PyTorch gets them: entry points by version, no -lcuda.
struct Vmm {
  PFN_cuMemGetAllocationGranularity_v10020 granularity = nullptr;
  PFN_cuMemAddressReserve_v10020 reserve = nullptr;
  PFN_cuMemAddressFree_v10020 address_free = nullptr;
  PFN_cuMemCreate_v10020 create = nullptr;
  PFN_cuMemRelease_v10020 release = nullptr;
  PFN_cuMemMap_v10020 map = nullptr;
  PFN_cuMemUnmap_v10020 unmap = nullptr;
  PFN_cuMemSetAccess_v10020 set_access = nullptr;

  bool load() {
    const auto get = [](const char* name, auto& fn) {
      void* p = nullptr;
      cudaDriverEntryPointQueryResult found{};
      if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess ||
          found != cudaDriverEntryPointSuccess || p == nullptr)
        return false;
      fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(p);
      return true;
    };
    return get("cuMemGetAllocationGranularity", granularity) && get("cuMemAddressReserve", reserve) &&
           get("cuMemAddressFree", address_free) && get("cuMemCreate", create) &&
           get("cuMemRelease", release) && get("cuMemMap", map) && get("cuMemUnmap", unmap) &&
           get("cuMemSetAccess", set_access);
  }
};

void driver_check(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  std::printf("FAILED line %d: %s: CUresult %d\n", line, call, static_cast<int>(r));
  std::exit(EXIT_FAILURE);
}
#define PROBE_DRIVER(call) driver_check((call), #call, __LINE__)

// The mapped range of the check with records on, and the MEMORY2 records CUPTI gave inside it.
std::atomic<std::uint64_t> g_vmm_lo{0}, g_vmm_hi{0};
std::atomic<int> g_vmm_alloc_records{0}, g_vmm_release_records{0};

void parse(const CUpti_Activity* a) {
  if (a->kind != CUPTI_ACTIVITY_KIND_MEMORY2) return;
  const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(a);
  if (m->address < g_vmm_lo.load() || m->address >= g_vmm_hi.load()) return;
  if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION) g_vmm_alloc_records += 1;
  if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE) g_vmm_release_records += 1;
}

// One cycle of kCheckCalls pages: map each, then unmap each. With `log`, a CHECK line for the maps
// and one for the unmaps (the callbacks of `all` mode on); without, the records' count.
void vmm_cycle(const Vmm& v, bool log) {
  int device = 0;
  PROBE_CUDA(cudaGetDevice(&device));
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = device;
  std::size_t page = 0;
  PROBE_DRIVER(v.granularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CUdeviceptr va = 0;
  PROBE_DRIVER(v.reserve(&va, page * kCheckCalls, 0, 0, 0));
  g_vmm_lo = va;
  g_vmm_hi = va + page * kCheckCalls;
  CUmemAccessDesc access{};
  access.location = prop.location;
  access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  std::vector<CUmemGenericAllocationHandle> handles(kCheckCalls);
  int ok[2] = {0, 0};
  std::map<std::string, int> reached[2];
  // Runs `call` with the callbacks' log cleared, then reads what cuscope's list saw of it.
  const auto logged = [&](int phase, CUdeviceptr at, auto&& call) {
    {
      std::lock_guard lock(g_seen_mutex);
      g_seen.clear();
    }
    g_checking = log;
    call();
    g_checking = false;
    std::lock_guard lock(g_seen_mutex);
    int right = 0, listed = 0;
    for (const Seen& seen : g_seen) {
      ++reached[phase][seen.name];
      if (!cuscope_lists(seen.name)) continue;
      ++listed;
      right += seen.address == at && seen.bytes == page;
    }
    ok[phase] += listed == 1 && right == 1;
  };
  for (int i = 0; i < kCheckCalls; ++i) {
    const CUdeviceptr at = va + i * page;
    PROBE_DRIVER(v.create(&handles[i], page, &prop, 0));
    logged(0, at, [&] { PROBE_DRIVER(v.map(at, page, 0, handles[i], 0)); });
    PROBE_DRIVER(v.set_access(at, page, &access, 1));
  }
  for (int i = 0; i < kCheckCalls; ++i) {
    const CUdeviceptr at = va + i * page;
    logged(1, at, [&] { PROBE_DRIVER(v.unmap(at, page)); });
    PROBE_DRIVER(v.release(handles[i]));
  }
  PROBE_DRIVER(v.address_free(va, page * kCheckCalls));
  if (!log) return;
  const char* names[2] = {"cuMemMap", "cuMemUnmap"};
  for (int phase = 0; phase < 2; ++phase) {
    std::printf("CHECK %-22s calls=%d page_bytes=%zu one_listed_callback_with_address_and_size=%d reached:",
                names[phase], kCheckCalls, page, ok[phase]);
    for (const auto& [name, n] : reached[phase])
      std::printf(" %s%s=%d", name.c_str(), cuscope_lists(name) ? "" : "(unlisted)", n);
    std::printf("\n");
  }
  std::printf(
      "CONCLUSION: mapped memory: %d of %d maps and %d of %d unmaps reached one callback of cuscope's list "
      "with their address and size\n",
      ok[0], kCheckCalls, ok[1], kCheckCalls);
}

void check_vmm() {
  Vmm v;
  if (!v.load()) {
    std::printf("CHECK mapped memory: the driver's entry points were not found; not checked\n");
    return;
  }
  vmm_cycle(v, true);
  // The same cycle with MEMORY2 records (callbacks not logged): does CUPTI record mappings?
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2));
  vmm_cycle(v, false);
  PROBE_CUPTI(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
  std::printf(
      "CHECK vmm_memory_records maps=%d unmaps=%d memory2_allocation_records=%d "
      "memory2_release_records=%d (inside the mapped range)\n",
      kCheckCalls, kCheckCalls, g_vmm_alloc_records.load(), g_vmm_release_records.load());
  std::printf("CONCLUSION: CUPTI's MEMORY2 records %s these mappings\n",
              g_vmm_alloc_records.load() == kCheckCalls ? "see" : "do not see (all of)");
}

// One configuration's batch: kOpsPerBatch operations, nanoseconds per operation.
double batch(bool sync, cudaStream_t s) {
  const std::uint64_t start = probe::now_ns();
  for (int i = 0; i < kOpsPerBatch; ++i) {
    if (sync) {
      PROBE_CUDA(cudaStreamSynchronize(s));
    } else {
      void* p = nullptr;
      PROBE_CUDA(cudaMalloc(&p, kBytes));
      PROBE_CUDA(cudaFree(p));
    }
  }
  return static_cast<double>(probe::now_ns() - start) / kOpsPerBatch;
}

void measure(CUpti_SubscriberHandle sub, cudaStream_t s) {
  g_checking = false;
  enum Config { kBare, kCallbacks, kRecords, kConfigs };
  const char* names[kConfigs] = {"bare", "callbacks", "records"};
  probe::Samples samples[2][kConfigs];
  for (int round = 0; round < kRounds; ++round) {
    for (int k = 0; k < kConfigs; ++k) {
      const int config = (k + round) % kConfigs;  // the order rotates round by round
      if (config == kCallbacks) set_callbacks(sub, true, false);
      if (config == kRecords) {
        probe::enable_calls_as_cuscope();
        PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION));
        PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMORY2));
      }
      for (int op = 0; op < 2; ++op) {
        batch(op == 0, s);  // untimed
        std::vector<double> v;
        for (int b = 0; b < kBatches; ++b) v.push_back(batch(op == 0, s));
        samples[op][config].add_round(std::move(v));
      }
      if (config == kCallbacks) set_callbacks(sub, false, false);
      if (config == kRecords) {
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        cuptiActivityDisable(CUPTI_ACTIVITY_KIND_MEMORY2);
        probe::disable_api_kinds();
        cuptiActivityFlushAll(0);
      }
    }
  }
  const char* ops[2] = {"sync", "malloc_free"};
  const char* what[2] = {"cudaStreamSynchronize on an idle stream", "cudaMalloc + cudaFree of 1 MiB"};
  for (int op = 0; op < 2; ++op) {
    for (int c = 0; c < kConfigs; ++c) {
      const std::string key = std::string(ops[op]) + "." + names[c];
      probe::print_result(key.c_str(), samples[op][c], kOpsPerBatch, what[op]);
    }
    for (int c = 1; c < kConfigs; ++c) {
      const std::string key = std::string(ops[op]) + "." + names[c];
      const std::string base = std::string(ops[op]) + ".bare";
      probe::print_ratio(key.c_str(), samples[op][c], base.c_str(), samples[op][kBare]);
    }
  }
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  cudaStream_t s = nullptr;
  cudaEvent_t e = nullptr;
  PROBE_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  PROBE_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  CUpti_SubscriberHandle sub = nullptr;
  PROBE_CUPTI(cuptiSubscribe(&sub, &on_call, nullptr));
  set_callbacks(sub, true, true);
  check(s, e);
  check_vmm();
  set_callbacks(sub, false, true);
  measure(sub, s);
  PROBE_CUPTI(cuptiUnsubscribe(sub));
  probe::Buffers::flush_forced();
  return 0;
}

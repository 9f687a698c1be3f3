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
// RESULT: per call, cudaStreamSynchronize on an idle stream and a cudaMalloc + cudaFree pair, in
// three configurations interleaved round by round: bare (CUPTI attached, idle), callbacks (cuscope's
// call callbacks: the clock at entry, a note under a lock at a successful exit) and records
// (SYNCHRONIZATION and MEMORY2 with the RUNTIME/DRIVER API records of cuscope's traced calls, what
// CUSCOPE_SYNC_RECORDS=1 CUSCOPE_MEMORY_RECORDS=1 turn on with external correlation).
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line.
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

// Enables (or disables) the callbacks: every "Synchronize"/"MemAlloc"/"MemFree" call when `all`,
// else cuscope's list.
void set_callbacks(CUpti_SubscriberHandle sub, bool on, bool all) {
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const std::string name = probe::callback_name(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
    const bool wanted = all ? name.find("Synchronize") != std::string::npos ||
                                  name.find("MemAlloc") != std::string::npos ||
                                  name.find("MemFree") != std::string::npos
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

void parse(const CUpti_Activity*) {}  // the records' contents are not this probe's question

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
  set_callbacks(sub, false, true);
  measure(sub, s);
  PROBE_CUPTI(cuptiUnsubscribe(sub));
  probe::Buffers::flush_forced();
  return 0;
}

// docs/validation/probes/launch_attribution.cu — issue 24: the host cost per launch of two ways to
// tie each kernel to the scope open when it was launched. Raw CUDA and CUPTI, no cuscope; exits 77
// without a CUDA device.
//
//   bare            no CUPTI activity or callback (CUPTI attached in this process, idle)
//   bare.nocupti    the same in a child process that never touches CUPTI
//   kernel          CONCURRENT_KERNEL only: the minimal CUPTI client
//   extcorr         CONCURRENT_KERNEL + RUNTIME/DRIVER kinds with every call but cuscope's off (as
//                   src/producers/cupti/adapter.cpp trace_calls()) + EXTERNAL_CORRELATION, and
//                   cuptiActivityPush/PopExternalCorrelationId around every launch
//   extcorr/10      the same, one push/pop per 10 launches
//   callback        CONCURRENT_KERNEL + a subscriber on the driver's cuLaunchKernel(Ex)(_ptsz)
//                   callbacks that writes (correlationId, thread-local scope) into a thread-local log
//                   at API_ENTER (Triton's Proton does this); CUPTI calls it at API_EXIT too, where it
//                   returns at once
//   callback+exit   the same, and it writes a second entry at API_EXIT
//
// Each configuration launches an empty kernel from the runtime ("rt/", <<<>>>) and the driver
// ("drv/", cuLaunchKernel), 1000 launches a batch, interleaved round by round (the order rotates),
// one sample per batch: RESULT and RATIO lines. After each round the kernel records are matched to
// their scope (VERIFY lines: right scope, wrong scope, not seen). CONCLUSION lines are computed from
// the data. launch_callbacks.cu shows which callbacks see each launch method's correlation id.
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line. By
// hand, on a GPU machine, from the repository root (one line):
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/launch_probe docs/validation/probes/launch_attribution.cu
//   -L/usr/local/cuda/lib64 -lcupti -ldl && /tmp/launch_probe
#include <cmath>
#include <map>

#include "launch_records.hpp"

namespace {

using namespace launch_probe;

constexpr int kLaunchesPerBatch = 1000;
constexpr int kBatches = 20;  // timed per round, after one untimed batch
constexpr int kRounds = 7;
constexpr const char* kName = "launch_attribution";

__global__ void empty_kernel() {}

// ---- The launch callback: a thread-local scope, and a thread-local log of what the callback saw.

struct Entry {
  std::uint32_t correlation;
  std::uint64_t scope;
};

struct Log {
  std::vector<Entry> enter, exit;
  std::uint64_t overflow = 0;
};

std::mutex g_logs_mutex;
std::vector<Log*> g_logs;  // every thread's log, for reading after the timed loops
bool g_write_at_exit = false;

Log& thread_log() {
  thread_local Log* log = [] {
    auto* l = new Log;  // lives to the end of the process: read after its thread is gone
    l->enter.reserve(1u << 16);
    l->exit.reserve(1u << 16);
    std::lock_guard lock(g_logs_mutex);
    g_logs.push_back(l);
    return l;
  }();
  return *log;
}

void push(std::vector<Entry>& v, std::uint64_t& overflow, Entry e) {
  if (v.size() < v.capacity()) {
    v.push_back(e);
  } else {
    ++overflow;
  }
}

void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  Log& log = thread_log();
  if (cb->callbackSite == CUPTI_API_ENTER) {
    push(log.enter, log.overflow, {cb->correlationId, t_scope});
  } else if (g_write_at_exit) {
    push(log.exit, log.overflow, {cb->correlationId, t_scope});
  }
}

struct Seen {
  std::unordered_map<std::uint32_t, std::uint64_t> scope_by_correlation;
  std::uint64_t enters = 0, exits = 0, overflow = 0;
};

Seen take_logs() {
  Seen s;
  std::lock_guard lock(g_logs_mutex);
  for (Log* l : g_logs) {
    for (const Entry& e : l->enter) s.scope_by_correlation[e.correlation] = e.scope;
    s.enters += l->enter.size();
    s.exits += l->exit.size();
    s.overflow += l->overflow;
    l->enter.clear();
    l->exit.clear();
    l->overflow = 0;
  }
  return s;
}

constexpr CUpti_CallbackId kDriverLaunchCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz};

CUpti_SubscriberHandle subscribe_launches() {
  CUpti_SubscriberHandle sub = nullptr;
  PROBE_CUPTI(cuptiSubscribe(&sub, &on_launch, nullptr));
  for (CUpti_CallbackId cbid : kDriverLaunchCalls)
    PROBE_CUPTI(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
  return sub;
}

// ---- Configurations and the timed loop.

enum class Path { runtime, driver };
const char* path_name(Path p) { return p == Path::runtime ? "rt" : "drv"; }
constexpr Path kPaths[] = {Path::runtime, Path::driver};

struct Config {
  const char* key;
  bool kernels;     // CONCURRENT_KERNEL
  bool external;    // API kinds as cuscope + EXTERNAL_CORRELATION, push/pop per scope
  int scope_every;  // launches per scope
  int callback;     // 0 none, 1 the launch callback, 2 and a write at API_EXIT
  const char* what;
};

constexpr Config kConfigs[] = {
    {"bare", false, false, 1, 0, "no CUPTI activity or callback (CUPTI attached and idle)"},
    {"kernel", true, false, 1, 0, "CONCURRENT_KERNEL only (the minimal client)"},
    {"extcorr", true, true, 1, 0, "+ RUNTIME/DRIVER as cuscope + EXTERNAL_CORRELATION, push/pop per launch"},
    {"extcorr/10", true, true, 10, 0,
     "+ RUNTIME/DRIVER as cuscope + EXTERNAL_CORRELATION, push/pop per 10 launches"},
    {"callback", true, false, 1, 1, "CONCURRENT_KERNEL + driver launch callback writing at API_ENTER"},
    {"callback+exit", true, false, 1, 2,
     "CONCURRENT_KERNEL + driver launch callback writing at API_ENTER and API_EXIT"},
};
constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);

std::uint64_t g_next_scope = 1;

/// Host ns per launch, one sample per timed batch; the stream drains between batches, untimed.
std::vector<double> time_launches(const Target& t, Path path, int scope_every, bool push) {
  std::vector<double> out;
  for (int b = -1; b < kBatches; ++b) {
    int failed = 0;
    const std::uint64_t t0 = probe::now_ns();
    for (int i = 0; i < kLaunchesPerBatch; ++i) {
      const bool opens = i % scope_every == 0, closes = (i + 1) % scope_every == 0;
      if (opens) {
        t_scope = g_next_scope++;
        if (push) cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, t_scope);
      }
      if (path == Path::runtime) {
        empty_kernel<<<1, 1, 0, t.stream>>>();
      } else {
        failed += g_driver.launch_kernel(t.function, 1, 1, 1, 1, 1, 1, 0, t.stream, nullptr, nullptr) !=
                  CUDA_SUCCESS;
      }
      if (closes && push) {
        std::uint64_t last = 0;
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
      }
    }
    const std::uint64_t t1 = probe::now_ns();
    if (failed != 0) std::printf("FAILED: %d cuLaunchKernel calls in a batch\n", failed);
    PROBE_CUDA(cudaGetLastError());
    PROBE_CUDA(cudaStreamSynchronize(t.stream));
    if (b >= 0) out.push_back(static_cast<double>(t1 - t0) / kLaunchesPerBatch);
  }
  return out;
}

struct Verdict {
  std::uint64_t launches = 0, kernels = 0, right = 0, wrong = 0, not_seen = 0, api_records = 0;
  std::uint64_t callback_enters = 0, callback_exits = 0, overflow = 0;
};

/// Kernel records in start order must carry scopes first, first+1, ... (one scope per `every`).
void judge(Verdict& v, std::vector<KernelRecord> kernels, std::uint64_t first_scope, int every,
           const std::unordered_map<std::uint32_t, std::uint64_t>& scope_by_correlation) {
  std::sort(kernels.begin(), kernels.end(),
            [](const KernelRecord& a, const KernelRecord& b) { return a.start_ns < b.start_ns; });
  v.kernels += kernels.size();
  for (std::size_t k = 0; k < kernels.size(); ++k) {
    auto it = scope_by_correlation.find(kernels[k].correlation);
    if (it == scope_by_correlation.end()) {
      ++v.not_seen;
    } else if (it->second == first_scope + k / every) {
      ++v.right;
    } else {
      ++v.wrong;
    }
  }
}

void cupti_on(const Config& c) {
  if (c.kernels) PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (c.external) {
    probe::enable_calls_as_cuscope();
    PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
  }
}

std::string row_key(Path p, const char* config) { return std::string(path_name(p)) + "/" + config; }

struct Results {
  std::map<std::string, probe::Samples> samples;
  std::map<std::string, Verdict> verdicts;
};

void run_config(const Target& t, const Config& c, Path path, Results& res) {
  take_records();
  take_logs();
  CUpti_SubscriberHandle sub = nullptr;
  if (c.callback != 0) {
    g_write_at_exit = c.callback == 2;
    sub = subscribe_launches();
  }
  cupti_on(c);
  const std::uint64_t first_scope = g_next_scope;
  std::vector<double> batches = time_launches(t, path, c.scope_every, c.external);
  cupti_off();
  if (sub != nullptr) PROBE_CUPTI(cuptiUnsubscribe(sub));
  const std::string key = row_key(path, c.key);
  res.samples[key].add_round(std::move(batches));
  Records r = take_records();
  const Seen seen = take_logs();
  Verdict& v = res.verdicts[key];
  v.launches += (kBatches + 1) * kLaunchesPerBatch;
  v.api_records += r.api;
  v.callback_enters += seen.enters;
  v.callback_exits += seen.exits;
  v.overflow += seen.overflow;
  if (c.callback != 0) {
    judge(v, std::move(r.kernels), first_scope, c.scope_every, seen.scope_by_correlation);
  } else if (c.external) {
    judge(v, std::move(r.kernels), first_scope, c.scope_every, r.external);
  } else {
    v.kernels += r.kernels.size();
  }
}

/// The child process: bare launches where CUPTI was never touched, one round, as BATCHES lines.
int child_no_cupti(const Target& t) {
  for (Path p : kPaths) {
    probe::print_batches(row_key(p, "bare.nocupti").c_str(), time_launches(t, p, 1, false));
  }
  return 0;
}

Results measure(const Target& t) {
  Results res;
  for (int round = 0; round < kRounds; ++round) {
    const std::string child = probe::run_self("--child-no-cupti");
    for (Path p : kPaths) {
      const std::string key = row_key(p, "bare.nocupti");
      res.samples[key].add_round(probe::child_batches(child, key));
    }
    for (int n = 0; n < kConfigCount; ++n) {
      const Config& c = kConfigs[(n + round) % kConfigCount];
      for (Path p : kPaths) run_config(t, c, p, res);
    }
    std::fprintf(stderr, "%s: round %d of %d done\n", kName, round + 1, kRounds);
  }
  return res;
}

void print_results(const Results& res) {
  for (Path p : kPaths) {
    const std::string nc = row_key(p, "bare.nocupti");
    probe::print_result(nc.c_str(), res.samples.at(nc), kLaunchesPerBatch,
                        "a process that never touches CUPTI");
    for (const Config& c : kConfigs) {
      const std::string key = row_key(p, c.key);
      probe::print_result(key.c_str(), res.samples.at(key), kLaunchesPerBatch, c.what);
    }
  }
  for (Path p : kPaths) {
    const std::string bare = row_key(p, "bare"), nocupti = row_key(p, "bare.nocupti"),
                      kernel = row_key(p, "kernel");
    for (const Config& c : kConfigs) {
      const std::string key = row_key(p, c.key);
      probe::print_ratio(key.c_str(), res.samples.at(key), nocupti.c_str(), res.samples.at(nocupti));
      probe::print_ratio(key.c_str(), res.samples.at(key), bare.c_str(), res.samples.at(bare));
      probe::print_ratio(key.c_str(), res.samples.at(key), kernel.c_str(), res.samples.at(kernel));
    }
  }
  for (const auto& [key, v] : res.verdicts) {
    std::printf(
        "VERIFY %-18s launches=%llu kernel_records=%llu right_scope=%llu wrong_scope=%llu not_seen=%llu "
        "api_records=%llu callback_enters=%llu callback_exit_writes=%llu log_overflow=%llu\n",
        key.c_str(), (unsigned long long)v.launches, (unsigned long long)v.kernels,
        (unsigned long long)v.right, (unsigned long long)v.wrong, (unsigned long long)v.not_seen,
        (unsigned long long)v.api_records, (unsigned long long)v.callback_enters,
        (unsigned long long)v.callback_exits, (unsigned long long)v.overflow);
  }
}

void conclude(const Results& res) {
  for (Path p : kPaths) {
    const auto med = [&](const char* c) { return res.samples.at(row_key(p, c)).median(); };
    const double kernel = med("kernel");
    const auto over = [&](const char* c) { return kernel > 0 ? med(c) / kernel : 0.0; };
    std::printf(
        "CONCLUSION: %s: per launch, the minimal client %.0f ns (bare %.0f, never-CUPTI %.0f); external "
        "correlation per launch %.0f ns (%.2fx the minimal client), per 10 launches %.0f ns (%.2fx); launch "
        "callback %.0f ns (%.2fx), with a write at API_EXIT too %.0f ns (%.2fx)\n",
        path_name(p), kernel, med("bare"), med("bare.nocupti"), med("extcorr"), over("extcorr"),
        med("extcorr/10"), over("extcorr/10"), med("callback"), over("callback"), med("callback+exit"),
        over("callback+exit"));
    const double ext = med("extcorr"), cb = med("callback");
    std::printf(
        "CONCLUSION: %s: the launch callback is %s than external correlation per launch by %.0f ns (%.2fx)\n",
        path_name(p), cb < ext ? "cheaper" : "NOT cheaper", std::fabs(ext - cb), ext > 0 ? cb / ext : 0.0);
    for (const char* c : {"extcorr", "extcorr/10", "callback", "callback+exit"}) {
      const Verdict& v = res.verdicts.at(row_key(p, c));
      std::printf(
          "CONCLUSION: %s/%s attributes %llu of %llu kernel records to the right scope (%llu wrong, %llu not "
          "seen) for %llu launches%s\n",
          path_name(p), c, (unsigned long long)v.right, (unsigned long long)v.kernels,
          (unsigned long long)v.wrong, (unsigned long long)v.not_seen, (unsigned long long)v.launches,
          v.right == v.launches && v.kernels == v.launches ? ": all" : ": NOT all");
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  load_driver();
  const Target t = make_target(reinterpret_cast<const void*>(&empty_kernel));
  if (argc > 1 && std::strcmp(argv[1], "--child-no-cupti") == 0) return child_no_cupti(t);
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  std::printf("%s: %d rounds; each configuration and path %d timed batches of %d launches a round\n", kName,
              kRounds, kBatches, kLaunchesPerBatch);
  const Results res = measure(t);
  print_results(res);
  conclude(res);
  return 0;
}

// docs/validation/probes/probe_common.hpp — what the issue-24 probes share (event_record_costs.cu,
// event_device_timestamps.cu, launch_attribution.cu, launch_callbacks.cu, sync_alloc_callbacks.cu):
// error checks, the no-GPU exit (77), per-batch timing statistics printed as RESULT lines, a
// recycled pool of CUPTI activity buffers handed to the probe's parser, cuscope's choice of traced
// API calls (copied from src/producers/cupti/adapter.cpp), and a child process of the probe itself
// for costs measured where CUPTI was never touched. Raw CUDA and CUPTI: never include cuscope here.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include <unistd.h>

#include "../../../src/producers/cupti/traced_calls.hpp"  // header-only, the standard library only

namespace probe {

inline std::uint64_t now_ns() {
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now().time_since_epoch())
                                        .count());
}

inline void cuda_check(cudaError_t status, const char* call, int line) {
  if (status == cudaSuccess) return;
  std::printf("FAILED line %d: %s: %s\n", line, call, cudaGetErrorString(status));
  std::exit(EXIT_FAILURE);
}

inline const char* cupti_text(CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  return text != nullptr ? text : "?";
}

inline void cupti_check(CUptiResult r, const char* call, int line) {
  if (r == CUPTI_SUCCESS) return;
  std::printf("FAILED line %d: %s: %s\n", line, call, cupti_text(r));
  std::exit(EXIT_FAILURE);
}

#define PROBE_CUDA(call) ::probe::cuda_check((call), #call, __LINE__)
#define PROBE_CUPTI(call) ::probe::cupti_check((call), #call, __LINE__)

/// Exit code 77 (skipped) without a CUDA device, before any CUPTI call: prints why.
inline void exit_77_without_device(const char* probe_name) {
  int devices = 0;
  const cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) return;
  std::printf("%s: skipped, no CUDA device (cudaGetDeviceCount: %s, error %d)\n", probe_name,
              status != cudaSuccess ? cudaGetErrorString(status) : "0 devices", static_cast<int>(status));
  std::exit(77);
}

inline void print_device(const char* probe_name) {
  cudaDeviceProp prop{};
  PROBE_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  std::uint32_t cupti = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  cuptiGetVersion(&cupti);
  std::printf("%s: device %s, driver %d, runtime %d, CUPTI API %u (built with %d)\n", probe_name, prop.name,
              driver, runtime, cupti, CUPTI_API_VERSION);
}

inline double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = p * static_cast<double>(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(at);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (at - static_cast<double>(lo));
}

/// Per-operation nanoseconds of one configuration: one sample per timed batch, grouped by round.
struct Samples {
  std::vector<std::vector<double>> rounds;

  void add_round(std::vector<double> batches) { rounds.push_back(std::move(batches)); }
  std::vector<double> all() const {
    std::vector<double> v;
    for (const auto& r : rounds) v.insert(v.end(), r.begin(), r.end());
    return v;
  }
  double median() const { return percentile(all(), 0.5); }
};

/// One line per configuration: `RESULT <key> median_ns=... p10_ns=... p90_ns=... min_ns=...
/// round_medians_ns=a,b,... batches=N ops_per_batch=M | <what it is>`.
inline void print_result(const char* key, const Samples& s, int ops_per_batch, const char* what) {
  const std::vector<double> v = s.all();
  std::printf("RESULT %-22s median_ns=%.1f p10_ns=%.1f p90_ns=%.1f min_ns=%.1f round_medians_ns=", key,
              percentile(v, 0.5), percentile(v, 0.1), percentile(v, 0.9), percentile(v, 0.0));
  for (std::size_t i = 0; i < s.rounds.size(); ++i) {
    std::printf("%s%.1f", i == 0 ? "" : ",", percentile(s.rounds[i], 0.5));
  }
  std::printf(" batches=%zu ops_per_batch=%d | %s\n", v.size(), ops_per_batch, what);
}

inline void print_ratio(const char* key, const Samples& over, const char* base_key, const Samples& base) {
  const double b = base.median();
  std::printf("RATIO %s / %s = %.3f\n", key, base_key, b > 0 ? over.median() / b : 0.0);
}

/// Activity buffers, recycled so that the timed loops rarely allocate; every completed buffer's
/// records go to `parse` (set by the probe) under records_mutex(), then the buffer goes back to the
/// pool (its own lock: a launch asking for a buffer never waits for a parse).
class Buffers {
 public:
  static constexpr std::size_t kBytes = 8u << 20;
  using Parser = void (*)(const CUpti_Activity*);

  static void start(Parser parser) {
    parse_ = parser;
    PROBE_CUPTI(cuptiActivityRegisterCallbacks(&requested, &completed));
  }
  static void flush_forced() { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }
  /// A normal flush (flag 0), as a tracer's collector makes: what CUPTI holds complete, not the
  /// records it may still be filling.
  static void flush() { cuptiActivityFlushAll(0); }
  static std::mutex& records_mutex() { return records_mutex_; }
  /// Buffers CUPTI asked for and has not handed back: those it still holds (filling, or holding
  /// back for a record not yet complete).
  static long held() {
    std::lock_guard lock(pool_mutex_);
    return held_;
  }

 private:
  static void CUPTIAPI requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
    std::lock_guard lock(pool_mutex_);
    if (free_.empty()) {
      *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, kBytes));
    } else {
      *buffer = free_.back();
      free_.pop_back();
    }
    *size = *buffer != nullptr ? kBytes : 0;
    *max_records = 0;
    if (*buffer != nullptr) ++held_;
  }
  static void CUPTIAPI completed(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                                 std::size_t valid) {
    if (buffer == nullptr) return;
    {
      std::lock_guard lock(records_mutex_);
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) parse_(record);
    }
    std::lock_guard lock(pool_mutex_);
    free_.push_back(buffer);
    --held_;
  }

  static inline Parser parse_ = nullptr;
  static inline std::mutex records_mutex_;
  static inline std::mutex pool_mutex_;
  static inline std::vector<std::uint8_t*> free_;
  static inline long held_ = 0;  // guarded by pool_mutex_
};

inline std::string callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* name = nullptr;
  cuptiGetCallbackName(domain, cbid, &name);
  return name != nullptr ? name : "?";
}

/// The API calls cuscope traces (its own list, src/producers/cupti/traced_calls.hpp), so that the
/// probe's "cuscope-like" configurations trace what cuscope does.
inline bool traced_by_cuscope(std::string_view name, CUpti_CallbackDomain domain) {
  return cuscope::detail::traced_call(name, domain == CUPTI_CB_DOMAIN_DRIVER_API);
}

/// As cuscope's trace_calls(): the RUNTIME and DRIVER kinds, then every call cuscope does not trace
/// turned off. Returns how many calls stay on.
inline int enable_calls_as_cuscope() {
  int on = 0;
  const CUpti_CallbackDomain domains[] = {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API};
  for (CUpti_CallbackDomain d : domains) {
    const bool runtime = d == CUPTI_CB_DOMAIN_RUNTIME_API;
    PROBE_CUPTI(cuptiActivityEnable(runtime ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER));
    const CUpti_CallbackId size = runtime ? static_cast<CUpti_CallbackId>(CUPTI_RUNTIME_TRACE_CBID_SIZE)
                                          : static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE);
    for (CUpti_CallbackId cbid = 1; cbid < size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (traced_by_cuscope(name, d)) {
        ++on;
        continue;
      }
      PROBE_CUPTI(runtime ? cuptiActivityEnableRuntimeApi(cbid, 0) : cuptiActivityEnableDriverApi(cbid, 0));
    }
  }
  return on;
}

inline void disable_api_kinds() {
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
}

/// Runs this program again with `args` and returns what it printed: a process that never touches
/// CUPTI, for the cost of CUDA calls with no CUPTI attached at all. The path is resolved here:
/// popen's shell would read /proc/self/exe as itself (on 2026-11-26 the children were dash, which
/// refused the option, and every never-CUPTI row had 0 batches).
inline std::string run_self(const std::string& args) {
  std::string out;
  std::array<char, 4096> self{};
  const ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) {
    std::printf("child '%s' not run: readlink(/proc/self/exe) failed\n", args.c_str());
    return out;
  }
  FILE* pipe = popen(("'" + std::string(self.data(), static_cast<std::size_t>(n)) + "' " + args).c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> chunk{};
  while (std::fgets(chunk.data(), chunk.size(), pipe) != nullptr) out += chunk.data();
  const int status = pclose(pipe);
  if (status != 0) std::printf("child '%s' exited with status %d\n", args.c_str(), status);
  return out;
}

/// Parses the child's `BATCHES <key> v1,v2,...` lines for `key` into one round's samples.
inline std::vector<double> child_batches(const std::string& out, const std::string& key) {
  std::vector<double> v;
  const std::string tag = "BATCHES " + key + " ";
  const std::size_t at = out.find(tag);
  if (at == std::string::npos) return v;
  const char* p = out.c_str() + at + tag.size();
  while (*p != '\0' && *p != '\n') {
    char* end = nullptr;
    v.push_back(std::strtod(p, &end));
    if (end == p) break;
    p = *end == ',' ? end + 1 : end;
  }
  return v;
}

inline void print_batches(const char* key, const std::vector<double>& v) {
  std::printf("BATCHES %s ", key);
  for (std::size_t i = 0; i < v.size(); ++i) std::printf("%s%.2f", i == 0 ? "" : ",", v[i]);
  std::printf("\n");
}

}  // namespace probe

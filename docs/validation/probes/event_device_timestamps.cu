// docs/validation/probes/event_device_timestamps.cu — issue 24: can CUDA events made with
// cudaEventDisableTiming, timed by CUPTI 13.0's CUDA_EVENT records with device timestamps
// (cuptiActivityEnableCudaEventDeviceTimestamps), replace the timing-enabled event pairs a cuscope
// scope records? Raw CUDA and CUPTI, no cuscope; exits 77 without a CUDA device.
//
// Part 1, cost: host ns per cudaEventRecord ("record/...": 1000 records a batch) and per
// record-launch-record ("scope/...") in each configuration below, interleaved round by round (the
// order rotates), one sample per batch; ".nocupti" rows come from a child process that never
// touches CUPTI (in this process CUPTI stays attached once used). COUNTS lines: which CUDA_EVENT and
// API records each configuration delivered. Part 2, correctness: disabled-timing events recorded
// around a 2 ms spin kernel, a 50 µs one and an empty one (a 5 ms kernel queued first, so the host
// never leaves the GPU idle inside a pair), each pair inside a timing-enabled pair, with
// CONCURRENT_KERNEL records and a runtime-API callback (API_ENTER: correlation id, event handle):
// PAIR lines compare the device timestamps' difference with the kernel record's duration and with
// cudaEventElapsedTime; EVENT lines print every CUDA_EVENT record. CUPTI's timestamps are its own
// clock (no timestamp callback registered). Part 3: is an unfinished event's record delivered by a
// normal flush? CONCLUSION lines are computed from the data.
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line. By
// hand, on a GPU machine, from the repository root (one line):
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/event_probe docs/validation/probes/event_device_timestamps.cu -L/usr/local/cuda/lib64 -lcupti && /tmp/event_probe
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "probe_common.hpp"

namespace {

constexpr int kOpsPerBatch = 1000;
constexpr int kBatches = 20;  // timed per round, after one untimed batch
constexpr int kRounds = 7;
constexpr const char* kName = "event_device_timestamps";

__device__ std::uint64_t globaltimer_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void spin_kernel(std::uint64_t ns) {
  const std::uint64_t t0 = globaltimer_ns();
  while (globaltimer_ns() - t0 < ns) {
  }
}

__global__ void empty_kernel() {}

// ---- Records the parser keeps (guarded by probe::Buffers::records_mutex()).

struct EventRecord {
  std::uint32_t correlation, context, stream, event_id, device;
  std::uint64_t device_ns, sync_id;
};
struct KernelRecord {
  std::uint32_t correlation, stream;
  std::uint64_t start_ns, end_ns;
};

struct Tally {
  bool keep = false;  // keep every event and kernel record (parts 2 and 3), not only counts
  std::uint64_t events = 0, events_with_ts = 0, events_correlation_0 = 0, kernels = 0;
  std::uint64_t api_event_record = 0, api_other = 0;
  std::set<std::uint32_t> event_ids;
  std::vector<EventRecord> event_records;
  std::vector<KernelRecord> kernel_records;
};
Tally g_tally;

constexpr CUpti_CallbackId kRuntimeEventRecordCalls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010};
constexpr CUpti_CallbackId kDriverEventRecordCalls[] = {
    CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz};

bool is_event_record_call(CUpti_ActivityKind kind, std::uint32_t cbid) {
  const auto in = [cbid](const auto& calls) {
    return std::find(std::begin(calls), std::end(calls), cbid) != std::end(calls);
  };
  return kind == CUPTI_ACTIVITY_KIND_RUNTIME ? in(kRuntimeEventRecordCalls) : in(kDriverEventRecordCalls);
}

void parse(const CUpti_Activity* r) {
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

Tally take_tally(bool keep_next) {
  std::lock_guard lock(probe::Buffers::records_mutex());
  Tally t = std::move(g_tally);
  g_tally = Tally{};
  g_tally.keep = keep_next;
  return t;
}

// ---- Part 1: cost.

enum class Pattern { record, scope };
enum class Api { none, all_calls, as_cuscope };

struct CostConfig {
  const char* key;
  bool timing;      // events made without cudaEventDisableTiming
  bool event_kind;  // CUDA_EVENT kind with device timestamps
  Api api;          // RUNTIME/DRIVER kinds (with CONCURRENT_KERNEL)
  const char* what;
};

constexpr CostConfig kConfigs[] = {
    {"timing", true, false, Api::none, "timing-enabled events, CUPTI attached and idle"},
    {"notiming", false, false, Api::none, "cudaEventDisableTiming, CUPTI attached and idle"},
    {"notiming+ev", false, true, Api::none,
     "disabled timing + CUDA_EVENT kind with device timestamps, no API records"},
    {"notiming+ev+api", false, true, Api::all_calls,
     "disabled timing + CUDA_EVENT + CONCURRENT_KERNEL + RUNTIME/DRIVER kinds, every call's records on"},
    {"notiming+ev+cuscope", false, true, Api::as_cuscope,
     "disabled timing + CUDA_EVENT + CONCURRENT_KERNEL + RUNTIME/DRIVER as cuscope traces them "
     "(cudaEventRecord's records off)"},
    {"timing+cuscope", true, false, Api::as_cuscope,
     "timing-enabled events + CONCURRENT_KERNEL + RUNTIME/DRIVER as cuscope traces them (today)"},
};
constexpr int kConfigCount = sizeof(kConfigs) / sizeof(kConfigs[0]);
constexpr Pattern kPatterns[] = {Pattern::record, Pattern::scope};
const char* pattern_name(Pattern p) { return p == Pattern::record ? "record" : "scope"; }

struct EventPools {
  std::vector<cudaEvent_t> timing, no_timing;  // 2 per op: a scope's pair

  EventPools() {
    timing.resize(2 * kOpsPerBatch);
    no_timing.resize(2 * kOpsPerBatch);
    for (cudaEvent_t& e : timing) PROBE_CUDA(cudaEventCreate(&e));
    for (cudaEvent_t& e : no_timing) PROBE_CUDA(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  }
  const std::vector<cudaEvent_t>& of(bool with_timing) const { return with_timing ? timing : no_timing; }
};

/// Host ns per op, one sample per timed batch; the stream drains between batches, untimed.
std::vector<double> time_batches(cudaStream_t s, Pattern p, const std::vector<cudaEvent_t>& pool) {
  std::vector<double> out;
  for (int b = -1; b < kBatches; ++b) {
    int failed = 0;
    const std::uint64_t t0 = probe::now_ns();
    if (p == Pattern::record) {
      for (int i = 0; i < kOpsPerBatch; ++i) failed += cudaEventRecord(pool[i], s) != cudaSuccess;
    } else {
      for (int i = 0; i < kOpsPerBatch; ++i) {
        failed += cudaEventRecord(pool[2 * i], s) != cudaSuccess;
        empty_kernel<<<1, 1, 0, s>>>();
        failed += cudaEventRecord(pool[2 * i + 1], s) != cudaSuccess;
      }
    }
    const std::uint64_t t1 = probe::now_ns();
    if (failed != 0) std::printf("FAILED: %d cudaEventRecord calls in a batch\n", failed);
    PROBE_CUDA(cudaGetLastError());
    PROBE_CUDA(cudaStreamSynchronize(s));
    if (b >= 0) out.push_back(static_cast<double>(t1 - t0) / kOpsPerBatch);
  }
  return out;
}

/// CUDA_EVENT records with device timestamps; a refusal is printed, not fatal (its rows then say so).
void enable_event_records() {
  const CUptiResult ts = cuptiActivityEnableCudaEventDeviceTimestamps(1);
  const CUptiResult kind = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  static bool told = false;
  if ((ts == CUPTI_SUCCESS && kind == CUPTI_SUCCESS) || told) return;
  told = true;
  std::printf(
      "NOTE cuptiActivityEnableCudaEventDeviceTimestamps(1): %s; cuptiActivityEnable(CUDA_EVENT): %s\n",
      probe::cupti_text(ts), probe::cupti_text(kind));
}

void cupti_on(const CostConfig& c) {
  if (c.event_kind) enable_event_records();
  if (c.api == Api::none) return;
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  if (c.api == Api::as_cuscope) {
    probe::enable_calls_as_cuscope();
    return;
  }
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
  // The kind is meant to turn every call back on after a configuration turned calls off; the
  // event record calls are turned on by name too, so that this row has their API records for sure.
  for (CUpti_CallbackId cbid : kRuntimeEventRecordCalls) PROBE_CUPTI(cuptiActivityEnableRuntimeApi(cbid, 1));
  for (CUpti_CallbackId cbid : kDriverEventRecordCalls) PROBE_CUPTI(cuptiActivityEnableDriverApi(cbid, 1));
}

void cupti_off() {
  probe::Buffers::flush_forced();
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  probe::disable_api_kinds();
  cuptiActivityEnableCudaEventDeviceTimestamps(0);
  probe::Buffers::flush_forced();
}

std::string row_key(Pattern p, const char* config) { return std::string(pattern_name(p)) + "/" + config; }

/// The child process: the two CUPTI-free configurations, one round, as BATCHES lines.
int child_no_cupti() {
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreate(&s));
  const EventPools pools;
  for (Pattern p : kPatterns) {
    for (bool timing : {true, false}) {
      const std::string key = row_key(p, timing ? "timing.nocupti" : "notiming.nocupti");
      probe::print_batches(key.c_str(), time_batches(s, p, pools.of(timing)));
    }
  }
  return 0;
}

struct CostCounts {
  std::uint64_t ops = 0, events = 0, with_ts = 0, correlation_0 = 0, kernels = 0, api_event_record = 0,
                api_other = 0, distinct_ids_max = 0;
};

struct CostResults {
  std::map<std::string, probe::Samples> samples;
  std::map<std::string, CostCounts> counts;
};

void add_counts(CostCounts& c, const Tally& t, std::uint64_t ops) {
  c.ops += ops;
  c.events += t.events;
  c.with_ts += t.events_with_ts;
  c.correlation_0 += t.events_correlation_0;
  c.kernels += t.kernels;
  c.api_event_record += t.api_event_record;
  c.api_other += t.api_other;
  c.distinct_ids_max = std::max<std::uint64_t>(c.distinct_ids_max, t.event_ids.size());
}

CostResults measure_costs(cudaStream_t s, const EventPools& pools) {
  CostResults res;
  for (int round = 0; round < kRounds; ++round) {
    const std::string child = probe::run_self("--child-no-cupti");
    for (Pattern p : kPatterns) {
      for (const char* c : {"timing.nocupti", "notiming.nocupti"}) {
        const std::string key = row_key(p, c);
        res.samples[key].add_round(probe::child_batches(child, key));
      }
    }
    for (int n = 0; n < kConfigCount; ++n) {
      const CostConfig& c = kConfigs[(n + round) % kConfigCount];
      for (Pattern p : kPatterns) {
        take_tally(false);
        cupti_on(c);
        std::vector<double> batches = time_batches(s, p, pools.of(c.timing));
        cupti_off();
        const std::string key = row_key(p, c.key);
        res.samples[key].add_round(std::move(batches));
        const std::uint64_t events_recorded = (kBatches + 1) * kOpsPerBatch * (p == Pattern::record ? 1 : 2);
        add_counts(res.counts[key], take_tally(false), events_recorded);
      }
    }
    std::fprintf(stderr, "%s: round %d of %d done\n", kName, round + 1, kRounds);
  }
  return res;
}

void print_costs(const CostResults& res) {
  for (Pattern p : kPatterns) {
    const std::string t = row_key(p, "timing.nocupti"), nt = row_key(p, "notiming.nocupti");
    probe::print_result(t.c_str(), res.samples.at(t), kOpsPerBatch,
                        "timing-enabled events, a process without CUPTI");
    probe::print_result(nt.c_str(), res.samples.at(nt), kOpsPerBatch,
                        "cudaEventDisableTiming, a process without CUPTI");
    for (const CostConfig& c : kConfigs) {
      const std::string key = row_key(p, c.key);
      probe::print_result(key.c_str(), res.samples.at(key), kOpsPerBatch, c.what);
    }
  }
  for (Pattern p : kPatterns) {
    const auto ratio = [&](const char* over, const char* base) {
      const std::string o = row_key(p, over), b = row_key(p, base);
      probe::print_ratio(o.c_str(), res.samples.at(o), b.c_str(), res.samples.at(b));
    };
    ratio("notiming.nocupti", "timing.nocupti");
    ratio("notiming", "timing");
    ratio("notiming+ev", "timing");
    ratio("notiming+ev+api", "timing");
    ratio("notiming+ev+cuscope", "timing+cuscope");
    ratio("timing", "timing.nocupti");
  }
  for (const auto& [key, c] : res.counts) {
    std::printf(
        "COUNTS %-26s events_recorded=%llu cuda_event_records=%llu with_device_ts=%llu correlation_0=%llu "
        "distinct_event_ids_per_round_max=%llu kernel_records=%llu api_records_eventrecord=%llu "
        "api_records_other=%llu\n",
        key.c_str(), (unsigned long long)c.ops, (unsigned long long)c.events, (unsigned long long)c.with_ts,
        (unsigned long long)c.correlation_0, (unsigned long long)c.distinct_ids_max,
        (unsigned long long)c.kernels, (unsigned long long)c.api_event_record,
        (unsigned long long)c.api_other);
  }
}

void conclude_costs(const CostResults& res) {
  for (Pattern p : kPatterns) {
    const auto med = [&](const char* c) { return res.samples.at(row_key(p, c)).median(); };
    const double t = med("timing"), nt = med("notiming"), ev = med("notiming+ev"), tc = med("timing+cuscope"),
                 evc = med("notiming+ev+cuscope");
    std::printf(
        "CONCLUSION: %s: timing-enabled %.0f ns, disabled timing %.0f ns (%.2fx), disabled + CUDA_EVENT "
        "device "
        "timestamps %.0f ns (%.2fx); under cuscope-like tracing %.0f ns with timing-enabled events against "
        "%.0f ns with disabled + device timestamps (%.2fx)\n",
        pattern_name(p), t, nt, t > 0 ? nt / t : 0, ev, t > 0 ? ev / t : 0, tc, evc, tc > 0 ? evc / tc : 0);
    std::printf(
        "CONCLUSION: %s: without CUPTI ever attached (child process): timing-enabled %.0f ns, disabled %.0f "
        "ns; "
        "in this process, with CUPTI attached and idle, %.0f and %.0f ns\n",
        pattern_name(p), med("timing.nocupti"), med("notiming.nocupti"), t, nt);
  }
  for (const char* config : {"notiming+ev", "notiming+ev+cuscope", "notiming+ev+api"}) {
    const CostCounts& c = res.counts.at(row_key(Pattern::record, config));
    std::printf(
        "CONCLUSION: %s: %llu CUDA_EVENT records for %llu cudaEventRecord calls (%llu with a device "
        "timestamp, "
        "%llu with correlation id 0) and %llu API records of cudaEventRecord: records %s without API records "
        "of the call; events made before the kind was enabled %s\n",
        config, (unsigned long long)c.events, (unsigned long long)c.ops, (unsigned long long)c.with_ts,
        (unsigned long long)c.correlation_0, (unsigned long long)c.api_event_record,
        c.api_event_record == 0 ? (c.events == c.ops ? "all come" : "do NOT all come")
                                : "(n/a: API records on)",
        c.events > 0 ? "get records" : "get NO records");
  }
  const CostCounts& r = res.counts.at(row_key(Pattern::record, "notiming+ev"));
  std::printf(
      "CONCLUSION: eventId vs the %d handles each round re-records %d times: at most %llu distinct eventIds "
      "a "
      "round (%s)\n",
      kOpsPerBatch, kBatches + 1, (unsigned long long)r.distinct_ids_max,
      r.distinct_ids_max == static_cast<std::uint64_t>(kOpsPerBatch) ? "one id per cudaEvent_t"
      : r.distinct_ids_max == r.ops / kRounds                        ? "one id per record"
                                                                     : "neither: see part 2");
}

// ---- Part 2: correctness. A runtime-API callback gives each call's correlation id at API_ENTER.

struct Call {
  std::uint32_t correlation;
  CUpti_CallbackId cbid;
  cudaEvent_t event;  // cudaEventRecord's event, else null
  cudaStream_t stream;
  int tag;  // the probe's thread-local tag when the call was made
};

std::mutex g_calls_mutex;
std::vector<Call> g_calls;
thread_local int t_tag = -1;

void CUPTIAPI on_runtime_call(void*, CUpti_CallbackDomain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  Call c{cb->correlationId, cbid, nullptr, nullptr, t_tag};
  if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020) {
    const auto* p = static_cast<const cudaEventRecord_v3020_params*>(cb->functionParams);
    c.event = p->event;
    c.stream = p->stream;
  } else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000) {
    const auto* p = static_cast<const cudaEventRecord_ptsz_v7000_params*>(cb->functionParams);
    c.event = p->event;
    c.stream = p->stream;
  } else if (cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010) {
    const auto* p = static_cast<const cudaEventRecordWithFlags_v11010_params*>(cb->functionParams);
    c.event = p->event;
    c.stream = p->stream;
  }
  std::lock_guard lock(g_calls_mutex);
  g_calls.push_back(c);
}

struct Pair {
  std::string name;
  cudaEvent_t timing_start, start, end, timing_end;
  int tag;  // the kernel launch's tag
};

struct Kernel {
  const char* name;
  std::uint64_t ns;  // spin time; 0: the empty kernel
};
constexpr Kernel kKernels[] = {{"spin_2ms", 2000000}, {"spin_50us", 50000}, {"empty", 0}};
constexpr int kRepeats = 5;

cudaEvent_t make_event(bool timing) {
  cudaEvent_t e = nullptr;
  PROBE_CUDA(timing ? cudaEventCreate(&e) : cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  return e;
}

void launch(const Kernel& k, cudaStream_t s) {
  if (k.ns == 0) {
    empty_kernel<<<1, 1, 0, s>>>();
  } else {
    spin_kernel<<<1, 1, 0, s>>>(k.ns);
  }
}

std::vector<Pair> record_pairs(cudaStream_t s) {
  std::vector<Pair> pairs;
  t_tag = 0;
  spin_kernel<<<1, 1, 0, s>>>(5000000);  // the host queues every pair before the GPU reaches them
  for (const Kernel& k : kKernels) {
    for (int r = 0; r < kRepeats; ++r) {
      Pair p{std::string(k.name) + "#" + std::to_string(r),
             make_event(true),
             make_event(false),
             make_event(false),
             make_event(true),
             static_cast<int>(pairs.size()) + 1};
      PROBE_CUDA(cudaEventRecord(p.timing_start, s));
      PROBE_CUDA(cudaEventRecord(p.start, s));
      t_tag = p.tag;
      launch(k, s);
      t_tag = 0;
      PROBE_CUDA(cudaEventRecord(p.end, s));
      PROBE_CUDA(cudaEventRecord(p.timing_end, s));
      pairs.push_back(p);
    }
  }
  return pairs;
}

/// One event re-recorded three times around empty kernels: is its eventId the same each time?
cudaEvent_t record_reused(cudaStream_t s) {
  const cudaEvent_t e = make_event(false);
  for (int i = 0; i < 3; ++i) {
    PROBE_CUDA(cudaEventRecord(e, s));
    empty_kernel<<<1, 1, 0, s>>>();
  }
  PROBE_CUDA(cudaEventRecord(e, s));
  return e;
}

struct Matched {
  std::map<std::uint32_t, const KernelRecord*> kernel_by_correlation;
  std::map<std::uint32_t, const Call*> call_by_correlation;
  std::map<const Call*, const EventRecord*> record_of_call;  // each cudaEventRecord call's record
  const char* how = "none";
  int by_correlation = 0;  // records whose correlation id is their call's
};

/// The stream most kernel records ran on: part 2's stream.
std::uint32_t main_stream_id(const Tally& t) {
  std::map<std::uint32_t, int> n;
  for (const KernelRecord& k : t.kernel_records) ++n[k.stream];
  std::uint32_t id = 0;
  int most = 0;
  for (const auto& [stream, count] : n) {
    if (count > most) std::tie(id, most) = std::tie(stream, count);
  }
  return id;
}

/// Ties each cudaEventRecord call to its CUDA_EVENT record: by correlation id when every call on `s`
/// finds its record that way, else by order (the k-th call on `s`, the k-th record of its stream id).
Matched index(const Tally& t, cudaStream_t s) {
  Matched m;
  std::map<std::uint32_t, const EventRecord*> event_by_correlation;
  for (const EventRecord& e : t.event_records) event_by_correlation[e.correlation] = &e;
  for (const KernelRecord& k : t.kernel_records) m.kernel_by_correlation[k.correlation] = &k;
  std::vector<const Call*> calls_on_s;
  for (const Call& c : g_calls) {
    m.call_by_correlation[c.correlation] = &c;
    if (c.event == nullptr) continue;
    if (c.stream == s) calls_on_s.push_back(&c);
    auto it = event_by_correlation.find(c.correlation);
    if (it == event_by_correlation.end()) continue;
    m.record_of_call[&c] = it->second;
    ++m.by_correlation;
  }
  m.how = "correlation id";
  if (m.by_correlation >= static_cast<int>(calls_on_s.size())) return m;
  const std::uint32_t sid = main_stream_id(t);
  std::vector<const EventRecord*> records_on_s;
  for (const EventRecord& e : t.event_records) {
    if (e.stream == sid) records_on_s.push_back(&e);
  }
  std::printf(
      "MATCH by correlation id: %d of %zu calls on the stream; by order instead: %zu calls, %zu records of "
      "stream id %u\n",
      m.by_correlation, calls_on_s.size(), calls_on_s.size(), records_on_s.size(), sid);
  if (records_on_s.size() != calls_on_s.size()) {
    m.how = "correlation id, partial (order per stream does not line up either)";
    return m;
  }
  m.record_of_call.clear();
  for (std::size_t k = 0; k < calls_on_s.size(); ++k) m.record_of_call[calls_on_s[k]] = records_on_s[k];
  m.how = "order per stream (correlation ids do not match)";
  return m;
}

/// The CUDA_EVENT records of one handle's cudaEventRecord calls, in call order (null: none found).
std::vector<const EventRecord*> records_of(const Matched& m, cudaEvent_t e) {
  std::vector<const EventRecord*> out;
  for (const Call& c : g_calls) {
    if (c.event != e) continue;
    auto it = m.record_of_call.find(&c);
    out.push_back(it != m.record_of_call.end() ? it->second : nullptr);
  }
  return out;
}

const KernelRecord* kernel_of(const Matched& m, int tag) {
  for (const Call& c : g_calls) {
    if (c.tag != tag) continue;
    auto it = m.kernel_by_correlation.find(c.correlation);
    if (it != m.kernel_by_correlation.end()) return it->second;
  }
  return nullptr;
}

void print_event_records(const Tally& t, const Matched& m) {
  for (const EventRecord& e : t.event_records) {
    auto it = m.call_by_correlation.find(e.correlation);
    const Call* c = it != m.call_by_correlation.end() ? it->second : nullptr;
    std::printf(
        "EVENT correlationId=%u eventId=%u streamId=%u contextId=%u deviceId=%u deviceTimestamp=%llu "
        "cudaEventSyncId=%llu call=%s handle=%p\n",
        e.correlation, e.event_id, e.stream, e.context, e.device, (unsigned long long)e.device_ns,
        (unsigned long long)e.sync_id,
        c == nullptr ? "none" : (c->event != nullptr ? "cudaEventRecord" : "other"),
        c != nullptr ? static_cast<void*>(c->event) : nullptr);
  }
}

struct PairStats {
  std::vector<double> vs_kernel_ns, vs_elapsed_ns, start_gap_ns, end_gap_ns;
  std::vector<double> timing_vs_kernel_ns;  // the timing-enabled pair's own CUDA_EVENT timestamps
  int found = 0, ordered = 0, missing = 0;
};

double signed_ns(std::uint64_t a, std::uint64_t b) { return static_cast<double>(a) - static_cast<double>(b); }

void check_pair(const Pair& p, const Matched& m, PairStats& st) {
  const auto first = [&](cudaEvent_t e) {
    auto v = records_of(m, e);
    return v.empty() ? nullptr : v.front();
  };
  const EventRecord *ts = first(p.timing_start), *a = first(p.start), *b = first(p.end),
                    *te = first(p.timing_end);
  const KernelRecord* k = kernel_of(m, p.tag);
  float elapsed_ms = -1;
  const cudaError_t elapsed_status = cudaEventElapsedTime(&elapsed_ms, p.timing_start, p.timing_end);
  if (a == nullptr || b == nullptr || k == nullptr || a->device_ns == 0 || b->device_ns == 0) {
    ++st.missing;
    std::printf(
        "PAIR %-12s MISSING start_record=%s end_record=%s kernel_record=%s start_ts=%llu end_ts=%llu\n",
        p.name.c_str(), a ? "yes" : "no", b ? "yes" : "no", k ? "yes" : "no",
        a ? (unsigned long long)a->device_ns : 0ull, b ? (unsigned long long)b->device_ns : 0ull);
    return;
  }
  ++st.found;
  const double events_ns = signed_ns(b->device_ns, a->device_ns);
  const double kernel_ns = signed_ns(k->end_ns, k->start_ns);
  const double elapsed_ns = elapsed_status == cudaSuccess ? elapsed_ms * 1e6 : -1;
  const double timing_events_ns =
      ts && te && ts->device_ns && te->device_ns ? signed_ns(te->device_ns, ts->device_ns) : -1;
  const double start_gap = signed_ns(k->start_ns, a->device_ns), end_gap = signed_ns(b->device_ns, k->end_ns);
  st.ordered += start_gap >= 0 && end_gap >= 0;
  st.vs_kernel_ns.push_back(events_ns - kernel_ns);
  if (elapsed_ns >= 0) st.vs_elapsed_ns.push_back(events_ns - elapsed_ns);
  if (timing_events_ns >= 0) st.timing_vs_kernel_ns.push_back(timing_events_ns - kernel_ns);
  st.start_gap_ns.push_back(start_gap);
  st.end_gap_ns.push_back(end_gap);
  std::printf(
      "PAIR %-12s device_ts_diff_ns=%.0f kernel_record_ns=%.0f elapsed_time_ns=%.0f "
      "timing_pair_device_ts_diff_ns=%.0f kernel_start_minus_start_ts_ns=%.0f "
      "end_ts_minus_kernel_end_ns=%.0f "
      "eventIds=%u,%u\n",
      p.name.c_str(), events_ns, kernel_ns, elapsed_ns, timing_events_ns, start_gap, end_gap, a->event_id,
      b->event_id);
}

double max_abs(const std::vector<double>& v) {
  double m = 0;
  for (double x : v) m = std::max(m, std::fabs(x));
  return m;
}

void conclude_pairs(const PairStats& st, std::size_t pairs) {
  std::printf(
      "CONCLUSION: %d of %zu disabled-timing pairs have both device timestamps and their kernel record (%d "
      "missing)\n",
      st.found, pairs, st.missing);
  if (st.found == 0) return;
  std::printf(
      "CONCLUSION: device-timestamp difference minus the kernel record's duration: median %.0f ns, max |.| "
      "%.0f ns over %d pairs; minus cudaEventElapsedTime (0.5 us resolution): median %.0f ns, max |.| %.0f "
      "ns\n",
      probe::percentile(st.vs_kernel_ns, 0.5), max_abs(st.vs_kernel_ns), st.found,
      probe::percentile(st.vs_elapsed_ns, 0.5), max_abs(st.vs_elapsed_ns));
  std::printf(
      "CONCLUSION: same clock as kernel records: start_ts <= kernel start and kernel end <= end_ts in %d of "
      "%d "
      "pairs (median gaps %.0f ns before, %.0f ns after; min %.0f and %.0f)\n",
      st.ordered, st.found, probe::percentile(st.start_gap_ns, 0.5), probe::percentile(st.end_gap_ns, 0.5),
      probe::percentile(st.start_gap_ns, 0), probe::percentile(st.end_gap_ns, 0));
  if (!st.timing_vs_kernel_ns.empty()) {
    std::printf(
        "CONCLUSION: the enclosing timing-enabled pairs' own device timestamps minus the kernel: median %.0f "
        "ns (they get CUDA_EVENT records too)\n",
        probe::percentile(st.timing_vs_kernel_ns, 0.5));
  }
}

/// How a CUDA_EVENT record finds the cudaEvent_t that made it.
void conclude_matching(const Tally& t, const Matched& m, cudaEvent_t reused, const std::vector<Pair>& pairs) {
  const int by_correlation = m.by_correlation;
  std::printf(
      "CONCLUSION: %d of %zu CUDA_EVENT records carry the correlation id their cudaEventRecord call had at "
      "API_ENTER (records tied to calls by %s)\n",
      by_correlation, t.event_records.size(), m.how);
  std::set<std::uint32_t> reused_ids;
  int reused_records = 0;
  for (const EventRecord* e : records_of(m, reused)) {
    if (e == nullptr) continue;
    ++reused_records;
    reused_ids.insert(e->event_id);
  }
  std::printf("CONCLUSION: one cudaEvent_t recorded 4 times: %d records, %zu distinct eventIds (%s)\n",
              reused_records, reused_ids.size(),
              reused_records < 2
                  ? "no answer"
                  : (reused_ids.size() == 1 ? "eventId is stable per handle" : "eventId changes per record"));
  std::set<std::uint32_t> pair_ids;
  int pair_records = 0;
  for (const Pair& p : pairs) {
    for (cudaEvent_t e : {p.timing_start, p.start, p.end, p.timing_end}) {
      for (const EventRecord* r : records_of(m, e)) {
        if (r == nullptr) continue;
        ++pair_records;
        pair_ids.insert(r->event_id);
      }
    }
  }
  std::printf("CONCLUSION: %zu distinct handles in the pairs: %d records, %zu distinct eventIds (%s)\n",
              4 * pairs.size(), pair_records, pair_ids.size(),
              pair_ids.size() == static_cast<std::size_t>(pair_records) ? "distinct handles, distinct ids"
                                                                        : "ids repeat across handles");
  // Order per stream: the records of each stream, in buffer order, against the calls in call order.
  if (by_correlation == 0) {
    std::printf(
        "CONCLUSION: record order per stream: no answer (no record carries its call's correlation id)\n");
    return;
  }
  std::map<std::uint32_t, std::vector<std::uint32_t>> record_order;
  for (const EventRecord& e : t.event_records) record_order[e.stream].push_back(e.correlation);
  int in_order = 0, streams = 0;
  for (const auto& [stream, order] : record_order) {
    ++streams;
    in_order += std::is_sorted(order.begin(), order.end());
  }
  std::printf(
      "CONCLUSION: CUDA_EVENT records come in call order (ascending correlation id) on %d of %d streams\n",
      in_order, streams);
}

// ---- Part 3: is an unfinished event's record delivered by a normal flush?

/// The late event's record: by its call's correlation id, else the one record on part 2's stream.
const EventRecord* find_late(const Tally& t, std::uint32_t late_correlation, std::uint32_t stream_id) {
  for (const EventRecord& e : t.event_records) {
    if (e.correlation == late_correlation) return &e;
  }
  for (const EventRecord& e : t.event_records) {
    if (e.stream == stream_id) return &e;
  }
  return nullptr;
}

void check_unfinished_delivery(cudaStream_t s, std::uint32_t stream_id) {
  cudaStream_t other = nullptr;
  PROBE_CUDA(cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking));
  const cudaEvent_t gate = make_event(false), late = make_event(false);
  // Another thread queues the long kernel and the gate: their records go to that thread's CUPTI
  // buffer, so this thread's buffer holds only the late event's record.
  std::thread([&] {
    spin_kernel<<<1, 1, 0, other>>>(200000000);  // 200 ms
    PROBE_CUDA(cudaEventRecord(gate, other));
  }).join();
  PROBE_CUDA(cudaStreamWaitEvent(s, gate, 0));
  take_tally(true);
  {
    std::lock_guard lock(g_calls_mutex);
    g_calls.clear();
  }
  PROBE_CUDA(cudaEventRecord(late, s));
  const cudaError_t before = cudaEventQuery(late);
  cuptiActivityFlushAll(0);
  const Tally early = take_tally(true);
  PROBE_CUDA(cudaStreamSynchronize(s));
  cuptiActivityFlushAll(0);
  const Tally after = take_tally(true);
  probe::Buffers::flush_forced();
  const Tally forced = take_tally(false);
  std::uint32_t late_correlation = 0;
  {
    std::lock_guard lock(g_calls_mutex);
    for (const Call& c : g_calls) {
      if (c.event == late) late_correlation = c.correlation;
    }
  }
  const EventRecord* e0 = find_late(early, late_correlation, stream_id);
  const EventRecord* e1 = find_late(after, late_correlation, stream_id);
  const EventRecord* e2 = find_late(forced, late_correlation, stream_id);
  std::printf(
      "UNFINISHED cudaEventQuery before the flush: %s; normal flush while unfinished: %s (device ts %llu); "
      "normal flush after it finished: %s (device ts %llu); forced flush: %s (device ts %llu)\n",
      cudaGetErrorName(before), e0 ? "delivered" : "held", e0 ? (unsigned long long)e0->device_ns : 0ull,
      e1 ? "delivered" : "not delivered", e1 ? (unsigned long long)e1->device_ns : 0ull,
      e2 ? "delivered" : "not delivered", e2 ? (unsigned long long)e2->device_ns : 0ull);
  const char* verdict = e0 == nullptr ? "held back by a normal flush until its event finished"
                        : e0->device_ns == 0
                            ? "delivered by a normal flush before its event finished, with device "
                              "timestamp 0 (a reader would have to wait for a later one)"
                            : "delivered by a normal flush before its event finished, with a device "
                              "timestamp";
  std::printf("CONCLUSION: an unfinished event's CUDA_EVENT record is %s (query said %s)\n", verdict,
              cudaGetErrorName(before));
  PROBE_CUDA(cudaStreamDestroy(other));
}

void check_correctness(cudaStream_t s) {
  probe::Buffers::flush_forced();
  take_tally(true);
  CUpti_SubscriberHandle sub = nullptr;
  PROBE_CUPTI(cuptiSubscribe(&sub, &on_runtime_call, nullptr));
  PROBE_CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
  enable_event_records();
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  std::uint64_t cupti_now = 0;
  cuptiGetTimestamp(&cupti_now);
  const std::vector<Pair> pairs = record_pairs(s);
  const cudaEvent_t reused = record_reused(s);
  PROBE_CUDA(cudaStreamSynchronize(s));
  probe::Buffers::flush_forced();
  const Tally t = take_tally(false);
  const Matched m = index(t, s);
  std::printf(
      "CLOCK cuptiGetTimestamp before part 2: %llu; first CUDA_EVENT deviceTimestamp minus it: %.0f ns; "
      "first "
      "kernel start minus it: %.0f ns\n",
      (unsigned long long)cupti_now,
      t.event_records.empty() ? 0.0 : signed_ns(t.event_records.front().device_ns, cupti_now),
      t.kernel_records.empty() ? 0.0 : signed_ns(t.kernel_records.front().start_ns, cupti_now));
  print_event_records(t, m);
  PairStats st;
  for (const Pair& p : pairs) check_pair(p, m, st);
  conclude_pairs(st, pairs.size());
  conclude_matching(t, m, reused, pairs);
  check_unfinished_delivery(s, main_stream_id(t));
  cuptiEnableDomain(0, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiUnsubscribe(sub);
  cupti_off();
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  if (argc > 1 && std::strcmp(argv[1], "--child-no-cupti") == 0) return child_no_cupti();
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreate(&s));
  const EventPools pools;
  std::printf("%s: part 1, %d rounds; each configuration %d timed batches of %d ops a round\n", kName,
              kRounds, kBatches, kOpsPerBatch);
  const CostResults costs = measure_costs(s, pools);
  print_costs(costs);
  conclude_costs(costs);
  std::printf("%s: part 2, pairs around known kernels\n", kName);
  check_correctness(s);
  return 0;
}

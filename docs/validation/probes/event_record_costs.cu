// docs/validation/probes/event_record_costs.cu — issue 24, the cost half: the host cost of
// cudaEventRecord with timing-enabled events, with cudaEventDisableTiming, and with disabled timing
// plus CUPTI 13.0's CUDA_EVENT records with device timestamps
// (cuptiActivityEnableCudaEventDeviceTimestamps), alone, beside every API record, and beside the API
// records cuscope keeps (cudaEventRecord's off: do CUDA_EVENT records still come?). Raw CUDA and
// CUPTI, no cuscope; exits 77 without a CUDA device. event_device_timestamps.cu checks what those
// records say.
//
// "record/<config>": host ns per cudaEventRecord, 1000 a batch; "scope/<config>": per
// record-launch-record (a scope's pair around an empty kernel). Configurations are interleaved round
// by round (the order rotates), one sample per batch: RESULT and RATIO lines. ".nocupti" rows come
// from a child process that never touches CUPTI (in this process CUPTI stays attached once used).
// COUNTS lines: which CUDA_EVENT and API records each configuration delivered. CHILD lines: the same
// count in fresh processes set up three ways (the kind on in a live context, on before the context,
// with cuscope's timestamp callback first), for why this process gets no record. CONCLUSION lines
// are computed from the data.
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line. By
// hand, on a GPU machine, from the repository root (one line):
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/event_costs docs/validation/probes/event_record_costs.cu
//   -L/usr/local/cuda/lib64 -lcupti && /tmp/event_costs
#include <map>

#include "event_records.hpp"

namespace {

using namespace event_probe;

constexpr int kOpsPerBatch = 1000;
constexpr int kBatches = 20;  // timed per round, after one untimed batch
constexpr int kRounds = 7;
constexpr const char* kName = "event_record_costs";

__global__ void empty_kernel() {}

enum class Pattern { record, scope };
enum class Api { none, all_calls, as_cuscope };

struct CostConfig {
  const char* key;
  bool timing;      // events made without cudaEventDisableTiming
  bool event_kind;  // CUDA_EVENT kind with device timestamps
  Api api;          // RUNTIME/DRIVER kinds (with CONCURRENT_KERNEL)
  bool fresh;       // events made after CUPTI was turned on, not the pools made before it
  bool callbacks;   // a CUPTI subscriber with callbacks on the event record calls, as cuscope has
  const char* what;
  bool kind_first = false;  // the CUDA_EVENT kind before its device timestamps (cuscope's order)
};

constexpr CostConfig kConfigs[] = {
    {"timing", true, false, Api::none, false, false, "timing-enabled events, CUPTI attached and idle"},
    {"notiming", false, false, Api::none, false, false, "cudaEventDisableTiming, CUPTI attached and idle"},
    {"notiming+ev", false, true, Api::none, false, false,
     "disabled timing + CUDA_EVENT kind with device timestamps, no API records"},
    {"notiming+ev/fresh", false, true, Api::none, true, false,
     "the same with events made after the kind was turned on"},
    // On the H200 (2026-11-26) the rows above got no CUDA_EVENT record at all, while cuscope's mode and
    // event_device_timestamps.cu, both with a subscriber on the event record calls, got every one.
    {"notiming+ev+cb", false, true, Api::none, false, true,
     "the same + a CUPTI subscriber with callbacks on cudaEventRecord*/cuEventRecord* (as cuscope's "
     "CUSCOPE_EVENT_TIMESTAMPS=cupti)"},
    // On the H200 (2026-11-27) that row got none either. cuscope turns the kind on before the
    // timestamps, these rows the timestamps first: the order, alone and with cuscope's callbacks.
    {"notiming+ev/kind-first", false, true, Api::none, false, false,
     "disabled timing + CUDA_EVENT kind, then its device timestamps (cuscope's order)", true},
    {"notiming+ev+cb/kind-first", false, true, Api::none, false, true,
     "the same + cuscope's callbacks on the event record calls", true},
    {"notiming+ev+api", false, true, Api::all_calls, false, false,
     "disabled timing + CUDA_EVENT + CONCURRENT_KERNEL + RUNTIME/DRIVER kinds, every call's records on"},
    {"notiming+ev+cuscope", false, true, Api::as_cuscope, false, true,
     "disabled timing + CUDA_EVENT + CONCURRENT_KERNEL + RUNTIME/DRIVER as cuscope traces them "
     "(cudaEventRecord's records off) and cuscope's callbacks on the event record calls, in cuscope's "
     "order (the kind, then its timestamps; the timestamps first until 2026-11-27)",
     true},
    {"timing+cuscope", true, false, Api::as_cuscope, false, false,
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
  ~EventPools() {
    for (cudaEvent_t e : timing) cudaEventDestroy(e);
    for (cudaEvent_t e : no_timing) cudaEventDestroy(e);
  }
  EventPools(const EventPools&) = delete;
  EventPools& operator=(const EventPools&) = delete;
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

// The subscriber of the configurations with `callbacks` (null otherwise): its callback does nothing.
CUpti_SubscriberHandle g_subscriber = nullptr;

void CUPTIAPI ignore_call(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

void subscribe_event_records() {
  PROBE_CUPTI(cuptiSubscribe(&g_subscriber, &ignore_call, nullptr));
  for (CUpti_CallbackId cbid : kRuntimeEventRecordCalls)
    PROBE_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, cbid));
  for (CUpti_CallbackId cbid : kDriverEventRecordCalls)
    PROBE_CUPTI(cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
}

void unsubscribe_event_records() {
  if (g_subscriber != nullptr) cuptiUnsubscribe(g_subscriber);
  g_subscriber = nullptr;
}

void cupti_on(const CostConfig& c) {
  if (c.callbacks) subscribe_event_records();
  if (c.event_kind) enable_event_records(c.kind_first);
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

// The timestamp callback cuscope registers before any kind (producers/cupti/adapter.cpp): here the
// probe's own clock.
std::uint64_t CUPTIAPI probe_timestamp() { return probe::now_ns(); }

/// A child process for the question the 2026-11-26/27 runs left (no CUDA_EVENT record in this
/// process, where cuscope and event_device_timestamps.cu got them): CUPTI set up as `how` says, then
/// one batch set of the record pattern with disabled-timing events and the CUDA_EVENT kind (in
/// cuscope's order), and one CHILD line of counts. `how`: "kind-before-context" (the kind on before
/// the context is made, as event_device_timestamps.cu does), "timestamp-callback" (as this process,
/// with cuscope's timestamp callback registered first, the kind on in a live context), or "plain"
/// (as this process: the kind on in a live context).
int child_event_records(const std::string& how) {
  const bool before_context = how == "kind-before-context";
  if (how == "timestamp-callback") PROBE_CUPTI(cuptiActivityRegisterTimestampCallback(&probe_timestamp));
  probe::Buffers::start(&parse);
  if (before_context) enable_event_records(true);
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreate(&s));
  const EventPools pools;
  take_tally(false);
  if (!before_context) enable_event_records(true);
  time_batches(s, Pattern::record, pools.of(false));
  cupti_off();
  const Tally t = take_tally(false);
  std::printf("CHILD %s events_recorded=%d cuda_event_records=%llu with_device_ts=%llu\n", how.c_str(),
              (kBatches + 1) * kOpsPerBatch, static_cast<unsigned long long>(t.events),
              static_cast<unsigned long long>(t.events_with_ts));
  return 0;
}

/// Runs child_event_records each way and says, for each, whether every record came.
void conclude_children() {
  for (const char* how : {"plain", "kind-before-context", "timestamp-callback"}) {
    const std::string out = probe::run_self(std::string("--child-event-records ") + how);
    const std::size_t at = out.find("CHILD ");
    if (at == std::string::npos) {
      std::printf("CONCLUSION: child %s printed no counts: %s\n", how, out.c_str());
      continue;
    }
    const std::string line = out.substr(at, out.find('\n', at) - at);
    unsigned long long recorded = 0, records = 0;
    const std::size_t r = line.find("events_recorded="), e = line.find("cuda_event_records=");
    if (r != std::string::npos) recorded = std::strtoull(line.c_str() + r + 16, nullptr, 10);
    if (e != std::string::npos) records = std::strtoull(line.c_str() + e + 19, nullptr, 10);
    std::printf("%s\nCONCLUSION: a fresh process, %s: %llu CUDA_EVENT records for %llu cudaEventRecord calls (%s)\n",
                line.c_str(), how, records, recorded,
                records == recorded ? "all come" : records == 0 ? "none comes" : "some do not come");
  }
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
        std::vector<double> batches;
        if (c.fresh) {
          const EventPools fresh;
          batches = time_batches(s, p, fresh.of(c.timing));
        } else {
          batches = time_batches(s, p, pools.of(c.timing));
        }
        cupti_off();
        unsubscribe_event_records();
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
        "device timestamps %.0f ns (%.2fx); under cuscope-like tracing %.0f ns with timing-enabled events "
        "against %.0f ns with disabled + device timestamps (%.2fx)\n",
        pattern_name(p), t, nt, t > 0 ? nt / t : 0, ev, t > 0 ? ev / t : 0, tc, evc, tc > 0 ? evc / tc : 0);
    std::printf(
        "CONCLUSION: %s: without CUPTI ever attached (child process): timing-enabled %.0f ns, disabled %.0f "
        "ns; in this process, with CUPTI attached and idle, %.0f and %.0f ns\n",
        pattern_name(p), med("timing.nocupti"), med("notiming.nocupti"), t, nt);
  }
  for (const char* config : {"notiming+ev", "notiming+ev/fresh", "notiming+ev+cb", "notiming+ev/kind-first",
                             "notiming+ev+cb/kind-first", "notiming+ev+cuscope", "notiming+ev+api"}) {
    const CostCounts& c = res.counts.at(row_key(Pattern::record, config));
    const bool fresh = std::strcmp(config, "notiming+ev/fresh") == 0;
    std::printf(
        "CONCLUSION: %s: %llu CUDA_EVENT records for %llu cudaEventRecord calls (%llu with a device "
        "timestamp, %llu with correlation id 0) and %llu API records of cudaEventRecord: records %s without "
        "API records of the call (events made %s the kind was turned on, in a context made before it)\n",
        config, (unsigned long long)c.events, (unsigned long long)c.ops, (unsigned long long)c.with_ts,
        (unsigned long long)c.correlation_0, (unsigned long long)c.api_event_record,
        c.api_event_record != 0 ? "(n/a: API records on)"
        : c.events == c.ops     ? "all come"
                                : "do NOT all come",
        fresh ? "after" : "before");
  }
  const CostCounts& r = res.counts.at(row_key(Pattern::record, "notiming+ev"));
  std::printf(
      "CONCLUSION: eventId vs the %d handles each round re-records %d times: at most %llu distinct eventIds "
      "a round (%s)\n",
      kOpsPerBatch, kBatches + 1, (unsigned long long)r.distinct_ids_max,
      r.distinct_ids_max == static_cast<std::uint64_t>(kOpsPerBatch) ? "one id per cudaEvent_t"
      : r.distinct_ids_max == r.ops / kRounds                        ? "one id per record"
                                              : "neither: see event_device_timestamps");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  if (argc > 1 && std::strcmp(argv[1], "--child-no-cupti") == 0) return child_no_cupti();
  if (argc > 2 && std::strcmp(argv[1], "--child-event-records") == 0) return child_event_records(argv[2]);
  probe::print_device(kName);
  probe::Buffers::start(&parse);
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreate(&s));
  const EventPools pools;
  std::printf("%s: %d rounds; each configuration %d timed batches of %d ops a round\n", kName, kRounds,
              kBatches, kOpsPerBatch);
  const CostResults costs = measure_costs(s, pools);
  print_costs(costs);
  conclude_costs(costs);
  conclude_children();
  return 0;
}

// docs/validation/probes/event_device_timestamps.cu — issue 24, the correctness half: can CUDA events
// made with cudaEventDisableTiming, timed by CUPTI 13.0's CUDA_EVENT records with device timestamps
// (cuptiActivityEnableCudaEventDeviceTimestamps), replace the timing-enabled event pairs a cuscope
// scope records? Raw CUDA and CUPTI, no cuscope; exits 77 without a CUDA device. Their host cost:
// event_record_costs.cu.
//
// Disabled-timing events recorded around a 2 ms spin kernel, a 50 µs one and an empty one, 5 each (a
// 5 ms kernel queued first, so the host never leaves the GPU idle inside a pair), each pair inside a
// timing-enabled pair, with CONCURRENT_KERNEL records and a callback on every runtime call and on the
// driver's event record calls (API_ENTER: correlation id, event handle). PAIR lines compare the
// device timestamps' difference with the kernel record's duration and with cudaEventElapsedTime;
// EVENT lines print every CUDA_EVENT record (correlationId, eventId, streamId, deviceTimestamp,
// cudaEventSyncId, and the call whose correlation id it carries); one event recorded four times
// shows whether eventId is per handle or per record. CUPTI's timestamps are its own clock (no
// timestamp callback registered; CLOCK line). UNFINISHED: is an unfinished event's record delivered
// by a normal flush? CONCLUSION lines are computed from the data.
//
// Built and run by tests/gpu-check.sh (--probes, or the full check), which prints its nvcc line. By
// hand, on a GPU machine, from the repository root (one line):
//   nvcc -O2 -std=c++17 -arch=sm_90 -o /tmp/event_probe docs/validation/probes/event_device_timestamps.cu
//   -L/usr/local/cuda/lib64 -lcupti && /tmp/event_probe
#include <cmath>
#include <map>
#include <set>
#include <thread>
#include <tuple>

#include "event_matching.hpp"
#include "event_records.hpp"
#include "probe_kernels.cuh"

namespace {

using namespace event_probe;

constexpr const char* kName = "event_device_timestamps";

using probe::spin_kernel;  // probe_kernels.cuh

__global__ void empty_kernel() {}

// ---- Pairs around known kernels; a runtime-API callback gives each call's correlation id.

std::mutex g_calls_mutex;
std::vector<Call> g_calls;
thread_local int t_tag = -1;

/// The parameters every runtime and driver event record call begins with
/// (cudaEventRecord_v3020_params, cuEventRecordWithFlags_ptsz_params, ...).
struct EventRecordParams {
  cudaEvent_t event;
  cudaStream_t stream;
};

/// Every runtime call, and the driver's event record calls (is it their correlation id a
/// CUDA_EVENT record carries?), at API_ENTER.
void CUPTIAPI on_call(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  Call c{domain, cb->correlationId, cbid, nullptr, nullptr, t_tag};
  const CUpti_ActivityKind kind =
      domain == CUPTI_CB_DOMAIN_RUNTIME_API ? CUPTI_ACTIVITY_KIND_RUNTIME : CUPTI_ACTIVITY_KIND_DRIVER;
  if (is_event_record_call(kind, cbid)) {
    const auto* p = static_cast<const EventRecordParams*>(cb->functionParams);
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

/// The calls recorded so far, copied: analysing them makes CUDA calls, whose callbacks add more.
std::vector<Call> take_calls() {
  std::lock_guard lock(g_calls_mutex);
  return g_calls;
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
      "end_ts_minus_kernel_end_ns=%.0f eventIds=%u,%u\n",
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
      "%d pairs (median gaps %.0f ns before, %.0f ns after; min %.0f and %.0f)\n",
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
  const int by_correlation = m.runtime_correlation + m.driver_correlation;
  std::printf(
      "CONCLUSION: of %zu CUDA_EVENT records, %d carry the correlation id their cudaEventRecord (runtime) "
      "call had at API_ENTER and %d that of a driver cuEventRecord* call (records tied to calls by %s)\n",
      t.event_records.size(), m.runtime_correlation, m.driver_correlation, m.how);
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

// ---- Is an unfinished event's record delivered by a normal flush?

/// The late event's record: by its call's correlation id, else the one record on the pairs' stream.
const EventRecord* find_late(const Tally& t, const std::set<std::uint32_t>& late_correlations,
                             std::uint32_t stream_id) {
  for (const EventRecord& e : t.event_records) {
    if (late_correlations.count(e.correlation) != 0) return &e;
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
  std::set<std::uint32_t> late_correlations;  // its runtime call's and its driver call's
  {
    std::lock_guard lock(g_calls_mutex);
    for (const Call& c : g_calls) {
      if (c.event == late) late_correlations.insert(c.correlation);
    }
  }
  const EventRecord* e0 = find_late(early, late_correlations, stream_id);
  const EventRecord* e1 = find_late(after, late_correlations, stream_id);
  const EventRecord* e2 = find_late(forced, late_correlations, stream_id);
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

/// Callbacks on every runtime call and the driver's event record calls, CUDA_EVENT records with
/// device timestamps and kernel records: all before the program makes its context (main), in case
/// device timestamps need that (event_record_costs.cu turns them on after).
CUpti_SubscriberHandle start_cupti() {
  probe::Buffers::start(&parse);
  take_tally(true);
  CUpti_SubscriberHandle sub = nullptr;
  PROBE_CUPTI(cuptiSubscribe(&sub, &on_call, nullptr));
  PROBE_CUPTI(cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API));
  for (CUpti_CallbackId cbid : kDriverEventRecordCalls) {
    PROBE_CUPTI(cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, cbid));
  }
  enable_event_records();
  PROBE_CUPTI(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL));
  return sub;
}

void check_correctness(cudaStream_t s) {
  std::uint64_t cupti_now = 0;
  cuptiGetTimestamp(&cupti_now);
  const std::vector<Pair> pairs = record_pairs(s);
  const cudaEvent_t reused = record_reused(s);
  PROBE_CUDA(cudaStreamSynchronize(s));
  probe::Buffers::flush_forced();
  const Tally t = take_tally(false);
  const std::vector<Call> calls = take_calls();
  const Matched m = index(t, calls, s);
  std::printf(
      "CLOCK cuptiGetTimestamp before the pairs: %llu; first CUDA_EVENT deviceTimestamp minus it: %.0f ns; "
      "first kernel start minus it: %.0f ns\n",
      (unsigned long long)cupti_now,
      t.event_records.empty() ? 0.0 : signed_ns(t.event_records.front().device_ns, cupti_now),
      t.kernel_records.empty() ? 0.0 : signed_ns(t.kernel_records.front().start_ns, cupti_now));
  print_event_records(t, m);
  PairStats st;
  for (const Pair& p : pairs) check_pair(p, m, st);
  conclude_pairs(st, pairs.size());
  conclude_matching(t, m, reused, pairs);
  check_unfinished_delivery(s, main_stream_id(t));
}

}  // namespace

int main() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a section killed at its timeout keeps what was printed
  probe::exit_77_without_device(kName);
  probe::print_device(kName);
  const CUpti_SubscriberHandle sub = start_cupti();
  cudaStream_t s = nullptr;
  PROBE_CUDA(cudaStreamCreate(&s));  // the context, after CUPTI
  check_correctness(s);
  cuptiUnsubscribe(sub);
  cupti_off();
  return 0;
}

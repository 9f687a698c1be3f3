// docs/validation/probes/event_matching.hpp — event_device_timestamps.cu's matching of CUDA_EVENT
// records to the calls that made them: each call seen by the runtime/driver callback at API_ENTER
// (its correlation id, event and stream), tied to its record by correlation id, or else by order
// per stream; a handle's records, a tagged launch's kernel record, and the EVENT lines.
// Raw CUDA and CUPTI: never include cuscope here.
#pragma once

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "event_records.hpp"

namespace event_probe {

/// A runtime or driver call seen at API_ENTER.
struct Call {
  CUpti_CallbackDomain domain;
  std::uint32_t correlation;
  CUpti_CallbackId cbid;
  cudaEvent_t event;  // an event record call's event, else null
  cudaStream_t stream;
  int tag;  // the probe's thread-local tag when the call was made
};

struct Matched {
  const std::vector<Call>* calls;  // a snapshot that outlives the Matched (take_calls)
  std::map<std::uint32_t, const KernelRecord*> kernel_by_correlation;
  std::map<std::uint32_t, const Call*> call_by_correlation;
  std::map<const Call*, const EventRecord*> record_of_call;  // each event record call's record
  const char* how = "none";
  int runtime_correlation = 0, driver_correlation = 0;  // records carrying that call's correlation id
};

/// The stream most kernel records ran on: the pairs' stream.
inline std::uint32_t main_stream_id(const Tally& t) {
  std::map<std::uint32_t, int> n;
  for (const KernelRecord& k : t.kernel_records) ++n[k.stream];
  std::uint32_t id = 0;
  int most = 0;
  for (const auto& [stream, count] : n) {
    if (count > most) std::tie(id, most) = std::tie(stream, count);
  }
  return id;
}

/// Ties each event record call to its CUDA_EVENT record: by correlation id (the runtime call's or
/// the driver call's) when every runtime call on `s` finds its record that way, else by order (the
/// k-th runtime call on `s`, the k-th record of its stream id).
inline Matched index(const Tally& t, const std::vector<Call>& calls, cudaStream_t s) {
  Matched m;
  m.calls = &calls;
  std::map<std::uint32_t, const EventRecord*> event_by_correlation;
  for (const EventRecord& e : t.event_records) event_by_correlation[e.correlation] = &e;
  for (const KernelRecord& k : t.kernel_records) m.kernel_by_correlation[k.correlation] = &k;
  std::vector<const Call*> runtime_calls_on_s;
  std::set<const EventRecord*> found;
  for (const Call& c : calls) {
    m.call_by_correlation[c.correlation] = &c;
    if (c.event == nullptr) continue;
    const bool runtime = c.domain == CUPTI_CB_DOMAIN_RUNTIME_API;
    if (runtime && c.stream == s) runtime_calls_on_s.push_back(&c);
    auto it = event_by_correlation.find(c.correlation);
    if (it == event_by_correlation.end()) continue;
    m.record_of_call[&c] = it->second;
    found.insert(it->second);
    ++(runtime ? m.runtime_correlation : m.driver_correlation);
  }
  m.how = "correlation id";
  if (found.size() >= runtime_calls_on_s.size()) return m;
  const std::uint32_t sid = main_stream_id(t);
  std::vector<const EventRecord*> records_on_s;
  for (const EventRecord& e : t.event_records) {
    if (e.stream == sid) records_on_s.push_back(&e);
  }
  std::printf(
      "MATCH by correlation id: %zu records of %zu runtime calls on the stream; by order instead: %zu "
      "records of stream id %u\n",
      found.size(), runtime_calls_on_s.size(), records_on_s.size(), sid);
  if (records_on_s.size() != runtime_calls_on_s.size()) {
    m.how = "correlation id, partial (order per stream does not line up either)";
    return m;
  }
  m.record_of_call.clear();
  for (std::size_t k = 0; k < records_on_s.size(); ++k)
    m.record_of_call[runtime_calls_on_s[k]] = records_on_s[k];
  m.how = "order per stream (correlation ids do not match)";
  return m;
}

/// The CUDA_EVENT records of one handle's record calls, in call order, each once.
inline std::vector<const EventRecord*> records_of(const Matched& m, cudaEvent_t e) {
  std::vector<const EventRecord*> out;
  for (const Call& c : *m.calls) {
    if (c.event != e) continue;
    auto it = m.record_of_call.find(&c);
    if (it == m.record_of_call.end()) continue;
    if (std::find(out.begin(), out.end(), it->second) == out.end()) out.push_back(it->second);
  }
  return out;
}

inline const KernelRecord* kernel_of(const Matched& m, int tag) {
  for (const Call& c : *m.calls) {
    if (c.tag != tag) continue;
    auto it = m.kernel_by_correlation.find(c.correlation);
    if (it != m.kernel_by_correlation.end()) return it->second;
  }
  return nullptr;
}

inline void print_event_records(const Tally& t, const Matched& m) {
  for (const EventRecord& e : t.event_records) {
    auto it = m.call_by_correlation.find(e.correlation);
    const Call* c = it != m.call_by_correlation.end() ? it->second : nullptr;
    std::printf(
        "EVENT correlationId=%u eventId=%u streamId=%u contextId=%u deviceId=%u deviceTimestamp=%llu "
        "cudaEventSyncId=%llu call=%s handle=%p\n",
        e.correlation, e.event_id, e.stream, e.context, e.device, (unsigned long long)e.device_ns,
        (unsigned long long)e.sync_id,
        c == nullptr ? "none" : probe::callback_name(c->domain, c->cbid).c_str(),
        c != nullptr ? static_cast<void*>(c->event) : nullptr);
  }
}

}  // namespace event_probe

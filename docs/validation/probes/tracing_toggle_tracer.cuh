// docs/validation/probes/tracing_toggle_tracer.cuh — the CUPTI side of tracing_toggle.cu: the
// records and launch callbacks it counts, and the Tracer that switches CUPTI between its four states
// (on, paused, unsubscribed, finalized), timing each switch, with the ids each re-attach starts from
// (correlation, graph node). The measurement and its lines are tracing_toggle.cu's. Raw CUDA and
// CUPTI: never include cuscope here. Included by tracing_toggle.cu alone.
#pragma once

#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include "probe_common.hpp"

namespace toggle_probe {

__global__ void graph_node_kernel() {}  // the kernel node of new_graph_node_id()'s graphs

inline std::atomic<std::uint64_t> g_kernel_records{0};
inline std::atomic<std::uint64_t> g_memset_records{0};
inline std::atomic<std::uint64_t> g_memcpy_records{0};
inline std::atomic<std::uint64_t> g_zero_timestamps{0};  // kernel, set and copy records with a zero start or end
inline std::atomic<std::uint64_t> g_launch_callbacks{0};
inline std::atomic<std::uint32_t> g_last_correlation{0};   // the last launch callback's correlation id
inline std::atomic<std::uint32_t> g_first_after_attach{0};  // the first one after the last re-attach
inline std::atomic<bool> g_want_first{false};

inline void count(std::atomic<std::uint64_t>& records, std::uint64_t start_ns, std::uint64_t end_ns) {
  records.fetch_add(1, std::memory_order_relaxed);
  if (start_ns == 0 || end_ns == 0) g_zero_timestamps.fetch_add(1, std::memory_order_relaxed);
}

inline void parse(const CUpti_Activity* r) {
  switch (r->kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(r);
      count(g_kernel_records, k->start, k->end);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(r);
      count(g_memset_records, m->start, m->end);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(r);
      count(g_memcpy_records, m->start, m->end);
      return;
    }
    default:
      return;
  }
}

inline void CUPTIAPI on_launch(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void* data) {
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  if (cb->callbackSite != CUPTI_API_ENTER) return;
  g_launch_callbacks.fetch_add(1, std::memory_order_relaxed);
  if (g_want_first.load(std::memory_order_relaxed) && g_want_first.exchange(false))
    g_first_after_attach.store(cb->correlationId, std::memory_order_relaxed);
  g_last_correlation.store(cb->correlationId, std::memory_order_relaxed);
}

inline constexpr CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                         CUPTI_ACTIVITY_KIND_MEMSET};

/// The driver calls whose name holds "Launch" (cuLaunchKernel, cuLaunchKernelEx, cuGraphLaunch and
/// their _ptsz forms, ...): the calls a tracer with launch callbacks watches.
inline std::vector<CUpti_CallbackId> launch_cbids() {
  std::vector<CUpti_CallbackId> ids;
  for (CUpti_CallbackId cbid = 1; cbid < static_cast<CUpti_CallbackId>(CUPTI_DRIVER_TRACE_CBID_SIZE); ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
    if (std::strstr(name, "Launch") != nullptr) ids.push_back(cbid);
  }
  return ids;
}

enum State { kOn, kPaused, kUnsubscribed, kFinalized, kStates };
inline const char* const kStateNames[kStates] = {"on", "paused", "unsubscribed", "finalized"};
inline const char* const kStateWhat[kStates] = {
    "kernel, copy and set records, callbacks on the driver's launch calls",
    "kinds disabled and callbacks disabled, the subscriber kept",
    "kinds disabled, cuptiUnsubscribe",
    "kinds disabled, cuptiUnsubscribe, cuptiFinalize (CUPTI detached)"};

/// A new graph's one kernel node's id as CUPTI gives it (cuptiGetGraphNodeId); 0 where refused. Only
/// while CUPTI is attached: a CUPTI call after the detach would attach it again.
inline std::uint64_t new_graph_node_id() {
  cudaGraph_t graph = nullptr;
  PROBE_CUDA(cudaGraphCreate(&graph, 0));
  cudaKernelNodeParams params{};
  params.func = reinterpret_cast<void*>(&graph_node_kernel);
  params.gridDim = dim3(1);
  params.blockDim = dim3(1);
  cudaGraphNode_t node = nullptr;
  PROBE_CUDA(cudaGraphAddKernelNode(&node, graph, nullptr, 0, &params));
  std::uint64_t id = 0;
  if (cuptiGetGraphNodeId(node, &id) != CUPTI_SUCCESS) id = 0;
  PROBE_CUDA(cudaGraphDestroy(graph));
  return id;
}

/// Where CUPTI is, and the switches between its states; each switch's host time is one sample of
/// the TOGGLE line of its two states.
class Tracer {
 public:
  State state() const { return state_; }

  void go(State to, std::vector<double> (*toggle_ns)[kStates]) {
    settle_reattach();
    const State from = state_;
    if (to == kFinalized && from == kOn) graph_before_detach_ = new_graph_node_id();
    const std::uint64_t start = probe::now_ns();
    if (to == kOn) {
      if (state_ == kFinalized) {
        probe::Buffers::start(&parse);  // buffer callbacks again after a detach
        reattach_.push_back({g_last_correlation.load(), 0});
        g_first_after_attach.store(0);
        g_want_first.store(true);
      }
      if (sub_ == nullptr) PROBE_CUPTI(cuptiSubscribe(&sub_, &on_launch, nullptr));
      for (CUpti_CallbackId id : ids_) PROBE_CUPTI(cuptiEnableCallback(1, sub_, CUPTI_CB_DOMAIN_DRIVER_API, id));
      for (CUpti_ActivityKind k : kKinds) PROBE_CUPTI(cuptiActivityEnable(k));
    } else {
      if (state_ == kOn) {
        disable();
        probe::Buffers::flush_forced();  // the window's records, before they can be lost
      }
      if (to != kPaused && sub_ != nullptr) {
        PROBE_CUPTI(cuptiUnsubscribe(sub_));
        sub_ = nullptr;
      }
      if (to == kFinalized && state_ != kFinalized) {
        const CUptiResult r = cuptiFinalize();
        if (r != CUPTI_SUCCESS) {  // the other states' figures still come
          std::printf("FINALIZE refused: %s; the state `finalized` is left out from here on\n", probe::cupti_text(r));
          finalize_refused_ = true;
          to = kUnsubscribed;
        }
      }
    }
    toggle_ns[state_][to].push_back(static_cast<double>(probe::now_ns() - start));
    state_ = to;
    if (from == kFinalized && to == kOn) graph_ids_.push_back({graph_before_detach_, new_graph_node_id()});
  }
  /// Each re-attach's graph node ids: a new node's just before the detach, and just after.
  const std::vector<std::pair<std::uint64_t, std::uint64_t>>& graph_ids() const { return graph_ids_; }

  void begin() {
    ids_ = launch_cbids();
    probe::Buffers::start(&parse);
    state_ = kUnsubscribed;
  }
  std::size_t callbacks() const { return ids_.size(); }
  /// Each re-attach's last correlation id before its detach and the first after (0: no launch yet).
  const std::vector<std::pair<std::uint32_t, std::uint32_t>>& reattaches() {
    settle_reattach();
    return reattach_;
  }
  bool finalize_refused() const { return finalize_refused_; }

  /// From `on` to `paused` as go() switches, but with no flush: the records of work still running
  /// stay wherever CUPTI keeps them (the in-flight check). Not a TOGGLE sample.
  void pause_unflushed() {
    if (state_ != kOn) return;
    disable();
    state_ = kPaused;
  }

 private:
  void disable() {
    for (CUpti_ActivityKind k : kKinds) PROBE_CUPTI(cuptiActivityDisable(k));
    for (CUpti_CallbackId id : ids_)
      PROBE_CUPTI(cuptiEnableCallback(0, sub_, CUPTI_CB_DOMAIN_DRIVER_API, id));
  }

  // The last re-attach's first correlation id, once its launches ran (at the next switch).
  void settle_reattach() {
    if (!reattach_.empty() && reattach_.back().second == 0) reattach_.back().second = g_first_after_attach.load();
  }

  std::vector<std::pair<std::uint32_t, std::uint32_t>> reattach_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> graph_ids_;
  std::uint64_t graph_before_detach_ = 0;
  State state_ = kUnsubscribed;
  CUpti_SubscriberHandle sub_ = nullptr;
  std::vector<CUpti_CallbackId> ids_;
  bool finalize_refused_ = false;
};

}  // namespace toggle_probe

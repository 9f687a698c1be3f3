// producers/cupti/subscriber.cpp — see subscriber.hpp.
#include "producers/cupti/subscriber.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <mutex>
#include <utility>
#include <vector>

#include "producers/cupti/call_callbacks.hpp"
#include "producers/cupti/detach.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/cupti/traced_calls.hpp"
#include "producers/event_timestamps.hpp"
#include "producers/launch_notes.hpp"
#include "producers/log.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "producers/to_model.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

std::atomic<Sink*> g_target{nullptr};       // the subscribed session's; null: callbacks do nothing
CUpti_SubscriberHandle g_handle = nullptr;  // set and cleared by the session's start and stop
std::atomic<bool> g_launches{false};        // the launch callbacks are on
bool g_subscribe_refused = false;  // the session's cuptiSubscribe was refused (another tool holds it)
// The driver calls whose entry notes a launch (traced_call()), by callback id; written before
// their callbacks are enabled.
std::array<bool, CUPTI_DRIVER_TRACE_CBID_SIZE> g_launch_cbids{};
// The launch callbacks enable_launch_callbacks() turned on: what a pause turns off and on again.
std::vector<Callback> g_launch_callbacks_on;

// The calls that record an event, by both APIs (the runtime's calls the driver's): at their entry
// the callback notes the correlation id of cuscope's own records (event_timestamps.hpp).
constexpr std::array<CUpti_CallbackId, 4> kRuntimeEventRecords = {
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_v11010,
    CUPTI_RUNTIME_TRACE_CBID_cudaEventRecordWithFlags_ptsz_v11010};
constexpr std::array<CUpti_CallbackId, 4> kDriverEventRecords = {
    CUPTI_DRIVER_TRACE_CBID_cuEventRecord, CUPTI_DRIVER_TRACE_CBID_cuEventRecord_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags_ptsz};

bool event_record_call(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const auto& calls = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kRuntimeEventRecords : kDriverEventRecords;
  return std::find(calls.begin(), calls.end(), cbid) != calls.end();
}

// Graph node creation and clones: enough to map a replayed kernel's node id to the scope open
// where its node was made. Not GRAPH_TRACE (it replaces the per-kernel records with one per
// launch). GRAPHEXEC_CREATED names the exec whose clones were just reported (see GraphCalls): its
// nodes, which an exec update (not reported as clones) must find.
constexpr std::array<CUpti_CallbackId, 3> kGraphCallbacks = {CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED,
                                                             CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED,
                                                             CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED};
// The exec updates, by both APIs: the runtime's calls the driver's, which is then left alone.
constexpr std::array<CUpti_CallbackId, 2> kUpdateDriverCallbacks = {
    CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate, CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2};
constexpr CUpti_CallbackId kUpdateRuntimeCallback = CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020;

// The instantiating or updating thread's callbacks in progress. On an H100 (CUDA 13.0, driver
// 580) an instantiation reported, in order: each exec node CREATED and then CLONED with
// CUpti_GraphData::graph holding the exec's handle and graphExec null, then GRAPHEXEC_CREATE_STARTING
// (not subscribed) and GRAPHEXEC_CREATED with graphExec set. So the clones wait here, keyed by that
// handle, until the CREATED of their exec claims them.
struct GraphCalls {
  std::vector<std::pair<const void*, std::uint64_t>> clones;  // (exec handle, node id), unclaimed
  bool runtime_update = false;                                // inside cudaGraphExecUpdate
};
// Unclaimed clones kept at most (clones outside an instantiation: none seen; a bound all the same).
constexpr std::size_t kMaxUnclaimedClones = 1u << 16;
thread_local GraphCalls t_graph_calls;

std::uint32_t exec_id(CUgraphExec exec) {
  std::uint32_t id = 0;
  if (exec == nullptr || cuptiGetGraphExecId(exec, &id) != CUPTI_SUCCESS) return 0;
  return id;
}

// On the thread that creates the node (capturing a stream, or adding nodes by hand), inside the CUDA
// call: two id lookups, the thread's innermost open range (its own tree, no lock) and one insert
// under the node map's own lock. Never the aggregator's lock, which a buffer decode holds long.
void on_graph_resource(Sink& target, CUpti_CallbackId cbid, const CUpti_GraphData& graph) {
  GraphCalls& calls = t_graph_calls;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED) {
    std::vector<std::uint64_t> nodes;
    try {
      const void* exec = graph.graphExec;
      for (const auto& [handle, node] : calls.clones) {
        if (handle == exec) nodes.push_back(node);
      }
      std::erase_if(calls.clones, [exec](const auto& c) { return c.first == exec; });
    } catch (...) {  // out of memory: this exec's nodes stay unknown to an update
      nodes.clear();
    }
    graph_exec_nodes(target, exec_id(graph.graphExec), std::move(nodes));
    return;
  }
  std::uint64_t node = 0;
  if (graph.node == nullptr || cuptiGetGraphNodeId(graph.node, &node) != CUPTI_SUCCESS) return;
  if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) {
    std::uint32_t graph_id = 0;
    if (graph.graph == nullptr || cuptiGetGraphId(graph.graph, &graph_id) != CUPTI_SUCCESS) graph_id = 0;
    graph_node_created(target, node, graph_id);
  } else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
    std::uint64_t original = 0;
    if (graph.originalNode == nullptr || cuptiGetGraphNodeId(graph.originalNode, &original) != CUPTI_SUCCESS)
      return;
    graph_node_cloned(target, node, original, exec_id(graph.graphExec));
    // The exec's handle: graphExec when CUPTI fills it, else (as seen) `graph`.
    const void* exec = graph.graphExec != nullptr ? static_cast<const void*>(graph.graphExec)
                                                  : static_cast<const void*>(graph.graph);
    try {
      if (calls.clones.size() >= kMaxUnclaimedClones) calls.clones.clear();
      calls.clones.emplace_back(exec, node);
    } catch (...) {  // out of memory: this node's exec stays unknown to an update
    }
  }
}

// At the exit of a successful exec update: the exec, the updating graph's top-level nodes, and the
// call's correlation id (launches after it have larger ones).
void on_exec_update(Sink& target, CUgraphExec exec, CUgraph graph, std::uint32_t correlation) {
  std::vector<std::uint64_t> ids;
  try {
    std::size_t n = 0;
    auto* g = reinterpret_cast<cudaGraph_t>(graph);
    if (g != nullptr && cudaGraphGetNodes(g, nullptr, &n) == cudaSuccess && n != 0) {
      std::vector<cudaGraphNode_t> nodes(n);
      if (cudaGraphGetNodes(g, nodes.data(), &n) == cudaSuccess) {
        for (std::size_t i = 0; i < n && i < nodes.size(); ++i) {
          std::uint64_t id = 0;
          if (cuptiGetGraphNodeId(reinterpret_cast<CUgraphNode>(nodes[i]), &id) == CUPTI_SUCCESS)
            ids.push_back(id);
        }
        if (ids.size() != n) ids.clear();  // a node without an id: no re-map
      }
    }
  } catch (...) {  // out of memory: no re-map, the exec's later kernels count as unknown
    ids.clear();
  }
  graph_exec_updated(target, exec_id(exec), correlation, std::move(ids));
}

void on_api(Sink& target, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData& cb) {
  GraphCalls& calls = t_graph_calls;
  const bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid == kUpdateRuntimeCallback;
  if (runtime) {
    calls.runtime_update = cb.callbackSite == CUPTI_API_ENTER;
    if (cb.callbackSite != CUPTI_API_EXIT || cb.functionReturnValue == nullptr ||
        *static_cast<const cudaError_t*>(cb.functionReturnValue) != cudaSuccess)
      return;
    const auto* p = static_cast<const cudaGraphExecUpdate_v10020_params*>(cb.functionParams);
    if (p != nullptr)
      on_exec_update(target, reinterpret_cast<CUgraphExec>(p->hGraphExec),
                     reinterpret_cast<CUgraph>(p->hGraph), cb.correlationId);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API || calls.runtime_update || cb.callbackSite != CUPTI_API_EXIT)
    return;
  if (cb.functionReturnValue == nullptr ||
      *static_cast<const CUresult*>(cb.functionReturnValue) != CUDA_SUCCESS)
    return;
  if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate_v2) {
    if (const auto* p = static_cast<const cuGraphExecUpdate_v2_params*>(cb.functionParams))
      on_exec_update(target, p->hGraphExec, p->hGraph, cb.correlationId);
  } else if (cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphExecUpdate) {
    if (const auto* p = static_cast<const cuGraphExecUpdate_params*>(cb.functionParams))
      on_exec_update(target, p->hGraphExec, p->hGraph, cb.correlationId);
  }
}

// A graph event to the session's model and, in trace mode, to the trace (producers/to_model.hpp). Out
// of memory in the model: the event is lost, and the kernels it concerned count as of an unknown node.
template <class Event>
void graph_event(Sink& sink, const Event& e) noexcept {
  to_model_and_trace(sink, trace::g_writer.load(std::memory_order_acquire), e);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  // A detach armed or made (detach.hpp): at most the one cuptiFinalize, nothing else of cuscope's.
  if (finalize_at_api_exit(domain, data)) return;
  if (data == nullptr) return;
  Sink* target = g_target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < g_launch_cbids.size() && g_launch_cbids[cbid] &&
      g_launches.load(std::memory_order_relaxed)) {
    // The entry: the scope open while the program makes the call (its exit sees the same).
    const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
    if (cb.callbackSite == CUPTI_API_ENTER) note_launch(*target, cb.correlationId);
    return;
  }
  // The synchronizes, allocations and frees noted without their records (call_callbacks.hpp).
  if (domain == CUPTI_CB_DOMAIN_DRIVER_API && g_launches.load(std::memory_order_relaxed) &&
      on_timed_call(*target, cbid, *static_cast<const CUpti_CallbackData*>(data)))
    return;
  // After the launches (the hot callback): no event record call is one of them.
  if ((domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API) &&
      event_record_call(domain, cbid)) {
    const auto& cb = *static_cast<const CUpti_CallbackData*>(data);
    if (cb.callbackSite == CUPTI_API_ENTER)
      note_event_record(domain == CUPTI_CB_DOMAIN_DRIVER_API, cb.correlationId);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* graph =
        static_cast<const CUpti_GraphData*>(static_cast<const CUpti_ResourceData*>(data)->resourceDescriptor);
    if (graph != nullptr) on_graph_resource(*target, cbid, *graph);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
    on_api(*target, domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
}

// Enables `callbacks` on `handle`; "" or why not (`what`: which of them, for the message).
// `on` 0 turns them off again (the launch callbacks' pauses: pause_launch_callbacks()).
std::string enable(CUpti_SubscriberHandle handle, const std::vector<Callback>& callbacks, const char* what,
                   std::uint32_t on = 1) {
  for (auto [domain, cbid] : callbacks) {
    if (CUptiResult r = cuptiEnableCallback(on, handle, domain, cbid); r != CUPTI_SUCCESS)
      return cupti_refusal(fmt::format("cuptiEnableCallback({})", what).c_str(), r);
  }
  return {};
}

// The graph node and exec-update callbacks.
std::vector<Callback> graph_callbacks() {
  std::vector<Callback> out;
  for (CUpti_CallbackId cbid : kGraphCallbacks) out.emplace_back(CUPTI_CB_DOMAIN_RESOURCE, cbid);
  for (CUpti_CallbackId cbid : kUpdateDriverCallbacks) out.emplace_back(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  out.emplace_back(CUPTI_CB_DOMAIN_RUNTIME_API, kUpdateRuntimeCallback);
  return out;
}

// The callbacks of launch notes for `want` (launch_note_callbacks()), as driver callbacks.
std::vector<Callback> launch_callbacks(RecordChoice want) {
  std::vector<Callback> out;
  for (CUpti_CallbackId cbid : launch_note_callbacks(want))
    out.emplace_back(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  return out;
}

// The event record callbacks, by both APIs.
std::vector<Callback> event_record_callbacks() {
  std::vector<Callback> out;
  for (CUpti_CallbackId cbid : kRuntimeEventRecords) out.emplace_back(CUPTI_CB_DOMAIN_RUNTIME_API, cbid);
  for (CUpti_CallbackId cbid : kDriverEventRecords) out.emplace_back(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  return out;
}

// The driver calls traced_call() names for `want`, by callback id, ascending.
std::vector<CUpti_CallbackId> launching_calls(RecordChoice want) {
  std::vector<CUpti_CallbackId> ids;
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS && name != nullptr &&
        traced_call(name, true, want))
      ids.push_back(cbid);
  }
  return ids;
}

// Enables the callbacks of launch notes on `handle` (launch_note_callbacks(want)): every driver call
// that launches, copies or sets, and those that wait, allocate or free as `want` asks, noted at
// their entry (the runtime's calls reach the driver's); and the synchronizes, allocations and frees
// whose records `want` leaves off, noted with their times (call_callbacks.hpp); "" or why not.
std::string enable_launch_callbacks(CUpti_SubscriberHandle handle, RecordChoice want) {
  set_call_callbacks(want);
  const std::vector<Callback> callbacks = launch_callbacks(want);
  // The calls noted at their entry: all but those noted with their times (the two never overlap:
  // a call is timed only where its records, and so its launch note, are off).
  for (const Callback& c : callbacks) {
    if (!timed_call_kind(c.second, want)) g_launch_cbids[c.second] = true;
  }
  std::string why = enable(handle, callbacks, "DRIVER_API, launch notes");
  if (why.empty()) g_launch_callbacks_on = callbacks;
  return why;
}

std::atomic<int> g_fake_subscribe{0};  // tests: what cuptiSubscribe returns (0: call it)

// cuptiSubscribe with cuscope's callback into `handle`, or what a test makes it return.
CUptiResult subscribe_callback(CUpti_SubscriberHandle* handle) {
  const int fake = g_fake_subscribe.load(std::memory_order_relaxed);
  return fake != 0 ? static_cast<CUptiResult>(fake) : cuptiSubscribe(handle, &on_callback, nullptr);
}

}  // namespace

void graph_node_created(Sink& sink, std::uint64_t node_id, std::uint32_t graph_id) noexcept {
  try {
    const ThreadState* ts = current_thread_state();
    const bool own = ts != nullptr && ts->owner == &sink && ts->tree != nullptr;
    const model::Node* range = own ? ts->tree->innermost() : nullptr;
    sink.aggregator.on(model::GraphNodeCreated{node_id, graph_id, range});
    // Trace mode: in the thread's own events, so that the replay finds the same innermost range; a
    // thread with no scope state of this sink has no events: there, slot 0 (no range, as here).
    if (own) {
      trace::record(trace::ScopeKind::GraphNode, ts->tree->slot(), graph_id, 0, node_id);
    } else if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) {
      w->unscoped_graph_node(graph_id, node_id);
    }
  } catch (...) {  // out of memory: the node stays unknown, its kernels counted as such
  }
}

void graph_node_cloned(Sink& sink, std::uint64_t node_id, std::uint64_t original_node_id,
                       std::uint32_t exec_id) noexcept {
  graph_event(sink, model::GraphNodeCloned{node_id, original_node_id, exec_id});
}

void graph_exec_nodes(Sink& sink, std::uint32_t exec_id, std::vector<std::uint64_t> node_ids) noexcept {
  graph_event(sink, model::GraphExecNodes{exec_id, std::move(node_ids)});
}

void graph_exec_updated(Sink& sink, std::uint32_t exec_id, std::uint64_t correlation,
                        std::vector<std::uint64_t> graph_node_ids) noexcept {
  graph_event(sink, model::GraphExecUpdated{exec_id, correlation, std::move(graph_node_ids)});
}

Subscribed subscribe(Sink& sink, bool launches) noexcept {
  Subscribed out;
  const bool graphs = sink.options.graphs;
  const bool event_records = wants_cupti_event_clock(sink.options);
  try {
    if (graphs || launches || event_records) {
      CUpti_SubscriberHandle handle = nullptr;
      const CUptiResult r = subscribe_callback(&handle);
      g_subscribe_refused = r != CUPTI_SUCCESS;
      if (r != CUPTI_SUCCESS) {
        out.why_not = cupti_refusal("cuptiSubscribe", r);
      } else {
        g_target.store(&sink, std::memory_order_release);
        g_handle = handle;
        if (graphs) out.why_not = enable(handle, graph_callbacks(), "graph nodes and exec updates");
        out.graphs = graphs && out.why_not.empty();
        if (launches && out.why_not.empty())
          out.why_not = enable_launch_callbacks(handle, record_choice(sink.options));
        out.launches = launches && out.why_not.empty();
        if (event_records && out.why_not.empty())
          out.why_not = enable(handle, event_record_callbacks(), "event records");
        out.event_records = event_records && out.why_not.empty();
        g_launches.store(out.launches, std::memory_order_release);
        if (!out.why_not.empty()) {
          unsubscribe();
          out.graphs = out.launches = out.event_records = false;
        }
      }
    }
    // Without a subscriber (another tool holds it, or CUSCOPE_GRAPHS=0 leaves it to one) tracing
    // goes on, without the graph breakdown.
    if (graphs && !out.graphs)
      warn_once(
          fmt::format("CUDA graph breakdown off (replayed kernels count in their launching range only): {}",
                      out.why_not));
  } catch (...) {  // out of memory saying why: off all the same
    out.graphs = out.launches = out.event_records = false;
  }
  if (!out.graphs) {
    std::lock_guard lock(sink.aggregator_mutex);
    sink.aggregator.set_graph_breakdown(false);
  }
  return out;
}

std::vector<Callback> session_callbacks(const Options& o, bool launches) {
  std::vector<Callback> out;
  if (o.graphs) out = graph_callbacks();
  if (launches) {
    const std::vector<Callback> notes = launch_callbacks(record_choice(o));
    out.insert(out.end(), notes.begin(), notes.end());
  }
  if (wants_cupti_event_clock(o)) {
    const std::vector<Callback> records = event_record_callbacks();
    out.insert(out.end(), records.begin(), records.end());
  }
  return out;
}

std::vector<CUpti_CallbackId> launch_note_callbacks(RecordChoice want) {
  std::vector<CUpti_CallbackId> ids = launching_calls(want);
  for (CUpti_CallbackId cbid = 1; cbid < CUPTI_DRIVER_TRACE_CBID_SIZE; ++cbid) {
    if (timed_call_kind(cbid, want)) ids.push_back(cbid);
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

std::string pause_launch_callbacks(bool paused) noexcept {
  if (g_handle == nullptr || !g_launches.load(std::memory_order_acquire)) return {};
  try {
    return enable(g_handle, g_launch_callbacks_on, paused ? "0, launch notes" : "1, launch notes",
                  paused ? 0 : 1);
  } catch (...) {  // out of memory saying why
    return "out of memory";
  }
}

void unsubscribe() noexcept {
  g_launches.store(false, std::memory_order_release);
  g_launch_callbacks_on.clear();
  // Not after a detach (armed or made): CUPTI would attach again, or race the finalize. Its
  // subscriber is gone with it.
  if (g_handle != nullptr)
    call_cupti("cuptiUnsubscribe", [] { return cuptiUnsubscribe(g_handle); });  // no cuscope lock held
  g_handle = nullptr;
  g_subscribe_refused = false;
  g_launch_cbids.fill(false);
  clear_call_callbacks();
  g_target.store(nullptr, std::memory_order_release);
}

bool subscriber_refused() noexcept { return g_subscribe_refused; }

namespace {

constexpr std::array<CUpti_CallbackDomain, 2> kApiDomains = {CUPTI_CB_DOMAIN_RUNTIME_API,
                                                             CUPTI_CB_DOMAIN_DRIVER_API};

// Every callback of both API domains on (1) or off (0): the first refusal, or success. Called only
// while cuscope may call CUPTI (before the arming; after a refusal or a give-up).
CUptiResult enable_api_domains(std::uint32_t on) {
  return call_cupti(on != 0 ? "cuptiEnableDomain(1, RUNTIME_API, DRIVER_API)"
                            : "cuptiEnableDomain(0, RUNTIME_API, DRIVER_API)",
                    [on] {
                      for (CUpti_CallbackDomain domain : kApiDomains) {
                        if (CUptiResult r = cuptiEnableDomain(on, g_handle, domain); r != CUPTI_SUCCESS)
                          return r;
                      }
                      return CUPTI_SUCCESS;
                    });
}

}  // namespace

std::string arm_finalize_at_api_exit() noexcept {
  try {
    // Paused already; from here every driver call reaches the callback, and none may note a launch.
    g_launches.store(false, std::memory_order_release);
    if (g_handle == nullptr && cupti_observer() == nullptr) {
      // Nothing asked for a subscriber at the start (CUSCOPE_GRAPHS=0, external correlation): one
      // now, for this callback only. Refused: another tool holds it, and CUPTI is not ours to detach.
      CUpti_SubscriberHandle handle = nullptr;
      const CUptiResult r = subscribe_callback(&handle);
      if (r != CUPTI_SUCCESS) return cupti_refusal("cuptiSubscribe", r);
      g_handle = handle;
    }
    if (CUptiResult r = enable_api_domains(1); r != CUPTI_SUCCESS) {
      enable_api_domains(0);
      return cupti_refusal("cuptiEnableDomain(RUNTIME_API, DRIVER_API)", r);
    }
    // Last: from here a callback may finalize, and cuscope calls CUPTI no more.
    move_detach_stage(DetachStage::detaching, DetachStage::armed);
    return {};
  } catch (...) {  // out of memory saying why
    return "out of memory";
  }
}

void stop_api_callbacks() noexcept {
  if (g_handle != nullptr || cupti_observer() != nullptr) enable_api_domains(0);
}

bool start_graph_breakdown(Sink& sink) noexcept { return subscribe(sink, false).graphs; }

void set_subscribe_result_for_testing(int result) noexcept {
  g_fake_subscribe.store(result, std::memory_order_relaxed);
}

}  // namespace cuscope::inline v0::detail

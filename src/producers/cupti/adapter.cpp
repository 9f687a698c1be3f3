// producers/cupti/adapter.cpp — see adapter.hpp.
#include "producers/cupti/adapter.hpp"

#include <cuda_runtime_api.h>
#include <cupti.h>
#include <fmt/format.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

#include "producers/clock.hpp"
#include "producers/cupti/decode.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/log.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {
namespace {

// CUPTI 13.0 keeps one buffer per thread that calls CUDA, so the number of buffers out grows with
// the program's threads. Memory is bounded in bytes instead: large buffers while few are out,
// small ones past that, none past the budget (CUPTI then drops records and counts them; cuscope
// counts the refusals too).
constexpr std::size_t kLargeBuffer = 4u << 20;
constexpr std::size_t kSmallBuffer = 256u << 10;
constexpr std::size_t kLargeBudget = 128u << 20;  // 32 large buffers
constexpr std::size_t kBudget = 256u << 20;       // then 512 small ones

constexpr std::array kKinds = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,  // not KERNEL, which serializes kernels
    CUPTI_ACTIVITY_KIND_MEMCPY,
    CUPTI_ACTIVITY_KIND_MEMCPY2,  // peer-to-peer copies
    CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_MEMORY2,
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API,  // launches CUDA makes for the program (their API records)
};

// API calls whose records cuscope needs: those that launch, copy, set, allocate, free or wait, and
// every call that produces SYNCHRONIZATION records (stream waits, event and stream queries):
// a record whose API call is not traced could never be tied to a scope.
constexpr std::array<std::string_view, 9> kTracedCalls = {
    "Launch", "Memcpy", "Memset", "Malloc", "Free", "Synchronize", "WaitEvent", "EventQuery", "StreamQuery"};
constexpr std::array<std::string_view, 1> kTracedDriverCalls = {"MemAlloc"};

struct Buffer {
  std::uint8_t* data;
  std::size_t size;
};

struct State {
  std::atomic<Sink*> target{nullptr};
  std::mutex pool_mutex;
  std::vector<Buffer> free_buffers;  // guarded by pool_mutex
  std::size_t bytes_made = 0;        // guarded by pool_mutex: every buffer made, out or free
  std::atomic<std::uint64_t> refused{0};
  std::vector<CUpti_ActivityKind> enabled;      // kinds to disable at stop
  CUpti_SubscriberHandle subscriber = nullptr;  // graph node callbacks; null when not subscribed
};

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

State& state() {
  static State* s = new State();  // leaked: CUPTI may call back until the process ends
  return *s;
}

std::atomic<std::uint32_t> g_fake_version{0};  // tests: a libcupti of another API version
std::atomic<int> g_fake_subscribe{0};          // tests: what cuptiSubscribe returns (0: call it)

std::string refusal(const char* what, CUptiResult r) { return cupti_refusal(what, static_cast<int>(r)); }

std::uint64_t CUPTIAPI timestamp() { return now_ns(); }

void CUPTIAPI buffer_requested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  State& s = state();
  *max_records = 0;
  *buffer = nullptr;
  *size = 0;
  std::lock_guard lock(s.pool_mutex);
  if (!s.free_buffers.empty()) {
    *buffer = s.free_buffers.back().data;
    *size = s.free_buffers.back().size;
    s.free_buffers.pop_back();
    return;
  }
  const std::size_t bytes = s.bytes_made + kLargeBuffer <= kLargeBudget ? kLargeBuffer : kSmallBuffer;
  if (s.bytes_made + bytes <= kBudget) *buffer = static_cast<std::uint8_t*>(std::aligned_alloc(8, bytes));
  if (*buffer == nullptr) {
    // CUPTI drops this queue's records until it gets a buffer, and counts them (dropped records).
    s.refused.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  s.bytes_made += bytes;
  *size = bytes;
}

void CUPTIAPI buffer_completed(CUcontext context, std::uint32_t stream, std::uint8_t* buffer,
                               std::size_t size, std::size_t valid) {
  State& s = state();
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream, &dropped) != CUPTI_SUCCESS)
    dropped = 0;  // no lock held
  if (Sink* target = s.target.load(std::memory_order_acquire)) {
    std::lock_guard lock(target->aggregator_mutex);
    consume_buffer(buffer, valid, dropped, target->aggregator);
    target->aggregator.add_refused_buffers(s.refused.exchange(0, std::memory_order_relaxed));
  }
  if (buffer == nullptr) return;
  std::lock_guard lock(s.pool_mutex);
  s.free_buffers.push_back(Buffer{buffer, size});
}

void push_correlation(std::uint64_t instance) noexcept {
  cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, instance);
}

void pop_correlation() noexcept {
  std::uint64_t last = 0;
  cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

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

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (data == nullptr) return;
  Sink* target = state().target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    const auto* graph =
        static_cast<const CUpti_GraphData*>(static_cast<const CUpti_ResourceData*>(data)->resourceDescriptor);
    if (graph != nullptr) on_graph_resource(*target, cbid, *graph);
    return;
  }
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API || domain == CUPTI_CB_DOMAIN_DRIVER_API)
    on_api(*target, domain, cbid, *static_cast<const CUpti_CallbackData*>(data));
}

// Subscribes for the graph callbacks; "" or why the breakdown is off.
std::string subscribe_graphs(State& s) {
  CUpti_SubscriberHandle handle = nullptr;
  const int fake = g_fake_subscribe.load(std::memory_order_relaxed);
  CUptiResult r = fake != 0 ? static_cast<CUptiResult>(fake) : cuptiSubscribe(&handle, &on_callback, nullptr);
  if (r != CUPTI_SUCCESS) return refusal("cuptiSubscribe", r);
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> wanted;
  for (CUpti_CallbackId cbid : kGraphCallbacks) wanted.emplace_back(CUPTI_CB_DOMAIN_RESOURCE, cbid);
  for (CUpti_CallbackId cbid : kUpdateDriverCallbacks) wanted.emplace_back(CUPTI_CB_DOMAIN_DRIVER_API, cbid);
  wanted.emplace_back(CUPTI_CB_DOMAIN_RUNTIME_API, kUpdateRuntimeCallback);
  for (auto [domain, cbid] : wanted) {
    r = cuptiEnableCallback(1, handle, domain, cbid);
    if (r != CUPTI_SUCCESS) {
      cuptiUnsubscribe(handle);
      return refusal(domain == CUPTI_CB_DOMAIN_RESOURCE ? "cuptiEnableCallback(RESOURCE, GRAPH)"
                                                        : "cuptiEnableCallback(graph exec update)",
                     r);
    }
  }
  s.subscriber = handle;
  return {};
}

bool wanted(std::string_view name, CUpti_CallbackDomain domain) {
  for (std::string_view part : kTracedCalls) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  if (domain != CUPTI_CB_DOMAIN_DRIVER_API) return false;
  for (std::string_view part : kTracedDriverCalls) {
    if (name.find(part) != std::string_view::npos) return true;
  }
  return false;
}

// Enables API records for the calls that launch work, and only those; returns the first refusal.
// The whole kind first, then every other call turned off: on an H100 (CUDA 13.0, driver 580),
// turning single calls on (cuptiActivityEnableRuntimeApi/DriverApi(cbid, 1)) without the kind gave
// no API records at all, nor external correlations, for a context made before CUPTI was first
// used (a program that called CUDA before its first scope): no kernel could be tied to a scope.
// The kind, then calls turned off, gave exactly the wanted records for both (docs/cupti.md).
CUptiResult trace_calls(State& s) {
  struct Domain {
    CUpti_CallbackDomain domain;
    CUpti_CallbackId size;
    CUpti_ActivityKind kind;
  };
  const Domain domains[] = {
      {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_RUNTIME},
      {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, CUPTI_ACTIVITY_KIND_DRIVER}};
  for (const Domain& d : domains) {
    CUptiResult r = cuptiActivityEnable(d.kind);
    if (r != CUPTI_SUCCESS) return r;
    s.enabled.push_back(d.kind);
    for (CUpti_CallbackId cbid = 1; cbid < d.size; ++cbid) {
      const char* name = nullptr;
      if (cuptiGetCallbackName(d.domain, cbid, &name) != CUPTI_SUCCESS || name == nullptr) continue;
      if (wanted(name, d.domain)) continue;
      r = d.domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, 0)
                                                  : cuptiActivityEnableDriverApi(cbid, 0);
      if (r != CUPTI_SUCCESS) return r;
    }
  }
  return CUPTI_SUCCESS;
}

// Disabling a kind ends its calls' records too; the calls turned off stay off until the kind is
// enabled again, which turns every call back on (CUPTI: the kind overrides per-call settings made
// before it).
void disable_all(State& s) {
  for (CUpti_ActivityKind kind : s.enabled) cuptiActivityDisable(kind);
  s.enabled.clear();
}

const char* kind_name(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "cuptiActivityEnable(CONCURRENT_KERNEL)";
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "cuptiActivityEnable(MEMCPY)";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "cuptiActivityEnable(MEMSET)";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "cuptiActivityEnable(MEMORY2)";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "cuptiActivityEnable(SYNCHRONIZATION)";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "cuptiActivityEnable(EXTERNAL_CORRELATION)";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "cuptiActivityEnable(OVERHEAD)";
    default:
      return "cuptiActivityEnable";
  }
}

std::uint32_t loaded_version() {
  if (std::uint32_t fake = g_fake_version.load(std::memory_order_relaxed)) return fake;
  std::uint32_t v = 0;
  return cuptiGetVersion(&v) == CUPTI_SUCCESS ? v : 0;
}

// Delivers buffers CUPTI has completed (`flags` 0), or every buffer, incomplete records included
// (FORCED), then retries and ages the records waiting for their correlation.
void deliver(std::uint32_t flags) {
  cuptiActivityFlushAll(flags);  // no cuscope lock held: CUPTI calls buffer_completed from here
  if (Sink* target = state().target.load(std::memory_order_acquire)) {
    std::lock_guard lock(target->aggregator_mutex);
    target->aggregator.settle();
  }
}

// A graph event to the session's model and, in trace mode, the same event to the trace. Out of memory:
// the event is lost, and the kernels it concerned count as of an unknown node.
template <class Event>
void to_model_and_trace(Sink& sink, Event&& e) noexcept {
  try {
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->on(e);
    sink.aggregator.on(std::forward<Event>(e));
  } catch (...) {
  }
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
  to_model_and_trace(sink, model::GraphNodeCloned{node_id, original_node_id, exec_id});
}

void graph_exec_nodes(Sink& sink, std::uint32_t exec_id, std::vector<std::uint64_t> node_ids) noexcept {
  to_model_and_trace(sink, model::GraphExecNodes{exec_id, std::move(node_ids)});
}

void graph_exec_updated(Sink& sink, std::uint32_t exec_id, std::uint64_t correlation,
                        std::vector<std::uint64_t> graph_node_ids) noexcept {
  to_model_and_trace(sink, model::GraphExecUpdated{exec_id, correlation, std::move(graph_node_ids)});
}

bool start_graph_breakdown(Sink& sink) noexcept {
  // Without a subscriber (another tool holds it, or CUSCOPE_GRAPHS=0 leaves it to one) tracing
  // goes on, without the graph breakdown.
  bool on = false;
  try {
    const std::string why = sink.options.graphs ? subscribe_graphs(state()) : "";
    on = sink.options.graphs && why.empty();
    if (!why.empty())
      warn_once(fmt::format(
          "CUDA graph breakdown off (replayed kernels count in their launching range only): {}", why));
  } catch (...) {  // out of memory saying why: off all the same
  }
  if (!on) {
    std::lock_guard lock(sink.aggregator_mutex);
    sink.aggregator.set_graph_breakdown(false);
  }
  return on;
}

void set_subscribe_result_for_testing(int result) noexcept {
  g_fake_subscribe.store(result, std::memory_order_relaxed);
}

void set_cupti_version_for_testing(std::uint32_t version) noexcept {
  g_fake_version.store(version, std::memory_order_relaxed);
}

std::string start_activity_tracing(Sink& sink) noexcept {
  try {
    State& s = state();
    const std::uint32_t version = loaded_version();
    const LayoutCheck layouts = check_layouts(version, CUPTI_API_VERSION);
    if (!layouts.refusal.empty()) return layouts.refusal;
    if (!layouts.note.empty()) warn_once(layouts.note);
    set_walk(layouts.walk);
    // The timestamp callback must come before any kind is enabled: every record is then on the
    // clock of the host scopes.
    CUptiResult r = cuptiActivityRegisterTimestampCallback(&timestamp);
    if (r != CUPTI_SUCCESS) return refusal("cuptiActivityRegisterTimestampCallback", r);
    r = cuptiActivityRegisterCallbacks(&buffer_requested, &buffer_completed);
    if (r != CUPTI_SUCCESS) return refusal("cuptiActivityRegisterCallbacks", r);
    s.target.store(&sink, std::memory_order_release);
    for (CUpti_ActivityKind kind : kKinds) {
      r = cuptiActivityEnable(kind);
      if (r != CUPTI_SUCCESS) {
        disable_all(s);
        s.target.store(nullptr, std::memory_order_release);
        return refusal(kind_name(kind), r);
      }
      s.enabled.push_back(kind);
    }
    // Queries of events and streams whose work has not finished yet say nothing about waiting;
    // without this every poll of a running event would be a record.
    cuptiActivityEnableAllSyncRecords(0);
    r = trace_calls(s);
    if (r != CUPTI_SUCCESS) {
      disable_all(s);
      s.target.store(nullptr, std::memory_order_release);
      return refusal("cuptiActivityEnable(RUNTIME/DRIVER)", r);
    }
    start_graph_breakdown(sink);
    sink.forest.record_instances.store(true, std::memory_order_relaxed);
    g_pop_correlation.store(&pop_correlation, std::memory_order_release);
    g_push_correlation.store(&push_correlation, std::memory_order_release);
    sink.tracing.store(true, std::memory_order_release);
    return "on";
  } catch (const std::exception& e) {
    return fmt::format("CUPTI tracing could not start: {}", e.what());
  }
}

void flush_activity() noexcept { deliver(0); }

void poll_activity() noexcept { deliver(0); }

void deliver_after_counters() noexcept {
  Sink* target = state().target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // no cuscope lock held
  std::lock_guard lock(target->aggregator_mutex);
  target->aggregator.settle(model::Aggregator::kMaxAge, false);  // retries without aging
}

void stop_activity_tracing() noexcept {
  State& s = state();
  Sink* target = s.target.load(std::memory_order_acquire);
  if (target == nullptr) return;
  target->tracing.store(false, std::memory_order_release);
  g_push_correlation.store(nullptr, std::memory_order_release);
  g_pop_correlation.store(nullptr, std::memory_order_release);
  deliver(0);  // everything that finished, complete
  {
    // What a forced flush hands back with zero timestamps was still running: counted apart.
    std::lock_guard lock(target->aggregator_mutex);
    target->aggregator.set_final_flush(true);
    if (trace::Writer* w = trace::g_writer.load(std::memory_order_acquire)) w->final_flush();
  }
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  disable_all(s);
  deliver(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (s.subscriber != nullptr) {
    cuptiUnsubscribe(s.subscriber);  // no cuscope lock held
    s.subscriber = nullptr;
  }
  s.target.store(nullptr, std::memory_order_release);
  // Not cuptiFinalize: from an exit handler it can race CUDA's own teardown and other tools'
  // CUPTI use. Disabled kinds and a detached target leave CUPTI nothing to call cuscope for.
}

}  // namespace cuscope::inline v0::detail

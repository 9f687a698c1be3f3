// Which records and API calls a session traces (CUSCOPE_SYNC_RECORDS, CUSCOPE_MEMORY_RECORDS): the
// calls traced for API records and launch callbacks, the activity kinds enabled, the activity
// status that says what was left out, and the table's header that shows it.
#include <algorithm>
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "cuscope/cuscope.hpp"
#include "kind_names.hpp"
#include "producers/cupti/activity_kinds.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/subscriber.hpp"
#include "producers/cupti/traced_calls.hpp"

namespace {

using cuscope::detail::RecordChoice;

// CUPTI's callback names for a sample of runtime and driver calls.
const std::vector<std::pair<std::string, bool>> kCalls = {
    {"cudaLaunchKernel_v7000", false},      {"cudaGraphLaunch_v10000", false}, {"cudaMemcpyAsync_v3020", false},
    {"cudaMemsetAsync_v3020", false},       {"cudaStreamSynchronize_v3020", false},
    {"cudaEventQuery_v3020", false},        {"cudaStreamWaitEvent_v3020", false},
    {"cudaStreamQuery_v3020", false},       {"cudaMalloc_v3020", false},       {"cudaFreeAsync_v11020", false},
    {"cudaGetDevice_v3020", false},         {"cudaEventRecord_v3020", false},  {"cuLaunchKernel", true},
    {"cuMemcpyHtoDAsync_v2", true},         {"cuCtxSynchronize", true},        {"cuMemAlloc_v2", true},
    {"cuMemAllocAsync", true},              {"cuMemFree_v2", true},            {"cuEventElapsedTime", true}};

std::set<std::string> traced(RecordChoice want) {
  std::set<std::string> out;
  for (const auto& [name, driver] : kCalls) {
    if (cuscope::detail::traced_call(name, driver, want)) out.insert(name);
  }
  return out;
}

const std::set<std::string> kWork = {"cudaLaunchKernel_v7000", "cudaGraphLaunch_v10000", "cudaMemcpyAsync_v3020",
                                      "cudaMemsetAsync_v3020",  "cuLaunchKernel",         "cuMemcpyHtoDAsync_v2"};
const std::set<std::string> kWaits = {"cudaStreamSynchronize_v3020", "cudaEventQuery_v3020",
                                      "cudaStreamWaitEvent_v3020", "cudaStreamQuery_v3020", "cuCtxSynchronize"};
const std::set<std::string> kMemory = {"cudaMalloc_v3020", "cudaFreeAsync_v11020", "cuMemAlloc_v2", "cuMemAllocAsync",
                                       "cuMemFree_v2"};

std::set<std::string> joined(std::initializer_list<const std::set<std::string>*> parts) {
  std::set<std::string> out;
  for (const auto* p : parts) out.insert(p->begin(), p->end());
  return out;
}

// The driver calls' names of launch_note_callbacks(want) (CUPTI names them without a GPU).
std::set<std::string> noted_call_names(RecordChoice want) {
  std::set<std::string> out;
  for (CUpti_CallbackId cbid : cuscope::detail::launch_note_callbacks(want)) {
    const char* name = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) == CUPTI_SUCCESS && name != nullptr)
      out.insert(name);
  }
  return out;
}

}  // namespace

TEST_CASE("the calls traced: work always, waits and allocations only when their records are on", "[cupti]") {
  CHECK(traced({true, true}) == joined({&kWork, &kWaits, &kMemory}));
  CHECK(traced({false, true}) == joined({&kWork, &kMemory}));
  CHECK(traced({true, false}) == joined({&kWork, &kWaits}));
  CHECK(traced({false, false}) == kWork);
  // Never the calls that do none of these (cuscope's own event records among them).
  for (const RecordChoice want : {RecordChoice{true, true}, RecordChoice{false, false}}) {
    CHECK_FALSE(cuscope::detail::traced_call("cudaGetDevice_v3020", false, want));
    CHECK_FALSE(cuscope::detail::traced_call("cudaEventRecord_v3020", false, want));
  }
  // An allocation is named cuMemAlloc* only in the driver API.
  CHECK_FALSE(cuscope::detail::traced_call("cudaMemAllocSomething", false, {true, true}));
}

TEST_CASE("the activity kinds: synchronization and memory records as asked, correlation as attribution needs",
          "[cupti]") {
  using K = std::vector<CUpti_ActivityKind>;
  CHECK(cuscope::detail::activity_kinds({true, true}, false) ==
        K{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
          CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
          CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
          CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API});
  CHECK(cuscope::detail::activity_kinds({false, false}, false) ==
        K{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
          CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_OVERHEAD,
          CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API});
  CHECK(cuscope::detail::activity_kinds({true, false}, true) ==
        K{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
          CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_OVERHEAD});
  CHECK(cuscope::detail::activity_kinds({false, true}, true) ==
        K{CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2,
          CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_OVERHEAD});
}

namespace {

std::vector<std::string>* g_switched = nullptr;

CUptiResult log_switch(CUpti_ActivityKind kind, bool on) {
  g_switched->push_back(std::string(cuscope_test::kind_name(kind)) + (on ? " on" : " off"));
  return CUPTI_SUCCESS;
}

}  // namespace

// An attach between step windows runs while other threads launch: every kernel record that a
// launch gets must have the API record and external correlation that tie it to its scope, so the
// start switches those on first and the kernels last, as a resume does (before, the kernels went on
// first: a launch in between had a kernel record whose call never came, counted as unresolved).
TEST_CASE(
    "a start switches the calls' records on first and the kernels' last, and a pause the kernels off first",
    "[cupti][tracing]") {
  std::vector<std::string> switched;
  g_switched = &switched;
  {
    cuscope::detail::ActivityKinds kinds;
    kinds.fake_for_testing({}, &log_switch);
    CHECK(kinds.start({false, false}, false).empty());
    CHECK(switched == std::vector<std::string>{"RUNTIME on", "DRIVER on", "INTERNAL_LAUNCH_API on",
                                               "OVERHEAD on", "EXTERNAL on", "MEMSET on", "MEMCPY2 on",
                                               "MEMCPY on", "KERNEL on"});
    switched.clear();
    CHECK(kinds.pause().empty());  // no launch callbacks: the kinds alone, in their first order
    CHECK(switched == std::vector<std::string>{"KERNEL off", "MEMCPY off", "MEMCPY2 off", "MEMSET off",
                                               "EXTERNAL off", "OVERHEAD off", "INTERNAL_LAUNCH_API off",
                                               "RUNTIME off", "DRIVER off"});
    switched.clear();
    CHECK(kinds.resume().empty());
    CHECK(switched == std::vector<std::string>{"RUNTIME on", "DRIVER on", "INTERNAL_LAUNCH_API on",
                                               "OVERHEAD on", "EXTERNAL on", "MEMSET on", "MEMCPY2 on",
                                               "MEMCPY on", "KERNEL on"});
    kinds.off();
  }
  switched.clear();
  {
    // With launch notes (the callbacks on before any kind, subscribe()): no API kinds, kernels last.
    cuscope::detail::ActivityKinds kinds;
    kinds.fake_for_testing({}, &log_switch);
    CHECK(kinds.start({true, true}, true).empty());
    CHECK(switched == std::vector<std::string>{"OVERHEAD on", "SYNCHRONIZATION on", "MEMORY2 on", "MEMSET on",
                                               "MEMCPY2 on", "MEMCPY on", "KERNEL on"});
    kinds.off();
  }
  g_switched = nullptr;
}

TEST_CASE(
    "the launch callbacks: work always, waits and allocations noted by callbacks or tied by their records",
    "[cupti][launch]") {
  for (const RecordChoice want : {RecordChoice{false, false}, RecordChoice{true, true},
                                  RecordChoice{true, false}, RecordChoice{false, true}}) {
    const std::vector<CUpti_CallbackId> ids = cuscope::detail::launch_note_callbacks(want);
    CHECK(std::is_sorted(ids.begin(), ids.end()));
    CHECK(std::adjacent_find(ids.begin(), ids.end()) == ids.end());
    const std::set<std::string> names = noted_call_names(want);
    CHECK(names.size() == ids.size());
    for (const char* work : {"cuLaunchKernel", "cuLaunchKernelEx", "cuGraphLaunch", "cuMemcpyHtoD_v2",
                             "cuMemcpyAsync", "cuMemsetD8_v2", "cuMemsetD32Async"})
      CHECK(names.count(work) == 1);
    // A synchronize or an allocation has its callback either way: tied to a scope for its record,
    // or noted in place of the record left off.
    for (const char* call : {"cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemAlloc_v2",
                             "cuMemFree_v2", "cuMemAllocAsync", "cuMemFreeAsync"})
      CHECK(names.count(call) == 1);
    // Never the calls that do none of these.
    for (const char* other :
         {"cuEventRecord", "cuCtxGetCurrent", "cuEventElapsedTime", "cuModuleGetFunction"})
      CHECK(names.count(other) == 0);
  }
  // The waits that do not block (queries, stream waits) only for their records.
  for (const char* wait : {"cuEventQuery", "cuStreamQuery", "cuStreamWaitEvent"}) {
    CHECK(noted_call_names({false, false}).count(wait) == 0);
    CHECK(noted_call_names({true, false}).count(wait) == 1);
  }
  // The defaults' set, the one the GPU bench's callback floor turns on.
  const cuscope::Options defaults;
  CHECK(cuscope::detail::launch_note_callbacks(cuscope::detail::record_choice(defaults)) ==
        cuscope::detail::launch_note_callbacks({false, false}));
}

TEST_CASE("the callbacks a session subscribes to: the graph breakdown's, launch notes', event records' as asked",
          "[cupti][launch]") {
  using cuscope::detail::Callback;
  using cuscope::detail::session_callbacks;
  const auto has = [](const std::vector<Callback>& v, CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
    return std::count(v.begin(), v.end(), Callback{domain, cbid});
  };
  const std::size_t notes = cuscope::detail::launch_note_callbacks({false, false}).size();
  cuscope::Options o;  // the defaults: graph breakdown, launch notes, no events while CUPTI traces
  const std::vector<Callback> defaults = session_callbacks(o, true);
  CHECK(defaults.size() == 6 + notes);  // 3 graph resource callbacks and 3 exec updates, then the notes
  CHECK(has(defaults, CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED) == 1);
  CHECK(has(defaults, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaGraphExecUpdate_v10020) == 1);
  CHECK(has(defaults, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) == 1);
  CHECK(has(defaults, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize) == 1);
  CHECK(has(defaults, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020) == 0);
  // External correlation: no launch notes.
  CHECK(session_callbacks(o, false).size() == 6);
  o.graphs = false;
  CHECK(session_callbacks(o, true).size() == notes);
  CHECK(session_callbacks(o, false).empty());
  // Events timed by CUPTI: the event record calls of both APIs, at their entry.
  o.events = cuscope::EventTiming::always;
  o.event_timestamps = cuscope::EventTimestamps::cupti;
  const std::vector<Callback> timed = session_callbacks(o, false);
  CHECK(timed.size() == 8);
  CHECK(has(timed, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020) == 1);
  CHECK(has(timed, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuEventRecordWithFlags) == 1);
}

TEST_CASE("the activity status names the records left out, the variables that did it, and what still sees those calls", "[cupti]") {
  CHECK(cuscope::detail::tracing_status({true, true}) == "on");
  CHECK(cuscope::detail::tracing_status({false, true}) ==
        "on, without synchronization records (CUSCOPE_SYNC_RECORDS=0)");
  CHECK(cuscope::detail::tracing_status({true, false}) == "on, without memory records (CUSCOPE_MEMORY_RECORDS=0)");
  CHECK(cuscope::detail::tracing_status({false, false}) ==
        "on, without synchronization or memory records (CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)");
  // With the launch callbacks on, the synchronizes and allocations whose records are off are still
  // seen (producers/cupti/call_callbacks.hpp): the status says by what.
  CHECK(cuscope::detail::tracing_status({true, true}, true) == "on");
  CHECK(cuscope::detail::tracing_status({false, false}, true) ==
        "on, synchronizes and allocations seen by callbacks, without their records (CUSCOPE_SYNC_RECORDS=0, "
        "CUSCOPE_MEMORY_RECORDS=0)");
  CHECK(cuscope::detail::tracing_status({false, true}, true) ==
        "on, synchronizes seen by callbacks, without synchronization records (CUSCOPE_SYNC_RECORDS=0)");
  CHECK(cuscope::detail::tracing_status({true, false}, true) ==
        "on, allocations seen by callbacks, without memory records (CUSCOPE_MEMORY_RECORDS=0)");
  cuscope::Options o;  // both off by default
  CHECK_FALSE(cuscope::detail::record_choice(o).syncs);
  CHECK_FALSE(cuscope::detail::record_choice(o).memory);
  o.memory_records = true;
  CHECK_FALSE(cuscope::detail::record_choice(o).syncs);
  CHECK(cuscope::detail::record_choice(o).memory);
  o.sync_records = true;
  CHECK(cuscope::detail::record_choice(o).syncs);
}

TEST_CASE("the table says what tracing left out, and still shows kernel columns and totals", "[table]") {
  cuscope::Report r;
  r.device = "test";
  r.gpu_timing = "projected: CUPTI traces each call's work";
  r.activity_status = cuscope::detail::tracing_status({false, true});
  cuscope::RangeStats root;
  root.name = "";
  root.children = {1};
  cuscope::RangeStats step;
  step.name = "step";
  step.path = "step";
  step.parent = 0;
  step.calls = 1;
  step.host.count = 1;
  step.host.total_ns = 2'000;
  step.total.kernel_calls = 3;
  step.total.kernel_ns = 1'500;
  step.total.gpu_busy_ns = 1'500;
  // A range that launched nothing: "0" kernels where CUPTI traced, "-" where it did not.
  cuscope::RangeStats idle;
  idle.name = "idle";
  idle.path = "idle";
  idle.calls = 1;
  idle.host.count = 1;
  idle.host.total_ns = 1'000;
  root.children = {1, 2};
  root.total = step.total;
  r.ranges = {root, step, idle};
  const std::string table = cuscope::format_table(r);
  CHECK(table.find("GPU activity: on, without synchronization records (CUSCOPE_SYNC_RECORDS=0)\n") !=
        std::string::npos);
  CHECK(table.find("— kernel time 1.50 µs — GPU busy 1.50 µs") != std::string::npos);
  // The rows are those of a session with every record on; not those of one that did not trace.
  const auto rows = [](const std::string& t) { return t.substr(t.find("\nrange")); };
  r.activity_status = "on";
  const std::string all_on = cuscope::format_table(r);
  CHECK(all_on.find("GPU activity") == std::string::npos);
  CHECK(rows(table) == rows(all_on));
  CHECK(rows(table).find("\nidle ") != std::string::npos);
  r.activity_status = "CUPTI could not start";
  CHECK(rows(table) != rows(cuscope::format_table(r)));
}

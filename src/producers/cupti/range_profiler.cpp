// producers/cupti/range_profiler.cpp — see range_profiler.hpp. Every call here runs on a scope's
// thread inside a chosen range, or at session start and end; never on the common hot path.
#include "producers/cupti/range_profiler.hpp"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>
#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "producers/cupti/adapter.hpp"
#include "producers/cupti/errors.hpp"
#include "producers/sink.hpp"

namespace cuscope::inline v0::detail {
namespace {

constexpr std::size_t kMaxRanges = 512;

// A CUPTI parameter struct, zeroed, with its size set (CUPTI checks it for compatibility).
template <class P>
P params(std::size_t size) {
  P p{};
  p.structSize = size;
  return p;
}  // kernels between two scope boundaries; more are dropped, counted

struct State {
  std::mutex mutex;  // guards everything below
  Sink* sink = nullptr;
  CounterPlan plan;
  std::vector<const char*> metric_names;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  CUpti_Profiler_Host_Object* host = nullptr;
  std::vector<std::uint8_t> counter_data;
  bool window_open = false;
  std::thread::id owner;
  const model::Node* window_root = nullptr;
  const model::Node* target = nullptr;
  std::vector<std::vector<std::uint32_t>> chosen;  // name-id paths; empty = every range
  int device = -1;                                 // the profiled context's device and id
  unsigned long long context_id = 0;
  std::string failure;  // why counters turned off after they started ("" while they work)
};

State& state() {
  static State* s = new State();  // leaked with the session
  return *s;
}

std::atomic<bool> g_enabled{false};
std::atomic<bool> g_window_open{false};  // mirrors State::window_open, read without the lock
std::atomic<bool> g_initialized{false};  // cuptiProfilerInitialize succeeded, not deinitialized yet
std::atomic<int> g_fake_initialize{0};   // tests: what cuptiProfilerInitialize returns (0: call it)

// Whether `node`'s path is `path`; the "(counted steps)" frame that counted steps run under is
// not part of the path the user named.
bool path_matches(const model::Node* node, const std::vector<std::uint32_t>& path) {
  auto top = [](const model::Node* n) {
    return n == nullptr || n->id == 0 ||
           (n->name_id == model::NameTable::kCountedStepsId && (n->parent == nullptr || n->parent->id == 0));
  };
  std::size_t i = path.size();
  for (; !top(node) && i > 0; node = node->parent) {
    if (node->name_id != path[--i]) return false;
  }
  return i == 0 && top(node);
}

bool chosen(const State& s, const model::Node* node) {
  const std::uint8_t cached = node->counters_choice.load(std::memory_order_relaxed);
  if (cached != 0) return cached == 1;
  bool yes = s.chosen.empty();
  for (const auto& path : s.chosen) yes = yes || path_matches(node, path);
  node->counters_choice.store(yes ? 1 : 2, std::memory_order_relaxed);
  return yes;
}

CUptiResult start_profiler(State& s) {
  auto p = params<CUpti_RangeProfiler_Start_Params>(CUpti_RangeProfiler_Start_Params_STRUCT_SIZE);
  p.pRangeProfilerObject = s.profiler;
  return cuptiRangeProfilerStart(&p);
}

// Stops the profiler, evaluates every kernel profiled since the last start, adds them to `into`,
// and resets the counter data for the next collection.
void collect(State& s, const model::Node* into) {
  auto stop = params<CUpti_RangeProfiler_Stop_Params>(CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE);
  stop.pRangeProfilerObject = s.profiler;
  if (cuptiRangeProfilerStop(&stop) != CUPTI_SUCCESS) return;
  auto decode =
      params<CUpti_RangeProfiler_DecodeData_Params>(CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE);
  decode.pRangeProfilerObject = s.profiler;
  if (cuptiRangeProfilerDecodeData(&decode) != CUPTI_SUCCESS) return;
  auto info = params<CUpti_RangeProfiler_GetCounterDataInfo_Params>(
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE);
  info.pCounterDataImage = s.counter_data.data();
  info.counterDataImageSize = s.counter_data.size();
  if (cuptiRangeProfilerGetCounterDataInfo(&info) != CUPTI_SUCCESS) info.numTotalRanges = 0;

  std::vector<double> values(s.metric_names.size());
  std::vector<std::vector<double>> kernels;
  for (std::size_t range = 0; range < info.numTotalRanges; ++range) {
    auto eval = params<CUpti_Profiler_Host_EvaluateToGpuValues_Params>(
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE);
    eval.pHostObject = s.host;
    eval.pCounterDataImage = s.counter_data.data();
    eval.counterDataImageSize = s.counter_data.size();
    eval.rangeIndex = range;
    eval.ppMetricNames = s.metric_names.data();
    eval.numMetrics = s.metric_names.size();
    eval.pMetricValues = values.data();
    if (cuptiProfilerHostEvaluateToGpuValues(&eval) == CUPTI_SUCCESS) kernels.push_back(values);
  }
  {
    std::lock_guard agg(s.sink->aggregator_mutex);
    for (const auto& k : kernels) s.sink->aggregator.add_counters(into, k);
    s.sink->aggregator.add_dropped_counter_ranges(decode.numOfRangeDropped +
                                                  (info.numTotalRanges - kernels.size()));
  }
  auto reset = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
  reset.pRangeProfilerObject = s.profiler;
  reset.counterDataSize = s.counter_data.size();
  reset.pCounterData = s.counter_data.data();
  cuptiRangeProfilerCounterDataImageInitialize(&reset);
}

void release(State& s) {
  if (s.profiler != nullptr) {
    auto d = params<CUpti_RangeProfiler_Disable_Params>(CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE);
    d.pRangeProfilerObject = s.profiler;
    cuptiRangeProfilerDisable(&d);
    s.profiler = nullptr;
  }
  if (s.host != nullptr) {
    auto d =
        params<CUpti_Profiler_Host_Deinitialize_Params>(CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE);
    d.pHostObject = s.host;
    cuptiProfilerHostDeinitialize(&d);
    s.host = nullptr;
  }
}

std::string fail(State& s, const char* call, CUptiResult r) {
  release(s);
  return cupti_refusal(call, static_cast<int>(r));
}

template <class Fn>
Fn driver_fn(const char* name, int version) {
  void* entry = nullptr;
  cudaDriverEntryPointQueryResult found{};
  if (cudaGetDriverEntryPointByVersion(name, &entry, version, cudaEnableDefault, &found) != cudaSuccess ||
      found != cudaDriverEntryPointSuccess) {
    cudaGetLastError();
    return nullptr;
  }
  return reinterpret_cast<Fn>(entry);
}

CUcontext current_context() {
  cudaFree(nullptr);  // makes the primary context current, allocating nothing
  auto get = driver_fn<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
  CUcontext ctx = nullptr;
  if (get == nullptr || get(&ctx) != CUDA_SUCCESS) return nullptr;
  return ctx;
}

// The calling thread's current context, as (device, unique id); false when it has none.
bool current_context_id(int* device, unsigned long long* id) {
  static auto get = driver_fn<PFN_cuCtxGetCurrent_v4000>("cuCtxGetCurrent", 4000);
  static auto get_device = driver_fn<PFN_cuCtxGetDevice_v2000>("cuCtxGetDevice", 2000);
  static auto get_id = driver_fn<PFN_cuCtxGetId_v12000>("cuCtxGetId", 12000);
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  if (get == nullptr || get_device == nullptr || get_id == nullptr) return false;
  if (get(&ctx) != CUDA_SUCCESS || ctx == nullptr || get_device(&dev) != CUDA_SUCCESS) return false;
  if (get_id(ctx, id) != CUDA_SUCCESS) return false;
  *device = static_cast<int>(dev);
  return true;
}

// Whether the profiled context still exists: its device's primary context is active, and when the
// calling thread's context is on that device, it is the same one (cudaDeviceReset makes a new one).
bool context_alive(const State& s) {
  static auto state_of = driver_fn<PFN_cuDevicePrimaryCtxGetState_v7000>("cuDevicePrimaryCtxGetState", 7000);
  unsigned flags = 0;
  int active = 0;
  if (state_of == nullptr || state_of(static_cast<CUdevice>(s.device), &flags, &active) != CUDA_SUCCESS ||
      active == 0) {
    return false;
  }
  int device = -1;
  unsigned long long id = 0;
  return !current_context_id(&device, &id) || device != s.device || id == s.context_id;
}

// Counters stop for good: the profiler objects are released (unless their context is gone, when
// CUPTI must not be called on them) and the report says why.
void turn_off(State& s, std::string why, bool context_gone) {
  if (context_gone) {
    s.profiler = nullptr;
    s.host = nullptr;
  } else {
    release(s);
  }
  s.window_open = false;
  g_window_open.store(false, std::memory_order_release);
  g_enabled.store(false, std::memory_order_release);
  s.failure = std::move(why);
}

}  // namespace

std::string initialize_profiler() noexcept {
  try {
    const int fake = g_fake_initialize.load(std::memory_order_relaxed);
    CUptiResult r = static_cast<CUptiResult>(fake);
    if (fake == 0) {
      auto init = params<CUpti_Profiler_Initialize_Params>(CUpti_Profiler_Initialize_Params_STRUCT_SIZE);
      r = cuptiProfilerInitialize(&init);
    }
    if (r == CUPTI_SUCCESS) {
      g_initialized.store(true, std::memory_order_release);
      return {};
    }
    return profiler_refusal("cuptiProfilerInitialize", static_cast<int>(r));
  } catch (const std::exception& e) {
    return fmt::format("counters could not start: {}", e.what());
  }
}

void deinitialize_profiler() noexcept {
  if (!g_initialized.exchange(false)) return;
  auto deinit = params<CUpti_Profiler_DeInitialize_Params>(CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE);
  cuptiProfilerDeInitialize(&deinit);
}

void set_profiler_initialize_result_for_testing(int result) noexcept {
  g_fake_initialize.store(result, std::memory_order_relaxed);
}

std::string device_chip_name(int device) noexcept {
  // Only after initialize_profiler(): without it, and with another tool holding the profiler
  // (Nsight Compute), cuptiDeviceGetChipName crashed inside libcupti.
  if (!g_initialized.load(std::memory_order_acquire)) return {};
  auto p = params<CUpti_Device_GetChipName_Params>(CUpti_Device_GetChipName_Params_STRUCT_SIZE);
  p.deviceIndex = static_cast<std::size_t>(device);
  if (cuptiDeviceGetChipName(&p) != CUPTI_SUCCESS || p.pChipName == nullptr) return {};
  return p.pChipName;
}

std::string enable_range_profiler(Sink& sink, CounterPlan plan) noexcept {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    s.sink = &sink;
    s.plan = std::move(plan);
    s.metric_names.clear();
    for (const std::string& m : s.plan.metrics) s.metric_names.push_back(m.c_str());
    s.chosen.clear();
    for (const std::string& path : sink.options.metric_ranges) {
      std::vector<std::uint32_t> ids;
      std::size_t begin = 0;
      while (begin <= path.size()) {
        const std::size_t end = std::min(path.find('/', begin), path.size());
        ids.push_back(sink.forest.names.intern(std::string_view(path).substr(begin, end - begin)));
        begin = end + 1;
      }
      s.chosen.push_back(std::move(ids));
    }

    if (!g_initialized.load(std::memory_order_acquire)) return "the profiler was not initialized";
    CUcontext ctx = current_context();
    if (ctx == nullptr || !current_context_id(&s.device, &s.context_id))
      return "no current CUDA context to profile";
    s.failure.clear();
    auto enable = params<CUpti_RangeProfiler_Enable_Params>(CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE);
    enable.ctx = ctx;
    if (CUptiResult r = cuptiRangeProfilerEnable(&enable); r != CUPTI_SUCCESS) {
      return fail(s, "cuptiRangeProfilerEnable", r);
    }
    s.profiler = enable.pRangeProfilerObject;

    auto host =
        params<CUpti_Profiler_Host_Initialize_Params>(CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE);
    host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    host.pChipName = s.plan.chip.c_str();
    if (CUptiResult r = cuptiProfilerHostInitialize(&host); r != CUPTI_SUCCESS) {
      return fail(s, "cuptiProfilerHostInitialize", r);
    }
    s.host = host.pHostObject;

    auto size = params<CUpti_RangeProfiler_GetCounterDataSize_Params>(
        CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE);
    size.pRangeProfilerObject = s.profiler;
    size.pMetricNames = s.metric_names.data();
    size.numMetrics = s.metric_names.size();
    size.maxNumOfRanges = kMaxRanges;
    size.maxNumRangeTreeNodes = kMaxRanges;
    if (CUptiResult r = cuptiRangeProfilerGetCounterDataSize(&size); r != CUPTI_SUCCESS) {
      return fail(s, "cuptiRangeProfilerGetCounterDataSize", r);
    }
    s.counter_data.assign(size.counterDataSize, 0);
    auto data = params<CUpti_RangeProfiler_CounterDataImage_Initialize_Params>(
        CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE);
    data.pRangeProfilerObject = s.profiler;
    data.counterDataSize = s.counter_data.size();
    data.pCounterData = s.counter_data.data();
    if (CUptiResult r = cuptiRangeProfilerCounterDataImageInitialize(&data); r != CUPTI_SUCCESS) {
      return fail(s, "cuptiRangeProfilerCounterDataImageInitialize", r);
    }

    auto config =
        params<CUpti_RangeProfiler_SetConfig_Params>(CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE);
    config.pRangeProfilerObject = s.profiler;
    config.configSize = s.plan.config_image.size();
    config.pConfig = s.plan.config_image.data();
    config.counterDataImageSize = s.counter_data.size();
    config.pCounterDataImage = s.counter_data.data();
    config.range = CUPTI_AutoRange;
    config.replayMode = CUPTI_KernelReplay;
    config.maxRangesPerPass = kMaxRanges;
    config.numNestingLevels = 1;
    config.minNestingLevel = 1;
    config.passIndex = 0;
    config.targetNestingLevel = 1;
    if (CUptiResult r = cuptiRangeProfilerSetConfig(&config); r != CUPTI_SUCCESS) {
      return fail(s, "cuptiRangeProfilerSetConfig", r);
    }
    {
      std::lock_guard agg(sink.aggregator_mutex);
      sink.aggregator.set_counter_plan(s.plan.metrics, s.plan.labels, s.plan.units, s.plan.duration_weighted);
    }
    g_enabled.store(true, std::memory_order_release);
    return "on";
  } catch (const std::exception& e) {
    return fmt::format("counters could not start: {}", e.what());
  }
}

void disable_range_profiler() noexcept {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (!g_enabled.exchange(false)) return;
  if (!context_alive(s)) {  // cudaDeviceReset destroyed it: nothing of it may be called
    turn_off(s, "the CUDA context the counters ran on was destroyed (cudaDeviceReset)", true);
    return;
  }
  if (s.window_open) {
    collect(s, s.target);
    s.window_open = false;
    g_window_open.store(false, std::memory_order_release);
  }
  release(s);
  deinitialize_profiler();
}

void counters_on_enter(const model::Node* entered) noexcept {
  if (!g_enabled.load(std::memory_order_acquire) || entered == nullptr) return;
  // Fast path for ranges that are not counted while no window is open: no lock.
  if (!g_window_open.load(std::memory_order_acquire) &&
      entered->counters_choice.load(std::memory_order_relaxed) == 2) {
    return;
  }
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.window_open) {
    if (s.owner != std::this_thread::get_id()) return;
    collect(s, s.target);  // what ran so far belongs to the scope that was innermost
    s.target = entered;
    start_profiler(s);
    return;
  }
  if (!chosen(s, entered)) return;
  int device = -1;
  unsigned long long id = 0;
  if (!current_context_id(&device, &id) || device != s.device) return;  // not the profiled context
  if (id != s.context_id) {
    turn_off(s, "the CUDA context the counters ran on was destroyed (cudaDeviceReset); counters stay off",
             true);
    return;
  }
  if (CUptiResult r = start_profiler(s); r != CUPTI_SUCCESS) {
    // Enable and SetConfig can succeed where Start fails (no permission, counters busy).
    turn_off(s, cupti_refusal("cuptiRangeProfilerStart", static_cast<int>(r)), false);
    return;
  }
  s.window_open = true;
  g_window_open.store(true, std::memory_order_release);
  s.owner = std::this_thread::get_id();
  s.window_root = entered;
  s.target = entered;
}

void counters_on_exit(const model::Node* left, const model::Node* innermost) noexcept {
  if (!g_enabled.load(std::memory_order_acquire) || !g_window_open.load(std::memory_order_acquire)) return;
  State& s = state();
  {
    std::lock_guard lock(s.mutex);
    if (!s.window_open || s.owner != std::this_thread::get_id()) return;
    collect(s, s.target);
    if (left != s.window_root || innermost == left) {
      s.target = innermost;
      start_profiler(s);
      return;
    }
    s.window_open = false;
    g_window_open.store(false, std::memory_order_release);
  }
  deliver_after_counters();  // outside the lock: the buffer callback takes the aggregator's
}

std::string counters_failure() noexcept {
  try {
    State& s = state();
    std::lock_guard lock(s.mutex);
    return s.failure;
  } catch (...) {
    return {};
  }
}

}  // namespace cuscope::inline v0::detail

// producers/cupti/metrics_host.cpp — see metrics_host.hpp. Host half only: never touches a GPU.
#include "producers/cupti/metrics_host.hpp"

#include <cupti_profiler_host.h>
#include <cupti_result.h>
#include <dlfcn.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace cuscope::inline v0::detail {
namespace {

struct KnownMetric {
  std::string_view set;
  std::string_view name;
  std::string_view label;
  Combine combine;
  std::string_view unit;  // CUPTI's pDimUnit for the name
};

constexpr Combine kSum = Combine::sum;
constexpr Combine kWeighted = Combine::duration_weighted;

// The named sets. Every name was checked with cuptiProfilerHostGetMetricProperties and
// cuptiProfilerHostConfigAddMetrics (CUPTI 13.0): all of them exist on GH100, GA100, AD102, GB100,
// GV100, TU102 and GA102, with these units. GB202 has all but the two DRAM byte counts (it names
// them dram__bytes_op_read/_op_write). On AD102 sm__pipe_tensor_cycles_active is marked deprecated
// in favour of a _v2 that GH100 does not have. Registers per thread are not among the range
// profiler's metrics on GA100 or AD102 (GH100 has only a "TPC.TriageCompute." variant); the
// activity records carry them per kernel, and the occupancy set measures what registers cost:
// the share of cycles warp launches waited for register allocation.
constexpr std::array<KnownMetric, 18> kKnown{{
    {"sol", "gpu__time_duration.sum", "GPU time", kSum, "nanosecond"},
    {"sol", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "DRAM %", kWeighted, "percent"},
    {"sol", "sm__throughput.avg.pct_of_peak_sustained_elapsed", "SM %", kWeighted, "percent"},
    {"memory", "dram__bytes_read.sum", "DRAM read", kSum, "byte"},
    {"memory", "dram__bytes_write.sum", "DRAM write", kSum, "byte"},
    {"memory", "lts__t_sector_hit_rate.pct", "L2 hit %", kWeighted, "percent"},
    {"compute", "sm__sass_thread_inst_executed_op_dadd_pred_on.sum", "FP64 add", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_dmul_pred_on.sum", "FP64 mul", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_dfma_pred_on.sum", "FP64 fma", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_fadd_pred_on.sum", "FP32 add", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_fmul_pred_on.sum", "FP32 mul", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "FP32 fma", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_hadd_pred_on.sum", "FP16 add", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_hmul_pred_on.sum", "FP16 mul", kSum, "instruction"},
    {"compute", "sm__sass_thread_inst_executed_op_hfma_pred_on.sum", "FP16 fma", kSum, "instruction"},
    {"compute", "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed", "Tensor %", kWeighted,
     "percent"},
    {"occupancy", "sm__warps_active.avg.pct_of_peak_sustained_active", "Occupancy %", kWeighted, "percent"},
    {"occupancy",
     "tpc__warp_launch_cycles_stalled_shader_cs_reason_register_allocation.avg.pct_of_peak_sustained_elapsed",
     "Reg stall %", kWeighted, "percent"},
}};

constexpr std::array<std::string_view, 4> kSetNames{"sol", "memory", "compute", "occupancy"};

struct ChipOfCapability {
  int major, minor;
  std::string_view chip;
};

constexpr std::array<ChipOfCapability, 10> kChips{{
    {7, 0, "GV100"},
    {7, 2, "GV11B"},
    {7, 5, "TU102"},
    {8, 0, "GA100"},
    {8, 6, "GA102"},
    {8, 7, "GA10B"},
    {8, 9, "AD102"},
    {9, 0, "GH100"},
    {10, 0, "GB100"},
    {12, 0, "GB202"},
}};

Metric to_metric(const KnownMetric& k) {
  return {std::string(k.name), std::string(k.label), k.combine, std::string(k.unit)};
}

bool equal_ignoring_case(std::string_view a, std::string_view b) {
  return std::ranges::equal(a, b, [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

std::string_view trim(std::string_view s) {
  const auto space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && space(s.front())) s.remove_prefix(1);
  while (!s.empty() && space(s.back())) s.remove_suffix(1);
  return s;
}

void add_unique(std::vector<Metric>& to, Metric m) {
  const bool seen = std::ranges::any_of(to, [&](const Metric& x) { return x.name == m.name; });
  if (!seen) to.push_back(std::move(m));
}

// CUPTI's profiler host dlopens libnvperf_host.so with RTLD_DEEPBIND, and the runtimes of
// AddressSanitizer, ThreadSanitizer and MemorySanitizer abort the process on such a dlopen: with
// one of them in the process, the host half refuses instead.
bool under_sanitizer() {
  static const bool sanitized = dlsym(RTLD_DEFAULT, "__asan_init") != nullptr ||
                                dlsym(RTLD_DEFAULT, "__tsan_init") != nullptr ||
                                dlsym(RTLD_DEFAULT, "__msan_init") != nullptr;
  return sanitized;
}

std::string result_name(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return fmt::format("CUPTI error {}", static_cast<int>(r));
}

// A profiler host object for one chip, deinitialized on scope exit.
class HostObject {
 public:
  explicit HostObject(const std::string& chip) {
    CUpti_Profiler_Host_Initialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE;
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    result_ = cuptiProfilerHostInitialize(&p);
    if (result_ == CUPTI_SUCCESS) object_ = p.pHostObject;
  }
  ~HostObject() {
    if (!object_) return;
    CUpti_Profiler_Host_Deinitialize_Params p{};
    p.structSize = CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE;
    p.pHostObject = object_;
    cuptiProfilerHostDeinitialize(&p);
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  [[nodiscard]] CUptiResult result() const { return result_; }
  [[nodiscard]] CUpti_Profiler_Host_Object* get() const { return object_; }

  // Adds metrics to the object's config. A failed add leaves the object unusable (every later
  // call returns CUPTI_ERROR_UNKNOWN), so callers add only metrics already known to be good.
  [[nodiscard]] CUptiResult add(std::span<const char* const> names) const {
    CUpti_Profiler_Host_ConfigAddMetrics_Params p{};
    p.structSize = CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE;
    p.pHostObject = object_;
    p.ppMetricNames = const_cast<const char**>(names.data());
    p.numMetrics = names.size();
    return cuptiProfilerHostConfigAddMetrics(&p);
  }

 private:
  CUpti_Profiler_Host_Object* object_ = nullptr;
  CUptiResult result_ = CUPTI_ERROR_UNKNOWN;
};

// The metric's dimension unit on the host object's chip, or nothing when the chip has no such metric.
std::optional<std::string> dimension_unit(const HostObject& host, const std::string& name) {
  CUpti_Profiler_Host_GetMetricProperties_Params p{};
  p.structSize = CUpti_Profiler_Host_GetMetricProperties_Params_STRUCT_SIZE;
  p.pHostObject = host.get();
  p.pMetricName = name.c_str();
  if (cuptiProfilerHostGetMetricProperties(&p) != CUPTI_SUCCESS) return std::nullopt;
  return std::string(p.pDimUnit ? p.pDimUnit : "");
}

// A base metric without a rollup ("dram__bytes_read") has properties but cannot be scheduled.
std::string rollup_hint(const std::string& name) {
  const auto counter = name.rfind("__");
  if (counter == std::string::npos || name.find('.', counter) != std::string::npos) return {};
  return fmt::format("; name a rollup such as '{}.sum'", name);
}

bool is_supported(const std::string& chip, const std::vector<std::string>& chips) {
  return std::ranges::find(chips, chip) != chips.end();
}

}  // namespace

std::span<const std::string_view> metric_set_names() { return kSetNames; }

std::vector<Metric> metric_set(std::string_view set) {
  std::vector<Metric> out;
  for (const KnownMetric& k : kKnown)
    if (equal_ignoring_case(k.set, set)) out.push_back(to_metric(k));
  return out;
}

Metric metric_named(std::string_view name) {
  for (const KnownMetric& k : kKnown)
    if (k.name == name) return to_metric(k);
  const Combine combine = name.ends_with(".sum") ? Combine::sum : Combine::duration_weighted;
  return {std::string(name), std::string(name), combine, {}};
}

MetricSelection parse_metric_selection(std::string_view spec) {
  MetricSelection out;
  while (!spec.empty()) {
    const auto comma = spec.find(',');
    const std::string_view item = trim(spec.substr(0, comma));
    spec = comma == std::string_view::npos ? std::string_view{} : spec.substr(comma + 1);
    if (item.empty()) continue;
    if (auto set = metric_set(item); !set.empty()) {
      for (Metric& m : set) add_unique(out.metrics, std::move(m));
    } else if (item.find("__") != std::string_view::npos) {
      add_unique(out.metrics, metric_named(item));
    } else {
      out.errors.push_back(
          fmt::format("unknown metric set '{}' (sets: {}; or name a metric such as dram__bytes_read.sum)",
                      item, fmt::join(kSetNames, ", ")));
    }
  }
  return out;
}

std::vector<std::string> supported_chips() {
  if (under_sanitizer()) return {};
  CUpti_Profiler_Host_GetSupportedChips_Params p{};
  p.structSize = CUpti_Profiler_Host_GetSupportedChips_Params_STRUCT_SIZE;
  if (cuptiProfilerHostGetSupportedChips(&p) != CUPTI_SUCCESS) return {};
  return {p.ppChipNames, p.ppChipNames + p.numChips};
}

std::string_view chip_for_compute_capability(int major, int minor) {
  for (const ChipOfCapability& c : kChips)
    if (c.major == major && c.minor == minor) return c.chip;
  return {};
}

MetricSelection validate_metrics(std::string_view chip_name, std::span<const Metric> metrics) {
  MetricSelection out;
  if (under_sanitizer()) {
    out.errors.emplace_back(kSanitizerRefusal);
    return out;
  }
  const std::string chip(chip_name);
  const auto chips = supported_chips();
  if (!is_supported(chip, chips)) {
    out.errors.push_back(fmt::format("chip '{}' is not supported by this CUPTI (supported: {})", chip,
                                     fmt::join(chips, ", ")));
    return out;
  }
  const HostObject host(chip);
  if (host.result() != CUPTI_SUCCESS) {
    out.errors.push_back(fmt::format("CUPTI cannot profile {}: cuptiProfilerHostInitialize returned {}", chip,
                                     result_name(host.result())));
    return out;
  }
  for (const Metric& m : metrics) {
    auto unit = dimension_unit(host, m.name);
    if (!unit) {
      out.errors.push_back(
          fmt::format("metric '{}' is not available on {}; collecting the others", m.name, chip));
      continue;
    }
    // Scheduling is checked on a host object of its own: a failed add spoils the object it was made on.
    const HostObject trial(chip);
    const char* name = m.name.c_str();
    if (const CUptiResult r = trial.add({&name, 1}); r != CUPTI_SUCCESS) {
      out.errors.push_back(fmt::format("metric '{}' cannot be collected on {} ({}{}); collecting the others",
                                       m.name, chip, result_name(r), rollup_hint(m.name)));
      continue;
    }
    Metric valid = m;
    if (!unit->empty()) valid.unit = std::move(*unit);
    out.metrics.push_back(std::move(valid));
  }
  return out;
}

ConfigImage build_config_image(std::string_view chip_name, std::span<const Metric> metrics) {
  ConfigImage out;
  MetricSelection valid = validate_metrics(chip_name, metrics);
  out.errors = std::move(valid.errors);
  if (valid.metrics.empty()) return out;

  const std::string chip(chip_name);
  const auto fail = [&](const char* call, CUptiResult r) {
    out.errors.push_back(fmt::format("CUPTI could not build a config image for {}: {} returned {}", chip,
                                     call, result_name(r)));
    return out;
  };
  const HostObject host(chip);
  if (host.result() != CUPTI_SUCCESS) return fail("cuptiProfilerHostInitialize", host.result());
  std::vector<const char*> names;
  for (const Metric& m : valid.metrics) names.push_back(m.name.c_str());
  if (const CUptiResult r = host.add(names); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerHostConfigAddMetrics", r);

  CUpti_Profiler_Host_GetConfigImageSize_Params size{};
  size.structSize = CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE;
  size.pHostObject = host.get();
  if (const CUptiResult r = cuptiProfilerHostGetConfigImageSize(&size); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerHostGetConfigImageSize", r);
  std::vector<std::uint8_t> image(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params get{};
  get.structSize = CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE;
  get.pHostObject = host.get();
  get.configImageSize = image.size();
  get.pConfigImage = image.data();
  if (const CUptiResult r = cuptiProfilerHostGetConfigImage(&get); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerHostGetConfigImage", r);
  CUpti_Profiler_Host_GetNumOfPasses_Params passes{};
  passes.structSize = CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE;
  passes.configImageSize = image.size();
  passes.pConfigImage = image.data();
  if (const CUptiResult r = cuptiProfilerHostGetNumOfPasses(&passes); r != CUPTI_SUCCESS)
    return fail("cuptiProfilerHostGetNumOfPasses", r);

  out.image = std::move(image);
  out.passes = passes.numOfPasses;
  out.metrics = std::move(valid.metrics);
  return out;
}

model::RangeCounters roofline_counters(std::span<const Metric> metrics, std::span<const double> values) {
  const auto value = [&](std::string_view name) -> std::optional<double> {
    for (std::size_t i = 0; i < metrics.size() && i < values.size(); ++i)
      if (metrics[i].name == name) return values[i];
    return std::nullopt;
  };
  // FLOPs of one precision from its thread-instruction counts: add + mul + 2 × fma. A packed
  // (half2) instruction counts once, as the counters count it.
  const auto flops = [&](std::string_view add, std::string_view mul,
                         std::string_view fma) -> std::optional<double> {
    const auto a = value(add);
    const auto m = value(mul);
    const auto f = value(fma);
    if (!a || !m || !f) return std::nullopt;
    return *a + *m + 2.0 * *f;
  };
  model::RangeCounters c;
  c.kernel_ns = value("gpu__time_duration.sum");
  const auto read = value("dram__bytes_read.sum");
  const auto write = value("dram__bytes_write.sum");
  if (read && write) c.dram_bytes = *read + *write;
  const auto fp64 = flops("sm__sass_thread_inst_executed_op_dadd_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_dmul_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_dfma_pred_on.sum");
  const auto fp32 = flops("sm__sass_thread_inst_executed_op_fadd_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_fmul_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_ffma_pred_on.sum");
  const auto fp16 = flops("sm__sass_thread_inst_executed_op_hadd_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_hmul_pred_on.sum",
                          "sm__sass_thread_inst_executed_op_hfma_pred_on.sum");
  if (fp64 || fp32 || fp16) c.flops = model::Flops{fp64.value_or(0), fp32.value_or(0), fp16.value_or(0)};
  c.dram_pct = value("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");
  c.sm_pct = value("sm__throughput.avg.pct_of_peak_sustained_elapsed");
  c.occupancy_pct = value("sm__warps_active.avg.pct_of_peak_sustained_active");
  return c;
}

}  // namespace cuscope::inline v0::detail

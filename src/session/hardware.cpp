// session/hardware.cpp — see hardware.hpp.
#include "session/hardware.hpp"

#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>

#include "model/findings.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/log.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail {
namespace {

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

Bound public_bound(model::Bound b) {
  switch (b) {
    case model::Bound::memory_bound:
      return Bound::memory;
    case model::Bound::compute_bound:
      return Bound::compute;
    case model::Bound::latency_bound:
      return Bound::latency;
    case model::Bound::launch_bound:
      return Bound::launch;
    case model::Bound::unknown:
      return Bound::unknown;
  }
  return Bound::unknown;
}

// Names the chip, builds the config image and enables the range profiler: "on: ..." or why not.
std::string enable_counters(Session& session, const MetricSelection& selection) {
  const Options& o = session.options;
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) cudaGetLastError();
  const std::string chip = device_chip_name(device);
  if (chip.empty()) return "CUPTI could not name this GPU's chip (cuptiDeviceGetChipName failed)";
  ConfigImage config = build_config_image(chip, selection.metrics);
  for (const std::string& e : config.errors) warn_once(e);
  if (config.image.empty()) return fmt::format("none of the requested metrics can be collected on {}", chip);

  CounterPlan plan;
  plan.chip = chip;
  std::vector<std::string> names;
  for (const Metric& m : config.metrics) {
    plan.metrics.push_back(m.name);
    plan.labels.push_back(m.label);
    plan.units.push_back(m.unit);
    plan.duration_weighted.push_back(m.combine == Combine::duration_weighted);
    names.push_back(m.name);
  }
  plan.config_image = std::move(config.image);
  plan.passes = config.passes;
  const std::size_t passes = plan.passes;
  const std::string status = enable_range_profiler(session, std::move(plan));
  if (status != "on") return status;
  session.counter_metrics = config.metrics;
  return fmt::format(
      "on: {} on {} ({} replay pass{} per kernel) in {}, during {}; those steps are reported apart under "
      "{} (kernel replay serializes and re-runs their kernels, so their times are not a normal step's)",
      joined(names), chip, passes, passes == 1 ? "" : "es",
      o.metric_ranges.empty() ? "every range" : joined(o.metric_ranges),
      o.metric_steps == 0 ? "every recorded step"
                          : fmt::format("the first {} recorded steps", o.metric_steps),
      kCountedStepsName);
}

}  // namespace

std::string start_counters(Session& session) noexcept {
  try {
    const Options& o = session.options;
    MetricSelection selection = parse_metric_selection(o.metrics);
    for (const std::string& e : selection.errors) warn_once("CUSCOPE_METRICS: " + e);
    if (selection.metrics.empty())
      return fmt::format("no metric to collect in CUSCOPE_METRICS='{}'", o.metrics);
    // Kernel duration weighs the percentages of a range; it costs no extra replay pass.
    const Metric duration = metric_named("gpu__time_duration.sum");
    if (std::find(selection.metrics.begin(), selection.metrics.end(), duration) == selection.metrics.end()) {
      selection.metrics.insert(selection.metrics.begin(), duration);
    }
    // The profiler interface first: when another tool holds it (Nsight Compute), this is the call
    // that says so, and the calls after it (the chip's name) would crash inside libcupti.
    if (std::string why = initialize_profiler(); !why.empty()) return why;
    const std::string status = enable_counters(session, selection);
    if (status.rfind("on:", 0) != 0) deinitialize_profiler();
    return status;
  } catch (const std::exception& e) {
    deinitialize_profiler();
    return fmt::format("counters could not start: {}", e.what());
  }
}

model::DevicePeaks device_peaks() noexcept {
  int device = 0;
  model::DeviceProperties d;
  int sms = 0, clock = 0, memory_clock = 0, bus = 0;
  if (cudaGetDevice(&device) != cudaSuccess ||
      cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&clock, cudaDevAttrClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&memory_clock, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&bus, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&d.cc_major, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess ||
      cudaDeviceGetAttribute(&d.cc_minor, cudaDevAttrComputeCapabilityMinor, device) != cudaSuccess) {
    cudaGetLastError();
    return {};
  }
  d.sm_count = static_cast<std::uint32_t>(sms);
  d.sm_clock_khz = static_cast<std::uint32_t>(clock);
  d.memory_clock_khz = static_cast<std::uint32_t>(memory_clock);
  d.memory_bus_width_bits = static_cast<std::uint32_t>(bus);
  return model::peaks_from_properties(d).value_or(model::DevicePeaks{});
}

void apply_verdicts(Report& report, const model::DevicePeaks& peaks, const std::vector<Metric>& metrics) {
  report.peaks = DevicePeaks{peaks.dram_bytes_per_s, peaks.fp64_flops_per_s, peaks.fp32_flops_per_s,
                             peaks.fp16_flops_per_s, peaks.source};
  std::vector<double> values;
  for (std::size_t i = 1; i < report.ranges.size(); ++i) {
    RangeStats& r = report.ranges[i];
    model::RangeMeasures m;
    m.kernel_ns = r.total.kernel_ns;
    m.gpu_busy_ns = r.total.gpu_busy_ns;
    m.gpu_span_ns = r.total.gpu_span_ns;
    m.kernel_count = r.total.kernel_calls;
    m.host_ns = r.host.total_ns;
    if (!r.metrics.empty() && r.metrics.size() == metrics.size()) {
      values.clear();
      for (const MetricValue& v : r.metrics) values.push_back(v.value);
      m.counters = roofline_counters(metrics, values);
    }
    const model::Verdict v = model::roofline_verdict(m, peaks);
    r.verdict = Verdict{public_bound(v.bound),        v.dram_bytes_per_s.value_or(0),
                        v.flops_per_s.value_or(0),    v.arithmetic_intensity.value_or(0),
                        v.pct_of_ceiling.value_or(0), v.reason};
  }
  model::apply_findings(report);  // after the verdicts, which some rules read
}

}  // namespace cuscope::inline v0::detail

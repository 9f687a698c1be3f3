// model/roofline.cpp — see roofline.hpp. Pure arithmetic: no CUDA, no I/O.
#include "model/roofline.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <utility>

namespace cuscope::model {
namespace {

struct ArchLanes {
  int major, minor;
  double fp32, fp64, fp16;  // FMA thread instructions per SM per clock; 0 = not known
};

// Lanes per SM from NVIDIA's architecture whitepapers. fp16 counts half-precision FMA instructions
// the way the instruction counters do, a packed half2 instruction once: half the published FP16
// (non-tensor) rate, so that counted FLOPs and this peak are in the same units (as in Nsight
// Compute's roofline). sm_87 (Orin) and sm_100 publish no fp64/fp16 CUDA-core rate this table
// could rely on, so those stay unknown.
constexpr std::array<ArchLanes, 9> kLanes{{
    {7, 0, 64, 32, 64},    // V100
    {7, 5, 64, 2, 64},     // Turing
    {8, 0, 64, 32, 128},   // A100
    {8, 6, 128, 2, 64},    // GA10x
    {8, 7, 128, 0, 0},     // Orin
    {8, 9, 128, 2, 64},    // Ada
    {9, 0, 128, 64, 128},  // H100
    {10, 0, 128, 64, 0},   // B200
    {12, 0, 128, 2, 64},   // GB20x
}};

// Rates divide by kernel time in ns and scale by 1e9 (exact for the round numbers of the tests).
double per_second(double amount, std::uint64_t ns) { return amount * 1e9 / static_cast<double>(ns); }

Precision dominant(const Flops& f) {
  if (f.fp64 >= f.fp32 && f.fp64 >= f.fp16) return Precision::fp64;
  return f.fp32 >= f.fp16 ? Precision::fp32 : Precision::fp16;
}

std::string pct(double v) { return fmt::format("{:.0f}%", v); }

double busy_pct(const RangeMeasures& m) {
  if (m.gpu_span_ns == 0) return 0.0;
  return 100.0 * static_cast<double>(m.gpu_busy_ns) / static_cast<double>(m.gpu_span_ns);
}

// The name the compute utilization goes by in a reason: the SM throughput counter, or the FLOP
// rate (of the dominant precision, when there were FLOPs).
std::string compute_name(const RangeMeasures& m, const Verdict& v) {
  if (m.counters.sm_pct) return "SM";
  return v.precision ? fmt::format("{} FLOP rate", to_string(*v.precision)) : "FLOP rate";
}

std::string dram_name(const RangeMeasures& m) { return m.counters.dram_pct ? "DRAM" : "DRAM bandwidth"; }

std::string intensity_note(const Verdict& v) {
  if (!v.arithmetic_intensity || !v.ridge_point) return {};
  return fmt::format(", intensity {:.3g} FLOP/B vs ridge {:.3g}", *v.arithmetic_intensity, *v.ridge_point);
}

// The kernel time the counters cover: their own when collected, else the activity records'.
std::uint64_t counted_ns(const RangeMeasures& m) {
  if (m.counters.kernel_ns && *m.counters.kernel_ns >= 1.0)
    return static_cast<std::uint64_t>(*m.counters.kernel_ns + 0.5);
  return m.kernel_ns;
}

void derive_rates(const RangeMeasures& m, const DevicePeaks& peaks, Verdict& v) {
  const RangeCounters& c = m.counters;
  const std::uint64_t ns = counted_ns(m);
  if (c.dram_bytes) v.dram_bytes_per_s = per_second(*c.dram_bytes, ns);
  // The compute roof: the peak for the range's mix of precisions, or FP32's when it did no FLOPs.
  std::optional<double> compute_peak;
  if (c.flops && c.flops->total() > 0) {
    v.precision = dominant(*c.flops);
    compute_peak = mix_peak_flops_per_s(*c.flops, peaks);
  } else if (peaks.fp32_flops_per_s > 0) {
    compute_peak = peaks.fp32_flops_per_s;
  }
  if (c.flops) v.flops_per_s = per_second(c.flops->total(), ns);
  const bool bandwidth_known = peaks.dram_bytes_per_s > 0;
  if (compute_peak && bandwidth_known) v.ridge_point = *compute_peak / peaks.dram_bytes_per_s;

  if (c.flops && c.dram_bytes && *c.dram_bytes > 0) v.arithmetic_intensity = c.flops->total() / *c.dram_bytes;
  if (c.flops && compute_peak) {
    if (v.arithmetic_intensity && bandwidth_known)
      v.ceiling_flops_per_s = std::min(*compute_peak, *v.arithmetic_intensity * peaks.dram_bytes_per_s);
    else if (c.dram_bytes && *c.dram_bytes == 0)
      v.ceiling_flops_per_s = *compute_peak;  // no DRAM traffic: only the compute roof is left
    if (v.ceiling_flops_per_s && *v.ceiling_flops_per_s > 0)
      v.pct_of_ceiling = 100.0 * *v.flops_per_s / *v.ceiling_flops_per_s;
  }

  if (c.dram_pct)
    v.dram_pct = *c.dram_pct;
  else if (v.dram_bytes_per_s && bandwidth_known)
    v.dram_pct = 100.0 * *v.dram_bytes_per_s / peaks.dram_bytes_per_s;
  if (c.sm_pct)
    v.compute_pct = *c.sm_pct;
  else if (v.flops_per_s && compute_peak)
    v.compute_pct = 100.0 * *v.flops_per_s / *compute_peak;
}

bool launch_bound(const RangeMeasures& m) {
  if (m.gpu_span_ns == 0 || m.kernel_count < kManyKernels) return false;
  const double mean_ns = static_cast<double>(m.kernel_ns) / static_cast<double>(m.kernel_count);
  const bool host_covers_span =
      static_cast<double>(m.host_ns) >= kHostCoversSpan * static_cast<double>(m.gpu_span_ns);
  return busy_pct(m) < 100.0 * kLaunchBusyShare && mean_ns < static_cast<double>(kShortKernelNs) &&
         host_covers_span;
}

std::string launch_reason(const RangeMeasures& m) {
  const double mean_us = static_cast<double>(m.kernel_ns) / static_cast<double>(m.kernel_count) / 1e3;
  return fmt::format(
      "GPU busy {} of its span with {} kernels averaging {:.1f} µs: launch-bound — batch launches, fuse "
      "kernels or use CUDA graphs",
      pct(busy_pct(m)), m.kernel_count, mean_us);
}

void classify(const RangeMeasures& m, Verdict& v) {
  const auto& dram = v.dram_pct;
  const auto& compute = v.compute_pct;
  const bool dram_saturated = dram && *dram >= kSaturatedPct;
  const bool compute_saturated = compute && *compute >= kSaturatedPct;
  if (dram_saturated && (!compute || *dram > *compute)) {
    v.bound = Bound::memory_bound;
    v.reason = fmt::format("{} at {} of peak", dram_name(m), pct(*dram));
    if (compute) v.reason += fmt::format(" while {} at {}", compute_name(m, v), pct(*compute));
    v.reason += intensity_note(v) + ": memory-bound — fuse kernels, coalesce accesses or reduce bytes moved";
    return;
  }
  if (compute_saturated) {
    v.bound = Bound::compute_bound;
    v.reason = fmt::format("{} at {} of peak", compute_name(m, v), pct(*compute));
    if (dram) v.reason += fmt::format(" while {} at {}", dram_name(m), pct(*dram));
    v.reason +=
        intensity_note(v) + ": compute-bound — use tensor cores or a lower precision, or cut instructions";
    return;
  }
  if (dram && compute) {
    v.bound = Bound::latency_bound;
    v.reason = fmt::format("{} at {} and {} at {} of peak", dram_name(m), pct(*dram), compute_name(m, v),
                           pct(*compute));
    const auto& occupancy = m.counters.occupancy_pct;
    v.reason += ": latency-bound — expose more parallelism: occupancy";
    if (occupancy) v.reason += fmt::format(" (achieved {})", pct(*occupancy));
    v.reason += ", ILP or a larger grid";
    return;
  }
  v.bound = Bound::unknown;
  if (dram) {
    v.reason = fmt::format(
        "{} at {} of peak; no SM throughput or FLOP counts to tell compute- from latency-bound: collect "
        "the 'sol' metric set",
        dram_name(m), pct(*dram));
  } else if (compute) {
    v.reason = fmt::format(
        "{} at {} of peak; no DRAM throughput or byte counts to tell memory- from latency-bound: collect "
        "the 'sol' metric set",
        compute_name(m, v), pct(*compute));
  } else {
    v.reason = fmt::format(
        "GPU busy {} of its span; no throughput counters to tell memory-, compute- or latency-bound: collect "
        "the 'sol' metric set",
        pct(busy_pct(m)));
  }
}

}  // namespace

std::string_view to_string(Precision p) {
  switch (p) {
    case Precision::fp64:
      return "FP64";
    case Precision::fp32:
      return "FP32";
    case Precision::fp16:
      return "FP16";
  }
  return "FP32";
}

std::string_view to_string(Bound b) {
  switch (b) {
    case Bound::unknown:
      return "unknown";
    case Bound::memory_bound:
      return "memory-bound";
    case Bound::compute_bound:
      return "compute-bound";
    case Bound::latency_bound:
      return "latency-bound";
    case Bound::launch_bound:
      return "launch-bound";
  }
  return "unknown";
}

double DevicePeaks::flops_per_s(Precision p) const {
  switch (p) {
    case Precision::fp64:
      return fp64_flops_per_s;
    case Precision::fp32:
      return fp32_flops_per_s;
    case Precision::fp16:
      return fp16_flops_per_s;
  }
  return 0;
}

std::optional<DevicePeaks> peaks_from_properties(const DeviceProperties& d) {
  for (const ArchLanes& a : kLanes) {
    if (a.major != d.cc_major || a.minor != d.cc_minor) continue;
    const double lane_flops =
        static_cast<double>(d.sm_count) * 2.0 * static_cast<double>(d.sm_clock_khz) * 1e3;
    DevicePeaks p;
    p.dram_bytes_per_s = 2.0 * static_cast<double>(d.memory_clock_khz) * 1e3 *
                         static_cast<double>(d.memory_bus_width_bits) / 8.0;
    p.fp32_flops_per_s = a.fp32 * lane_flops;
    p.fp64_flops_per_s = a.fp64 * lane_flops;
    p.fp16_flops_per_s = a.fp16 * lane_flops;
    p.source = "device properties";
    return p;
  }
  return std::nullopt;
}

std::optional<double> mix_peak_flops_per_s(const Flops& f, const DevicePeaks& p) {
  const std::array<std::pair<double, Precision>, 3> parts{
      {{f.fp64, Precision::fp64}, {f.fp32, Precision::fp32}, {f.fp16, Precision::fp16}}};
  double time_at_peak_s = 0;
  int used = 0;
  double only_peak = 0;
  for (const auto& [flops, precision] : parts) {
    if (flops <= 0) continue;
    const double peak = p.flops_per_s(precision);
    if (peak <= 0) return std::nullopt;
    time_at_peak_s += flops / peak;
    only_peak = peak;
    ++used;
  }
  if (used == 0) return std::nullopt;
  // One precision: its own peak, exactly (the quotient below would round).
  return used == 1 ? only_peak : f.total() / time_at_peak_s;
}

Verdict roofline_verdict(const RangeMeasures& m, const DevicePeaks& peaks) {
  Verdict v;
  const bool timed = m.kernel_count != 0 && m.kernel_ns != 0;
  if (!timed && counted_ns(m) == 0) {
    v.reason = "no kernel ran in this range";
    return v;
  }
  derive_rates(m, peaks, v);
  if (launch_bound(m)) {
    v.bound = Bound::launch_bound;
    v.reason = launch_reason(m);
    return v;
  }
  classify(m, v);
  return v;
}

}  // namespace cuscope::model

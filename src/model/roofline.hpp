// model/roofline.hpp — the verdict per range: where it sits on the roofline, and what bounds it.
//
// Pure arithmetic on a range's timing and (optional) hardware-counter values against the device's
// peaks: achieved DRAM bandwidth and FLOP rate, arithmetic intensity, the roofline ceiling at that
// intensity, the ridge point, and one classification with a one-line "observation: class — fix"
// reason, in the words of the profiling workflow the seeds teach. Knows nothing of CUDA or CUPTI:
// the producers turn device attributes and counter values into these structs.
//
// Example:
//   const auto peaks = model::peaks_from_properties({132, 1'980'000, 2'619'000, 5120, 9, 0});
//   model::RangeMeasures m;
//   m.kernel_ns = stats.kernel_ns;  // ... timing from the range's ActivityStats
//   m.counters.dram_pct = 87.0;
//   m.counters.sm_pct = 12.0;
//   const model::Verdict v = model::roofline_verdict(m, *peaks);
//   std::puts(v.reason.c_str());  // "DRAM at 87% of peak while SM at 12%: memory-bound — ..."
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace cuscope::model {

/// The precisions whose FLOPs the counters count (CUDA-core instructions; tensor-core work is not
/// in these counts and shows only in SM throughput and tensor-pipe utilization).
enum class Precision : std::uint8_t { fp64, fp32, fp16 };
[[nodiscard]] std::string_view to_string(Precision p);

/// Floating-point operations by precision, as the instruction counters count them: an FMA counts as
/// two, a packed (half2) instruction as one.
struct Flops {
  double fp64 = 0;
  double fp32 = 0;
  double fp16 = 0;
  [[nodiscard]] double total() const { return fp64 + fp32 + fp16; }
};

/// Counter-derived values for a range, combined over its kernels; each is absent when the metric
/// that gives it was not collected.
struct RangeCounters {
  /// The counted kernels' own GPU time (gpu__time_duration.sum, ns): what the rates divide by, so
  /// that they cover exactly the kernels the other counters measured, with or without activity.
  std::optional<double> kernel_ns;
  std::optional<double> dram_bytes;     ///< DRAM bytes read + written
  std::optional<Flops> flops;           ///< FLOPs by precision
  std::optional<double> dram_pct;       ///< DRAM throughput, % of peak (duration-weighted)
  std::optional<double> sm_pct;         ///< SM throughput, % of peak (duration-weighted)
  std::optional<double> occupancy_pct;  ///< achieved occupancy, % of peak warps (duration-weighted)
};

/// What the verdict reads from one range. Timing comes from the activity records; counters only
/// when a metric set was collected for the range. Rates divide by the counters' own kernel time
/// when they have it (kernels replayed for counters carry no activity timing), else by kernel_ns.
struct RangeMeasures {
  std::uint64_t kernel_ns = 0;    ///< sum of kernel durations (activity records)
  std::uint64_t gpu_busy_ns = 0;  ///< time at least one kernel ran
  std::uint64_t gpu_span_ns = 0;  ///< first kernel start to last kernel end (summed per instance)
  std::uint64_t kernel_count = 0;
  std::uint64_t host_ns = 0;  ///< host time of the same instances
  RangeCounters counters;
};

/// A device's theoretical peaks. A zero peak means "not known for this device"; the values that
/// need it are then left out of the verdict.
struct DevicePeaks {
  double dram_bytes_per_s = 0;
  double fp64_flops_per_s = 0;
  double fp32_flops_per_s = 0;
  /// CUDA-core half precision (not tensor cores) in the counters' terms, a packed half2 instruction
  /// counting once: half the FP16 (non-tensor) peak NVIDIA publishes.
  double fp16_flops_per_s = 0;
  std::string source;  ///< where the peaks come from: "device properties" or "measured"
  [[nodiscard]] double flops_per_s(Precision p) const;
};

/// The device attributes the peaks are computed from (as cudaDeviceGetAttribute reports them).
struct DeviceProperties {
  std::uint32_t sm_count = 0;
  std::uint32_t sm_clock_khz = 0;      ///< peak (boost) SM clock
  std::uint32_t memory_clock_khz = 0;  ///< peak memory clock
  std::uint32_t memory_bus_width_bits = 0;
  int cc_major = 0;
  int cc_minor = 0;
};

/// Theoretical peaks from device attributes, or nothing for an architecture not in the table.
///   DRAM bytes/s   = 2 (double data rate) × memory clock × bus width / 8
///   FLOP/s (prec.) = SMs × lanes per SM for that precision × 2 (FMA) × SM clock
/// These are paper peaks: H100 SXM (132 SMs, 1.98 GHz, 2.619 GHz × 5120-bit HBM3) gives 3.35 TB/s
/// and 66.9 FP32 TFLOP/s; kernels reach 80–90% of the bandwidth at best, so "measured" peaks, where
/// a session has them, make the percentages truer.
[[nodiscard]] std::optional<DevicePeaks> peaks_from_properties(const DeviceProperties& d);

/// What bounds a range. `unknown` when no kernel ran, or when the counters needed to decide were
/// not collected (the reason then says which set to collect).
enum class Bound : std::uint8_t { unknown, memory_bound, compute_bound, latency_bound, launch_bound };
[[nodiscard]] std::string_view to_string(Bound b);  ///< "memory-bound", ...

// The rules, in order (the first that applies decides):
//  1. No kernel ran: unknown.
//  2. Launch-bound: the GPU was busy less than kLaunchBusyShare of its span, with at least
//     kManyKernels kernels averaging under kShortKernelNs, and the host time covering at least
//     kHostCoversSpan of the GPU span (the host was launching all along). The seeds' "GPU idle
//     gaps" and "many tiny kernels (under 10 us each)": CPU overhead and launch latency, fixed by
//     CUDA graphs, fusion and larger batches. Needs no counters, and beats the counters: however
//     well each kernel runs, the range's time goes to the gaps.
//  3. Otherwise compare DRAM and compute utilization, % of peak: DRAM from the DRAM-throughput
//     counter, else from bytes moved over kernel time against peak bandwidth; compute from the
//     SM-throughput counter, else from FLOPs over kernel time against the peak FLOP rate. (Without
//     the throughput counters, "DRAM % > compute %" is exactly "intensity below the ridge point".)
//     - either ≥ kSaturatedPct: bound by the busier one — memory-bound if DRAM % > compute %,
//       compute-bound otherwise (the seeds' first question: memory-bound → reduce bytes moved,
//       fuse, coalesce; compute-bound → tensor cores, better instruction mix);
//     - both known and below kSaturatedPct: latency-bound (Nsight Compute's speed-of-light rule of
//       thumb: under 60% of peak on both sides points to latency — occupancy, ILP, grid size, syncs);
//     - anything else: unknown, naming the counters that are missing.
inline constexpr double kLaunchBusyShare = 0.5;
inline constexpr std::uint64_t kShortKernelNs = 10'000;
inline constexpr std::uint64_t kManyKernels = 20;
inline constexpr double kHostCoversSpan = 0.8;
inline constexpr double kSaturatedPct = 60.0;

/// The verdict for one range. Every derived value is absent when its inputs are.
struct Verdict {
  std::optional<double> dram_bytes_per_s;      ///< achieved: DRAM bytes / kernel time
  std::optional<double> flops_per_s;           ///< achieved: FLOPs / kernel time
  std::optional<double> arithmetic_intensity;  ///< FLOP per DRAM byte
  std::optional<double> ceiling_flops_per_s;   ///< min(peak FLOP/s, intensity × peak bytes/s);
                                               ///< the peak FLOP/s when no DRAM byte moved
  std::optional<double> pct_of_ceiling;        ///< achieved FLOP/s as % of the ceiling
  std::optional<double> ridge_point;           ///< peak FLOP/s ÷ peak bytes/s, FLOP per byte
  std::optional<double> dram_pct;              ///< DRAM utilization the classification used
  std::optional<double> compute_pct;           ///< compute utilization the classification used
  std::optional<Precision> precision;          ///< the precision with the most FLOPs
  Bound bound = Bound::unknown;
  std::string reason;  ///< one line: observation, class, fix
};

/// The peak FLOP rate for a mix of precisions: the rate at which the mix finishes when each
/// precision's FLOPs run at that precision's peak, one after the other. Nothing when a precision
/// with FLOPs has no known peak, or when there are no FLOPs.
[[nodiscard]] std::optional<double> mix_peak_flops_per_s(const Flops& f, const DevicePeaks& p);

[[nodiscard]] Verdict roofline_verdict(const RangeMeasures& m, const DevicePeaks& peaks);

}  // namespace cuscope::model

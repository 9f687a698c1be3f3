// producers/cupti/metrics_host.hpp — the host half of CUPTI's Range Profiler: which counters to
// collect, checked against a chip, and the config image that schedules them.
//
// Host half only: never touches a GPU. Everything here runs without a driver (CUPTI's profiler
// host API works from the chip name alone), so it is tested on machines with no GPU; the session
// gets the real chip name from the device and hands the image to the range profiler.
//
// A selection is a comma-separated list of named sets and metric names ("sol", "sol,memory",
// "dram__bytes_read.sum,sol"). Every problem is a line in `errors` and the rest goes on: an unknown
// metric is dropped with a line naming it and the chip, the others are still collected.
//
// Example:
//   auto sel = detail::parse_metric_selection(options.metrics);  // e.g. "sol,dram__bytes_read.sum"
//   auto config = detail::build_config_image("GH100", sel.metrics);
//   for (const auto& e : config.errors) log(e);
//   // config.image goes to cuptiRangeProfilerSetConfig, replayed config.passes times per kernel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/roofline.hpp"

namespace cuscope::inline v0::detail {

/// How one metric's per-kernel values make the value of a range.
enum class Combine : std::uint8_t {
  sum,                ///< counts, bytes, durations: added up
  duration_weighted,  ///< percentages, ratios and rates: the mean weighted by kernel duration
};

struct Metric {
  std::string name;   ///< the CUPTI metric name, e.g. "dram__bytes_read.sum"
  std::string label;  ///< a short column header, e.g. "DRAM read"
  Combine combine = Combine::sum;
  /// CUPTI's dimension unit ("byte", "percent", ...); for a metric outside the sets, empty until
  /// validated against a chip.
  std::string unit;
  friend bool operator==(const Metric&, const Metric&) = default;
};

/// The named sets, in the order they are documented: "sol", "memory", "compute", "occupancy".
[[nodiscard]] std::span<const std::string_view> metric_set_names();

/// The metrics of a named set (case-insensitive), or an empty list for a name that is no set.
[[nodiscard]] std::vector<Metric> metric_set(std::string_view set);

/// A metric by CUPTI name: the set's entry when a set holds it, else the name as its label, summed
/// when it is a plain ".sum" rollup and duration-weighted otherwise.
[[nodiscard]] Metric metric_named(std::string_view name);

struct MetricSelection {
  std::vector<Metric> metrics;      ///< in the order given, each once
  std::vector<std::string> errors;  ///< one line per problem
};

/// Parses "sol,memory", "dram__bytes_read.sum, sol", ...: sets and metric names (anything with
/// "__" in it) mixed, whitespace around items ignored, duplicates dropped (first one kept), empty
/// items skipped. A name that is neither a set nor a metric name is an error; the rest is kept.
[[nodiscard]] MetricSelection parse_metric_selection(std::string_view spec);

/// Why the host half does nothing in a process with ASan, TSan or MSan (the one error it gives).
inline constexpr std::string_view kSanitizerRefusal =
    "hardware counters are off under a sanitizer: CUPTI's profiler host loads libnvperf_host.so with "
    "RTLD_DEEPBIND, which the sanitizer runtimes abort on";

/// The chip names this CUPTI's profiler host knows ("GV100", ..., "GH100", ...); none under a sanitizer.
[[nodiscard]] std::vector<std::string> supported_chips();

/// A chip of a compute capability, for tests and as a fallback when the device cannot be asked
/// (cuptiDeviceGetChipName is the truth): 9.0 -> "GH100", 8.0 -> "GA100", 8.9 -> "AD102". Where
/// several chips share a capability (8.6: GA102..GA107) the largest is named. Empty when unknown.
[[nodiscard]] std::string_view chip_for_compute_capability(int major, int minor);

/// Keeps the metrics `chip` can collect (their `unit` filled in from CUPTI), and explains each one
/// it cannot: "metric 'dram__bogus.sum' is not available on GH100; collecting the others". An
/// unknown chip is one error listing the supported ones, and no metric is kept; so is a process
/// with ASan, TSan or MSan (kSanitizerRefusal).
[[nodiscard]] MetricSelection validate_metrics(std::string_view chip, std::span<const Metric> metrics);

/// A config image for the range profiler, with what it holds.
struct ConfigImage {
  std::vector<std::uint8_t> image;  ///< empty when nothing could be scheduled
  std::size_t passes = 0;           ///< kernel replays needed to collect every metric
  std::vector<Metric> metrics;      ///< the metrics in the image (the valid part of the request)
  std::vector<std::string> errors;  ///< validation and CUPTI problems, one line each
};

/// Validates `metrics` for `chip` and builds the config image for the valid ones.
[[nodiscard]] ConfigImage build_config_image(std::string_view chip, std::span<const Metric> metrics);

/// The roofline's counter inputs from a range's combined values (`values[i]` is `metrics[i]`'s).
/// DRAM bytes need both the read and the write metric; a precision's FLOPs (add + mul + 2 × fma)
/// need all three of its instruction counts. Inputs whose metrics are missing stay empty.
[[nodiscard]] model::RangeCounters roofline_counters(std::span<const Metric> metrics,
                                                     std::span<const double> values);

}  // namespace cuscope::inline v0::detail

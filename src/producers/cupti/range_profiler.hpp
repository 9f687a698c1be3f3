// producers/cupti/range_profiler.hpp — hardware counters per range with CUPTI's Range Profiler
// (kernel replay, one auto range per kernel). GPU only; opt-in, because replay is expensive.
//
// A profiling window opens when a chosen range is entered (within the chosen steps) and closes
// when it is left. Inside the window, every scope boundary on the window's thread collects what
// has been profiled so far and hands it to the scope that was innermost: kernel replay runs each
// launch to completion before the launch returns, so the kernels profiled between two boundaries
// are exactly those launched from that scope. Kernels launched by other threads while a window is
// open are profiled too, and counted into the window's thread: a stated limit.
// Ranges outside the chosen set are never replayed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/range_tree.hpp"

namespace cuscope::inline v0::detail {

struct Sink;

/// What to collect: metric names (gpu__time_duration.sum first, it weighs the others), how each
/// combines over kernels, and the config image built by the host half for the device's chip.
struct CounterPlan {
  std::string chip;
  std::vector<std::string> metrics;
  std::vector<std::string> labels;
  std::vector<std::string> units;
  std::vector<bool> duration_weighted;  ///< per metric: percentages and rates; others are summed
  std::vector<std::uint8_t> config_image;
  std::size_t passes = 0;
};

/// Initializes CUPTI's profiler interface: "" when it is ready, else one line saying why counters
/// are off (another tool, such as Nsight Compute, holding the GPU's profiler). Every other profiler
/// call, device_chip_name() included, comes after it has succeeded.
std::string initialize_profiler() noexcept;
/// Undoes initialize_profiler() (nothing when it did not succeed).
void deinitialize_profiler() noexcept;
/// Tests: cuptiProfilerInitialize's result is `result` (a CUptiResult) instead of its own; 0 calls it.
void set_profiler_initialize_result_for_testing(int result) noexcept;

/// The chip name CUPTI's profiler knows `device` by ("GH100"), or "" when it cannot say (also
/// before initialize_profiler() has succeeded).
std::string device_chip_name(int device) noexcept;

/// Turns the range profiler on for the current CUDA context: "on", or one line saying why not.
std::string enable_range_profiler(Sink& sink, CounterPlan plan) noexcept;
/// Closes any open window (collecting it) and turns the range profiler off.
void disable_range_profiler() noexcept;

/// Why counters turned off after they had started (cuptiRangeProfilerStart refused, the context
/// was destroyed), or "" while they work or never started.
std::string counters_failure() noexcept;

/// Scope hooks, called on the scope's thread while counters may be collected (flag kCounters).
void counters_on_enter(const model::Node* entered) noexcept;
/// `innermost` is the range innermost once `left` has closed (nullptr at the top).
void counters_on_exit(const model::Node* left, const model::Node* innermost) noexcept;

}  // namespace cuscope::inline v0::detail

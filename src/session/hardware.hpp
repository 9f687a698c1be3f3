// session/hardware.hpp — hardware counters and roofline verdicts for a session: turning
// CUSCOPE_METRICS into a running range profiler, and a snapshot's ranges into verdicts.
#pragma once

#include <cuscope/report.hpp>
#include <string>
#include <vector>

#include "model/roofline.hpp"
#include "producers/cupti/metrics_host.hpp"

namespace cuscope::inline v0::detail {

class Session;

/// Starts counter collection as the session's options ask: "on: ..." describing what is
/// collected where, or one line saying why counters are off. Problems with single metrics are
/// warned (and noted) and the rest goes on. The GPU must have been found.
std::string start_counters(Session& session) noexcept;

/// The current device's theoretical peaks, from its properties (empty source when unknown).
model::DevicePeaks device_peaks() noexcept;

/// Fills every range's verdict from its activity and its counters (`metrics` is the plan the
/// counters follow, in order).
void apply_verdicts(Report& report, const model::DevicePeaks& peaks, const std::vector<Metric>& metrics);

}  // namespace cuscope::inline v0::detail

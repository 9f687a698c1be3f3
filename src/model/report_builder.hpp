// model/report_builder.hpp — turns the forest of thread trees and the ranges' GPU activity into a
// Report: one range per distinct path (threads merged), inclusive roll-ups, kernel and graph rows
// sorted, counters combined, and the model's diagnostics.
//
// Reads only: it never changes the forest or the activity it is given, so a snapshot can be taken
// while producers wait. Runs under the aggregator's lock; not on any hot path.
#pragma once

#include <cuscope/report.hpp>

#include "model/attribution.hpp"
#include "model/graphs.hpp"
#include "model/kernel_names.hpp"
#include "model/range_activity.hpp"
#include "model/range_tree.hpp"

namespace cuscope::model {

/// What a Report is built from.
struct ReportSources {
  const Forest& forest;
  const RangeActivities& activities;
  const Attribution& attribution;  // the calls still in its table: their spans
  const KernelNames& kernel_names;
  const CounterPlan& counter_plan;
  const GraphNodeMap& graph_nodes;
  const Diagnostics& diagnostics;  // the activity counters, added to the report's
};

/// Fills `report.ranges` (the merged range tree with host, CUDA-event and activity statistics) and
/// adds the activity counters to `report.diagnostics`.
void build_report(const ReportSources& sources, Report& report);

}  // namespace cuscope::model

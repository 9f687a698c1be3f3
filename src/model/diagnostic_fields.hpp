// model/diagnostic_fields.hpp — every Diagnostics counter once: its JSON name and how the table's
// header says it (one, many). The report builder (summing the model's counters into a report), the
// JSON writer, the JSON report reader (cuscope show), merge and the table all walk this list, so a
// new counter is added here and nowhere else. Order: the table's. In the model, below every layer
// that reads it; the names are data, the model formats nothing with them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cuscope/report.hpp>
#include <string_view>

namespace cuscope::model {

struct DiagnosticField {
  std::uint64_t Diagnostics::*field;
  std::string_view json;
  std::string_view one;  ///< "" for counters the header words itself (overhead_ns, activity_*)
  std::string_view many;
};

inline constexpr std::array<DiagnosticField, 37> kDiagnosticFields{{
    {&Diagnostics::dropped_records, "dropped_records", "dropped record", "dropped records"},
    {&Diagnostics::zero_timestamp_records, "zero_timestamp_records", "record with a zero timestamp",
     "records with a zero timestamp"},
    {&Diagnostics::unresolved_records, "unresolved_records", "record not matched to a scope",
     "records not matched to a scope"},
    {&Diagnostics::unknown_records, "unknown_records", "record of an unknown kind",
     "records of an unknown kind"},
    {&Diagnostics::outside_window_records, "outside_window_records", "record outside the window",
     "records outside the window"},
    {&Diagnostics::outside_window_scopes, "outside_window_scopes", "scope outside the window",
     "scopes outside the window"},
    {&Diagnostics::open_scopes, "open_scopes", "scope still open", "scopes still open"},
    {&Diagnostics::unbalanced_ends, "unbalanced_ends", "unbalanced end", "unbalanced ends"},
    {&Diagnostics::cross_thread_ends, "cross_thread_ends", "scope ended on another thread",
     "scopes ended on another thread"},
    {&Diagnostics::depth_overflows, "depth_overflows", "entry past the maximum depth",
     "entries past the maximum depth"},
    {&Diagnostics::adjusted_names, "adjusted_names", "adjusted name", "adjusted names"},
    {&Diagnostics::name_table_full, "name_table_full", "entry past a full name table",
     "entries past a full name table"},
    {&Diagnostics::unrecorded_scopes, "unrecorded_scopes", "scope not recorded (thread limit or out of memory)",
     "scopes not recorded (thread limit or out of memory)"},
    {&Diagnostics::gpu_event_failures, "gpu_event_failures", "CUDA event failure", "CUDA event failures"},
    {&Diagnostics::overhead_records, "overhead_records", "CUPTI overhead record", "CUPTI overhead records"},
    {&Diagnostics::counter_ranges_dropped, "counter_ranges_dropped", "replayed kernel without counters",
     "replayed kernels without counters"},
    {&Diagnostics::counted_kernels_untimed, "counted_kernels_untimed",
     "kernel replayed for counters, untimed by CUPTI (its time is the counters' GPU time)",
     "kernels replayed for counters, untimed by CUPTI (their time is the counters' GPU time)"},
    {&Diagnostics::incomplete_at_exit, "incomplete_at_exit", "record still running at exit",
     "records still running at exit"},
    {&Diagnostics::activity_buffers_refused, "activity_buffers_refused",
     "CUPTI buffer refused (memory bound)", "CUPTI buffers refused (memory bound)"},
    {&Diagnostics::scopes_in_capture, "scopes_in_capture",
     "scope inside a graph capture (no CUDA-event time)",
     "scopes inside a graph capture (no CUDA-event time)"},
    {&Diagnostics::rejected_counts, "rejected_counts", "count of inf or NaN refused",
     "counts of inf or NaN refused"},
    {&Diagnostics::trace_records_dropped, "trace_records_dropped", "trace record dropped (trace truncated)",
     "trace records dropped (trace truncated)"},
    {&Diagnostics::unmatched_span_ends, "unmatched_span_ends", "NVTX range end without an open start",
     "NVTX range ends without an open start"},
    {&Diagnostics::spans_dropped, "spans_dropped", "NVTX start/end range not tracked (too many open)",
     "NVTX start/end ranges not tracked (too many open)"},
    {&Diagnostics::graph_nodes_evicted, "graph_nodes_evicted", "CUDA graph node forgotten (node map full)",
     "CUDA graph nodes forgotten (node map full)"},
    {&Diagnostics::graph_kernels_unknown_node, "graph_kernels_unknown_node",
     "graph kernel of an unknown node", "graph kernels of an unknown node"},
    {&Diagnostics::graph_kernels_device_launched, "graph_kernels_device_launched",
     "kernel of a device-launched graph", "kernels of device-launched graphs"},
    {&Diagnostics::graph_kernels_no_launch, "graph_kernels_no_launch",
     "graph kernel without its launch (correlation 0)", "graph kernels without their launch (correlation 0)"},
    {&Diagnostics::graph_kernels_after_update, "graph_kernels_after_update",
     "graph kernel of an updated exec not paired with the new graph",
     "graph kernels of an updated exec not paired with the new graph"},
    {&Diagnostics::graph_exec_updates_unmapped, "graph_exec_updates_unmapped",
     "CUDA graph exec update of unknown nodes (later replays may keep the old scopes)",
     "CUDA graph exec updates of unknown nodes (later replays may keep the old scopes)"},
    {&Diagnostics::gpu_span_records_lost, "gpu_span_records_lost",
     "GPU record of a call no longer tracked (not in its GPU span)",
     "GPU records of calls no longer tracked (not in their GPU span)"},
    {&Diagnostics::allocations_untracked, "allocations_untracked",
     "allocation not tracked (live-memory peaks are lower bounds)",
     "allocations not tracked (live-memory peaks are lower bounds)"},
    {&Diagnostics::launch_notes_lost, "launch_notes_lost", "CUDA call whose scope was not noted (ring or queue full)",
     "CUDA calls whose scope was not noted (ring or queue full)"},
    {&Diagnostics::kernel_names_uncached, "kernel_names_uncached",
     "kernel name looked up past the name cache (demangled again)",
     "kernel names looked up past the name cache (demangled again)"},
    {&Diagnostics::overhead_ns, "overhead_ns", "", ""},
    {&Diagnostics::activity_buffers, "activity_buffers", "", ""},
    {&Diagnostics::activity_processing_ns, "activity_processing_ns", "", ""},
}};

/// Adds every counter of `in` to `out` (a report's sum of its sources, merge's sum of its ranks).
inline void add_diagnostics(Diagnostics& out, const Diagnostics& in) {
  for (const DiagnosticField& f : kDiagnosticFields) out.*f.field += in.*f.field;
}

/// Whether no counter stands twice in kDiagnosticFields.
constexpr bool distinct_diagnostic_fields() {
  for (std::size_t i = 0; i < kDiagnosticFields.size(); ++i) {
    for (std::size_t j = i + 1; j < kDiagnosticFields.size(); ++j) {
      if (kDiagnosticFields[i].field == kDiagnosticFields[j].field) return false;
    }
  }
  return true;
}

// A counter added to Diagnostics without its line here would be left out of the report's sum, the
// JSON and the table. Diagnostics holds counters only, so its size counts them; with no line twice,
// every counter has exactly one.
static_assert(sizeof(Diagnostics) == kDiagnosticFields.size() * sizeof(std::uint64_t),
              "every Diagnostics counter needs its line in kDiagnosticFields");
static_assert(distinct_diagnostic_fields(), "a Diagnostics counter stands twice in kDiagnosticFields");

}  // namespace cuscope::model

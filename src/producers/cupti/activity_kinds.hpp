// producers/cupti/activity_kinds.hpp — which CUPTI activity kinds a session has on, and every switch
// of them: on at the start (and the API records of the launching calls with external correlation),
// off and on again around the wait steps and after the last step window (pauses), off at the stop.
// The order of the switches is what keeps every record tied to its launch (docs/cupti-windows.md,
// "Pausing between step windows").
//
// Never here: buffers, records, the session's sink, a cuscope lock, a note to the user (the adapter
// says why a switch was refused: these return it).
#pragma once

#include <cupti.h>

#include <string>
#include <vector>

#include "producers/cupti/traced_calls.hpp"

namespace cuscope::inline v0::detail {

/// The activity kinds a session enables: kernels, copies, sets and overhead always; synchronization
/// and memory records as `want` asks; external correlations and internal launch API records unless
/// launches are noted by callbacks.
std::vector<CUpti_ActivityKind> activity_kinds(RecordChoice want, bool launch_notes);

/// A session's kinds. One caller at a time (the adapter's start and stop, and the pauses, which the
/// session serializes).
class ActivityKinds {
 public:
  /// Enables (without launch notes) the API records of the calls that launch work, and only those,
  /// then activity_kinds(want, launch_notes) in reverse, the kernels last, as resume() does: "" or
  /// why not (what went on stays listed for off()). With launch notes, pause() and resume() switch
  /// the launch callbacks too.
  std::string start(RecordChoice want, bool launch_notes);
  /// CUDA_EVENT records (cuscope's own events' device timestamps): on, and kept on in pauses.
  CUptiResult enable_event_records();
  /// Every kind off, paused ones included (the stop, or a start that failed).
  void off();

  /// The kinds off in the order they went on (the records of launches first), CUDA_EVENT kept, then
  /// the launch callbacks: "" or why not (what was switched by then stays switched, for resume()).
  std::string pause();
  /// The launch callbacks on, then the API kinds (the records that tie the others to scopes), then
  /// the others in reverse, the records of launches last; back in their first order: "" or why not.
  std::string resume();

  /// Tests: `kinds` listed as on, no launch callbacks, and `fake` standing for cuptiActivityEnable
  /// (`on`) and cuptiActivityDisable in every switch until off().
  void fake_for_testing(const std::vector<CUpti_ActivityKind>& kinds,
                        CUptiResult (*fake)(CUpti_ActivityKind kind, bool on));

 private:
  CUptiResult trace_calls();
  CUptiResult switch_kind(CUpti_ActivityKind kind, bool on) const;

  std::vector<CUpti_ActivityKind> enabled_;  // on: the kernels first, the API kinds last
  std::vector<CUpti_ActivityKind> paused_;   // off for a pause, in the order they went off
  RecordChoice want_{};
  bool launch_notes_ = false;
  CUptiResult (*fake_)(CUpti_ActivityKind, bool) = nullptr;
};

}  // namespace cuscope::inline v0::detail

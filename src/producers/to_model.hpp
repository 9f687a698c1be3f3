// producers/to_model.hpp — one event a producer made, handed to its session's model and, in trace
// mode, to the trace: what the launch and call notes' drain (launch_notes.cpp) and the graph
// callbacks (cupti/subscriber.cpp) each do with their events.
//
// Never here: a lock (the caller holds what the model's side needs), or an exception let out: out of
// memory in the trace still hands the event to the model; out of memory in the model loses it.
#pragma once

#include "producers/sink.hpp"
#include "trace/writer.hpp"

namespace cuscope::inline v0::detail {

/// `e` to `w` (the trace writer, null outside trace mode), then to `sink`'s model.
template <class Event>
void to_model_and_trace(Sink& sink, trace::Writer* w, const Event& e) noexcept {
  try {
    if (w != nullptr) w->on(e);
  } catch (...) {  // the trace out of memory: the model still gets the event
  }
  try {
    sink.aggregator.on(e);
  } catch (...) {  // the model out of memory: the event is lost
  }
}

}  // namespace cuscope::inline v0::detail

// producers/cupti/subscriber.hpp — CUPTI's one subscriber (cuptiSubscribe) for a session: the graph
// node and exec callbacks of the graph breakdown (docs/cuda-graphs.md) and, with
// CUSCOPE_ATTRIBUTION=launch, the launch callbacks that tie each launch, copy, set, allocation and
// wait to the scope open on its thread (producers/launch_notes.hpp), and the callbacks that note the
// synchronizes, allocations and frees whose records are off (call_callbacks.hpp).
//
// Never here: activity records and their buffers (adapter.cpp); a cuscope lock held while calling
// into CUPTI; the aggregator's lock in a callback (graph nodes have their own).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <cuscope/session.hpp>
#include <string>
#include <utility>
#include <vector>

#include "producers/cupti/traced_calls.hpp"

namespace cuscope::inline v0::detail {

/// The records `o` asks for besides kernels, copies and sets.
inline RecordChoice record_choice(const Options& o) { return {o.sync_records, o.memory_records}; }

struct Sink;

/// What subscribe() turned on.
struct Subscribed {
  bool graphs = false;         ///< the graph breakdown's callbacks
  bool launches = false;       ///< the launch callbacks, and the call callbacks records left off need
  bool event_records = false;  ///< the callbacks that note cuscope's own event records' ids
  std::string why_not;         ///< empty, or why something asked for is off (one line)
};
/// Subscribes for `sink`: the graph callbacks when sink.options.graphs, the launch callbacks when
/// `launches`, the event record callbacks when wants_cupti_event_clock(sink.options). Without a
/// subscriber (CUPTI refused: another tool holds it) none is on; a graph breakdown that is off is
/// one note saying why, and the aggregator is told.
Subscribed subscribe(Sink& sink, bool launches) noexcept;
/// Ends the subscription, if any (no cuscope lock held). After a detach (armed or made) with no
/// CUPTI call: the subscriber went with CUPTI.
void unsubscribe() noexcept;
/// Turns the launch callbacks subscribe() turned on off (`paused`) or on again: "" or why not.
/// Nothing when they are not on. The graph and event record callbacks stay as they are.
std::string pause_launch_callbacks(bool paused) noexcept;

/// Whether the session's cuptiSubscribe was refused (another tool holds CUPTI's one subscriber).
bool subscriber_refused() noexcept;
/// Detaching after the last step window (detach.hpp): every runtime and driver API callback on (a
/// subscriber made for it if the session has none), then the detach armed, so that the exit of the
/// collector's next CUDA call finalizes CUPTI: "" or why not (nothing armed then, the domains off again). Called
/// once the kinds are off and the launch callbacks paused, by the adapter (no cuscope lock held).
std::string arm_finalize_at_api_exit() noexcept;
/// After a refused finalize: the API callbacks arm_finalize_at_api_exit() turned on, off (CUPTI stays
/// attached and paused; the graph exec-update callbacks go too: no window follows).
void stop_api_callbacks() noexcept;

/// The driver calls whose callbacks subscribe() enables for launch notes when a session asks for
/// `want`: every call that launches, copies or sets (and waits, allocates or frees, where their
/// records are on: traced_call()), and the synchronizes, allocations and frees whose records are
/// off (call_callbacks.hpp), by callback id, ascending.
std::vector<CUpti_CallbackId> launch_note_callbacks(RecordChoice want);

/// A callback: its domain and id.
using Callback = std::pair<CUpti_CallbackDomain, CUpti_CallbackId>;
/// Every callback subscribe() enables for a session with options `o`, with launch notes when
/// `launches`: the graph breakdown's (o.graphs), launch_note_callbacks(record_choice(o)), and the
/// event record calls' (wants_cupti_event_clock(o)), in that order. The GPU bench's floor of CUPTI
/// set up as cuscope's defaults turns on exactly these (bench/minimal_cupti.hpp).
std::vector<Callback> session_callbacks(const Options& o, bool launches);

/// What the graph resource callbacks do once CUPTI's handles are ids (called on the thread that
/// creates the node; tests call them without CUPTI): a node created now is tied to the calling
/// thread's innermost open range in `sink` (none: outside every range); a clone to its original's.
void graph_node_created(Sink& sink, std::uint64_t node_id, std::uint32_t graph_id) noexcept;
void graph_node_cloned(Sink& sink, std::uint64_t node_id, std::uint64_t original_node_id,
                       std::uint32_t exec_id = 0) noexcept;
/// Instantiation made exec `exec_id` of these clones (reported with the exec's handle on the
/// instantiating thread, claimed at its GRAPHEXEC_CREATED).
void graph_exec_nodes(Sink& sink, std::uint32_t exec_id, std::vector<std::uint64_t> node_ids) noexcept;
/// cudaGraphExecUpdate / cuGraphExecUpdate succeeded in the API call `correlation`, with the
/// updating graph's top-level nodes (docs/cupti.md, "CUDA graphs").
void graph_exec_updated(Sink& sink, std::uint32_t exec_id, std::uint64_t correlation,
                        std::vector<std::uint64_t> graph_node_ids) noexcept;

/// subscribe(sink, false), for the graph node callbacks only: true when the breakdown is on. Off
/// (CUSCOPE_GRAPHS=0, or cuptiSubscribe refused, e.g. another tool holds CUPTI's one subscriber): graph
/// kernels count in their launching range only, and a refusal is one note saying why.
bool start_graph_breakdown(Sink& sink) noexcept;

/// Tests: what cuptiSubscribe returns (a CUptiResult; 0: call it).
void set_subscribe_result_for_testing(int result) noexcept;

}  // namespace cuscope::inline v0::detail

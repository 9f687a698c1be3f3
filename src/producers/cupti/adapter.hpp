// producers/cupti/adapter.hpp — CUPTI activity tracing for a session.
//
// Enables kernel, copy, set, memory, synchronization, overhead and external-correlation records,
// and runtime + driver API records for the calls that launch work (everything else, cuscope's own
// event calls included, stays untraced). Scopes push their instance id as external correlation
// (kind CUSTOM0). Completed buffers (a bounded pool of 4 MiB buffers) are decoded into the
// session's aggregator on CUPTI's thread, or on the thread that flushes. A CUPTI subscriber gets
// the graph node callbacks (creation, clones) that tie replayed kernels to capture-time scopes; when
// another tool holds the subscriber, tracing goes on without that breakdown (one note says why).
// No cuscope lock is held while calling into CUPTI, and the buffer callback calls nothing in CUPTI
// under a lock.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace cuscope::inline v0::detail {

struct Sink;

/// Starts tracing into `sink` (the session's): "on", or one line saying why tracing is off
/// (nothing is left enabled then). The CUDA device must have been found.
std::string start_activity_tracing(Sink& sink) noexcept;
/// Delivers every buffer whose records are complete (a normal flush: work still running stays
/// with CUPTI and comes later, never as a record with zero timestamps), then ages waiting records.
void flush_activity() noexcept;
/// The same, as the collector thread's periodic call.
void poll_activity() noexcept;
/// After a counter window has closed (its kernels finished: the range profiler's decode synchronized
/// the context): hands back every buffer, incomplete ones too. Kernels replayed for counters get
/// records CUPTI never completes (no timestamps), and a default flush never returns a buffer that
/// holds one: without this, every later record of that thread would wait for the session's end.
void deliver_after_counters() noexcept;
/// Delivers what is complete, then forces out the rest (counted as incomplete at exit), disables
/// every kind and detaches the session. CUPTI is not finalized (see adapter.cpp).
void stop_activity_tracing() noexcept;

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

/// Subscribes for the graph node callbacks (start_activity_tracing() calls it): true when the
/// breakdown is on. Off (CUSCOPE_GRAPHS=0, or cuptiSubscribe refused, e.g. another tool holds
/// CUPTI's one subscriber): graph kernels count in their launching range only, and a refusal is
/// one note saying why.
bool start_graph_breakdown(Sink& sink) noexcept;

/// Tests: what cuptiSubscribe returns (a CUptiResult; 0: call it).
void set_subscribe_result_for_testing(int result) noexcept;
/// Tests: the libcupti API version cuscope believes is loaded (0: ask cuptiGetVersion).
void set_cupti_version_for_testing(std::uint32_t version) noexcept;

}  // namespace cuscope::inline v0::detail

// producers/cupti/adapter.hpp — CUPTI activity tracing for a session.
//
// Enables kernel, copy, set, memory, synchronization, overhead and external-correlation records,
// and runtime + driver API records for the calls that launch work (everything else, cuscope's own
// event calls included, stays untraced). Scopes push their instance id as external correlation
// (kind CUSTOM0). Completed buffers (a bounded pool of 4 MiB buffers) are decoded into the
// session's aggregator on CUPTI's thread, or on the thread that flushes. No cuscope lock is held
// while calling into CUPTI, and the buffer callback calls nothing in CUPTI under a lock.
#pragma once

#include <string>

namespace cuscope::inline v0::detail {

class Session;

/// Starts tracing into `session`: "on", or one line saying why tracing is off (nothing is left
/// enabled then). The CUDA device must have been found.
std::string start_activity_tracing(Session& session) noexcept;
/// Delivers every record CUPTI holds, finished buffers or not (forced flush).
void flush_activity() noexcept;
/// Delivers the buffers CUPTI has completed (the collector thread's periodic call).
void poll_activity() noexcept;
/// Flushes and disables every kind; the session stops receiving records. With `finalize` (at
/// shutdown) CUPTI is finalized too, before CUDA's teardown.
void stop_activity_tracing(bool finalize = true) noexcept;

}  // namespace cuscope::inline v0::detail

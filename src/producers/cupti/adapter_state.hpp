// producers/cupti/adapter_state.hpp — what the adapter's two files share (adapter.cpp: tracing's
// start, pauses, flushes and stop; detach_sequence.cpp: the detach after the last step window): the
// adapter's one State, and the flush, delivery and last-records steps both end with.
// Never here: anything for outside the adapter (adapter.hpp is its interface), or a definition.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>

#include "producers/cupti/activity_kinds.hpp"
#include "producers/cupti/buffer_pool.hpp"
#include "producers/sink.hpp"

namespace cuscope::inline v0::detail {

// The activity buffers (buffer_pool.hpp): 4 MiB while 32 are out, then 256 KiB until 256 MiB in all,
// then none (CUPTI drops records and counts them; cuscope counts the refusals too).
inline constexpr BufferPool::Limits kBufferLimits{4u << 20, 256u << 10, 128u << 20, 256u << 20};
// Zeroed buffers kept ready for the next threads that launch (made on the collector's thread).
inline constexpr std::size_t kSpareBuffers = 2;

/// The adapter's one state: the session CUPTI delivers into, its buffers and kinds, its pauses, and
/// when the detach began and was armed.
struct State {
  std::atomic<Sink*> target{nullptr};
  BufferPool buffers{kBufferLimits};
  ActivityKinds kinds;  // on, and paused between step windows
  bool paused = false;
  bool pause_refused = false;  // a pause or resume was refused: tracing stays as it is from then on
  std::atomic<std::uint64_t> detach_paused_ns{0};  // when the pause before a detach began
  std::uint64_t detach_armed_ns = 0;               // when it was armed (the collector's only)
  // cuscope's cuptiActivityEnableCudaEventDeviceTimestamps(1) succeeded and is not undone yet: the
  // stop turns them off exactly then, whatever the clock's flags say (a give-up clears one).
  bool device_timestamps_on = false;
};

/// The adapter's state, made on first use and leaked (CUPTI may call back until the process ends).
State& state();

/// "<what> returned <CUPTI's error>", in words the user can act on (cupti/errors.hpp).
std::string refusal(const char* what, CUptiResult r);
/// The lock every flush takes, one at a time, and the detach's arming (adapter.cpp, flush_cupti).
std::mutex& flush_mutex();
/// Delivers buffers CUPTI has completed (`flags` 0), or every buffer (FORCED), into the session's
/// model, then retries and ages the records waiting for their correlation. No cuscope lock held.
void deliver(std::uint32_t flags);
/// The last of a session's records, then its kinds off: what the stop at exit and the detach both
/// end with.
void last_records_and_kinds_off(State& s, Sink& target);
/// Waits, a bounded time (1 s), for a thread inside cuptiFinalize. True when none is (any longer).
bool wait_out_finalize();
/// Before CUPTI is attached again after cuscope's finalize (took_finalize(); nothing otherwise): the
/// buffers it never handed back, taken back into the pool (BufferPool::reclaim_out()), and said once
/// (kept_buffers_note()). No flush may be under way (the flushes' lock held, or CUPTI detached).
void reclaim_kept_buffers(State& s) noexcept;

}  // namespace cuscope::inline v0::detail

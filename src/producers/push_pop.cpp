// producers/push_pop.cpp — cuscope::push()/pop(): a scope opened and closed by name, without an RAII
// object, on a per-thread stack of the scopes' tokens; and the count of an end with nothing to end
// (detail::unmatched_end(): a pop() with no push(), a Python scope's exit with no entry).
//
// Equal neighbours share one stack entry, so balanced use never runs out; past the stack's bound a
// push records nothing (counted) and its pop undoes nothing. Never here: locks, or allocation but
// the thread's stack on its first push.
#include <cstdint>
#include <cuscope/scope.hpp>
#include <string_view>

#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/engine.hpp"
#include "producers/hot_tls.hpp"
#include "producers/scope_state.hpp"
#include "producers/sink.hpp"
#include "trace/writer.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {
namespace {

// push()/pop() tokens. Equal neighbours (recursion, entries past the maximum depth, pushes while
// recording is off) share one entry, so balanced use never runs out; past kMaxEntries distinct
// ones, a push records nothing (counted as a depth overflow) and its pop undoes nothing.
struct ThreadPushes {
  static constexpr std::uint32_t kMaxEntries = 2 * model::kHardMaxDepth;
  struct Entry {
    std::uint32_t token;
    std::uint32_t repeat;
    bool entered;  // enter_named() returned a state: the pop must exit() it
  };
  Entry entries[kMaxEntries];
  std::uint32_t depth = 0;
  std::uint64_t skipped = 0;
};
CUSCOPE_HOT_TLS thread_local ThreadPushes* t_pushes = nullptr;

// The calling thread's push()/pop() stack, made on its first push() or pop() (nullptr when memory
// runs out: that push records nothing).
ThreadPushes* thread_pushes() noexcept {
  return t_pushes != nullptr ? t_pushes : make_thread_owned(t_pushes);
}

}  // namespace

void unmatched_end() noexcept {
  if (const Engine* e = forward_target()) return e->unmatched_end();
  // The session's count, not the thread tree's: no scope event stands for it, so only the session's
  // count reaches a trace (its summary) and the trace's replay.
  current_sink().stray_pops.fetch_add(1, std::memory_order_relaxed);
}

void forget_thread_pushes() noexcept {
  if (t_pushes != nullptr) {
    t_pushes->depth = 0;
    t_pushes->skipped = 0;
  }
}

}  // namespace detail

void push(std::string_view name, cudaStream_t stream) noexcept {
  if (const detail::Engine* e = detail::forward_target()) return e->push(name, stream);
  detail::ThreadPushes* pushes_or_null = detail::thread_pushes();
  if (pushes_or_null == nullptr) {  // out of memory: recorded nothing, counted
    detail::current_sink().forest.unrecorded_scopes.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  auto& pushes = *pushes_or_null;
  if (pushes.depth == detail::ThreadPushes::kMaxEntries) {
    ++pushes.skipped;
    if (detail::ThreadState* ts = detail::t_state) {
      ts->tree->depth_overflows.add(1);
      if (detail::g_flags.load(std::memory_order_relaxed) & detail::kTrace)
        trace::record(trace::ScopeKind::Overflow, ts->tree->slot(), 0, detail::now_ns());
    }
    return;
  }
  std::uint32_t token = 0;
  detail::ThreadState* ts = nullptr;
  if (detail::g_state.load(std::memory_order_relaxed) != detail::kOff)
    ts = detail::enter_named(name, stream, token);
  const bool entered = ts != nullptr;
  if (pushes.depth > 0) {
    auto& top = pushes.entries[pushes.depth - 1];
    if (top.token == token && top.entered == entered && top.repeat != UINT32_MAX) {
      ++top.repeat;
      return;
    }
  }
  pushes.entries[pushes.depth++] = {token, 1, entered};
}

void pop() noexcept {
  if (const detail::Engine* e = detail::forward_target()) return e->pop();
  detail::ThreadPushes* pushes_or_null = detail::thread_pushes();
  if (pushes_or_null == nullptr) return;
  auto& pushes = *pushes_or_null;
  if (pushes.skipped > 0) {
    --pushes.skipped;
    return;
  }
  if (pushes.depth == 0) {
    detail::unmatched_end();
    return;
  }
  detail::ThreadState* ts = detail::t_state;
  auto& top = pushes.entries[pushes.depth - 1];
  const std::uint32_t token = top.token;
  const bool entered = top.entered;
  if (--top.repeat == 0) --pushes.depth;
  if (entered && ts != nullptr) detail::exit(ts, token);
}

}  // namespace v0
}  // namespace cuscope

// producers/scope.cpp — the hot path: a scope's enter and exit.
//
// Steady state per scope: one relaxed load of the session flags, a thread-local pointer, an NVTX
// push/pop (no-ops without a tool), two clock reads and the range tree update; plus two
// cudaEventRecord calls when GPU timing is on and a correlation push/pop when CUPTI traces.
// Never here: locks, allocation, string copies or hashing (those happen on a call site's first
// visit only), device synchronization.
#include <cuscope/scope.hpp>

#include <bit>

#include "model/range_tree.hpp"
#include "producers/clock.hpp"
#include "producers/cupti/range_profiler.hpp"
#include "producers/nvtx_domain.hpp"
#include "session/session.hpp"
#include "trace/writer.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {

std::atomic<int> g_state{kNotStarted};
std::atomic<std::uint32_t> g_flags{0};
std::atomic<CorrelationHook> g_push_correlation{nullptr};
std::atomic<CorrelationPopHook> g_pop_correlation{nullptr};

namespace {

// A scope's token (Scope::depth_): the tree depth it opened at, and what it did.
constexpr std::uint32_t kDepthMask = 0xFFFF;
constexpr std::uint32_t kOverflow = 0xFFFF;
constexpr std::uint32_t kRecorded = 1u << 16;
constexpr std::uint32_t kPushed = 1u << 17;
constexpr std::uint32_t kTimedGpu = 1u << 18;
constexpr std::uint32_t kTraced = 1u << 19;

thread_local ThreadState* t_state = nullptr;

struct ThreadPushes {
  std::uint32_t tokens[model::kHardMaxDepth];
  std::uint32_t depth = 0;
};
thread_local ThreadPushes t_pushes;

nvtxStringHandle_t nvtx_handle(std::uint32_t id) {
  return static_cast<nvtxStringHandle_t>(session().forest.names.tag(id).load(std::memory_order_acquire));
}

void ensure_nvtx(std::uint32_t id) {
  auto& tag = session().forest.names.tag(id);
  if (tag.load(std::memory_order_acquire) != nullptr) return;
  void* expected = nullptr;
  tag.compare_exchange_strong(expected, static_cast<void*>(nvtx_register(session().forest.names.name(id))),
                              std::memory_order_acq_rel);
}

std::uint32_t intern_site(Site& site) {
  const std::uint32_t id = session().forest.names.intern(site.name);
  ensure_nvtx(id);
  site.id.store(id, std::memory_order_release);
  return id;
}

std::uint32_t push_correlation(std::uint64_t instance) {
  CorrelationHook push = g_push_correlation.load(std::memory_order_acquire);
  if (push == nullptr) return 0;
  push(instance);
  return kPushed;
}

// The calling thread's state, attached on its first scope or count (nullptr past the thread limit).
ThreadState* this_thread() noexcept {
  if (t_state == nullptr) t_state = attach_thread();
  return t_state;
}

ThreadState* enter_id(std::uint32_t id, cudaStream_t stream, std::uint32_t& token) noexcept {
  ThreadState* ts = this_thread();
  if (ts == nullptr) return nullptr;
  nvtx_push(nvtx_handle(id));
  const std::uint32_t flags = g_flags.load(std::memory_order_relaxed);
  std::uint32_t tok = 0;
  if (flags & kRecording) {
    const std::uint64_t t = now_ns();
    const model::ThreadTree::Token b = ts->tree->begin(id, t);
    const bool overflow = b.depth == model::ThreadTree::kOverflowDepth;
    tok = kRecorded | (overflow ? kOverflow : b.depth);
    if (flags & kTrace) {
      trace::record(trace::ScopeKind::Enter, ts->tree->slot(), id, t, b.instance);
      tok |= kTraced;
    }
    if (flags & kCorrelation) tok |= push_correlation(b.instance);
    if ((flags & kCounters) && !overflow) counters_on_enter(ts->tree->innermost());
    if ((flags & kGpuEvents) && !overflow && ts->gpu && ts->gpu->begin(b.depth, stream)) tok |= kTimedGpu;
  } else if (flags & kCorrelation) {
    tok |= push_correlation(model::kOutsideWindow);
  }
  token = tok;
  return ts;
}

bool started() noexcept { return g_state.load(std::memory_order_relaxed) == kOn || start_from_scope(); }

// Adds to the counter `id` of the calling thread's innermost scope.
void count_id(std::uint32_t id, double amount) noexcept {
  ThreadState* ts = this_thread();
  if (ts == nullptr) return;
  try {
    ts->tree->count(id, amount);
    if (g_flags.load(std::memory_order_relaxed) & kTrace)
      trace::record(trace::ScopeKind::Count, ts->tree->slot(), id, now_ns(),
                    std::bit_cast<std::uint64_t>(amount));
  } catch (...) {  // out of memory on a first count: the count is lost, the program goes on
  }
}

bool counting() noexcept { return started() && (g_flags.load(std::memory_order_relaxed) & kRecording) != 0; }

}  // namespace

void forget_this_thread() noexcept {
  t_state = nullptr;
  t_pushes.depth = 0;
}

ThreadState* enter(Site& site, cudaStream_t stream, std::uint32_t& depth) noexcept {
  if (!started()) return nullptr;
  std::uint32_t id = site.id.load(std::memory_order_acquire);
  if (id == 0) id = intern_site(site);
  return enter_id(id, stream, depth);
}

ThreadState* enter_named(std::string_view name, cudaStream_t stream, std::uint32_t& depth) noexcept {
  if (!started()) return nullptr;
  const std::uint32_t id = session().forest.names.intern(name);
  ensure_nvtx(id);
  return enter_id(id, stream, depth);
}

void exit(ThreadState* ts, std::uint32_t token) noexcept {
  const std::uint64_t now = now_ns();
  if (ts != t_state) {
    // Ended on another thread: this thread's stacks are not the scope's. The scope stays open
    // on its own thread and is closed there as unbalanced by the next end.
    session().cross_thread_ends.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (token & kRecorded) {
    const std::uint32_t depth = token & kDepthMask;
    if (token & kTimedGpu) {
      if (ts->tree->open_depth() == depth) {
        ts->gpu->end(depth, ts->tree->innermost());
      } else {
        ts->gpu->abandon(depth);
      }
    }
    if ((g_flags.load(std::memory_order_relaxed) & kCounters) && depth != kOverflow &&
        ts->tree->open_depth() == depth) {
      counters_on_exit(ts->tree->innermost(), depth > 1 ? ts->tree->open_node(depth - 1) : nullptr);
    }
    const std::uint32_t tree_depth = depth == kOverflow ? model::ThreadTree::kOverflowDepth : depth;
    ts->tree->end(tree_depth, now);
    if (token & kTraced) trace::record(trace::ScopeKind::Exit, ts->tree->slot(), tree_depth, now);
  }
  if (token & kPushed) {
    if (CorrelationPopHook pop = g_pop_correlation.load(std::memory_order_acquire)) pop();
  }
  nvtx_pop();
}

void count(Site& site, double amount) noexcept {
  if (!counting()) return;
  std::uint32_t id = site.id.load(std::memory_order_acquire);
  if (id == 0) id = intern_site(site);
  count_id(id, amount);
}

}  // namespace detail

void count(std::string_view name, double amount) noexcept {
  if (!detail::counting()) return;
  detail::count_id(detail::session().forest.names.intern(name), amount);
}

void push(std::string_view name, cudaStream_t stream) noexcept {
  if (detail::g_state.load(std::memory_order_relaxed) == detail::kOff) return;
  auto& pushes = detail::t_pushes;
  std::uint32_t token = 0;
  detail::ThreadState* ts = detail::enter_named(name, stream, token);
  if (ts == nullptr) return;
  if (pushes.depth >= model::kHardMaxDepth) {
    detail::exit(ts, token);  // too deep to remember: closed at once, counted as an overflow
    ts->tree->depth_overflows.add(1);
    if (token & detail::kTraced)
      trace::record(trace::ScopeKind::Overflow, ts->tree->slot(), 0, detail::now_ns());
    return;
  }
  pushes.tokens[pushes.depth++] = token;
}

void pop() noexcept {
  auto& pushes = detail::t_pushes;
  detail::ThreadState* ts = detail::t_state;
  if (pushes.depth == 0) {
    if (ts != nullptr) {
      ts->tree->unbalanced_ends.add(1);
    } else {
      detail::session().stray_pops.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  detail::exit(ts, pushes.tokens[--pushes.depth]);
}

}  // namespace v0
}  // namespace cuscope

// cuscope/scope.hpp — RAII scopes: an NVTX range, a host timer and a GPU timer at once (the span of
// the work launched inside, from CUPTI; CUDA events on the scope's stream where CUPTI does not trace).
//
// Hot path: entering and leaving a scope takes no lock, allocates nothing and hashes nothing
// once its call site has been seen; the name is interned on the first visit of each call site.
//
// Example:
//   void forward(cudaStream_t s) {
//     CUSCOPE_FUNCTION(s);                  // named "forward"; s: its CUDA events' stream, if any
//     { CUSCOPE_SCOPE("attention", s); attention(s); }
//     { CUSCOPE_SCOPE("mlp", s);       mlp(s); }
//   }
//
// With CUSCOPE_DISABLE defined before the include, every macro and Scope compile to nothing.
#pragma once

#include <cuda_runtime_api.h>

#include <atomic>
#include <cstdint>
#include <string_view>

namespace cuscope {
inline namespace v0 {
namespace detail {

/// A scope's call site: its name and where it is. One static instance per call site, constant
/// initialized (no guard), so the steady state reads `id` and nothing else.
struct Site {
  const char* name;
  const char* file;
  std::uint32_t line;
  std::atomic<std::uint32_t> id{0};  ///< interned name id, 0 until the first visit
  std::atomic<void*> nvtx{nullptr};  ///< the name's NVTX registered string, set before `id`
  constexpr Site(const char* n, const char* f, std::uint32_t l) noexcept : name(n), file(f), line(l) {}
};

struct ThreadState;

/// Session state read by every scope: kNotStarted until the first scope or start().
enum : int { kNotStarted = 0, kOn = 1, kOff = 2 };
extern std::atomic<int> g_state;

/// The library's halves of a scope. They return the frame the scope must hand back on exit,
/// or nullptr when the scope records nothing.
ThreadState* enter(Site& site, cudaStream_t stream, std::uint32_t& depth) noexcept;
ThreadState* enter_named(std::string_view name, cudaStream_t stream, std::uint32_t& depth) noexcept;
void exit(ThreadState* ts, std::uint32_t depth) noexcept;
/// exit() of an entry the caller knows was made on another thread, even one that has exited and
/// whose state passed to the caller's thread: its end is posted, as exit() posts an end made on
/// another thread, never taken for the caller's own innermost scope (a Python generator's scope
/// resumed on a new thread).
void exit_elsewhere(ThreadState* ts, std::uint32_t depth) noexcept;
/// An end that matches no entry (a Python scope exited more often than it was entered): closes
/// nothing and is counted in Diagnostics::unbalanced_ends, as a pop() with no push() is.
void unmatched_end() noexcept;
void count(Site& site, double amount) noexcept;
/// Whether a scope entered now would time CUDA events on its stream, and so needs one: false
/// while CUPTI traces with CUSCOPE_EVENTS=auto (the default), with events off, or with the session
/// disabled; true when another copy of cuscope runs the session (its options are not known here).
/// Starts the session as a first scope would. The Python scope asks before looking up torch's
/// current stream, which costs more than the scope itself.
bool scope_streams_used() noexcept;

}  // namespace detail

#ifndef CUSCOPE_DISABLE

/// A named region: NVTX range in the "cuscope" domain, host timer, and (given a stream, or the
/// default stream) a pair of CUDA events whose time is read later, never synchronously.
/// Non-copyable, non-movable and stack-only: it must end on the thread and in the order it began.
///
/// Example:
///   static cuscope::detail::Site site{"decode", __FILE__, __LINE__};  // what CUSCOPE_SCOPE does
///   cuscope::Scope s{site, stream};
///   cuscope::Scope dyn{std::string_view{layer_name}};  // run-time name: interned by lookup, slower
class Scope {
 public:
  explicit Scope(detail::Site& site, cudaStream_t stream = nullptr) noexcept {
    if (detail::g_state.load(std::memory_order_relaxed) != detail::kOff)
      ts_ = detail::enter(site, stream, depth_);
  }
  explicit Scope(std::string_view name, cudaStream_t stream = nullptr) noexcept {
    if (detail::g_state.load(std::memory_order_relaxed) != detail::kOff)
      ts_ = detail::enter_named(name, stream, depth_);
  }
  ~Scope() {
    if (ts_ != nullptr) detail::exit(ts_, depth_);
  }
  Scope(const Scope&) = delete;
  Scope(Scope&&) = delete;
  Scope& operator=(const Scope&) = delete;
  Scope& operator=(Scope&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;

 private:
  detail::ThreadState* ts_ = nullptr;
  std::uint32_t depth_ = 0;
};

/// Adds `amount` to the user counter `name` of the innermost open scope on this thread (of the
/// thread's root when none is open); the report shows it per range with its rates per second of
/// host and GPU time. Looks the name up on each call: CUSCOPE_COUNT is the cheap form. An amount
/// that is inf or NaN is not added; it is counted in Diagnostics::rejected_counts.
///
/// Example:
///   CUSCOPE_SCOPE("decode");
///   CUSCOPE_COUNT("tokens", batch * new_tokens);  // report: tokens, tokens/s per range
void count(std::string_view name, double amount = 1.0) noexcept;

/// Opens a range that a later pop() on the same thread closes, for code where a block cannot
/// hold a Scope (callbacks, C interfaces). A pop() with no open push() is counted, not fatal.
void push(std::string_view name, cudaStream_t stream = nullptr) noexcept;
void pop() noexcept;

#define CUSCOPE_CONCAT_IMPL_(a, b) a##b
#define CUSCOPE_CONCAT_(a, b) CUSCOPE_CONCAT_IMPL_(a, b)
#define CUSCOPE_SCOPE_IMPL_(var, name, ...)                                             \
  static ::cuscope::detail::Site CUSCOPE_CONCAT_(var, _site){name, __FILE__, __LINE__}; \
  const ::cuscope::Scope var { CUSCOPE_CONCAT_(var, _site), __VA_ARGS__ }

/// CUSCOPE_SCOPE("name") or CUSCOPE_SCOPE("name", stream): a scope until the end of the block.
/// The name must be a string literal (it is kept, not copied; anything else does not compile).
/// Variables are named by __COUNTER__, so several scopes may share a line (as macros expand).
#define CUSCOPE_SCOPE(name, ...) \
  CUSCOPE_SCOPE_IMPL_(CUSCOPE_CONCAT_(cuscope_scope_, __COUNTER__), "" name, __VA_ARGS__)
/// CUSCOPE_FUNCTION() or CUSCOPE_FUNCTION(stream): a scope named after the enclosing function.
#define CUSCOPE_FUNCTION(...) \
  CUSCOPE_SCOPE_IMPL_(CUSCOPE_CONCAT_(cuscope_scope_, __COUNTER__), __func__, __VA_ARGS__)

/// CUSCOPE_COUNT("tokens", n): cuscope::count with the name interned once per call site.
#define CUSCOPE_COUNT(name, amount)                                                  \
  do {                                                                               \
    static ::cuscope::detail::Site cuscope_count_site_{"" name, __FILE__, __LINE__}; \
    ::cuscope::detail::count(cuscope_count_site_, static_cast<double>(amount));      \
  } while (false)

#else  // CUSCOPE_DISABLE: the same API, compiled to nothing (its own namespace keeps the ODR).

inline namespace disabled {
class Scope {
 public:
  explicit Scope(detail::Site&, cudaStream_t = nullptr) noexcept {}
  explicit Scope(std::string_view, cudaStream_t = nullptr) noexcept {}
  Scope(const Scope&) = delete;
  Scope(Scope&&) = delete;
  Scope& operator=(const Scope&) = delete;
  Scope& operator=(Scope&&) = delete;
  static void* operator new(std::size_t) = delete;
  static void* operator new[](std::size_t) = delete;
};
inline void push(std::string_view, cudaStream_t = nullptr) noexcept {}
inline void pop() noexcept {}
inline void count(std::string_view, double = 1.0) noexcept {}
}  // namespace disabled

#define CUSCOPE_SCOPE(...) static_cast<void>(0)
#define CUSCOPE_FUNCTION(...) static_cast<void>(0)
#define CUSCOPE_COUNT(name, amount) static_cast<void>(0)

#endif  // CUSCOPE_DISABLE

}  // namespace v0
}  // namespace cuscope

// session/handover.cpp — finding the injected engine, and this copy's entry points as one.
#include "session/handover.hpp"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <cuscope/version.hpp>
#include <mutex>
#include <string_view>

#include "producers/log.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Bumped whenever a type that crosses between copies (Options, Report, Site, the token) changes
// shape; the sizes catch most of what a forgotten bump would miss.
constexpr std::uint32_t kEngineLayout = 1u ^ (static_cast<std::uint32_t>(sizeof(Options)) << 8) ^
                                        (static_cast<std::uint32_t>(sizeof(Report)) << 16) ^
                                        (static_cast<std::uint32_t>(sizeof(Site)) << 24);

std::atomic<bool> g_is_engine{false};
std::atomic<const Engine*> g_engine{nullptr};
std::once_flag g_found_once;

bool start_forwarded(const Options& o) { return cuscope::start(o); }
void count_name_forwarded(std::string_view name, double amount) noexcept { cuscope::count(name, amount); }
void push_forwarded(std::string_view name, cudaStream_t stream) noexcept { cuscope::push(name, stream); }

// The engine of the library NVTX_INJECTION64_PATH names, if that is cuscope's injection library
// (another tool's library is never loaded from here: its constructors are its own business).
const Engine* find_injected_engine() noexcept {
  const char* path = std::getenv("NVTX_INJECTION64_PATH");
  if (path == nullptr || *path == '\0') return nullptr;
  const std::string_view p(path);
  const std::string_view file = p.substr(p.rfind('/') == std::string_view::npos ? 0 : p.rfind('/') + 1);
  if (file.find("cuscope_inject") == std::string_view::npos) return nullptr;
  // NVTX may not have loaded it yet (no NVTX call so far): loading it here is what NVTX would do.
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
  if (lib == nullptr) lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return nullptr;  // NVTX will not load it either: this copy runs alone
  using EngineFn = const Engine* (*)();
  auto fn = reinterpret_cast<EngineFn>(dlsym(lib, "cuscope_v0_engine"));
  const Engine* e = fn != nullptr ? fn() : nullptr;
  if (e == nullptr || e == &this_engine()) return nullptr;
  if (std::strcmp(e->version, version()) != 0 || e->layout != kEngineLayout) {
    warn_once(fmt::format(
        "the injected {} is cuscope {}, this program links cuscope {}: they cannot share a "
        "session, so the program's own scopes run apart (CUPTI goes to the one that starts first)",
        path, e->version, version()));
    return nullptr;
  }
  return e;
}

}  // namespace

const Engine& this_engine() noexcept {
  static const Engine engine{version(),
                             kEngineLayout,
                             &detail::enter,
                             &detail::enter_named,
                             &detail::exit,
                             &detail::count,
                             &count_name_forwarded,
                             &push_forwarded,
                             &cuscope::pop,
                             &start_forwarded,
                             &cuscope::step,
                             &cuscope::set_enabled,
                             &cuscope::enabled,
                             &cuscope::flush,
                             &cuscope::snapshot,
                             &cuscope::shutdown,
                             &cuscope::current_options};
  return engine;
}

void mark_engine() noexcept { g_is_engine.store(true, std::memory_order_release); }

const Engine* forwarding() noexcept {
  return g_state.load(std::memory_order_acquire) == kForward ? g_engine.load(std::memory_order_acquire)
                                                             : nullptr;
}

const Engine* forward_target() noexcept {
  const int state = g_state.load(std::memory_order_acquire);
  if (state == kForward) return g_engine.load(std::memory_order_acquire);
  if (state != kNotStarted || g_is_engine.load(std::memory_order_acquire)) return nullptr;
  std::call_once(g_found_once, [] { g_engine.store(find_injected_engine(), std::memory_order_release); });
  const Engine* e = g_engine.load(std::memory_order_acquire);
  if (e == nullptr) return nullptr;
  int expected = kNotStarted;
  g_state.compare_exchange_strong(expected, kForward, std::memory_order_acq_rel);
  return g_state.load(std::memory_order_acquire) == kForward ? e : nullptr;
}

}  // namespace cuscope::inline v0::detail

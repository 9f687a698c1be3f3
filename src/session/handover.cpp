// session/handover.cpp — finding the copy that runs the session, and this copy's entry points as
// one (session/handover.hpp says which copy runs it).
//
// Never: load a library that is not cuscope's (another tool's constructors are its own business),
// or call a copy whose version or layout differs from this one's.
#include "session/handover.hpp"

#include <dlfcn.h>
#include <fmt/format.h>
#include <link.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <cuscope/version.hpp>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "producers/log.hpp"

namespace cuscope::inline v0::detail {
namespace {

// Bumped whenever a type that crosses between copies (Engine, Options, Report, Site, the token)
// changes shape; the sizes catch most of what a forgotten bump would miss.
constexpr std::uint32_t kEngineLayout = 5u ^ (static_cast<std::uint32_t>(sizeof(Options)) << 8) ^
                                        (static_cast<std::uint32_t>(sizeof(Report)) << 16) ^
                                        (static_cast<std::uint32_t>(sizeof(Site)) << 24);

constexpr const char* kEngineSymbol = "cuscope_v0_engine";

std::atomic<bool> g_is_engine{false};
std::atomic<const Engine*> g_engine{nullptr};
std::once_flag g_found_once;
// Used in the process's first copy only: the copy that claimed the session.
std::atomic<const Engine*> g_owner{nullptr};

bool start_forwarded(const Options& o) { return cuscope::start(o); }
bool start_from_env_forwarded() { return cuscope::start(); }
void count_name_forwarded(std::string_view name, double amount) noexcept { cuscope::count(name, amount); }
void push_forwarded(std::string_view name, cudaStream_t stream) noexcept { cuscope::push(name, stream); }

const Engine* claim(const Engine* candidate) noexcept {
  if (g_is_engine.load(std::memory_order_acquire)) return &this_engine();
  const Engine* none = nullptr;
  g_owner.compare_exchange_strong(none, candidate, std::memory_order_acq_rel);
  return g_owner.load(std::memory_order_acquire);
}

// `e` (found in `where`) if it is this build's cuscope, else nullptr, saying so once.
const Engine* same_build(const Engine* e, std::string_view where) noexcept {
  if (e == nullptr) return nullptr;
  if (std::strcmp(e->version, version()) == 0 && e->layout == kEngineLayout) return e;
  warn_once(
      fmt::format("{} holds cuscope {}, this copy is cuscope {}: they cannot share a session, so this copy's "
                  "scopes run apart (CUPTI goes to the one that starts first)",
                  where, e->version, version()));
  return nullptr;
}

// The engine of a loaded library's copy, if `lib` exports one.
const Engine* engine_in(void* lib) noexcept {
  using EngineFn = const Engine* (*)();
  auto fn = reinterpret_cast<EngineFn>(dlsym(lib, kEngineSymbol));
  return fn != nullptr ? fn() : nullptr;
}

// The engine of the library NVTX_INJECTION64_PATH names, if that is cuscope's injection library.
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
  const Engine* e = engine_in(lib);
  if (e == &this_engine()) return nullptr;
  return same_build(e, fmt::format("the injected {}", path));
}

// A loaded object: its name (empty for the program) and the addresses its segments span.
struct LoadedObject {
  std::string name;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> segments;
  bool holds(const void* address) const noexcept {
    const auto a = reinterpret_cast<std::uintptr_t>(address);
    for (const auto& [begin, end] : segments)
      if (a >= begin && a < end) return true;
    return false;
  }
};

// dl_iterate_phdr's callback: appends the object to the list; out of memory, empties the list and
// stops the walk (no exception crosses the loader).
int collect_object(dl_phdr_info* info, std::size_t, void* out) noexcept {
  auto& objects = *static_cast<std::vector<LoadedObject>*>(out);
  try {
    LoadedObject o;
    o.name = info->dlpi_name != nullptr ? info->dlpi_name : "";
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
      const ElfW(Phdr)& ph = info->dlpi_phdr[i];
      if (ph.p_type == PT_LOAD)
        o.segments.emplace_back(info->dlpi_addr + ph.p_vaddr, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
    }
    objects.push_back(std::move(o));
    return 0;
  } catch (...) {
    objects.clear();
    return 1;
  }
}

// The engine of the first loaded object, in the loader's order, that defines cuscope_v0_engine
// itself (a lookup through a handle also searches the object's dependencies, which come later).
// Objects are opened after the walk: the walk holds the loader's lock.
const Engine* first_copy() {
  std::vector<LoadedObject> objects;
  dl_iterate_phdr(&collect_object, &objects);
  for (const LoadedObject& o : objects) {
    void* lib = dlopen(o.name.empty() ? nullptr : o.name.c_str(), RTLD_LAZY | RTLD_LOCAL | RTLD_NOLOAD);
    if (lib == nullptr) continue;
    void* fn = dlsym(lib, kEngineSymbol);
    if (fn != nullptr && o.holds(fn)) {  // kept open: its engine may run the session
      const std::string where = o.name.empty() ? std::string("the program") : o.name;
      if (const Engine* e = same_build(engine_in(lib), where)) return e;
    }
    dlclose(lib);
  }
  return nullptr;
}

// The engine this copy forwards to, or nullptr when this copy runs the session.
const Engine* find_owner() noexcept {
  if (const Engine* e = find_injected_engine()) return e;
  const Engine* self = &this_engine();
  try {
    const Engine* first = first_copy();
    const Engine* owner = first != nullptr ? first->claim(self) : self;
    return owner == self ? nullptr : owner;
  } catch (...) {  // out of memory while looking: this copy runs alone
    return nullptr;
  }
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
                             &detail::unmatched_end,
                             &start_forwarded,
                             &start_from_env_forwarded,
                             &cuscope::step,
                             &cuscope::set_enabled,
                             &cuscope::enabled,
                             &cuscope::flush,
                             &cuscope::snapshot,
                             &cuscope::shutdown,
                             &cuscope::current_options,
                             &claim,
                             &detail::exit_elsewhere};
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
  std::call_once(g_found_once, [] { g_engine.store(find_owner(), std::memory_order_release); });
  const Engine* e = g_engine.load(std::memory_order_acquire);
  if (e == nullptr) return nullptr;
  int expected = kNotStarted;
  g_state.compare_exchange_strong(expected, kForward, std::memory_order_acq_rel);
  return g_state.load(std::memory_order_acquire) == kForward ? e : nullptr;
}

}  // namespace cuscope::inline v0::detail

/// Every copy's engine, for the others to find (session/handover.hpp): the injected library
/// exports it by its version script, a shared or static cuscope by its default visibility.
extern "C" __attribute__((visibility("default"))) const cuscope::detail::Engine* cuscope_v0_engine() {
  return &cuscope::detail::this_engine();
}

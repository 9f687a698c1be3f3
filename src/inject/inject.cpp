// inject/inject.cpp — libcuscope_inject.so: cuscope on an unmodified program (zero-code mode).
//
// NVTX loads this library when NVTX_INJECTION64_PATH names it (each module that uses NVTX does,
// once) and asks it to fill its function tables; the CUDA driver loads it when
// CUDA_INJECTION64_PATH names it. From then on:
//   - push/pop ranges, in every domain, become cuscope ranges: the same tree, attribution and
//     report as a Scope. A range in a named domain sits under a range named after the domain,
//     opened by the thread's first open range of that domain.
//   - start/end ranges (which may end on another thread and need not nest) go to the span table.
//   - the "cuscope" domain is skipped: those are cuscope's own scopes, already counted.
// The library holds a whole cuscope (the engine). A program that links cuscope as well forwards
// to it (session/handover.hpp), so a process has one session, one CUPTI subscriber, one table.
//
// Hot path (a push/pop in the default or a named domain): a thread-local stack, one hash of the
// message into a thread-local cache of names (registered strings carry their id in the handle),
// and the scope's own enter/exit. No lock, no allocation once a message has been seen.
#include <nvtx3/nvToolsExt.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cuscope/session.hpp>
#include <cwchar>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>

#include "model/names.hpp"
#include "model/range_tree.hpp"
#include "model/spans.hpp"
#include "producers/clock.hpp"
#include "producers/hot_tls.hpp"
#include "session/handover.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail {
namespace {

// ---- names ---------------------------------------------------------------------------------

// PyTorch's emit_nvtx() writes "aten::addmm, seq = 1234, op_id = 99, sizes = [[8, 8], ...]": the
// numbers make every call a new name. The range is the operator; what follows is left out.
std::string_view operator_name(std::string_view message) {
  static constexpr std::string_view kSuffixes[] = {
      ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
  std::size_t cut = message.size();
  for (std::string_view s : kSuffixes) cut = std::min(cut, message.find(s));
  return message.substr(0, cut);
}

std::uint32_t intern_message(std::string_view message) {
  return process_names().intern(operator_name(message));
}

std::string utf8_of(const wchar_t* w) {
  std::string out;
  if (w == nullptr) return out;
  for (; *w != 0; ++w) {
    auto c = static_cast<std::uint32_t>(*w);
    if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

// Messages seen by this thread. First by pointer, checked against the text kept for it (a pointer
// says nothing alone: Python and std::string buffers are reused for other text), which costs no
// strlen and no hash when a call site passes the same literal; then by content (strlen and a hash);
// a miss in both interns under the name table's lock and takes the slots.
class MessageCache {
 public:
  std::uint32_t id(const char* message) {
    if (message == nullptr) return intern_message(std::string_view{});
    Slot& by_pointer = pointers_[(reinterpret_cast<std::uintptr_t>(message) >> 3) & (kSlots - 1)];
    if (by_pointer.pointer == message && same(by_pointer.key, message)) return by_pointer.id;
    const std::size_t size = std::strlen(message);
    const std::uint64_t h = hash(message, size);
    Slot& by_content = contents_[h & (kSlots - 1)];
    std::uint32_t id = 0;
    if (by_content.hash == h && by_content.key.size() == size &&
        std::memcmp(by_content.key.data(), message, size) == 0) {
      id = by_content.id;
    } else {
      id = intern_message({message, size});
      keep(by_content, nullptr, h, message, size, id);
    }
    keep(by_pointer, message, h, message, size, id);
    return id;
  }

 private:
  static constexpr std::size_t kSlots = 256;
  struct Slot {
    const char* pointer = nullptr;
    std::uint64_t hash = 0;
    std::uint32_t id = 0;
    std::string key;
  };
  // The text at `message` is `key`, NUL included: one pass, no strlen.
  static bool same(const std::string& key, const char* message) {
    return std::strcmp(key.c_str(), message) == 0;
  }
  static void keep(Slot& slot, const char* pointer, std::uint64_t h, const char* message, std::size_t size,
                   std::uint32_t id) {
    try {
      slot.key.assign(message, size);
      slot.pointer = pointer;
      slot.hash = h;
      slot.id = id;
    } catch (...) {  // out of memory: the name is right, the slot stays empty
      slot = Slot{};
    }
  }
  static std::uint64_t hash(const char* p, std::size_t n) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      std::uint64_t w;
      std::memcpy(&w, p + i, 8);
      h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    h = (h ^ tail) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h | 1;  // 0 marks an empty slot
  }
  std::array<Slot, kSlots> pointers_{};
  std::array<Slot, kSlots> contents_{};
};

// ---- domains -------------------------------------------------------------------------------

// A domain handle given out by nvtxDomainCreate: never freed (handles may be used after destroy).
struct Domain {
  std::uint32_t name_id = 0;  // the range the domain's ranges sit under
  std::uint16_t index = 0;    // into a thread's per-domain counts (0 is the default domain's)
  bool counted = true;        // false: left out by CUSCOPE_NVTX_DOMAINS, or cuscope's own
};
constexpr std::size_t kMaxDomains = 512;
// Domains past the first kMaxDomains - 2 share this index: their pops pair among themselves, and
// their ranges sit under no range named after a domain.
constexpr std::uint16_t kSharedDomain = kMaxDomains - 1;

struct Domains {
  std::mutex mutex;
  std::unordered_map<std::string, Domain*> by_name;  // guarded by mutex
  std::uint16_t next_index = 1;                      // guarded by mutex
  std::vector<std::string> filter;                   // CUSCOPE_NVTX_DOMAINS, read once
  bool default_counted = true;

  bool keeps(std::string_view name) const {
    if (filter.empty()) return true;
    const bool excluding = filter.front().front() == '-';
    for (const std::string& f : filter) {
      if ((excluding ? std::string_view(f).substr(1) : std::string_view(f)) == name) return !excluding;
    }
    return excluding;
  }
};

Domains& domains() {
  static auto* d = [] {
    auto* made = new Domains;
    made->filter = options_from_env().nvtx_domains;  // bad values are reported by the session's start
    made->default_counted = made->keeps("default");
    return made;
  }();
  return *d;
}

// Whether plain (default domain) ranges count: read once, when NVTX first hands its tables over,
// before any callback can run.
std::atomic<bool> g_default_counted{true};
inline bool default_counted() { return g_default_counted.load(std::memory_order_relaxed); }

Domain* domain_named(std::string name) {
  Domains& all = domains();
  std::lock_guard lock(all.mutex);
  if (auto it = all.by_name.find(name); it != all.by_name.end()) return it->second;
  auto* d = new Domain;
  d->counted = name != "cuscope" && all.keeps(name);
  d->name_id = process_names().intern(name);
  d->index = all.next_index < kSharedDomain ? all.next_index++ : kSharedDomain;
  all.by_name.emplace(std::move(name), d);
  return d;
}

// ---- push/pop ------------------------------------------------------------------------------

// A thread's open NVTX push ranges, of every counted domain, innermost last.
struct OpenRanges {
  static constexpr std::uint32_t kMax = 2 * model::kHardMaxDepth;
  struct Entry {
    ThreadState* ts;  // non-null: the range was entered and exit() must close it
    std::uint32_t token;
    std::uint16_t domain;  // Domain::index; 0 for the default domain
    bool frame;            // the range named after the domain, under its first range
  };
  std::array<Entry, kMax> entries;
  std::uint32_t depth = 0;
  std::uint32_t skipped = 0;  // pushes past kMax: their pops undo nothing
  std::array<std::uint16_t, kMaxDomains> open_in{};
  MessageCache names;
};

// The hot path reads one pointer (producers/hot_tls.hpp). The state
// behind it is made on the thread's first range and freed at its exit.
CUSCOPE_HOT_TLS thread_local OpenRanges* t_open = nullptr;

// The calling thread's ranges, or nullptr when they cannot be had (out of memory): then a push
// records nothing and its pop undoes nothing.
inline OpenRanges* open_ranges() {
  OpenRanges* o = t_open;
  return o != nullptr ? o : make_thread_owned(t_open);
}

[[gnu::always_inline]] inline int open_range(OpenRanges& o, std::uint32_t name_id, std::uint16_t domain,
                                             bool frame) {
  if (o.depth == OpenRanges::kMax) {
    ++o.skipped;
    return static_cast<int>(o.depth);
  }
  std::uint32_t token = 0;
  ThreadState* ts = enter_interned(name_id, token);
  o.entries[o.depth] = {ts, token, domain, frame};
  if (domain != 0) ++o.open_in[domain];
  return static_cast<int>(o.depth++);
}

[[gnu::always_inline]] inline int push_range(OpenRanges& o, const Domain* d, std::uint32_t name_id) {
  if (d != nullptr && d->index != kSharedDomain && o.open_in[d->index] == 0 && o.depth < OpenRanges::kMax)
    open_range(o, d->name_id, d->index, true);
  return open_range(o, name_id, d != nullptr ? d->index : 0, false);
}

void close_entry(OpenRanges& o, std::uint32_t at) {
  const OpenRanges::Entry e = o.entries[at];
  for (std::uint32_t i = at; i + 1 < o.depth; ++i) o.entries[i] = o.entries[i + 1];
  --o.depth;
  if (e.domain != 0) --o.open_in[e.domain];
  if (e.ts != nullptr) exit_owned(e.ts, e.token, now_ns());  // entered on this thread: its own state
}

// Pops the innermost open range of the domain (ranges of other domains opened after it stay open
// here; the tree closes them as unbalanced, counted). Returns its level, or -1 when none is open.
[[gnu::noinline]] int pop_range_slow(OpenRanges& o, std::uint16_t index) {
  if (o.skipped > 0) {
    --o.skipped;
    return static_cast<int>(o.depth + o.skipped);
  }
  for (std::uint32_t i = o.depth; i-- > 0;) {
    const OpenRanges::Entry& e = o.entries[i];
    if (e.domain != index || e.frame) continue;
    close_entry(o, i);
    if (index != 0 && o.open_in[index] == 1) {  // only the domain's frame is left: close it too
      for (std::uint32_t j = i; j-- > 0;) {
        if (o.entries[j].domain == index && o.entries[j].frame) {
          close_entry(o, j);
          break;
        }
      }
    }
    return static_cast<int>(i);
  }
  if (ThreadState* ts = current_thread_state()) {
    ts->tree->unbalanced_ends.add(1);
  } else {
    session().stray_pops.fetch_add(1, std::memory_order_relaxed);
  }
  return -1;
}

// The common case inline: the innermost open range is the domain's own (not its frame).
[[gnu::always_inline]] inline int pop_range(OpenRanges& o, const Domain* d) {
  const std::uint16_t index = d != nullptr ? d->index : 0;
  if (o.skipped == 0 && o.depth > 0) {
    const OpenRanges::Entry top = o.entries[o.depth - 1];
    const bool frame_left = index != 0 && o.open_in[index] == 2;  // this range and the frame under it
    if (top.domain == index && !top.frame && !frame_left) {
      --o.depth;
      if (index != 0) --o.open_in[index];
      if (top.ts != nullptr) exit_owned(top.ts, top.token, now_ns());
      return static_cast<int>(o.depth);
    }
  }
  return pop_range_slow(o, index);
}

// ---- event attributes ----------------------------------------------------------------------

std::uint32_t name_of(OpenRanges& o, const nvtxEventAttributes_t* a) {
  constexpr std::size_t kNeeded = offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);
  if (a == nullptr || a->size < kNeeded) return intern_message(std::string_view{});
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return o.names.id(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return intern_message(utf8_of(a->message.unicode));
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      // Handles come from register_a/w below, so they hold a valid id; anything else is not ours.
      const auto id = reinterpret_cast<std::uintptr_t>(a->message.registered);
      if (id == 0 || id > process_names().size()) return intern_message(std::string_view{});
      return static_cast<std::uint32_t>(id);
    }
    default:
      return intern_message(std::string_view{});
  }
}

const Domain* counted(nvtxDomainHandle_t h, bool* skip) {
  const auto* d = reinterpret_cast<const Domain*>(h);
  *skip = d == nullptr ? !default_counted() : !d->counted;
  return d;
}

// ---- start/end -----------------------------------------------------------------------------

std::uint64_t thread_key() {
  static thread_local char marker;
  return reinterpret_cast<std::uintptr_t>(&marker);
}

nvtxRangeId_t start_span(const Domain* d, std::uint32_t name_id) {
  if (!recording()) return 0;
  return session().spans.start(d != nullptr ? d->name_id : 0, name_id, thread_key(), now_ns());
}

void end_span(nvtxRangeId_t id) {
  if (id == 0 || g_state.load(std::memory_order_relaxed) != kOn) return;  // left out at its start
  session().spans.end(id, thread_key(), now_ns());
}

// ---- the NVTX callbacks ----------------------------------------------------------------------

int NVTX_API push_a(const char* message) {
  OpenRanges* o = open_ranges();
  if (!default_counted() || o == nullptr) return 0;
  return push_range(*o, nullptr, o->names.id(message));
}
int NVTX_API push_w(const wchar_t* message) {
  OpenRanges* o = open_ranges();
  if (!default_counted() || o == nullptr) return 0;
  return push_range(*o, nullptr, intern_message(utf8_of(message)));
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  if (!default_counted() || o == nullptr) return 0;
  return push_range(*o, nullptr, name_of(*o, a));
}
int NVTX_API pop_default() {
  if (!default_counted()) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? pop_range(*o, nullptr) : -1;
}
int NVTX_API domain_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  bool skip = false;
  const Domain* d = counted(h, &skip);
  if (skip) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, d, name_of(*o, a)) : 0;
}
int NVTX_API domain_pop(nvtxDomainHandle_t h) {
  bool skip = false;
  const Domain* d = counted(h, &skip);
  if (skip) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? pop_range(*o, d) : -1;
}

nvtxRangeId_t NVTX_API start_a(const char* message) {
  OpenRanges* o = open_ranges();
  if (!default_counted() || o == nullptr) return 0;
  return start_span(nullptr, o->names.id(message));
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* message) {
  return default_counted() ? start_span(nullptr, intern_message(utf8_of(message))) : 0;
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  if (!default_counted() || o == nullptr) return 0;
  return start_span(nullptr, name_of(*o, a));
}
void NVTX_API end_any(nvtxRangeId_t id) { end_span(id); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  bool skip = false;
  const Domain* d = counted(h, &skip);
  if (skip) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(d, name_of(*o, a)) : 0;
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end_span(id); }

// A registered string's handle is its name id: a push with it needs no lookup at all.
nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t, const char* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(intern_message(s ? s : "")));
}
nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t, const wchar_t* s) {
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(intern_message(utf8_of(s))));
}
nvtxDomainHandle_t NVTX_API create_a(const char* name) {
  try {
    return reinterpret_cast<nvtxDomainHandle_t>(domain_named(name != nullptr ? name : ""));
  } catch (...) {
    return nullptr;  // out of memory: its ranges count in the default domain
  }
}
nvtxDomainHandle_t NVTX_API create_w(const wchar_t* name) {
  try {
    return reinterpret_cast<nvtxDomainHandle_t>(domain_named(utf8_of(name)));
  } catch (...) {
    return nullptr;
  }
}
void NVTX_API destroy_domain(nvtxDomainHandle_t) {}  // handles stay valid: a late pop still finds its domain

struct Callback {
  unsigned id;
  NvtxFunctionPointer fn;
};
template <class Fn>
NvtxFunctionPointer fn(Fn f) {
  return reinterpret_cast<NvtxFunctionPointer>(f);
}
// Fills the slots the module's table has (an older NVTX has fewer).
template <std::size_t N>
void set(NvtxFunctionTable table, unsigned size, const Callback (&callbacks)[N]) {
  for (const Callback& c : callbacks) {
    if (c.id < size && table[c.id] != nullptr) *table[c.id] = c.fn;
  }
}

int fill_tables(NvtxGetExportTableFunc_t get) {
  g_default_counted.store(domains().default_counted, std::memory_order_relaxed);
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) return 0;
  NvtxFunctionTable core = nullptr;
  unsigned core_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) == 0 || core == nullptr)
    return 0;
  const Callback core_callbacks[] = {
      {NVTX_CBID_CORE_RangePushA, fn(&push_a)},     {NVTX_CBID_CORE_RangePushW, fn(&push_w)},
      {NVTX_CBID_CORE_RangePushEx, fn(&push_ex)},   {NVTX_CBID_CORE_RangePop, fn(&pop_default)},
      {NVTX_CBID_CORE_RangeStartA, fn(&start_a)},   {NVTX_CBID_CORE_RangeStartW, fn(&start_w)},
      {NVTX_CBID_CORE_RangeStartEx, fn(&start_ex)}, {NVTX_CBID_CORE_RangeEnd, fn(&end_any)}};
  set(core, core_size, core_callbacks);
  NvtxFunctionTable core2 = nullptr;
  unsigned core2_size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) != 0 && core2 != nullptr) {
    const Callback core2_callbacks[] = {{NVTX_CBID_CORE2_DomainRangePushEx, fn(&domain_push_ex)},
                                        {NVTX_CBID_CORE2_DomainRangePop, fn(&domain_pop)},
                                        {NVTX_CBID_CORE2_DomainRangeStartEx, fn(&domain_start_ex)},
                                        {NVTX_CBID_CORE2_DomainRangeEnd, fn(&domain_end)},
                                        {NVTX_CBID_CORE2_DomainRegisterStringA, fn(&register_a)},
                                        {NVTX_CBID_CORE2_DomainRegisterStringW, fn(&register_w)},
                                        {NVTX_CBID_CORE2_DomainCreateA, fn(&create_a)},
                                        {NVTX_CBID_CORE2_DomainCreateW, fn(&create_w)},
                                        {NVTX_CBID_CORE2_DomainDestroy, fn(&destroy_domain)}};
    set(core2, core2_size, core2_callbacks);
  }
  return 1;
}

// Runs when the library is loaded (by NVTX, the CUDA driver or a linked cuscope looking for it):
// this copy is the engine, and its scopes push no NVTX range (NVTX leads back here).
[[gnu::constructor]] void on_load() {
  mark_engine();
  g_nvtx_quiet.store(true, std::memory_order_relaxed);
}

}  // namespace
}  // namespace cuscope::inline v0::detail

extern "C" {

/// NVTX's entry point: called once per module that uses NVTX, with that module's tables.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get) {
  try {
    return cuscope::detail::fill_tables(get);
  } catch (...) {
    return 0;  // NVTX then leaves the module's calls as no-ops
  }
}

/// The CUDA driver's entry point (CUDA_INJECTION64_PATH), called inside cuInit. CUDA cannot be
/// called from here, so the session starts on its own thread, which waits for cuInit to finish.
__attribute__((visibility("default"))) int InitializeInjection() {
  try {
    std::thread([] { cuscope::start(); }).detach();
  } catch (...) {  // no thread: the first NVTX range starts the session instead
  }
  return 1;
}

/// For a program that links cuscope too: the engine its own copy forwards to.
__attribute__((visibility("default"))) const cuscope::detail::Engine* cuscope_v0_engine() {
  return &cuscope::detail::this_engine();
}

}  // extern "C"

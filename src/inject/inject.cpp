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
// Hot path (a push/pop in the default or a named domain): the message's pointer into a
// thread-local cache of names, its text checked there (registered strings carry their id in the
// handle), a thread-local stack, and the range tree's common entry and exit, as a scope's. Straight
// code that tail-calls the general code when any of it declines. No lock, no allocation once a
// message has been seen.
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>

#include <algorithm>
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
// numbers make every call a new name. The range is the operator; what follows is left out: the text
// up to the first comma that starts one of these. One pass that stops there (such a message is
// formatted anew for every call, and its sizes can run to hundreds of bytes).
constexpr std::string_view kOperatorSuffixes[] = {", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
constexpr std::size_t kLongestOperatorSuffix = [] {
  std::size_t n = 0;
  for (std::string_view s : kOperatorSuffixes) n = std::max(n, s.size());
  return n;
}();

bool starts_with_operator_suffix(std::string_view rest) {
  for (std::string_view s : kOperatorSuffixes) {
    if (rest.starts_with(s)) return true;
  }
  return false;
}

// The same for the NUL-terminated text at `p`, reading no further than a suffix's length.
bool operator_suffix_at(const char* p) {
  return starts_with_operator_suffix({p, strnlen(p, kLongestOperatorSuffix)});
}

std::string_view operator_name(std::string_view message) {
  for (std::size_t at = message.find(','); at != std::string_view::npos; at = message.find(',', at + 1)) {
    if (starts_with_operator_suffix(message.substr(at))) return message.substr(0, at);
  }
  return message;
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
// says nothing alone: Python and std::string buffers are reused for other text): a text of up to
// 23 bytes is compared inline as three masked words, with no strlen, no hash and no branch per
// word, when a call site passes the same literal; a longer one word by word; an emit_nvtx() message
// by its operator name and suffix. Then by content (strlen and a hash); a miss in both interns under
// the name table's lock and takes the slots.
class MessageCache {
 public:
  std::uint32_t id(const char* message) {
    std::uint32_t found = 0;
    if (find(message, &found)) return found;
    const LongSlot& l = longs_[pointer_slot(message)];
    if (l.pointer == message && l.holds(message)) return l.id;
    return miss(message);
  }
  /// The hot path: the message's id when it is short and its pointer slot holds its text. False
  /// otherwise (id() then looks further).
  [[gnu::always_inline]] bool find(const char* message, std::uint32_t* id) const {
    const Slot& s = pointers_[pointer_slot(message)];
    if (s.pointer != message || !s.holds(message)) return false;
    *id = s.id;
    return true;
  }

 private:
  static constexpr std::size_t kSlots = 256;
  static constexpr std::uintptr_t kPage = 4096;   // the smallest page: a read within one is safe
  static constexpr std::size_t kShortBytes = 24;  // a short text, NUL included: three words

  // What an empty slot holds: no message (nullptr included) is at this address.
  static constexpr char kNoMessage = 0;

  // A short text last seen at `pointer`: its words (NUL included, zero padded), and masks of the
  // bytes up to and including its NUL (0 past them).
  struct Slot {
    const char* pointer = &kNoMessage;
    std::uint32_t id = 0;
    std::uint64_t words[3]{};
    std::uint64_t masks[3]{};

    // Whether the text at `message` (== pointer) is the kept text. The reads may go past the
    // message's NUL: keep() takes only a pointer whose three words lie inside the page of its first
    // byte, which is mapped. Sanitizers would see the bytes past the NUL (read, never used) as an
    // overflow or a race, and their attributes do not survive inlining: there, strcmp.
    bool holds(const char* message) const {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
      return std::strcmp(reinterpret_cast<const char*>(words), message) == 0;
#else
      return (((load(message) ^ words[0]) & masks[0]) | ((load(message + 8) ^ words[1]) & masks[1]) |
              ((load(message + 16) ^ words[2]) & masks[2])) == 0;
#endif
    }
  };
  static_assert(sizeof(Slot) == 64, "a pointer slot is one cache line");

  // A longer text (or a short one near the end of a page): compared with strcmp, which stops at the
  // message's NUL. Or, `cut`, the operator name of an emit_nvtx() message: any message at the pointer
  // that starts with it and goes on with one of the operator suffixes (its numbers change every call).
  struct LongSlot {
    const char* pointer = &kNoMessage;
    std::uint32_t id = 0;
    bool cut = false;
    std::string text;

    bool holds(const char* message) const {
      if (!cut) return std::strcmp(text.c_str(), message) == 0;
      // A match of all of text's bytes (none is NUL) means the message is at least that long.
      return std::strncmp(text.c_str(), message, text.size()) == 0 && operator_suffix_at(message + text.size());
    }
  };

  // A content slot: found by the hash of the name the message stands for (operator_name()).
  struct TextSlot {
    std::uint64_t hash = 0;  // 0: empty
    std::uint32_t id = 0;
    std::string key;
  };

  static std::uint64_t load(const char* p) {
    std::uint64_t w;
    std::memcpy(&w, p, 8);
    return w;
  }
  static std::size_t pointer_slot(const char* p) {
    return static_cast<std::size_t>((reinterpret_cast<std::uintptr_t>(p) * 0x9E3779B97F4A7C15ull) >> 56) &
           (kSlots - 1);
  }

  [[gnu::noinline]] std::uint32_t miss(const char* message) {
    if (message == nullptr) return intern_message(std::string_view{});
    const std::size_t size = std::strlen(message);
    // By the name the message stands for: emit_nvtx() writes new text on every call (its sequence
    // numbers), and its operators must still be found here, not in the process's locked name table.
    const std::string_view name = operator_name({message, size});
    const std::uint64_t h = hash(name.data(), name.size());
    TextSlot& by_content = contents_[h & (kSlots - 1)];
    std::uint32_t id = 0;
    if (by_content.hash == h && std::string_view(by_content.key) == name) {
      id = by_content.id;
    } else {
      id = process_names().intern(name);
      try {
        by_content.key.assign(name);
        by_content.hash = h;
        by_content.id = id;
      } catch (...) {  // out of memory: the name is right, the slot stays empty
        by_content = TextSlot{};
      }
    }
    keep(message, size, name.size(), id);
    return id;
  }
  // `name_size` < `size`: the message is cut (operator_name()), and only its name is kept, as a prefix:
  // such a message is formatted anew for every call, and its whole text will not come back.
  void keep(const char* message, std::size_t size, std::size_t name_size, std::uint32_t id) {
    const std::size_t at = pointer_slot(message);
    Slot& s = pointers_[at];
    LongSlot& l = longs_[at];
    const bool cut = name_size < size;
    const bool in_one_page = (reinterpret_cast<std::uintptr_t>(message) & (kPage - 1)) <= kPage - kShortBytes;
    if (!cut && size + 1 <= kShortBytes && in_one_page) {
      unsigned char text[kShortBytes] = {}, mask[kShortBytes] = {};
      std::memcpy(text, message, size + 1);
      std::memset(mask, 0xFF, size + 1);
      std::memcpy(s.words, text, kShortBytes);
      std::memcpy(s.masks, mask, kShortBytes);
      s.id = id;
      s.pointer = message;
      if (l.pointer == message) l.pointer = &kNoMessage;
      return;
    }
    if (s.pointer == message) s.pointer = &kNoMessage;
    try {
      l.text.assign(message, name_size);
      l.cut = cut;
      l.id = id;
      l.pointer = message;
    } catch (...) {  // out of memory: the name is right, the slot stays empty
      l.pointer = &kNoMessage;
    }
  }
  static std::uint64_t hash(const char* p, std::size_t n) {
    std::uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
      h = (h ^ load(p + i)) * 0xBF58476D1CE4E5B9ull;
      h ^= h >> 31;
    }
    std::uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    h = (h ^ tail) * 0x94D049BB133111EBull;
    h ^= h >> 29;
    return h | 1;  // 0 marks an empty slot
  }
  std::array<Slot, kSlots> pointers_{};
  std::array<LongSlot, kSlots> longs_{};
  std::array<TextSlot, kSlots> contents_{};
};

// ---- domains -------------------------------------------------------------------------------

// What a domain handle given out by nvtxDomainCreate points to: never freed (handles may be used
// after destroy).
struct Domain {
  std::uint32_t name_id = 0;  // the range the domain's ranges sit under
  std::uint16_t index = 0;    // into a thread's per-domain counts (0 is the default domain's)
  bool counted = true;        // false: left out by CUSCOPE_NVTX_DOMAINS, or cuscope's own
};

// The handle of a left-out domain is its Domain's address with this bit set, so that its calls cost
// one test of the handle and no load; a counted domain's handle is its address (nullptr is the
// default domain's). Handles are opaque to NVTX and to the program: only this library reads them.
constexpr std::uintptr_t kLeftOut = 1;
static_assert(alignof(Domain) > kLeftOut, "the bit is free in a Domain's address");

nvtxDomainHandle_t handle_of(const Domain* d) {
  const auto bits = reinterpret_cast<std::uintptr_t>(d);
  return reinterpret_cast<nvtxDomainHandle_t>(d != nullptr && !d->counted ? bits | kLeftOut : bits);
}
[[gnu::always_inline]] inline bool left_out(nvtxDomainHandle_t h) {
  return (reinterpret_cast<std::uintptr_t>(h) & kLeftOut) != 0;
}
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

Domains* g_domains = nullptr;  // set once, by domains()

// fork(): the lock is held across it, so a child forked while another thread creates a domain
// finds it free. Taken before the name table's lock (whose handlers are installed first, and
// prepare handlers run in the reverse order), the order domain_named() takes them in.
void domains_fork_prepare() { g_domains->mutex.lock(); }
void domains_fork_release() { g_domains->mutex.unlock(); }

Domains& domains() {
  static auto* d = [] {
    auto* made = new Domains;
    made->filter = options_from_env().nvtx_domains;  // bad values are reported by the session's start
    made->default_counted = made->keeps("default");
    g_domains = made;
    static_cast<void>(process_names());  // its fork handlers first (see above)
    pthread_atfork(domains_fork_prepare, domains_fork_release, domains_fork_release);
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
  static constexpr std::uint32_t kFrame = 1u << 16;   // the range named after the domain, under its first
  static constexpr std::uint32_t kCommon = 1u << 17;  // opened by enter_common(): token is the tree depth
  struct Entry {
    ThreadState* ts;      // non-null: the range was entered on ts, which must close it
    std::uint32_t token;  // exit_owned()'s token; the tree depth when kCommon
    std::uint32_t kind;   // Domain::index (0 for the default domain) | kFrame | kCommon
    [[nodiscard]] std::uint16_t domain() const { return static_cast<std::uint16_t>(kind); }
    [[nodiscard]] bool frame() const { return (kind & kFrame) != 0; }
    [[nodiscard]] bool common() const { return (kind & kCommon) != 0; }
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

// The scope's common entry (scope.cpp, enter_common()) for a range of this library, straight into
// the thread's tree: a started session recording host times only, the counter clock, the thread
// attached, no end posted from another thread, and the tree's own common case. No NVTX range of its
// own to push: this library is the NVTX tool. False having done nothing: enter_interned() does it.
[[gnu::always_inline]] inline bool enter_common(std::uint32_t name_id, OpenRanges::Entry& e) {
  ThreadState* ts = t_state;
  if (ts == nullptr || g_state.load(std::memory_order_relaxed) != kOn ||
      g_flags.load(std::memory_order_relaxed) != kRecording || ts->tree->remote_posted())
    return false;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock == nullptr) return false;
  // The entry is written first (what begin_common() will make of it: the frame above the tree's
  // innermost), so that nothing stays live across the tree's entry; unused when it declines.
  e.ts = ts;
  e.token = ts->tree->open_depth() + 1;
  model::ThreadTree::Token b{};
  return ts->tree->begin_common(name_id, clock->to_ns(cycle_counter()), &b);
}

// The scope's common exit (exit_owned_inline()) for a range enter_common() opened: the innermost
// frame with nothing else to undo; otherwise exit_owned() with the token it takes.
[[gnu::always_inline]] inline void exit_common(ThreadState* ts, std::uint32_t depth) {
  model::ThreadTree& tree = *ts->tree;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock != nullptr && !tree.remote_posted() && !ts->counted_root &&
      (g_flags.load(std::memory_order_relaxed) & kCounters) == 0 &&
      tree.end_common(depth, clock->to_ns(cycle_counter()))) {
    if (tree.remote_posted()) settle_remote_ends(ts);  // an entry below, ended elsewhere, is innermost now
    return;
  }
  exit_owned(ts, owned_token(depth), now_ns());
}

// Closes an entry's range. Only on the thread that entered it: a state that is no longer the
// thread's (a child of fork(), where cuscope is off, or a state released at thread exit and
// maybe handed to another thread) is not touched; its open ranges were counted when it let go.
[[gnu::always_inline]] inline void close_range(const OpenRanges::Entry& e) {
  if (e.ts == nullptr || e.ts != t_state) return;
  if (e.common()) {
    exit_common(e.ts, e.token);
  } else {
    exit_owned(e.ts, e.token, now_ns());
  }
}

[[gnu::always_inline]] inline int open_range(OpenRanges& o, std::uint32_t name_id, std::uint16_t domain,
                                             bool frame) {
  if (o.depth == OpenRanges::kMax) {
    ++o.skipped;
    return static_cast<int>(o.depth);
  }
  OpenRanges::Entry& e = o.entries[o.depth];
  e.kind = domain | (frame ? OpenRanges::kFrame : 0);
  if (enter_common(name_id, e)) {
    e.kind |= OpenRanges::kCommon;
  } else {
    e.ts = enter_interned(name_id, e.token);
  }
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
  if (e.domain() != 0) --o.open_in[e.domain()];
  close_range(e);
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
    if (e.domain() != index || e.frame()) continue;
    close_entry(o, i);
    if (index != 0 && o.open_in[index] == 1) {  // only the domain's frame is left: close it too
      for (std::uint32_t j = i; j-- > 0;) {
        if (o.entries[j].domain() == index && o.entries[j].frame()) {
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
    const OpenRanges::Entry& top = o.entries[o.depth - 1];
    const bool frame_left = index != 0 && o.open_in[index] == 2;  // this range and the frame under it
    if (top.domain() == index && !top.frame() && !frame_left) {
      --o.depth;
      if (index != 0) --o.open_in[index];
      close_range(top);
      return static_cast<int>(o.depth);
    }
  }
  return pop_range_slow(o, index);
}

// ---- event attributes ----------------------------------------------------------------------

// The largest name id register_a/w handed out as a handle: a registered handle holds its id, and
// one above this (or 0) is not ours.
std::atomic<std::uint32_t> g_registered_max{0};

[[gnu::always_inline]] inline bool registered_id(nvtxStringHandle_t h, std::uint32_t* id) {
  const auto v = reinterpret_cast<std::uintptr_t>(h);
  if (v - 1 >= g_registered_max.load(std::memory_order_relaxed)) return false;
  *id = static_cast<std::uint32_t>(v);
  return true;
}

constexpr std::size_t kAttributesNeeded =
    offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);

// The hot path's names: an ASCII message already in the thread's cache, or a registered string.
// False when that cannot be had here (name_of() does the rest).
[[gnu::always_inline]] inline bool name_common(const OpenRanges& o, const nvtxEventAttributes_t* a,
                                               std::uint32_t* id) {
  if (a == nullptr || a->size < kAttributesNeeded) return false;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return registered_id(a->message.registered, id);
  return a->messageType == NVTX_MESSAGE_TYPE_ASCII && o.names.find(a->message.ascii, id);
}

[[gnu::noinline]] std::uint32_t name_of(OpenRanges& o, const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->size < kAttributesNeeded) return intern_message(std::string_view{});
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return o.names.id(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return intern_message(utf8_of(a->message.unicode));
    case NVTX_MESSAGE_TYPE_REGISTERED: {
      std::uint32_t id = 0;
      return registered_id(a->message.registered, &id) ? id : intern_message(std::string_view{});
    }
    default:
      return intern_message(std::string_view{});
  }
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

// Push and pop: the common case is straight code that either does it all or changes nothing and
// tail-calls the general code (as scope.cpp's common path does), so that it saves no register.

// Opens `name_id` in `domain` (whose frame, if it has one, is open) by the common entry.
[[gnu::always_inline]] inline bool push_common(OpenRanges& o, std::uint32_t name_id, std::uint16_t domain,
                                               int* level) {
  if (o.depth == OpenRanges::kMax) return false;
  OpenRanges::Entry& e = o.entries[o.depth];
  e.kind = domain | OpenRanges::kCommon;  // unused unless entered
  if (!enter_common(name_id, e)) return false;
  const std::uint32_t depth = o.depth;
  o.depth = depth + 1;
  if (domain != 0) ++o.open_in[domain];
  *level = static_cast<int>(depth);
  return true;
}

// Closes the innermost range when it is `domain`'s own, opened by the common entry on this thread,
// not the last range above its domain's frame, and closes by the common exit.
[[gnu::always_inline]] inline bool pop_common(OpenRanges& o, std::uint16_t domain, ThreadState** closed_on,
                                              int* level) {
  const std::uint32_t depth = o.depth;
  if (depth - 1 >= OpenRanges::kMax - 1) return false;  // none open, or full (pushes may be skipped)
  const OpenRanges::Entry& top = o.entries[depth - 1];
  ThreadState* ts = top.ts;
  if (top.kind != (domain | OpenRanges::kCommon) || ts != t_state) return false;
  if (domain != 0 && o.open_in[domain] == 2) return false;  // its frame is left: pop_range() closes both
  model::ThreadTree& tree = *ts->tree;
  const ClockSegment* clock = g_clock_segment.load(std::memory_order_acquire);
  if (clock == nullptr || tree.remote_posted() || ts->counted_root ||
      (g_flags.load(std::memory_order_relaxed) & kCounters) != 0 ||
      !tree.end_common(top.token, clock->to_ns(cycle_counter())))
    return false;
  o.depth = depth - 1;
  if (domain != 0) --o.open_in[domain];
  *closed_on = ts;
  *level = static_cast<int>(depth - 1);
  return true;
}

// After a common pop that found an end posted from another thread: an entry below is innermost now.
[[gnu::noinline]] int settled(ThreadState* ts, int level) {
  settle_remote_ends(ts);
  return level;
}

[[gnu::always_inline]] inline int popped(ThreadState* ts, int level) {
  return ts->tree->remote_posted() ? settled(ts, level) : level;
}

[[gnu::noinline]] int push_a_general(const char* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, nullptr, o->names.id(message)) : 0;
}
[[gnu::noinline]] int pop_general(const Domain* d) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? pop_range(*o, d) : -1;
}
[[gnu::noinline]] int domain_push_general(const Domain* d, const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, d, name_of(*o, a)) : 0;
}

// The default domain's calls are handed to NVTX only when that domain counts (fill_tables()):
// left out, they stay NVTX's no-ops.
[[gnu::flatten]] int NVTX_API push_a(const char* message) {
  OpenRanges* o = t_open;
  std::uint32_t id = 0;
  int level = 0;
  if (o != nullptr && o->names.find(message, &id) && push_common(*o, id, 0, &level)) return level;
  return push_a_general(message);
}
int NVTX_API push_w(const wchar_t* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? push_range(*o, nullptr, intern_message(utf8_of(message))) : 0;
}
int NVTX_API push_ex(const nvtxEventAttributes_t* a) { return domain_push_general(nullptr, a); }
[[gnu::flatten]] int NVTX_API pop_default() {
  OpenRanges* o = t_open;
  ThreadState* ts = nullptr;
  int level = 0;
  if (o != nullptr && pop_common(*o, 0, &ts, &level)) return popped(ts, level);
  return pop_general(nullptr);
}
// A domain's calls: a left-out domain costs one test of its handle.
[[gnu::flatten]] int NVTX_API domain_push_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr) return default_counted() ? domain_push_general(nullptr, a) : 0;
  OpenRanges* o = t_open;
  std::uint32_t id = 0;
  int level = 0;
  // The domain's frame open (or none for it: a shared index), as when its ranges nest.
  if (o != nullptr && (d->index == kSharedDomain || o->open_in[d->index] != 0) && name_common(*o, a, &id) &&
      push_common(*o, id, d->index, &level))
    return level;
  return domain_push_general(d, a);
}
[[gnu::flatten]] int NVTX_API domain_pop(nvtxDomainHandle_t h) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr) return default_counted() ? pop_general(nullptr) : 0;
  OpenRanges* o = t_open;
  ThreadState* ts = nullptr;
  int level = 0;
  if (o != nullptr && pop_common(*o, d->index, &ts, &level)) return popped(ts, level);
  return pop_general(d);
}

nvtxRangeId_t NVTX_API start_a(const char* message) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(nullptr, o->names.id(message)) : 0;
}
nvtxRangeId_t NVTX_API start_w(const wchar_t* message) {
  return start_span(nullptr, intern_message(utf8_of(message)));
}
nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t* a) {
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(nullptr, name_of(*o, a)) : 0;
}
void NVTX_API end_any(nvtxRangeId_t id) { end_span(id); }
nvtxRangeId_t NVTX_API domain_start_ex(nvtxDomainHandle_t h, const nvtxEventAttributes_t* a) {
  if (left_out(h)) return 0;
  const Domain* d = reinterpret_cast<const Domain*>(h);
  if (d == nullptr && !default_counted()) return 0;
  OpenRanges* o = open_ranges();
  return o != nullptr ? start_span(d, name_of(*o, a)) : 0;
}
void NVTX_API domain_end(nvtxDomainHandle_t, nvtxRangeId_t id) { end_span(id); }

// A registered string's handle is its name id: a push with it needs no lookup at all.
nvtxStringHandle_t registered_handle(std::uint32_t id) {
  std::uint32_t max = g_registered_max.load(std::memory_order_relaxed);
  while (id > max && !g_registered_max.compare_exchange_weak(max, id, std::memory_order_relaxed)) {
  }
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(id));
}
nvtxStringHandle_t NVTX_API register_a(nvtxDomainHandle_t, const char* s) {
  return registered_handle(intern_message(s ? s : ""));
}
nvtxStringHandle_t NVTX_API register_w(nvtxDomainHandle_t, const wchar_t* s) {
  return registered_handle(intern_message(utf8_of(s)));
}
nvtxDomainHandle_t NVTX_API create_a(const char* name) {
  try {
    return handle_of(domain_named(name != nullptr ? name : ""));
  } catch (...) {
    return nullptr;  // out of memory: its ranges count in the default domain
  }
}
nvtxDomainHandle_t NVTX_API create_w(const wchar_t* name) {
  try {
    return handle_of(domain_named(utf8_of(name)));
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
  if (default_counted()) set(core, core_size, core_callbacks);  // left out: NVTX's no-ops, no call
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

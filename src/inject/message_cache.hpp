// inject/message_cache.hpp — the name an NVTX push carries, as libcuscope_inject.so reads it: a
// thread's cache of message texts, the operator name of a PyTorch emit_nvtx() message, and the
// handles of registered strings (which hold their name id).
//
// Hot path: MessageCache::find() and name_common() are inline here, for the NVTX callbacks to
// flatten into their straight code: a pointer compared and its text checked in three masked words,
// or a registered handle's id bounds-checked. They must never lock, allocate, hash or take a strlen;
// what declines goes to the out-of-line code in message_cache.cpp, which interns under the name
// table's lock.
#pragma once

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#pragma GCC visibility push(hidden)  // private to libcuscope_inject.so: direct access, no GOT
namespace cuscope::inline v0::detail::inject {

// PyTorch's emit_nvtx() writes "aten::addmm, seq = 1234, op_id = 99, sizes = [[8, 8], ...]": the
// numbers make every call a new name. The range is the operator; what follows is left out: the text
// up to the first comma that starts one of these. One pass that stops there (such a message is
// formatted anew for every call, and its sizes can run to hundreds of bytes).
inline constexpr std::string_view kOperatorSuffixes[] = {
    ", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "};
inline constexpr std::size_t kLongestOperatorSuffix = [] {
  std::size_t n = 0;
  for (std::string_view s : kOperatorSuffixes) n = std::max(n, s.size());
  return n;
}();

inline bool starts_with_operator_suffix(std::string_view rest) {
  for (std::string_view s : kOperatorSuffixes) {
    if (rest.starts_with(s)) return true;
  }
  return false;
}

// The same for the NUL-terminated text at `p`, reading no further than a suffix's length.
inline bool operator_suffix_at(const char* p) {
  return starts_with_operator_suffix({p, strnlen(p, kLongestOperatorSuffix)});
}

/// The name `message` stands for: an emit_nvtx() message's operator, any other message whole.
std::string_view operator_name(std::string_view message);
/// The process's name id of operator_name(message) (under the name table's lock).
std::uint32_t intern_message(std::string_view message);
/// A wide NVTX message as UTF-8 (a bad code point becomes U+FFFD); "" for nullptr.
std::string utf8_of(const wchar_t* w);

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
      return std::strncmp(text.c_str(), message, text.size()) == 0 &&
             operator_suffix_at(message + text.size());
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

  [[gnu::noinline]] std::uint32_t miss(const char* message);
  void keep(const char* message, std::size_t size, std::size_t name_size, std::uint32_t id);
  static std::uint64_t hash(const char* p, std::size_t n);

  std::array<Slot, kSlots> pointers_{};
  std::array<LongSlot, kSlots> longs_{};
  std::array<TextSlot, kSlots> contents_{};
};

// ---- registered strings and event attributes -----------------------------------------------

// The largest name id register_a/w handed out as a handle: a registered handle holds its id, and
// one above this (or 0) is not ours.
extern std::atomic<std::uint32_t> g_registered_max;

[[gnu::always_inline]] inline bool registered_id(nvtxStringHandle_t h, std::uint32_t* id) {
  const auto v = reinterpret_cast<std::uintptr_t>(h);
  if (v - 1 >= g_registered_max.load(std::memory_order_relaxed)) return false;
  *id = static_cast<std::uint32_t>(v);
  return true;
}

/// A registered string's handle is its name id: a push with it needs no lookup at all.
nvtxStringHandle_t registered_handle(std::uint32_t id);

inline constexpr std::size_t kAttributesNeeded =
    offsetof(nvtxEventAttributes_t, message) + sizeof(nvtxMessageValue_t);

// The hot path's names: an ASCII message already in the thread's cache, or a registered string.
// False when that cannot be had here (name_of() does the rest).
[[gnu::always_inline]] inline bool name_common(const MessageCache& names, const nvtxEventAttributes_t* a,
                                               std::uint32_t* id) {
  if (a == nullptr || a->size < kAttributesNeeded) return false;
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED) return registered_id(a->message.registered, id);
  return a->messageType == NVTX_MESSAGE_TYPE_ASCII && names.find(a->message.ascii, id);
}

/// The name id of the event's message, whatever its type (the empty name when it has none).
[[gnu::noinline]] std::uint32_t name_of(MessageCache& names, const nvtxEventAttributes_t* a);

}  // namespace cuscope::inline v0::detail::inject
#pragma GCC visibility pop

// inject/message_cache.cpp — the slow half of the message cache: a message not found by its
// pointer, interned and kept in the thread's slots; emit_nvtx() operator names; wide messages; the
// handles of registered strings; a push's name from its event attributes.
//
// Runs off the hot path, on a message's first visit (or a slot taken by another message). It may
// take the name table's lock and allocate; it must never let an allocation failure escape: the
// name stays right and the slot stays empty.
#include "inject/message_cache.hpp"

#include "model/names.hpp"
#include "session/session.hpp"

namespace cuscope::inline v0::detail::inject {

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

std::uint32_t MessageCache::miss(const char* message) {
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
void MessageCache::keep(const char* message, std::size_t size, std::size_t name_size, std::uint32_t id) {
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

std::uint64_t MessageCache::hash(const char* p, std::size_t n) {
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

std::atomic<std::uint32_t> g_registered_max{0};

nvtxStringHandle_t registered_handle(std::uint32_t id) {
  std::uint32_t max = g_registered_max.load(std::memory_order_relaxed);
  while (id > max && !g_registered_max.compare_exchange_weak(max, id, std::memory_order_relaxed)) {
  }
  return reinterpret_cast<nvtxStringHandle_t>(static_cast<std::uintptr_t>(id));
}

std::uint32_t name_of(MessageCache& names, const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->size < kAttributesNeeded) return intern_message(std::string_view{});
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return names.id(a->message.ascii);
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

}  // namespace cuscope::inline v0::detail::inject

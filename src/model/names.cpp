// model/names.cpp — sanitizing and interning range names (off the hot path).
#include "model/names.hpp"

#include <cuscope/report.hpp>

namespace cuscope::model {
namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is not valid.
std::size_t utf8_sequence_length(const unsigned char* s, std::size_t i, std::size_t n) {
  const unsigned char c = s[i];
  std::size_t len = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0 && c >= 0xC2)
    len = 2;
  else if ((c & 0xF0) == 0xE0)
    len = 3;
  else if ((c & 0xF8) == 0xF0 && c <= 0xF4)
    len = 4;
  else
    return 0;
  if (i + len > n) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((s[i + k] & 0xC0) != 0x80) return 0;
  }
  if (len == 3 && c == 0xE0 && s[i + 1] < 0xA0) return 0;   // overlong
  if (len == 3 && c == 0xED && s[i + 1] >= 0xA0) return 0;  // surrogate
  if (len == 4 && c == 0xF0 && s[i + 1] < 0x90) return 0;   // overlong
  if (len == 4 && c == 0xF4 && s[i + 1] >= 0x90) return 0;  // past U+10FFFF
  return len;
}

constexpr std::string_view kDivisionSlash = "\u2215";  // looks like '/', is not the path separator
constexpr std::string_view kEllipsis = "\u2026";

}  // namespace

std::string sanitize_name(const char* raw, std::size_t size, bool* adjusted) {
  *adjusted = false;
  if (raw == nullptr) {
    *adjusted = true;
    return "(null)";
  }
  if (size == 0) {
    *adjusted = true;
    return "(unnamed)";
  }
  const auto* s = reinterpret_cast<const unsigned char*>(raw);
  std::string out;
  out.reserve(size < kMaxNameBytes ? size : kMaxNameBytes);
  for (std::size_t i = 0; i < size;) {
    const std::size_t len = utf8_sequence_length(s, i, size);
    std::string_view piece;
    if (len == 0 || s[i] < 0x20 || s[i] == 0x7F) {
      piece = "?";
      *adjusted = true;
    } else if (s[i] == '/') {
      piece = kDivisionSlash;
      *adjusted = true;
    } else {
      piece = std::string_view(raw + i, len);
    }
    if (out.size() + piece.size() > kMaxNameBytes) {
      out += kEllipsis;
      *adjusted = true;
      break;
    }
    out += piece;
    i += len == 0 ? 1 : len;
  }
  return out;
}

NameTable::NameTable() {
  std::lock_guard lock(mutex_);
  add_locked(std::string(kUnscopedName));
  add_locked("(name table full)");
}

NameTable::~NameTable() {
  for (auto& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

std::uint32_t NameTable::intern(const char* raw) {
  if (raw == nullptr) {
    bool adjusted = false;
    std::string name = sanitize_name(nullptr, 0, &adjusted);
    std::lock_guard lock(mutex_);
    auto [it, inserted] = by_raw_.try_emplace(std::string("\0(null)", 7), 0);
    if (!inserted) return it->second;
    adjusted_.fetch_add(1, std::memory_order_relaxed);
    auto found = by_sanitized_.find(name);
    it->second = found != by_sanitized_.end() ? found->second : add_locked(std::move(name));
    return it->second;
  }
  return intern(std::string_view(raw));
}

std::uint32_t NameTable::intern(std::string_view raw) {
  std::lock_guard lock(mutex_);
  if (auto it = by_raw_.find(absl::string_view(raw.data(), raw.size())); it != by_raw_.end())
    return it->second;
  bool adjusted = false;
  std::string name = sanitize_name(raw, &adjusted);
  if (adjusted) adjusted_.fetch_add(1, std::memory_order_relaxed);
  std::uint32_t id = 0;
  if (auto it = by_sanitized_.find(name); it != by_sanitized_.end()) {
    id = it->second;
  } else {
    id = add_locked(std::move(name));
  }
  if (id != kFullId) by_raw_.emplace(std::string(raw), id);
  return id;
}

std::uint32_t NameTable::add_locked(std::string name) {
  const std::uint32_t id = size_.load(std::memory_order_relaxed) + 1;
  if (id >= kMaxNames) {
    overflowed_.fetch_add(1, std::memory_order_relaxed);
    return kFullId;
  }
  const std::uint32_t chunk = id >> kChunkBits;
  Entry* entries = chunks_[chunk].load(std::memory_order_relaxed);
  if (entries == nullptr) {
    entries = new Entry[kChunkSize];
    chunks_[chunk].store(entries, std::memory_order_release);
  }
  by_sanitized_.emplace(name, id);
  entries[id & (kChunkSize - 1)].name = std::move(name);
  size_.store(id, std::memory_order_release);
  return id;
}

NameTable::Entry& NameTable::entry(std::uint32_t id) const {
  Entry* entries = chunks_[id >> kChunkBits].load(std::memory_order_acquire);
  return entries[id & (kChunkSize - 1)];
}

const std::string& NameTable::name(std::uint32_t id) const { return entry(id).name; }

std::atomic<void*>& NameTable::tag(std::uint32_t id) const { return entry(id).tag; }

}  // namespace cuscope::model

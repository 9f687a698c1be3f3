// model/names.cpp — sanitizing and interning range names (off the hot path).
#include "model/names.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstring>
#include <cuscope/report.hpp>
#include <vector>

#include "model/utf8.hpp"

namespace cuscope::model {
namespace {

constexpr std::string_view kDivisionSlash = "\u2215";  // looks like '/', is not the path separator
constexpr std::string_view kEllipsis = "\u2026";
constexpr std::size_t kMaxSanitizedBytes = kMaxNameBytes + kEllipsis.size();

// Writes the sanitized `raw` into `out` (kMaxSanitizedBytes) and returns its length; no allocation.
std::size_t sanitize_into(const char* raw, std::size_t size, char* out, bool* adjusted) {
  *adjusted = false;
  auto put = [&](std::string_view text) {
    std::memcpy(out, text.data(), text.size());
    return text.size();
  };
  if (raw == nullptr) {
    *adjusted = true;
    return put("(null)");
  }
  if (size == 0) {
    *adjusted = true;
    return put("(unnamed)");
  }
  const auto* s = reinterpret_cast<const unsigned char*>(raw);
  std::size_t n = 0;
  for (std::size_t i = 0; i < size;) {
    const std::size_t len = utf8_sequence_length(std::string_view(raw, size), i);
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
    if (n + piece.size() > kMaxNameBytes) {
      std::memcpy(out + n, kEllipsis.data(), kEllipsis.size());
      n += kEllipsis.size();
      *adjusted = true;
      break;
    }
    std::memcpy(out + n, piece.data(), piece.size());
    n += piece.size();
    i += len == 0 ? 1 : len;
  }
  return n;
}

// A second, independent 64-bit hash of a raw name; with absl's it makes a 128-bit fingerprint.
std::uint64_t second_hash(std::string_view s) {
  std::uint64_t h = 0x9E3779B97F4A7C15ull ^ (s.size() * 0xC2B2AE3D27D4EB4Full);
  std::size_t i = 0;
  auto mix = [&h](std::uint64_t w) {
    h = (h ^ w) * 0xFF51AFD7ED558CCDull;
    h ^= h >> 29;
  };
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    mix(w);
  }
  std::uint64_t tail = 0;
  std::memcpy(&tail, s.data() + i, s.size() - i);
  mix(tail ^ 0x165667B19E3779F9ull);
  h ^= h >> 32;
  h *= 0xC4CEB9FE1A85EC53ull;
  return h ^ (h >> 33);
}

// Every live table, so that fork() can hold their locks.
std::mutex& registry_mutex() {
  static auto* m = new std::mutex;  // leaked: tables may be destroyed during static destruction
  return *m;
}
std::vector<NameTable*>& registry() {
  static auto* r = new std::vector<NameTable*>;
  return *r;
}

}  // namespace

std::string sanitize_name(const char* raw, std::size_t size, bool* adjusted) {
  char out[kMaxSanitizedBytes];
  return {out, sanitize_into(raw, size, out, adjusted)};
}

NameTable::NameTable() {
  {
    std::lock_guard lock(registry_mutex());
    static const bool registered = [] {
      return pthread_atfork(fork_prepare, fork_release, fork_release) == 0;
    }();
    (void)registered;
    registry().push_back(this);
  }
  std::lock_guard lock(mutex_);
  add_locked(kUnscopedName, false);
  add_locked("(name table full)", false);
  add_locked(kCountedStepsName, false);
}

NameTable::~NameTable() {
  {
    std::lock_guard lock(registry_mutex());
    auto& r = registry();
    r.erase(std::find(r.begin(), r.end(), this));
  }
  for (auto& chunk : chunks_) delete[] chunk.load(std::memory_order_relaxed);
}

void NameTable::fork_prepare() noexcept {
  registry_mutex().lock();
  for (NameTable* t : registry()) t->mutex_.lock();
}

void NameTable::fork_release() noexcept {
  for (NameTable* t : registry()) t->mutex_.unlock();
  registry_mutex().unlock();
}

std::uint32_t NameTable::intern(const char* raw) {
  if (raw != nullptr) return intern(std::string_view(raw));
  char out[kMaxSanitizedBytes];
  bool adjusted = false;
  const std::size_t n = sanitize_into(nullptr, 0, out, &adjusted);
  std::lock_guard lock(mutex_);
  return intern_adjusted_locked({}, {out, n}, true);
}

std::uint32_t NameTable::intern(std::string_view raw) {
  std::lock_guard lock(mutex_);
  // A genuine name is its own text: found without sanitizing.
  if (auto it = genuine_.find(raw); it != genuine_.end()) return it->second;
  char out[kMaxSanitizedBytes];
  bool adjusted = false;
  const std::size_t n = sanitize_into(raw.data(), raw.size(), out, &adjusted);
  if (!adjusted) return add_locked(raw, false);
  return intern_adjusted_locked(raw, {out, n}, false);
}

std::uint32_t NameTable::intern_adjusted_locked(std::string_view raw, std::string_view text, bool is_null) {
  bool first_time = false;
  if (is_null) {
    first_time = !null_seen_;
    null_seen_ = true;
  } else {
    const Fingerprint fp{absl::Hash<std::string_view>{}(raw), second_hash(raw)};
    if (remembered_.contains(fp)) {
      first_time = false;
    } else {
      first_time = true;
      if (remembered_.size() < kMaxRemembered) remembered_.insert(fp);
    }
  }
  if (first_time) adjusted_.fetch_add(1, std::memory_order_relaxed);
  if (auto it = adjusted_names_.find(text); it != adjusted_names_.end()) return it->second;
  return add_locked(text, true);
}

std::uint32_t NameTable::add_locked(std::string_view text, bool adjusted) {
  const std::uint32_t id = size_.load(std::memory_order_relaxed) + 1;
  const std::size_t bytes = text_bytes_.load(std::memory_order_relaxed);
  if (id >= kMaxNames || bytes + text.size() > kMaxTextBytes) {
    overflowed_.fetch_add(1, std::memory_order_relaxed);
    return kFullId;
  }
  const std::uint32_t chunk = id >> kChunkBits;
  Entry* entries = chunks_[chunk].load(std::memory_order_relaxed);
  if (entries == nullptr) {
    entries = new Entry[kChunkSize];
    chunks_[chunk].store(entries, std::memory_order_release);
  }
  Entry& e = entries[id & (kChunkSize - 1)];
  e.name.assign(text.data(), text.size());
  (adjusted ? adjusted_names_ : genuine_).emplace(std::string_view(e.name), id);
  text_bytes_.store(bytes + text.size(), std::memory_order_relaxed);
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

// model/names.hpp — the name table: every range name, sanitized and interned once.
//
// Ids are dense and start at 1; reading a name by id takes no lock (chunks are published
// with release stores and never move). Interning takes a lock and is never on the hot path
// once a call site has been seen. The table is bounded: past kMaxNames every new name maps
// to kFullId ("(name table full)"), counted.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace cuscope::model {

/// A name as a range shows it: never empty, no '/', no control bytes, valid UTF-8, bounded.
/// Sets *adjusted when the result differs from `raw` (nullptr counts as adjusted).
std::string sanitize_name(const char* raw, std::size_t size, bool* adjusted);
inline std::string sanitize_name(std::string_view raw, bool* adjusted) {
  return sanitize_name(raw.data(), raw.size(), adjusted);
}

inline constexpr std::size_t kMaxNameBytes = 200;

class NameTable {
 public:
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 128;
  static constexpr std::uint32_t kMaxNames = kChunkSize * kMaxChunks;
  static constexpr std::uint32_t kUnscopedId = 1;  ///< "(unscoped)", GPU work outside every scope
  static constexpr std::uint32_t kFullId = 2;      ///< "(name table full)"

  NameTable();
  ~NameTable();
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;

  /// The id of `raw` (sanitized). Thread-safe.
  std::uint32_t intern(std::string_view raw);
  /// Same for a C string that may be null.
  std::uint32_t intern(const char* raw);

  /// The sanitized name of `id` (lock-free). `id` must come from this table.
  [[nodiscard]] const std::string& name(std::uint32_t id) const;
  /// A pointer-sized slot per name that producers may fill once (e.g. an NVTX string handle).
  [[nodiscard]] std::atomic<void*>& tag(std::uint32_t id) const;

  [[nodiscard]] std::uint32_t size() const { return size_.load(std::memory_order_acquire); }
  [[nodiscard]] std::uint64_t adjusted() const { return adjusted_.load(std::memory_order_relaxed); }
  [[nodiscard]] std::uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string name;
    mutable std::atomic<void*> tag{nullptr};
  };
  std::uint32_t add_locked(std::string name);
  [[nodiscard]] Entry& entry(std::uint32_t id) const;

  std::mutex mutex_;
  absl::flat_hash_map<std::string, std::uint32_t> by_raw_;        // guarded by mutex_
  absl::flat_hash_map<std::string, std::uint32_t> by_sanitized_;  // guarded by mutex_
  std::atomic<Entry*> chunks_[kMaxChunks] = {};
  std::atomic<std::uint32_t> size_{0};  // ids [1, size_] are published
  std::atomic<std::uint64_t> adjusted_{0};
  std::atomic<std::uint64_t> overflowed_{0};
};

}  // namespace cuscope::model

// model/names.hpp — the name table: every range name, sanitized and interned once.
//
// Ids are dense and start at 1; reading a name by id takes no lock (chunks are published
// with release stores and never move). Interning takes a lock and is never on the hot path
// once a call site has been seen.
//
// Identity: a name that needed no adjustment (a "genuine" name) and an adjusted one are
// different names even when they print alike: "a/b" is shown as "a∕b" (U+2215) but stays a
// different range from a genuine "a∕b". Raw names that adjust to the same text share one id.
//
// Memory is bounded and stated: at most kMaxNames names and kMaxTextBytes bytes of name text,
// each name stored once at its adjusted length (at most kMaxNameBytes plus an ellipsis); past
// either bound every new name maps to kFullId ("(name table full)"), counted. Raw names are not
// kept: to count adjusted names once each, the table remembers a 128-bit fingerprint of at most
// kMaxRemembered distinct adjusted raw names; past that, each lookup of a further one counts.
//
// fork(): a table's lock is held across fork() (pthread_atfork), so a child forked while
// another thread interns finds it free.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/flat_hash_set.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

namespace cuscope::model {

inline constexpr std::size_t kMaxNameBytes = 200;

/// A name as a range shows it: never empty, no '/', no control bytes, valid UTF-8, bounded.
/// Sets *adjusted when the result differs from `raw` (nullptr counts as adjusted).
std::string sanitize_name(const char* raw, std::size_t size, bool* adjusted);
inline std::string sanitize_name(std::string_view raw, bool* adjusted) {
  return sanitize_name(raw.data(), raw.size(), adjusted);
}

class NameTable {
 public:
  static constexpr std::uint32_t kChunkBits = 10;
  static constexpr std::uint32_t kChunkSize = 1u << kChunkBits;
  static constexpr std::uint32_t kMaxChunks = 128;
  static constexpr std::uint32_t kMaxNames = kChunkSize * kMaxChunks;
  static constexpr std::size_t kMaxTextBytes = std::size_t{8} << 20;
  static constexpr std::size_t kMaxRemembered = kMaxNames;
  static constexpr std::uint32_t kUnscopedId = 1;      ///< "(unscoped)", GPU work outside every scope
  static constexpr std::uint32_t kFullId = 2;          ///< "(name table full)"
  static constexpr std::uint32_t kCountedStepsId = 3;  ///< "(counted steps)", steps with hardware counters

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
  /// Distinct raw names that had to be adjusted (see the file comment past kMaxRemembered).
  [[nodiscard]] std::uint64_t adjusted() const { return adjusted_.load(std::memory_order_relaxed); }
  /// Lookups that found the table full (by count or by bytes) and got kFullId.
  [[nodiscard]] std::uint64_t overflowed() const { return overflowed_.load(std::memory_order_relaxed); }
  /// Bytes of name text held.
  [[nodiscard]] std::size_t text_bytes() const { return text_bytes_.load(std::memory_order_relaxed); }

 private:
  struct Entry {
    std::string name;
    mutable std::atomic<void*> tag{nullptr};
  };
  struct Fingerprint {
    std::uint64_t a, b;
    bool operator==(const Fingerprint&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Fingerprint& f) {
      return H::combine(std::move(h), f.a);
    }
  };
  std::uint32_t intern_adjusted_locked(std::string_view raw, std::string_view text, bool is_null);
  std::uint32_t add_locked(std::string_view text, bool adjusted);
  [[nodiscard]] Entry& entry(std::uint32_t id) const;

  static void fork_prepare() noexcept;
  static void fork_release() noexcept;

  std::mutex mutex_;
  // Keys view the entries' own text (stored once); guarded by mutex_.
  absl::flat_hash_map<std::string_view, std::uint32_t> genuine_;
  absl::flat_hash_map<std::string_view, std::uint32_t> adjusted_names_;
  absl::flat_hash_set<Fingerprint> remembered_;  // adjusted raw names already counted
  bool null_seen_ = false;
  std::atomic<Entry*> chunks_[kMaxChunks] = {};
  std::atomic<std::uint32_t> size_{0};  // ids [1, size_] are published
  std::atomic<std::size_t> text_bytes_{0};
  std::atomic<std::uint64_t> adjusted_{0};
  std::atomic<std::uint64_t> overflowed_{0};
};

}  // namespace cuscope::model

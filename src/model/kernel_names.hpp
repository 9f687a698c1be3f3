// model/kernel_names.hpp — kernel names as small ids: the producer's name text -> demangled text
// -> id, with a bounded cache of names in front and a direct-mapped cache of recent pointers
// before that.
//
// Keyed by text, not by pointer: CUPTI's kernel records carry `name` as a pointer "shared across
// all activity records representing the same kernel" (cupti_activity.h, CUpti_ActivityKernel10),
// and nothing promises that the address outlives the kernel's module: after an unload (or a JIT
// module's end) it may hold another kernel's name. A pointer is trusted as a shortcut within one
// batch of records only (a CUPTI buffer, which is read whole while its names are valid); from the
// next batch on (end_batch()), its text is compared again before it is trusted.
//
// Bounded: at most kMaxCached distinct names are cached; past that, a name is demangled anew at
// each lookup (counted in uncached(), and still right). Ids are dense and stable for the
// aggregator's life; equal texts share one id. Not thread-safe: the aggregator's one consumer at
// a time.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <array>
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace cuscope::model {

/// Demangles a C++ symbol ("_Z6kernelPf" -> "kernel(float*)"); returns it unchanged otherwise.
std::string demangle(const char* name);

class KernelNames {
 public:
  /// Distinct names cached at most (their producer text, and its id).
  static constexpr std::size_t kMaxCached = 8192;

  /// The id of the kernel named `name` (a mangled or plain symbol; nullptr: unknown).
  std::uint32_t id(const char* name);
  [[nodiscard]] const std::string& text(std::uint32_t id) const { return names_[id]; }

  /// The batch of records in which the pointers looked up are trusted to keep their text.
  [[nodiscard]] std::uint64_t batch() const { return batch_; }
  /// The batch is over: from now on a pointer's text is compared again before it is trusted.
  void end_batch() { ++batch_; }

  /// Lookups made past the cache's bound (each demangled its name anew).
  [[nodiscard]] std::uint64_t uncached() const { return uncached_; }
  /// Distinct names cached (at most kMaxCached).
  [[nodiscard]] std::size_t cached() const { return by_text_of_producer_.size(); }

 private:
  struct Recent {
    const char* name = nullptr;  // the producer's pointer
    const char* kept = nullptr;  // its text when cached, in kept_
    std::uint64_t batch = 0;     // the batch it was last checked in (0: never)
    std::uint32_t id = 0;
  };
  std::uint32_t lookup(const char* name, Recent& recent);
  std::uint32_t text_id(std::string text);

  std::array<Recent, 64> recent_{};  // direct-mapped by pointer, in front of the cache
  std::deque<std::string> kept_;     // the cached producer texts; a deque: they never move
  absl::flat_hash_map<std::string_view, std::uint32_t> by_text_of_producer_;  // views into kept_
  absl::flat_hash_map<std::string, std::uint32_t> by_text_;                   // demangled text -> id
  std::vector<std::string> names_;
  std::uint64_t batch_ = 1;
  std::uint64_t uncached_ = 0;
};

}  // namespace cuscope::model

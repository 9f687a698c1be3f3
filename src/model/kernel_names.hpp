// model/kernel_names.hpp — kernel names as small ids: the producer's name pointer -> demangled
// text -> id, with a direct-mapped cache of recent pointers in front.
//
// Ids are dense and stable for the aggregator's life; equal texts share one id. It never keeps a
// producer's pointer as the name itself (only as a key), and is not thread-safe: the aggregator's
// one consumer at a time.
#pragma once

#include <absl/container/flat_hash_map.h>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace cuscope::model {

/// Demangles a C++ symbol ("_Z6kernelPf" -> "kernel(float*)"); returns it unchanged otherwise.
std::string demangle(const char* name);

class KernelNames {
 public:
  /// The id of the kernel named `name` (a mangled or plain symbol; nullptr: unknown).
  std::uint32_t id(const char* name);
  [[nodiscard]] const std::string& text(std::uint32_t id) const { return names_[id]; }

 private:
  struct Recent {
    const char* name = nullptr;
    std::uint32_t id = 0;
  };
  std::array<Recent, 64> recent_{};  // direct-mapped in front of by_ptr_
  absl::flat_hash_map<const char*, std::uint32_t> by_ptr_;
  absl::flat_hash_map<std::string, std::uint32_t> by_text_;
  std::vector<std::string> names_;
};

}  // namespace cuscope::model

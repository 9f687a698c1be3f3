// model/kernel_names.cpp — kernel names to demangled, deduplicated ids, keyed by their text.
#include "model/kernel_names.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>
#include <utility>

namespace cuscope::model {

std::string demangle(const char* name) {
  if (name == nullptr) return "(unknown kernel)";
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || out == nullptr) return name;
  std::string result(out);
  std::free(out);
  return result;
}

std::uint32_t KernelNames::id(const char* name) {
  if (name == nullptr) return text_id(demangle(nullptr));
  Recent& recent = recent_[(reinterpret_cast<std::uintptr_t>(name) >> 3) % recent_.size()];
  if (recent.name == name) {
    if (recent.batch == batch_) return recent.id;
    if (std::strcmp(recent.kept, name) == 0) {  // the same text at the same address: trusted again
      recent.batch = batch_;
      return recent.id;
    }
  }
  return lookup(name, recent);
}

// id() past the recent pointers: the cache, by text.
std::uint32_t KernelNames::lookup(const char* name, Recent& recent) {
  const std::string_view text(name);
  auto it = by_text_of_producer_.find(text);
  if (it == by_text_of_producer_.end()) {
    if (by_text_of_producer_.size() >= kMaxCached) {
      ++uncached_;
      return text_id(demangle(name));
    }
    const std::string& kept = kept_.emplace_back(text);
    it = by_text_of_producer_.emplace(std::string_view(kept), text_id(demangle(name))).first;
  }
  recent = {name, it->first.data(), batch_, it->second};
  return it->second;
}

std::uint32_t KernelNames::text_id(std::string text) {
  auto [it, inserted] = by_text_.try_emplace(std::move(text), static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.push_back(it->first);
  return it->second;
}

}  // namespace cuscope::model

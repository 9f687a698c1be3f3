// model/kernel_names.cpp — kernel name pointers to demangled, deduplicated ids.
#include "model/kernel_names.hpp"

#include <cxxabi.h>

#include <cstdlib>
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
  Recent& recent = recent_[(reinterpret_cast<std::uintptr_t>(name) >> 3) % recent_.size()];
  if (recent.name == name && name != nullptr) return recent.id;
  if (auto it = by_ptr_.find(name); it != by_ptr_.end()) {
    recent = {name, it->second};
    return it->second;
  }
  std::string text = demangle(name);
  auto [it, inserted] = by_text_.try_emplace(text, static_cast<std::uint32_t>(names_.size()));
  if (inserted) names_.push_back(std::move(text));
  by_ptr_.emplace(name, it->second);
  return it->second;
}

}  // namespace cuscope::model

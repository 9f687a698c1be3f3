// cuscope/version.hpp — the library version, also in cuscopeConfigVersion.cmake.
#pragma once

#define CUSCOPE_VERSION_MAJOR 0
#define CUSCOPE_VERSION_MINOR 1
#define CUSCOPE_VERSION_PATCH 0

namespace cuscope {
inline namespace v0 {
/// "0.1.0"
const char* version() noexcept;
}  // namespace v0
}  // namespace cuscope

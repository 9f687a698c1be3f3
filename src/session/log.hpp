// session/log.hpp — cuscope's own messages: one line each, to stderr, prefixed "cuscope:".
// warn_once() also keeps the message as a note in every later report.
#pragma once

#include <string>

namespace cuscope::inline v0::detail {

void warn_once(const std::string& message) noexcept;

}  // namespace cuscope::inline v0::detail

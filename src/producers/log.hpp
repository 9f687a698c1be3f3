// producers/log.hpp — cuscope's own messages: one line each, to stderr, prefixed "cuscope:".
// warn_once() also keeps the message as a note in every later report. Declared here, for the
// producers to say what went wrong without including the session; the session implements it
// (session/warnings.cpp) and every layer above the model may call it.
//
// Never from the hot path: a message takes a lock and allocates.
#pragma once

#include <string>
#include <string_view>

namespace cuscope::inline v0::detail {

/// Prints the message once (as one line, see one_line) and keeps it for the report's notes.
void warn_once(const std::string& message) noexcept;

/// `text` made printable on one line: newline, tab, other control bytes and bytes that are not
/// UTF-8 written as `\n`, `\t`, `\xNN`; valid UTF-8 is kept as it is. Idempotent.
std::string one_line(std::string_view text);

}  // namespace cuscope::inline v0::detail

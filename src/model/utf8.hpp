// model/utf8.hpp — UTF-8 validation, the one copy: range names are sanitized with it (names.cpp),
// and text cuscope writes out (JSON strings, messages) is checked with it, so a stray byte from a
// name, a path or an environment variable never makes the output unreadable.
#pragma once

#include <cstddef>
#include <string_view>

namespace cuscope::model {

/// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when the byte there does not
/// start one: a stray continuation byte, an overlong form, a surrogate, past U+10FFFF, or cut short.
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) noexcept {
  const auto at = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = at(0);
  if (c < 0x80) return 1;
  std::size_t len = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if ((c & 0xF0) == 0xE0) {
    len = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
  } else {
    return 0;
  }
  if (s.size() - i < len) return 0;
  for (std::size_t k = 1; k < len; ++k) {
    if ((at(k) & 0xC0) != 0x80) return 0;
  }
  if (c == 0xE0 && at(1) < 0xA0) return 0;   // overlong
  if (c == 0xED && at(1) >= 0xA0) return 0;  // UTF-16 surrogate
  if (c == 0xF0 && at(1) < 0x90) return 0;   // overlong
  if (c == 0xF4 && at(1) >= 0x90) return 0;  // past U+10FFFF
  return len;
}

}  // namespace cuscope::model

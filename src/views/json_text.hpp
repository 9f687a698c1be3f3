// views/json_text.hpp — a JSON string's contents, the one copy: the report's JSON (json.cpp) and
// the Chrome/Perfetto trace (cli/trace.cpp) escape text with it, so both always parse and read as
// UTF-8 whatever bytes a name, a path or a kernel name holds.
//
// Never: quotes around the text (the caller writes them), or any other JSON.
#pragma once

#include <fmt/format.h>

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

#include "model/utf8.hpp"

namespace cuscope::inline v0::views {

/// Appends `s` to `out` as a JSON string's contents: quotes and backslashes escaped, control bytes
/// as \u00XX, valid UTF-8 copied as it is, and a byte that starts no valid sequence as U+FFFD.
inline void append_json_text(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto byte = static_cast<unsigned char>(c);
    const std::size_t len = model::utf8_sequence_length(s, i);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (byte < 0x20) {
      fmt::format_to(std::back_inserter(out), "\\u{:04x}", byte);
    } else if (len == 0) {
      out += "\\ufffd";
    } else {
      out.append(s, i, len);
      i += len;
      continue;
    }
    ++i;
  }
}

}  // namespace cuscope::inline v0::views

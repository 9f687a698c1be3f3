// views/format.hpp — numbers and names made readable: the unit rules of every view.
//
// Durations and sizes are printed with three significant digits in the largest unit that keeps
// the value at 1 or more ("850 ns", "12.3 µs", "4.56 ms", "1.50 s"; "512 B", "1.50 KiB",
// "3.00 MiB"); nanoseconds and bytes below the first step are printed whole. Widths and truncation
// count UTF-8 code points, so "µs", "—" and "…" line up like ASCII.
#pragma once

#include <fmt/format.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

namespace cuscope::inline v0::views {

/// a + b, or the largest uint64 where that would overflow.
inline std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
  return b > std::numeric_limits<std::uint64_t>::max() - a ? std::numeric_limits<std::uint64_t>::max()
                                                           : a + b;
}

/// `v` (>= 1) with three significant digits, or as a whole number once it reaches 1000.
inline std::string three_digits(double v) {
  std::string s = fmt::format("{:.2f}", v);
  if (s.find('.') == 1) return s;
  s = fmt::format("{:.1f}", v);
  if (s.find('.') == 2) return s;
  return fmt::format("{:.0f}", v);
}

inline std::string format_duration(std::uint64_t ns) {
  // A value moves up a unit once it would round to 1000 of the smaller one.
  if (ns < 1'000) return fmt::format("{} ns", ns);
  if (ns < 999'500) return three_digits(double(ns) / 1e3) + " µs";
  if (ns < 999'500'000) return three_digits(double(ns) / 1e6) + " ms";
  return three_digits(double(ns) / 1e9) + " s";
}

inline std::string format_bytes(std::uint64_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  static constexpr std::array<std::string_view, 6> kUnits{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = double(bytes) / 1024.0;
  std::size_t unit = 0;
  // 1023.5 and above would print as "1024": that is the next unit's 1.00.
  while (v >= 1023.5 && unit + 1 < kUnits.size()) {
    v /= 1024.0;
    ++unit;
  }
  return three_digits(v) + " " + std::string(kUnits[unit]);
}

/// A share in [0, 1] as a percentage with one decimal: 0.875 -> "87.5%".
inline std::string format_percent(double share) { return fmt::format("{:.1f}%", share * 100.0); }

/// A count or rate with an SI suffix, 3 significant digits: "950", "12.3 k", "4.56 M", "1.20 G".
inline std::string format_quantity(double v) {
  const char* suffixes[] = {"", " k", " M", " G", " T", " P"};
  std::size_t i = 0;
  while (i + 1 < std::size(suffixes) && (v >= 999.5 || v <= -999.5)) {
    v /= 1000.0;
    ++i;
  }
  if (i == 0 && v == static_cast<double>(static_cast<long long>(v)))
    return fmt::format("{}", static_cast<long long>(v));
  const double a = v < 0 ? -v : v;
  const int decimals = a >= 99.95 ? 0 : a >= 9.995 ? 1 : 2;
  return fmt::format("{:.{}f}{}", v, decimals, suffixes[i]);
}

inline bool is_continuation_byte(char c) { return (static_cast<unsigned char>(c) & 0xC0U) == 0x80U; }

/// Display width of a UTF-8 string, counted in code points.
inline std::size_t display_width(std::string_view s) {
  std::size_t width = 0;
  for (char c : s) width += is_continuation_byte(c) ? 0 : 1;
  return width;
}

/// `s` cut to at most `max_width` code points, the last one replaced by "…" when cut.
inline std::string truncate(std::string_view s, std::size_t max_width) {
  if (display_width(s) <= max_width) return std::string(s);
  if (max_width == 0) return {};
  std::size_t kept = 0;
  std::size_t end = 0;
  for (; end < s.size(); ++end) {
    if (is_continuation_byte(s[end])) continue;
    if (kept == max_width - 1) break;
    ++kept;
  }
  return std::string(s.substr(0, end)) + "…";
}

inline std::string pad_right(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  return std::string(s) + std::string(w < width ? width - w : 0, ' ');
}

inline std::string pad_left(std::string_view s, std::size_t width) {
  const std::size_t w = display_width(s);
  return std::string(w < width ? width - w : 0, ' ') + std::string(s);
}

}  // namespace cuscope::inline v0::views

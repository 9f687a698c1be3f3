// cli/args.cpp — what several commands share: option values people type (shares, durations) and
// the walk of a report's range tree.
#include <charconv>
#include <cmath>
#include <string>

#include "cli/cli.hpp"

namespace cuscope::cli {

namespace {

bool parse_double(std::string_view text, double* out) {
  if (text.empty()) return false;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc{} && end == text.data() + text.size() && std::isfinite(*out);
}

}  // namespace

bool parse_share(std::string_view text, double* out) {
  double v = 0;
  const bool percent = !text.empty() && text.back() == '%';
  if (percent) text.remove_suffix(1);
  if (!parse_double(text, &v) || v < 0) return false;
  *out = percent ? v / 100.0 : v;
  return true;
}

bool parse_duration_ns(std::string_view text, std::uint64_t* out) {
  double scale = 1;
  for (const auto& [suffix, factor] :
       {std::pair<std::string_view, double>{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}}) {
    if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
      text.remove_suffix(suffix.size());
      scale = factor;
      break;
    }
  }
  double v = 0;
  if (!parse_double(text, &v) || v < 0 || v * scale > 1.8e19) return false;
  *out = static_cast<std::uint64_t>(std::llround(v * scale));
  return true;
}

std::vector<std::size_t> tree_order(const Report& report) {
  std::vector<std::size_t> order;
  std::vector<std::size_t> stack{0};
  while (!stack.empty()) {
    const std::size_t i = stack.back();
    stack.pop_back();
    if (i != 0) order.push_back(i);
    const std::vector<std::size_t>& children = report.ranges[i].children;
    for (auto c = children.rbegin(); c != children.rend(); ++c) stack.push_back(*c);
  }
  return order;
}

}  // namespace cuscope::cli

// cli/args.cpp — what several commands share: the walk over a command line, option values people
// type (shares, durations) and the walk of a report's range tree.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdio>
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

bool CommandLine::next() {
  if (stopped() || at_ + 1 >= args_.size()) {
    at_ = args_.size();
    return false;
  }
  ++at_;
  if (args_[at_] == "--help" || args_[at_] == "-h") {
    std::fputs(help_, stdout);
    status_ = 0;
    return false;
  }
  return true;
}

bool CommandLine::value(std::string_view name, std::string_view* value) {
  if (args_[at_] != name) return false;
  *value = {};
  if (at_ + 1 == args_.size()) {
    error(fmt::format("{} needs a value", name));
  } else {
    *value = args_[++at_];
  }
  return true;
}

bool CommandLine::operand(std::string_view* word) const {
  const std::string_view w = args_[at_];
  if (w.empty() || w[0] == '-') return false;
  *word = w;
  return true;
}

int CommandLine::error(std::string_view why) {
  if (!stopped() || status_ == 0) {
    std::fprintf(stderr, "cuscope %.*s: %.*s\n\n%s", static_cast<int>(command_.size()), command_.data(),
                 static_cast<int>(why.size()), why.data(), help_);
    status_ = usage_status_;
  }
  return status_;
}

int CommandLine::unknown() { return error(fmt::format("'{}' is not an option of {}", args_[at_], command_)); }

int parse_file_and_output(std::string_view command, const char* help, const Args& args, bool out_required,
                          std::string* path, std::string* out,
                          const std::function<bool(CommandLine&)>& extra) {
  CommandLine cl(command, help, args);
  while (cl.next()) {
    std::string_view v;
    if (extra && extra(cl)) continue;
    if (cl.value("-o", &v)) {
      *out = std::string(v);
    } else if (cl.operand(&v)) {
      if (!path->empty()) return cl.error(fmt::format("one file at a time ('{}' and '{}')", *path, v));
      *path = std::string(v);
    } else {
      return cl.unknown();
    }
  }
  if (cl.stopped()) return cl.status();
  if (path->empty()) return cl.error("no file given");
  if (out_required && out->empty()) return cl.error("-o OUT is required");
  return -1;
}

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

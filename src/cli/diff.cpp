// cli/diff.cpp — `cuscope diff BASE NEW`: a regression gate for CI. Ranges are matched by path;
// per range and metric it shows the base and new values with their absolute and relative change.
// Exit status: 0 when no gated metric regressed beyond the threshold, 1 when one did, 2 on bad
// input or a bad command line (so a broken CI step never reads as "regressed" or as "fine").
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "views/format.hpp"

namespace cuscope::cli {

namespace {

constexpr int kRegressed = 1;
constexpr int kBadInput = kDiffBadInput;

const std::string kHelp =
    "usage: cuscope diff [--threshold R] [--min-time T] [--metric M[,M...]] [--json] [--partial]\n"
    "                    BASE NEW\n"
    "\n"
    "Compares two reports (JSON reports or trace files) range by range, matched by path, and exits\n"
    "1 when a gated metric of a range regressed by more than the threshold, 0 when none did and\n"
    "2 on bad input. Ranges only in BASE or only in NEW are listed (they gate nothing).\n"
    "\n"
    "  --threshold R   relative change that counts as a regression: 0.1 or 10% (default 10%)\n"
    "  --min-time T    ignore ranges whose host, GPU and kernel times are all below T in both\n"
    "                  reports: 500us, 2ms, 1s, 300ns (default 0: none ignored)\n"
    "  --metric M,...  the metrics that gate (default host; 'all' for every one):\n"
    "                    calls   completed entries (more is worse)\n"
    "                    host    mean host time per call\n"
    "                    gpu     mean GPU time per call (the projected span of its GPU work\n"
    "                            where CUPTI traced, else CUDA-event time)\n"
    "                    kernel  kernel time of the range and its subtree\n"
    "                    busy    GPU busy share of the GPU span (less is worse)\n"
    "                    bytes   bytes copied and set by the range and its subtree\n"
    "  --json          the comparison as JSON (schema cuscope.diff/1) instead of a table\n" +
    std::string(kPartialHelp);

enum class Unit { count, time, share, bytes };

struct Metric {
  const char* name;
  Unit unit;
  bool higher_is_worse;
  double (*value)(const RangeStats&);
};

double bytes_of(const RangeStats& r) {
  double b = double(r.total.memset_bytes);
  for (const CopyStats& c : r.total.memcpy) b += double(c.bytes);
  return b;
}

constexpr Metric kMetrics[] = {
    {"calls", Unit::count, true, [](const RangeStats& r) { return double(r.calls); }},
    {"host", Unit::time, true, [](const RangeStats& r) { return r.host.mean_ns(); }},
    {"gpu", Unit::time, true, [](const RangeStats& r) { return r.gpu_time().mean_ns(); }},
    {"kernel", Unit::time, true, [](const RangeStats& r) { return double(r.total.kernel_ns); }},
    {"busy", Unit::share, false, [](const RangeStats& r) { return r.total.busy_share(); }},
    {"bytes", Unit::bytes, true, bytes_of},
};
constexpr std::size_t kMetricCount = std::size(kMetrics);

struct Settings {
  double threshold = 0.10;
  std::uint64_t min_time_ns = 0;
  std::array<bool, kMetricCount> gated{false, true, false, false, false, false};
  bool json = false;
  bool partial = false;  ///< --partial: a trace cut short is read up to its last whole record
  std::string base, next;
};

// -1: go on; else the exit status.
int parse(const Args& args, Settings* s) {
  CommandLine cl("diff", kHelp.c_str(), args, kBadInput);
  std::vector<std::string> files;
  while (cl.next()) {
    std::string_view v;
    if (cl.flag("--json")) {
      s->json = true;
    } else if (cl.flag("--partial")) {
      s->partial = true;
    } else if (cl.value("--threshold", &v)) {
      if (!parse_share(v, &s->threshold))
        return cl.error(fmt::format("--threshold '{}' is not a share (0.1 or 10%)", v));
    } else if (cl.value("--min-time", &v)) {
      if (!parse_duration_ns(v, &s->min_time_ns))
        return cl.error(fmt::format("--min-time '{}' is not a duration (500us, 2ms, 1s)", v));
    } else if (cl.value("--metric", &v)) {
      s->gated.fill(false);
      std::string_view list = v;
      while (true) {
        const std::string_view m = list.substr(0, list.find(','));
        bool known = m == "all";
        for (std::size_t k = 0; k < kMetricCount; ++k) {
          if (m == kMetrics[k].name || m == "all") s->gated[k] = known = true;
        }
        if (!known)
          return cl.error(
              fmt::format("--metric '{}' is not one of calls, host, gpu, kernel, busy, bytes, all", m));
        if (m.size() == list.size()) break;
        list.remove_prefix(m.size() + 1);
      }
    } else if (cl.operand(&v)) {
      files.emplace_back(v);
    } else {
      return cl.unknown();
    }
  }
  if (cl.stopped()) return cl.status();
  if (files.size() != 2) return cl.error("it compares two reports: BASE and NEW");
  s->base = files[0];
  s->next = files[1];
  return -1;
}

struct Change {
  double base = 0, next = 0;
  bool gated = false, regressed = false;
  [[nodiscard]] double absolute() const { return next - base; }
  // Infinite when a metric appears from 0 (there is no ratio to a zero base).
  [[nodiscard]] double relative() const {
    if (base == next) return 0;
    return base != 0 ? (next - base) / std::fabs(base)
                     : std::copysign(std::numeric_limits<double>::infinity(), next);
  }
};

struct RangeDiff {
  std::string path;
  int depth = 0;
  bool small = false;  // below --min-time in both reports: shown, never gated
  std::array<Change, kMetricCount> changes;
};

std::uint64_t size_ns(const RangeStats& r) {
  return std::max({r.host.total_ns, r.gpu_time().total_ns, r.total.kernel_ns});
}

std::string shown(Unit unit, double v) {
  switch (unit) {
    case Unit::count:
      return views::format_quantity(v);
    case Unit::time:
      return views::format_duration(static_cast<std::uint64_t>(std::llround(std::fabs(v))));
    case Unit::share:
      return views::format_percent(std::fabs(v));
    case Unit::bytes:
      return views::format_bytes(static_cast<std::uint64_t>(std::llround(std::fabs(v))));
  }
  return {};
}

std::string signed_shown(Unit unit, double v) { return (v < 0 ? "-" : "+") + shown(unit, v); }

std::string relative_shown(double rel) {
  if (std::isinf(rel)) return rel > 0 ? "new" : "gone";
  return fmt::format("{:+.1f}%", rel * 100);
}

// Two spaces a level, within the 32 columns of the name (a report read from a file may nest deeper).
std::string indent(int depth) { return std::string(2 * std::clamp(depth - 1, 0, 12), ' '); }

int bad_input(const std::string& message) {
  fail("diff", message);
  return kBadInput;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

}  // namespace

int diff(const Args& args) {
  Settings s;
  if (const int status = parse(args, &s); status >= 0) return status;
  Report base, next;
  std::string error;
  for (auto [path, report] : {std::pair{&s.base, &base}, std::pair{&s.next, &next}}) {
    std::string cut;
    if (!load_report(*path, report, &error, s.partial, &cut)) return bad_input(*path + ": " + error);
    say_cut("diff", *path, cut);
  }

  std::vector<RangeDiff> ranges;
  std::vector<std::string> added, removed;
  std::size_t regressions = 0, small = 0;
  for (std::size_t i : tree_order(base)) {
    const RangeStats& b = base.ranges[i];
    const RangeStats* n = next.find(b.path);
    if (n == nullptr) {
      removed.push_back(b.path);
      continue;
    }
    RangeDiff d{b.path, b.depth, std::max(size_ns(b), size_ns(*n)) < s.min_time_ns, {}};
    small += d.small ? 1 : 0;
    for (std::size_t k = 0; k < kMetricCount; ++k) {
      Change& c = d.changes[k];
      c.base = kMetrics[k].value(b);
      c.next = kMetrics[k].value(*n);
      c.gated = s.gated[k] && !d.small;
      const double rel = c.relative();
      // A change at the threshold is not a regression, to within the rounding of the ratio (0.72
      // against 0.8 is -10.000000000000009%).
      const double margin = s.threshold + 1e-9;
      c.regressed = c.gated && (kMetrics[k].higher_is_worse ? rel > margin : rel < -margin);
      regressions += c.regressed ? 1 : 0;
    }
    ranges.push_back(std::move(d));
  }
  for (std::size_t i : tree_order(next))
    if (base.find(next.ranges[i].path) == nullptr) added.push_back(next.ranges[i].path);

  std::string out;
  if (s.json) {
    nlohmann::json j;
    j["schema"] = "cuscope.diff/1";
    j["base"] = s.base;
    j["new"] = s.next;
    j["threshold"] = s.threshold;
    j["min_time_ns"] = s.min_time_ns;
    j["gated_metrics"] = nlohmann::json::array();
    for (std::size_t k = 0; k < kMetricCount; ++k)
      if (s.gated[k]) j["gated_metrics"].push_back(kMetrics[k].name);
    j["regressed"] = regressions > 0;
    j["regressions"] = nlohmann::json::array();
    j["ranges"] = nlohmann::json::array();
    for (const RangeDiff& d : ranges) {
      nlohmann::json range{
          {"path", d.path}, {"below_min_time", d.small}, {"metrics", nlohmann::json::object()}};
      for (std::size_t k = 0; k < kMetricCount; ++k) {
        const Change& c = d.changes[k];
        nlohmann::json m{{"base", c.base},         {"new", c.next},
                         {"change", c.absolute()}, {"relative", number_or_null(c.relative())},
                         {"gated", c.gated},       {"regressed", c.regressed}};
        if (c.regressed) {
          nlohmann::json r = m;
          r["path"] = d.path;
          r["metric"] = kMetrics[k].name;
          j["regressions"].push_back(std::move(r));
        }
        range["metrics"][kMetrics[k].name] = std::move(m);
      }
      j["ranges"].push_back(std::move(range));
    }
    j["added"] = added;
    j["removed"] = removed;
    out = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";  // bad UTF-8: U+FFFD
  } else {
    std::string gates;
    for (std::size_t k = 0; k < kMetricCount; ++k)
      if (s.gated[k]) gates += fmt::format("{}{}", gates.empty() ? "" : ",", kMetrics[k].name);
    out += fmt::format("cuscope diff — base {} — new {}\n", s.base, s.next);
    out += fmt::format("gate: {} beyond {} — min-time {}\n\n", gates, views::format_percent(s.threshold),
                       views::format_duration(s.min_time_ns));
    out += fmt::format("{:<32} {:<7} {:>10} {:>10} {:>11} {:>8}\n", "range", "metric", "base", "new",
                       "change", "rel");
    for (const RangeDiff& d : ranges) {
      bool first = true;
      for (std::size_t k = 0; k < kMetricCount; ++k) {
        const Change& c = d.changes[k];
        if (c.base == 0 && c.next == 0 && !c.gated) continue;  // nothing measured either time
        const Unit u = kMetrics[k].unit;
        const std::string name = first ? indent(d.depth) + d.path.substr(d.path.rfind('/') + 1) : "";
        first = false;
        out += views::pad_right(views::truncate(name, 32), 33) + views::pad_right(kMetrics[k].name, 8) +
               views::pad_left(shown(u, c.base), 10) + " " + views::pad_left(shown(u, c.next), 10) + " " +
               views::pad_left(signed_shown(u, c.absolute()), 11) + " " +
               views::pad_left(relative_shown(c.relative()), 8);
        if (c.regressed) out += "  REGRESSED";
        if (d.small && s.gated[k]) out += "  (below min-time)";
        out += '\n';
      }
    }
    out += '\n';
    for (const std::string& p : added) out += fmt::format("added (only in new): {}\n", p);
    for (const std::string& p : removed) out += fmt::format("removed (only in base): {}\n", p);
    if (small > 0)
      out += fmt::format("{} {} below --min-time, not gated\n", small, small == 1 ? "range" : "ranges");
    out += regressions == 0
               ? std::string("result: no regression\n")
               : fmt::format("result: {} {}\n", regressions, regressions == 1 ? "regression" : "regressions");
  }
  std::fputs(out.c_str(), stdout);
  if (std::fflush(stdout) != 0) return bad_input("cannot write the comparison");
  return regressions > 0 ? kRegressed : 0;
}

}  // namespace cuscope::cli

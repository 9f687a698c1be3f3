// views/table.cpp — the Report as a table for people: a header saying what was measured and what
// was off (table_header.cpp), then one row per range, tree-indented, with its top kernels listed
// under it.
//
// Columns (all but `calls` and `kernels` in scaled units; `-` where nothing was measured):
//   range        the scope's name, indented 2 spaces per level below the top
//   calls        completed entries
//   host total   inclusive host time           host mean   per completed entry
//   host self    host time minus child ranges  GPU total   RangeStats::gpu_time(): the projected
//                span of each call's GPU work where CUPTI traced it, else CUDA-event time
//   kernels      kernels launched in the range or below it (inclusive `total` activity)
//   kernel time  sum of their durations        GPU busy    busy share of the GPU span
//   memcpy       bytes copied, every direction summed
//
// Siblings follow TableOptions::sort (`gpu_busy` orders by busy time, not by share). A range with
// no completed call is hidden unless `show_zero_calls`, except `(unscoped)` while it holds GPU work
// and ranges still open (a scope left open at exit is shown, with 0 calls)
// and a range some listed range lies under (a scope still open around completed children).
//
// Under a range that launched CUDA graphs, "(graph) <path>" lines split those kernels by the range
// their nodes were created in (docs/cuda-graphs.md), at most 10, then a count of the rest.
//
// NVTX start/end ranges (Report::spans), when there are any, follow in a section of their own:
// domain/name, completed calls, host total, mean and max, still open, ended on another thread.
//
// The output depends only on the Report, so it can be compared against golden text.
#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cuscope/report.hpp"
#include "views/format.hpp"
#include "views/table_header.hpp"

namespace cuscope {
inline namespace v0 {
namespace {

using views::format_bytes;
using views::format_duration;
using views::format_percent;
using views::saturating_add;

constexpr std::string_view kUnscoped = kUnscopedName;
constexpr std::size_t kRangeNameWidth = 40;
constexpr std::size_t kKernelNameWidth = 60;

constexpr std::size_t kColumns = 11;
using Cells = std::array<std::string, kColumns>;
constexpr std::array<std::string_view, kColumns> kTitles{
    "range",   "calls",       "host total", "host mean", "host self", "GPU total",
    "kernels", "kernel time", "GPU busy",   "memcpy",    "bound"};

/// total / count rounded to the nearest nanosecond, without the overflow of (total + count/2).
std::uint64_t mean_ns(const DurationStats& d) {
  if (d.count == 0) return 0;
  const std::uint64_t quotient = d.total_ns / d.count;
  const std::uint64_t remainder = d.total_ns % d.count;
  return remainder >= d.count - remainder ? quotient + 1 : quotient;
}

std::uint64_t copied_bytes(const ActivityStats& a) {
  std::uint64_t bytes = 0;
  for (const CopyStats& c : a.memcpy) bytes = saturating_add(bytes, c.bytes);
  return bytes;
}

std::uint64_t copy_count(const ActivityStats& a) {
  std::uint64_t count = 0;
  for (const CopyStats& c : a.memcpy) count = saturating_add(count, c.count);
  return count;
}

bool has_activity(const ActivityStats& a) {
  return a.kernel_calls != 0 || copy_count(a) != 0 || a.memset_count != 0 || a.sync_count != 0 ||
         a.alloc_count != 0 || a.free_count != 0;
}

// --- which ranges, in which order ---------------------------------------------------------------

struct Shown {
  const RangeStats* range;
  std::size_t level;  ///< 0 for top-level ranges
};

std::uint64_t sort_value(const RangeStats& r, SortKey key) {
  switch (key) {
    case SortKey::host_total:
      return r.host.total_ns;
    case SortKey::host_self:
      return r.host_self_ns;
    case SortKey::gpu_total:
      return r.gpu_time().total_ns;
    case SortKey::kernel_total:
      return r.total.kernel_ns;
    case SortKey::gpu_busy:
      return r.total.gpu_busy_ns;
    case SortKey::calls:
      return r.calls;
    case SortKey::name:
      return 0;
  }
  return 0;
}

bool listed_for_itself(const RangeStats& r, std::size_t level, const TableOptions& options) {
  if (r.calls != 0 || r.open != 0 || options.show_zero_calls) return true;
  return level == 0 && r.name == kUnscoped && has_activity(r.total);
}

class RowCollector {
 public:
  RowCollector(const Report& report, const TableOptions& options)
      : report_(report), options_(options), seen_(report.ranges.size(), false) {}

  std::vector<Shown> collect() {
    if (report_.ranges.empty()) return {};
    seen_[0] = true;
    for (std::size_t child : children_in_order(report_.ranges[0])) visit(child, 0);
    return std::move(rows_);
  }

 private:
  // Children sorted by the key (times and calls descending, names ascending); the stable sort
  // keeps first-entry order among equals. Indices out of range or already shown are skipped.
  std::vector<std::size_t> children_in_order(const RangeStats& parent) {
    std::vector<std::size_t> children;
    for (std::size_t child : parent.children) {
      if (child < report_.ranges.size() && !seen_[child]) {
        seen_[child] = true;
        children.push_back(child);
      }
    }
    const SortKey key = options_.sort;
    std::stable_sort(children.begin(), children.end(), [&](std::size_t a, std::size_t b) {
      const RangeStats& ra = report_.ranges[a];
      const RangeStats& rb = report_.ranges[b];
      const std::uint64_t va = sort_value(ra, key);
      const std::uint64_t vb = sort_value(rb, key);
      if (va != vb) return va > vb;
      return ra.name < rb.name;
    });
    return children;
  }

  // A range that is not listed for itself stays when a descendant is listed, so the tree holds.
  void visit(std::size_t index, std::size_t level) {
    const RangeStats& range = report_.ranges[index];
    const std::size_t mark = rows_.size();
    rows_.push_back({&range, level});
    for (std::size_t child : children_in_order(range)) visit(child, level + 1);
    if (rows_.size() == mark + 1 && !listed_for_itself(range, level, options_)) rows_.pop_back();
  }

  const Report& report_;
  const TableOptions& options_;
  std::vector<bool> seen_;
  std::vector<Shown> rows_;
};

// --- rendering ----------------------------------------------------------------------------------

std::string indent(std::size_t level) { return std::string(2 * level, ' '); }

std::string_view short_bound(Bound b) {
  switch (b) {
    case Bound::memory:
      return "memory";
    case Bound::compute:
      return "compute";
    case Bound::latency:
      return "latency";
    case Bound::launch:
      return "launch";
    case Bound::unknown:
      break;
  }
  return "-";
}

// `traced`: GPU activity was collected, so a count of 0 kernels is a measurement, not a blank.
Cells cells(const Shown& row, bool traced) {
  const RangeStats& r = *row.range;
  const ActivityStats& a = r.total;
  const bool timed = r.host.count != 0;
  return {
      indent(row.level) + views::truncate(r.name, kRangeNameWidth),
      fmt::format("{}", r.calls),
      timed ? format_duration(r.host.total_ns) : "-",
      timed ? format_duration(mean_ns(r.host)) : "-",
      timed ? format_duration(r.host_self_ns) : "-",
      r.gpu_time().count != 0 ? format_duration(r.gpu_time().total_ns) : "-",
      traced || a.kernel_calls != 0 ? fmt::format("{}", a.kernel_calls) : "-",
      a.kernel_calls != 0 ? format_duration(a.kernel_ns) : "-",
      a.gpu_span_ns != 0 ? format_percent(a.busy_share()) : "-",
      copy_count(a) != 0 ? format_bytes(copied_bytes(a)) : "-",
      r.verdict.bound == Bound::unknown ? "-" : std::string(short_bound(r.verdict.bound)),
  };
}

std::string render_row(const Cells& row, const std::array<std::size_t, kColumns>& widths) {
  std::string line = views::pad_right(row[0], widths[0]);
  for (std::size_t i = 1; i < kColumns; ++i) line += "  " + views::pad_left(row[i], widths[i]);
  return line + "\n";
}

std::string shape(const std::array<std::uint32_t, 3>& d) { return fmt::format("{}x{}x{}", d[0], d[1], d[2]); }

std::string kernel_lines(const RangeStats& range, std::size_t level, std::size_t top) {
  if (top == 0 || range.kernels.empty()) return {};
  std::vector<const KernelStats*> kernels;
  for (const KernelStats& k : range.kernels) kernels.push_back(&k);
  std::stable_sort(kernels.begin(), kernels.end(), [](const KernelStats* a, const KernelStats* b) {
    if (a->duration.total_ns != b->duration.total_ns) return a->duration.total_ns > b->duration.total_ns;
    return a->name < b->name;
  });
  const std::size_t shown = std::min(top, kernels.size());

  std::vector<std::array<std::string, 4>> fields;  // name, calls, total, mean
  std::array<std::size_t, 4> widths{};
  for (std::size_t i = 0; i < shown; ++i) {
    const KernelStats& k = *kernels[i];
    fields.push_back({views::truncate(k.name, kKernelNameWidth), fmt::format("{}", k.duration.count),
                      format_duration(k.duration.total_ns), format_duration(mean_ns(k.duration))});
    for (std::size_t f = 0; f < widths.size(); ++f) {
      widths[f] = std::max(widths[f], views::display_width(fields.back()[f]));
    }
  }

  const std::string prefix = indent(level + 1) + "· ";
  std::string out;
  for (std::size_t i = 0; i < shown; ++i) {
    const std::array<std::string, 4>& f = fields[i];
    out += fmt::format("{}{}  calls {}  total {}  mean {}  grid {} block {}\n", prefix,
                       views::pad_right(f[0], widths[0]), views::pad_left(f[1], widths[1]),
                       views::pad_left(f[2], widths[2]), views::pad_left(f[3], widths[3]),
                       shape(kernels[i]->grid), shape(kernels[i]->block));
  }
  const std::size_t more = kernels.size() - shown;
  if (more != 0) out += fmt::format("{}… {} more kernel{}\n", prefix, more, more == 1 ? "" : "s");
  return out;
}

// The verdict's reasoning, under a range that has one (unless a finding shown says it already).
std::string verdict_line(const RangeStats& range, std::size_t level, std::size_t max_findings) {
  if (range.verdict.bound == Bound::unknown || range.verdict.reason.empty()) return {};
  const std::string_view bound = to_string(range.verdict.bound);
  for (std::size_t i = 0; i < range.findings.size() && i < max_findings; ++i) {
    if (range.findings[i].id == bound) return {};
  }
  return fmt::format("{}! {}\n", indent(level + 1), range.verdict.reason);
}

// The range's findings, worst first: the observation, then its likely cause and the fix.
std::string finding_lines(const RangeStats& range, std::size_t level, std::size_t max_findings) {
  const std::size_t shown = std::min(range.findings.size(), max_findings);
  std::string out;
  for (std::size_t i = 0; i < shown; ++i) {
    const Finding& f = range.findings[i];
    out += fmt::format("{}! {} ({}): {}\n{}  cause: {}; fix: {}\n", indent(level + 1), f.id,
                       to_string(f.severity), f.observation, indent(level + 1), f.cause, f.fix);
  }
  const std::size_t more = range.findings.size() - shown;
  if (more != 0 && max_findings != 0)
    out += fmt::format("{}! … {} more finding{} (JSON: findings)\n", indent(level + 1), more,
                       more == 1 ? "" : "s");
  return out;
}

// One line with the range's hardware counters (inclusive), when any kernel in it was replayed.
std::string metric_line(const RangeStats& range, std::size_t level) {
  if (range.metrics.empty()) return {};
  std::string out = fmt::format("{}@ {} kernels replayed:", indent(level + 1), range.profiled_kernels);
  for (const MetricValue& m : range.metrics) {
    std::string value;
    if (m.unit == "percent") {
      value = format_percent(m.value / 100.0);
    } else if (m.unit == "byte") {
      value = format_bytes(static_cast<std::uint64_t>(m.value));
    } else if (m.unit == "nanosecond") {
      value = format_duration(static_cast<std::uint64_t>(m.value));
    } else {
      value = views::format_quantity(m.value);
    }
    out += fmt::format("  {} {}", m.label, value);
  }
  return out + "\n";
}

// Graph kernels launched in the range, one line per capture-time path (docs/cuda-graphs.md):
// the same kernels as the range's own, seen by where their graph nodes were created.
constexpr std::size_t kGraphPaths = 10;
std::string graph_lines(const RangeStats& range, std::size_t level) {
  if (range.graph.empty()) return {};
  const std::size_t shown = std::min(kGraphPaths, range.graph.size());
  std::vector<std::array<std::string, 4>> fields;  // path, kernels, kernel time, busy
  std::array<std::size_t, 4> widths{};
  for (std::size_t i = 0; i < shown; ++i) {
    const GraphPathStats& g = range.graph[i];
    fields.push_back({views::truncate(g.path, kRangeNameWidth), fmt::format("{}", g.kernel_calls),
                      format_duration(g.kernel_ns), format_duration(g.gpu_busy_ns)});
    for (std::size_t f = 0; f < widths.size(); ++f) {
      widths[f] = std::max(widths[f], views::display_width(fields.back()[f]));
    }
  }
  const std::string prefix = indent(level + 1) + "(graph) ";
  std::string out;
  for (const auto& f : fields) {
    out += fmt::format("{}{}  kernels {}  kernel time {}  busy {}\n", prefix,
                       views::pad_right(f[0], widths[0]), views::pad_left(f[1], widths[1]),
                       views::pad_left(f[2], widths[2]), views::pad_left(f[3], widths[3]));
  }
  const std::size_t more = range.graph.size() - shown;
  if (more != 0)
    out += fmt::format("{}… {} more capture path{} (JSON: graph)\n", prefix, more, more == 1 ? "" : "s");
  return out;
}

// One line per user counter: its total and its rates per second of host and GPU time.
std::string count_lines(const RangeStats& range, std::size_t level) {
  std::string out;
  for (const CountStats& c : range.counts) {
    out += fmt::format("{}# {} {}  {}/s host", indent(level + 1), c.name, views::format_quantity(c.total),
                       views::format_quantity(c.per_host_second));
    if (c.per_gpu_second > 0) out += fmt::format("  {}/s GPU", views::format_quantity(c.per_gpu_second));
    out += "\n";
  }
  return out;
}

std::string plural(std::uint64_t n, std::string_view one, std::string_view many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

// Why the table is empty, when the step window is the reason: scopes ran, all outside it.
std::string no_rows_line(const Report& report) {
  const std::uint64_t left_out = report.diagnostics.outside_window_scopes;
  if (left_out == 0) return "(no ranges recorded)\n";
  if (report.steps < report.window_start_step) {
    return fmt::format(
        "(no ranges recorded: the step window was never reached — it opens after step {}, and {} "
        "marked with cuscope::step(); {} left out)\n",
        report.window_start_step, plural(report.steps, "step was", "steps were"),
        plural(left_out, "scope", "scopes"));
  }
  return fmt::format("(no ranges recorded: {} outside the step window left out)\n",
                     plural(left_out, "scope", "scopes"));
}

// --- NVTX start/end ranges -----------------------------------------------------------------------

constexpr std::size_t kSpanColumns = 7;
constexpr std::array<std::string_view, kSpanColumns> kSpanTitles{
    "NVTX start/end range", "calls", "host total", "host mean", "host max", "open", "cross-thread"};

// Spans are listed in report order (host total, longest first), cut at max_rows like the ranges.
std::string span_section(const std::vector<SpanStats>& spans, std::size_t max_rows) {
  if (spans.empty()) return {};
  const std::size_t listed = max_rows == 0 ? spans.size() : std::min(max_rows, spans.size());
  std::vector<std::array<std::string, kSpanColumns>> table;
  std::array<std::size_t, kSpanColumns> widths{};
  for (std::size_t i = 0; i < kSpanColumns; ++i) widths[i] = views::display_width(kSpanTitles[i]);
  for (std::size_t r = 0; r < listed; ++r) {
    const SpanStats& s = spans[r];
    const bool timed = s.host.count != 0;
    const std::string name = s.domain.empty() ? s.name : s.domain + "/" + s.name;
    table.push_back({views::truncate(name, kRangeNameWidth), fmt::format("{}", s.host.count),
                     timed ? format_duration(s.host.total_ns) : "-",
                     timed ? format_duration(mean_ns(s.host)) : "-",
                     timed ? format_duration(s.host.max_ns) : "-", fmt::format("{}", s.open),
                     fmt::format("{}", s.cross_thread)});
    for (std::size_t i = 0; i < kSpanColumns; ++i) {
      widths[i] = std::max(widths[i], views::display_width(table.back()[i]));
    }
  }
  const auto render = [&](const auto& row) {
    std::string line = views::pad_right(row[0], widths[0]);
    for (std::size_t i = 1; i < kSpanColumns; ++i) line += "  " + views::pad_left(row[i], widths[i]);
    return line + "\n";
  };
  std::string out = "\n" + render(kSpanTitles);
  for (const auto& row : table) out += render(row);
  const std::size_t more = spans.size() - listed;
  if (more != 0) {
    out +=
        fmt::format("… {} more NVTX start/end range{} (max_rows={})\n", more, more == 1 ? "" : "s", max_rows);
  }
  return out;
}

std::string range_rows(const Report& report, const TableOptions& options) {
  std::string out;
  const std::vector<Shown> rows = RowCollector(report, options).collect();
  if (rows.empty()) return no_rows_line(report);
  const std::size_t listed = options.max_rows == 0 ? rows.size() : std::min(options.max_rows, rows.size());

  std::vector<Cells> table;
  std::array<std::size_t, kColumns> widths{};
  for (std::size_t i = 0; i < kColumns; ++i) widths[i] = views::display_width(kTitles[i]);
  for (std::size_t r = 0; r < listed; ++r) {
    table.push_back(cells(rows[r], report.tracing_on()));
    for (std::size_t i = 0; i < kColumns; ++i) {
      widths[i] = std::max(widths[i], views::display_width(table.back()[i]));
    }
  }

  Cells titles;
  for (std::size_t i = 0; i < kColumns; ++i) titles[i] = kTitles[i];
  out += render_row(titles, widths);
  for (std::size_t r = 0; r < listed; ++r) {
    out += render_row(table[r], widths);
    out += kernel_lines(*rows[r].range, rows[r].level, options.top_kernels);
    out += graph_lines(*rows[r].range, rows[r].level);
    out += metric_line(*rows[r].range, rows[r].level);
    out += verdict_line(*rows[r].range, rows[r].level, options.max_findings);
    out += finding_lines(*rows[r].range, rows[r].level, options.max_findings);
    out += count_lines(*rows[r].range, rows[r].level);
  }
  const std::size_t more = rows.size() - listed;
  if (more != 0) {
    out += fmt::format("… {} more range{} (max_rows={})\n", more, more == 1 ? "" : "s", options.max_rows);
  }
  return out;
}

}  // namespace

std::string format_table(const Report& report, const TableOptions& options) {
  return views::table_header(report) + "\n" + range_rows(report, options) +
         span_section(report.spans, options.max_rows);
}

}  // namespace v0
}  // namespace cuscope

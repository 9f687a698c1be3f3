// cli/flame.cpp — `cuscope flame REPORT -o flame.svg`: the range tree as a self-contained SVG
// icicle graph (the root on top, children below their parent), each box as wide as its range's
// host, GPU or kernel time, with a tooltip (<title>) giving the range's numbers and verdict.
//
// Widths are exact: a box is its value times the scale of its parent's box, and that scale is the
// full width over the top-level total, unless the children of a range sum to more than the range
// (threads, overlapping kernels): then they share the parent's box in proportion. Boxes narrower
// than half a pixel are not drawn, and their number is written under the graph.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/output.hpp"
#include "model/utf8.hpp"
#include "views/format.hpp"

namespace cuscope::cli {

namespace {

const std::string kHelp =
    "usage: cuscope flame [--metric host|gpu|kernel] [--width PX] [--partial] REPORT -o OUT.svg\n"
    "\n"
    "Draws the range tree of REPORT (a JSON report or a trace file) as an icicle graph in a\n"
    "self-contained SVG: one box per range, below its parent, as wide as its time. Hover a box for\n"
    "its numbers. Open it in a browser.\n"
    "\n"
    "  --metric M   host (inclusive host time, default), gpu (the projected span of the GPU work\n"
    "               where CUPTI traced, else CUDA-event time) or kernel (kernel time of the range\n"
    "               and its subtree)\n"
    "  --width PX   width of the graph in pixels (default 1200)\n"
    "  -o OUT.svg   the file to write (required)\n" +
    std::string(kPartialHelp);

constexpr double kRowHeight = 20;
constexpr double kBoxHeight = 19;
constexpr double kTop = 34;     // below the title
constexpr double kMargin = 10;  // left and right
constexpr double kMinWidth = 0.5;
// Rows drawn: deeper than any live session records (256), so only a crafted report reaches it,
// and the recursion over rows stays shallow.
constexpr int kMaxRows = 300;
constexpr double kCharWidth = 7;  // of the 12 px label font, for cutting labels to their box

struct Metric {
  const char* name;
  const char* what;
  std::uint64_t (*value)(const RangeStats&);
};
constexpr Metric kMetrics[] = {
    {"host", "host time", [](const RangeStats& r) { return r.host.total_ns; }},
    {"gpu", "GPU time (projected span, else CUDA events)", [](const RangeStats& r) { return r.gpu_time().total_ns; }},
    {"kernel", "kernel time", [](const RangeStats& r) { return r.total.kernel_ns; }},
};

// Text for XML: markup characters as entities, control bytes (not allowed in XML 1.0) as spaces,
// bytes that are not UTF-8 as U+FFFD, so that a browser always parses the file.
std::string xml(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const std::size_t len = model::utf8_sequence_length(s, i);
    if (len == 0) {
      out += "\uFFFD";
    } else if (len > 1) {
      out.append(s, i, len);
    } else if (c == '<' || c == '>' || c == '&' || c == '"') {
      out += c == '<' ? "&lt;" : c == '>' ? "&gt;" : c == '&' ? "&amp;" : "&quot;";
    } else if (static_cast<unsigned char>(c) < 0x20 && c != '\n') {
      out += ' ';
    } else {
      out += c;
    }
    i += len == 0 ? 1 : len;
  }
  return out;
}

// The hues of classic flame graphs (warm), fixed per name so a range keeps its colour across graphs.
std::string colour(std::string_view name) {
  std::uint32_t h = 2166136261u;
  for (char c : name) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  const unsigned r = 205 + (h % 51), g = 60 + ((h >> 8) % 150), b = 20 + ((h >> 16) % 50);
  return fmt::format("rgb({},{},{})", r, g, b);
}

// What a reader needs when hovering: the range's numbers, and the findings the report holds.
std::string tooltip(const RangeStats& r, std::uint64_t value, std::uint64_t total, const Metric& m) {
  std::string t = r.path.empty() ? std::string("all ranges") : r.path;
  t += fmt::format("\n{}: {} ({:.1f}% of all)", m.what, views::format_duration(value),
                   total ? 100.0 * double(value) / double(total) : 0.0);
  if (r.path.empty()) return t;
  t += fmt::format("\ncalls: {}", r.calls);
  if (r.host.count)
    t += fmt::format("\nhost: {} total, {} mean", views::format_duration(r.host.total_ns),
                     views::format_duration(static_cast<std::uint64_t>(r.host.mean_ns())));
  if (const DurationStats& gpu = r.gpu_time(); gpu.count)
    t += fmt::format("\nGPU: {} total, {} mean", views::format_duration(gpu.total_ns),
                     views::format_duration(static_cast<std::uint64_t>(gpu.mean_ns())));
  if (r.total.kernel_calls)
    t += fmt::format("\nkernels: {} {}, {}, GPU busy {}", r.total.kernel_calls,
                     r.total.kernel_calls == 1 ? "launch" : "launches",
                     views::format_duration(r.total.kernel_ns), views::format_percent(r.total.busy_share()));
  // The roofline verdict (unless a finding says it), then the findings, worst first.
  const bool said = std::any_of(r.findings.begin(), r.findings.end(),
                                [&](const Finding& f) { return f.id == to_string(r.verdict.bound); });
  if (r.verdict.bound != Bound::unknown && !said)
    t += fmt::format("\n{}: {}", to_string(r.verdict.bound), r.verdict.reason);
  for (const Finding& f : r.findings) t += fmt::format("\n! {}: {} (fix: {})", f.id, f.observation, f.fix);
  return t;
}

struct Drawing {
  const Report& report;
  const Metric& metric;
  double width;
  std::uint64_t total = 0;
  std::string body;
  std::size_t narrow = 0;    // ranges not drawn (with their subtrees)
  std::size_t too_deep = 0;  // ranges below the last row drawn
  int deepest = 0;

  void box(const RangeStats& r, double x, double w, int row, std::uint64_t value) {
    const double y = kTop + row * kRowHeight;
    deepest = std::max(deepest, row);
    const std::string label = r.path.empty() ? "all" : r.name;
    body += fmt::format("<g class=\"range\" data-path=\"{}\" data-value=\"{}\"><title>{}</title>",
                        xml(r.path), value, xml(tooltip(r, value, total, metric)));
    body += fmt::format("<rect x=\"{:.2f}\" y=\"{:.0f}\" width=\"{:.2f}\" height=\"{:.0f}\" fill=\"{}\"/>", x,
                        y, w, kBoxHeight, r.path.empty() ? "rgb(200,200,200)" : colour(r.name));
    const auto fits = static_cast<std::size_t>(std::max(0.0, (w - 8) / kCharWidth));
    if (fits >= 3)
      body += fmt::format("<text x=\"{:.2f}\" y=\"{:.0f}\">{}</text>", x + 3, y + 14,
                          xml(views::truncate(label, fits)));
    body += "</g>\n";
  }

  // Children of `parent` inside its box [x, x + w).
  void children(const RangeStats& parent, std::uint64_t parent_value, double x, double w, int row) {
    std::uint64_t sum = 0;
    for (std::size_t c : parent.children) sum += metric.value(report.ranges[c]);
    const std::uint64_t whole = std::max(parent_value, sum);
    if (whole == 0) return;
    for (std::size_t c : parent.children) {
      const RangeStats& child = report.ranges[c];
      const std::uint64_t v = metric.value(child);
      const double cw = w * double(v) / double(whole);
      if (v == 0) continue;
      if (cw < kMinWidth) {
        narrow += 1 + subtree_size(child);
      } else if (row > kMaxRows) {
        too_deep += 1 + subtree_size(child);
      } else {
        box(child, x, cw, row, v);
        children(child, v, x, cw, row + 1);
      }
      x += cw;
    }
  }

  // Without recursion: a report read from a file may nest deeper than a stack allows.
  std::size_t subtree_size(const RangeStats& r) const {
    std::size_t n = 0;
    std::vector<const RangeStats*> todo{&r};
    while (!todo.empty()) {
      const RangeStats* at = todo.back();
      todo.pop_back();
      for (std::size_t c : at->children) {
        if (metric.value(report.ranges[c]) == 0) continue;
        ++n;
        todo.push_back(&report.ranges[c]);
      }
    }
    return n;
  }
};

}  // namespace

int flame(const Args& args) {
  std::string path, out;
  const Metric* metric = &kMetrics[0];
  double width = 1200;
  bool partial = false;
  const auto options = [&](CommandLine& cl) {
    std::string_view v;
    if (cl.flag("--partial")) {
      partial = true;
    } else if (cl.value("--metric", &v)) {
      metric = nullptr;
      for (const Metric& k : kMetrics)
        if (v == k.name) metric = &k;
      if (metric == nullptr) cl.error(fmt::format("--metric '{}' is not host, gpu or kernel", v));
    } else if (cl.value("--width", &v)) {
      unsigned px = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), px);
      if (ec != std::errc{} || end != v.data() + v.size() || px < 100 || px > 100000)
        cl.error(fmt::format("--width '{}' is not a whole number of pixels in [100, 100000]", v));
      width = double(px);
    } else {
      return false;
    }
    return true;
  };
  if (const int status = parse_file_and_output("flame", kHelp.c_str(), args, true, &path, &out, options); status >= 0)
    return status;
  Report r;
  std::string error;
  std::string cut;
  if (!load_report(path, &r, &error, partial, &cut)) return fail("flame", path + ": " + error);
  say_cut("flame", path, cut);

  Drawing d{r, *metric, width, 0, {}, 0, 0};
  for (std::size_t c : r.root().children) d.total += metric->value(r.ranges[c]);
  if (d.total > 0) {
    d.box(r.root(), kMargin, width, 0, d.total);
    d.children(r.root(), d.total, kMargin, width, 1);
  }
  const double height = kTop + (d.deepest + 1) * kRowHeight + 28;
  std::string svg = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"0 0 {:.0f} "
      "{:.0f}\" "
      "data-metric=\"{}\" data-total=\"{}\" data-graph-width=\"{:.0f}\">\n"
      "<style>text{{font:12px DejaVu Sans,Verdana,sans-serif;fill:#000;pointer-events:none}}"
      "g.range:hover rect{{stroke:#000;stroke-width:1}}.title{{font-size:15px}}</style>\n"
      "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n"
      "<text class=\"title\" x=\"{:.0f}\" y=\"22\">cuscope flame — {} — {}</text>\n",
      width + 2 * kMargin, height, width + 2 * kMargin, height, metric->name, d.total, width, kMargin,
      metric->what, xml(views::format_duration(d.total)));
  svg += d.body;
  std::string footer = d.total == 0 ? fmt::format("no {} in this report", metric->what) : "";
  if (d.narrow > 0)
    footer = fmt::format("{} {} narrower than {} px not drawn", d.narrow, d.narrow == 1 ? "range" : "ranges",
                         kMinWidth);
  if (d.too_deep > 0)
    footer += fmt::format("{}{} {} deeper than {} rows not drawn", footer.empty() ? "" : "; ", d.too_deep,
                          d.too_deep == 1 ? "range" : "ranges", kMaxRows);
  if (!footer.empty())
    svg += fmt::format("<text class=\"footer\" x=\"{:.0f}\" y=\"{:.0f}\">{}</text>\n", kMargin, height - 8,
                       footer);
  svg += "</svg>\n";

  OutputFile file;
  if (!file.open(out, &error)) return fail("flame", error);
  file.write(svg);
  if (!file.commit(&error)) return fail("flame", error);
  return 0;
}

}  // namespace cuscope::cli

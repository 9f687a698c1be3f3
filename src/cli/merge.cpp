// cli/merge.cpp — `cuscope merge REPORT...`: the reports of the ranks of one job (CUSCOPE_JSON with
// %r) as one table: per range, over the ranks that entered it, the min, median and max of host and
// GPU time, the slowest rank and the imbalance; and a merged JSON (cuscope.merged/1). Ranks far
// slower than the median of a range are named in "straggler" findings of the merged output.
//
// Nothing is invented: a range's statistics are over the ranks that have it (their number is
// shown), missing ranks and reports without a rank are noted, diagnostics are summed.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "cli/output.hpp"
#include "cuscope/version.hpp"
#include "model/diagnostic_fields.hpp"
#include "views/format.hpp"

namespace cuscope::cli {

namespace {

const std::string kHelp =
    "usage: cuscope merge [-o MERGED.json] [--straggler R] [--min-time T] [--partial] REPORT...\n"
    "\n"
    "Merges the JSON reports (or trace files) of the ranks of one job, as written with\n"
    "CUSCOPE_JSON=report-%r.json, into one table: per range, over the ranks that entered it, the\n"
    "min, median and max of host and GPU time, the slowest rank and the imbalance (max over\n"
    "median, minus 1). A straggler finding names each rank whose host time in a range exceeds the\n"
    "range's median by more than R.\n"
    "\n"
    "  -o MERGED.json  also write the merged report as JSON (schema cuscope.merged/1)\n"
    "  --straggler R   how much slower than the median a rank must be: 0.25 or 25% (default 25%)\n"
    "  --min-time T    no straggler finding for ranges whose median host time is below T\n"
    "                  (default 1ms): 500us, 2ms, 1s\n" +
    std::string(kPartialHelp);

struct Input {
  std::string file;
  Report report;
  std::int64_t rank = 0;
};

struct Stats {
  double min = 0, median = 0, max = 0;
  std::int64_t slowest = -1;  // rank of the max (the lowest such rank); -1 when none
  [[nodiscard]] double imbalance() const { return median > 0 ? max / median - 1 : 0; }
};

// Over (rank, value) pairs, ranks ascending.
Stats stats_of(std::vector<std::pair<std::int64_t, double>> v) {
  Stats s;
  if (v.empty()) return s;
  s.slowest = v.front().first;
  s.max = v.front().second;
  for (const auto& [rank, x] : v) {
    if (x > s.max) s.max = x, s.slowest = rank;
  }
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
  s.min = v.front().second;
  const std::size_t n = v.size();
  s.median = n % 2 ? v[n / 2].second : (v[n / 2 - 1].second + v[n / 2].second) / 2;
  return s;
}

struct PerRank {
  std::int64_t rank;
  std::uint64_t calls, host_ns, gpu_ns;
};

struct Merged {
  std::string path, name;
  int depth = 0;
  std::vector<PerRank> ranks;  // ascending rank
  Stats calls, host, gpu;
};

struct Straggler {
  std::string path;
  std::int64_t rank;
  double host_ns, median_ns;
};

nlohmann::json stats_json(const Stats& s, bool with_rank) {
  nlohmann::json j{{"min", s.min}, {"median", s.median}, {"max", s.max}};
  if (with_rank) {
    j["slowest_rank"] = s.slowest;
    j["imbalance"] = s.imbalance();
  }
  return j;
}

std::string time_or_dash(double ns) {
  return ns > 0 ? views::format_duration(static_cast<std::uint64_t>(ns + 0.5)) : "—";
}

std::string table_row(const Merged& m) {
  const std::string name =
      std::string(2 * std::clamp(m.depth - 1, 0, 12), ' ') + m.name;  // within the name's 32 columns
  const std::string calls = m.calls.min == m.calls.max ? views::format_quantity(m.calls.min)
                                                       : views::format_quantity(m.calls.min) + "-" +
                                                             views::format_quantity(m.calls.max);
  const auto cell = [](const std::string& s, std::size_t width) { return " " + views::pad_left(s, width); };
  return views::pad_right(views::truncate(name, 32), 32) + cell(fmt::format("{}", m.ranks.size()), 5) +
         cell(calls, 7) + cell(time_or_dash(m.host.min), 9) + cell(time_or_dash(m.host.median), 9) +
         cell(time_or_dash(m.host.max), 9) +
         cell(m.host.max > 0 ? fmt::format("{}", m.host.slowest) : "—", 7) +
         cell(m.host.median > 0 ? views::format_percent(m.host.imbalance()) : "—", 9) +
         cell(time_or_dash(m.gpu.min), 9) + cell(time_or_dash(m.gpu.median), 9) +
         cell(time_or_dash(m.gpu.max), 9) + "\n";
}

}  // namespace

int merge(const Args& args) {
  std::string out;
  double straggler = 0.25;
  std::uint64_t min_time_ns = 1'000'000;
  std::vector<Input> inputs;
  bool partial = false;
  CommandLine cl("merge", kHelp.c_str(), args);
  while (cl.next()) {
    std::string_view v;
    if (cl.flag("--partial")) {
      partial = true;
    } else if (cl.value("-o", &v)) {
      out = std::string(v);
    } else if (cl.value("--straggler", &v)) {
      if (!parse_share(v, &straggler))
        return cl.error(fmt::format("--straggler '{}' is not a share (0.25 or 25%)", v));
    } else if (cl.value("--min-time", &v)) {
      if (!parse_duration_ns(v, &min_time_ns))
        return cl.error(fmt::format("--min-time '{}' is not a duration (500us, 2ms, 1s)", v));
    } else if (cl.operand(&v)) {
      inputs.push_back({std::string(v), {}, 0});
    } else {
      return cl.unknown();
    }
  }
  if (cl.stopped()) return cl.status();
  if (inputs.empty()) return cl.error("it merges one report or more");

  std::vector<std::string> notes;
  std::map<std::int64_t, const Input*> by_rank;
  std::int64_t world_size = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    Input& in = inputs[i];
    std::string error;
    std::string cut;
    if (!load_report(in.file, &in.report, &error, partial, &cut)) return fail("merge", in.file + ": " + error);
    say_cut("merge", in.file, cut);
    in.rank = in.report.rank;
    if (in.rank < 0) {
      in.rank = static_cast<std::int64_t>(i);
      notes.push_back(
          fmt::format("{} records no rank: taken as rank {}, its place on the command line", in.file, i));
    }
    if (const auto [at, fresh] = by_rank.emplace(in.rank, &in); !fresh)
      return fail("merge", fmt::format("rank {} twice: {} and {}", in.rank, at->second->file, in.file));
    if (in.report.world_size > 0 && world_size > 0 && in.report.world_size != world_size)
      notes.push_back(fmt::format("{} says the world size is {}, an earlier report said {}", in.file,
                                  in.report.world_size, world_size));
    world_size = std::max(world_size, in.report.world_size);
  }
  // A world size comes from a file: the missing ranks are listed up to a bound, and counted.
  constexpr std::size_t kListedMissing = 64;
  std::vector<std::int64_t> missing;
  std::int64_t present = 0;
  for (const auto& [rank, in] : by_rank) present += rank < world_size ? 1 : 0;
  for (std::int64_t r = 0; r < world_size && missing.size() < kListedMissing; ++r)
    if (!by_rank.count(r)) missing.push_back(r);
  if (const std::int64_t absent = world_size - present; absent > 0) {
    const std::int64_t unlisted = absent - static_cast<std::int64_t>(missing.size());
    notes.push_back(fmt::format("{} of {} ranks have no report here: {}{}", absent, world_size,
                                fmt::join(missing, ", "),
                                unlisted > 0 ? fmt::format(" and {} more", unlisted) : ""));
  }

  // Ranges in the order of a walk of each rank's tree, ranks ascending: parents before children.
  std::vector<Merged> ranges;
  std::map<std::string, std::size_t> index;
  Diagnostics diagnostics;
  for (const auto& [rank, in] : by_rank) {
    const Report& r = in->report;
    model::add_diagnostics(diagnostics, r.diagnostics);
    for (std::size_t i : tree_order(r)) {
      const RangeStats& range = r.ranges[i];
      auto [at, fresh] = index.emplace(range.path, ranges.size());
      if (fresh) {
        // After its parent's last descendant so far, so that the table stays a tree. The walk
        // visits a parent before its children: the parent is in `index` already.
        std::size_t pos = ranges.size();
        if (const std::string& parent = r.ranges[range.parent].path; !parent.empty()) {
          pos = index.at(parent) + 1;
          while (pos < ranges.size() && ranges[pos].path.rfind(parent + "/", 0) == 0) ++pos;
        }
        ranges.insert(ranges.begin() + static_cast<std::ptrdiff_t>(pos),
                      Merged{range.path, range.name, range.depth, {}, {}, {}, {}});
        for (auto& [p, k] : index)
          if (k >= pos && p != range.path) ++k;
        at->second = pos;
      }
      Merged& m = ranges[at->second];
      if (!m.ranks.empty() && m.ranks.back().rank == rank) {  // a path twice in one report
        notes.push_back(fmt::format("{} holds range {} twice; the second is left out", in->file, range.path));
        continue;
      }
      m.ranks.push_back({rank, range.calls, range.host.total_ns, range.gpu_time().total_ns});
    }
  }

  // Each rank's findings stay in its own report (cuscope show REPORT); the merge derives nothing
  // but "straggler" across ranks.
  std::vector<Straggler> stragglers;
  for (Merged& m : ranges) {
    std::vector<std::pair<std::int64_t, double>> calls, host, gpu;
    for (const PerRank& p : m.ranks) {
      calls.emplace_back(p.rank, double(p.calls));
      host.emplace_back(p.rank, double(p.host_ns));
      gpu.emplace_back(p.rank, double(p.gpu_ns));
    }
    m.calls = stats_of(calls);
    m.host = stats_of(host);
    m.gpu = stats_of(gpu);
    if (m.ranks.size() < 2 || m.host.median < double(min_time_ns) || m.host.median <= 0) continue;
    for (const PerRank& p : m.ranks)
      if (double(p.host_ns) > m.host.median * (1 + straggler))
        stragglers.push_back({m.path, p.rank, double(p.host_ns), m.host.median});
  }

  // The table.
  std::string text =
      fmt::format("cuscope merge — {} {}", by_rank.size(), by_rank.size() == 1 ? "rank" : "ranks");
  if (world_size > 0) text += fmt::format(" of {}", world_size);
  text += fmt::format(" — device: {}\n", by_rank.begin()->second->report.device);
  for (const std::string& n : notes) text += "note: " + n + "\n";
  for (const model::DiagnosticField& f : model::kDiagnosticFields) {
    const std::uint64_t v = diagnostics.*f.field;
    if (v != 0 && !f.one.empty()) text += fmt::format("all ranks: {} {}\n", v, v == 1 ? f.one : f.many);
  }
  // A straggler's host, where its report names it: the node to look at.
  const auto on_host = [&by_rank](std::int64_t rank) {
    const std::string& host = by_rank.at(rank)->report.host;
    return host.empty() ? std::string() : fmt::format(" ({})", host);
  };
  for (const Straggler& s : stragglers)
    text += fmt::format("straggler: rank {}{} in {}: host {}, {:.2f}x the median {}\n", s.rank, on_host(s.rank),
                        s.path, time_or_dash(s.host_ns), s.host_ns / s.median_ns, time_or_dash(s.median_ns));
  text +=
      fmt::format("\n{:<32} {:>5} {:>7} {:>9} {:>9} {:>9} {:>7} {:>9} {:>9} {:>9} {:>9}\n", "range", "ranks",
                  "calls", "host min", "median", "max", "slowest", "imbalance", "GPU min", "median", "max");
  for (const Merged& m : ranges) text += table_row(m);
  std::fputs(text.c_str(), stdout);

  if (out.empty()) return 0;
  nlohmann::json j;
  j["schema"] = "cuscope.merged/1";
  j["version"] = version();
  j["world_size"] = world_size > 0 ? nlohmann::json(world_size) : nlohmann::json();
  j["ranks"] = nlohmann::json::array();
  for (const auto& [rank, in] : by_rank)
    j["ranks"].push_back({{"rank", rank},
                          {"file", in->file},
                          {"device", in->report.device},
                          {"host", in->report.host.empty() ? nlohmann::json() : nlohmann::json(in->report.host)},
                          {"pid", in->report.pid > 0 ? nlohmann::json(in->report.pid) : nlohmann::json()},
                          {"wall_ns", in->report.wall_ns},
                          {"final", in->report.final},
                          {"steps", in->report.steps},
                          {"clock_steps", in->report.clock_steps}});
  j["missing_ranks"] = missing;
  j["notes"] = notes;
  j["straggler_threshold"] = straggler;
  j["min_time_ns"] = min_time_ns;
  j["diagnostics"] = nlohmann::json::object();
  for (const model::DiagnosticField& f : model::kDiagnosticFields)
    j["diagnostics"][std::string(f.json)] = diagnostics.*f.field;
  j["ranges"] = nlohmann::json::array();
  for (const Merged& m : ranges) {
    nlohmann::json per_rank = nlohmann::json::array();
    for (const PerRank& p : m.ranks)
      per_rank.push_back(
          {{"rank", p.rank}, {"calls", p.calls}, {"host_total_ns", p.host_ns}, {"gpu_total_ns", p.gpu_ns}});
    j["ranges"].push_back({{"path", m.path},
                           {"name", m.name},
                           {"depth", m.depth},
                           {"ranks", m.ranks.size()},
                           {"calls", stats_json(m.calls, false)},
                           {"host_total_ns", stats_json(m.host, true)},
                           {"gpu_total_ns", stats_json(m.gpu, true)},
                           {"per_rank", std::move(per_rank)}});
  }
  j["straggler"] = nlohmann::json::array();
  for (const Straggler& s : stragglers)
    j["straggler"].push_back({{"range", s.path},
                              {"rank", s.rank},
                              {"host_total_ns", s.host_ns},
                              {"median_ns", s.median_ns},
                              {"ratio", s.host_ns / s.median_ns}});
  const std::string json_text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  OutputFile file;
  std::string error;
  if (!file.open(out, &error)) return fail("merge", error);
  file.write(json_text);
  if (!file.commit(&error)) return fail("merge", error);
  return 0;
}

}  // namespace cuscope::cli

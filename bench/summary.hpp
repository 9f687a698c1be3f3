// bench/summary.hpp — the one table and the one JSON file both benchmark programs end with.
//
// A run is a list of measurements (what each benchmark measured, in its unit) and a list of
// targets (a ratio or a value from the same run, the goal, PASS or MISS), under a context that
// says where and how it ran (machine, compiler, build type, git commit, date). The table is for
// people; the JSON (schema "cuscope.bench/1") holds the same numbers for tools. Header-only and
// standard C++ only, so the CUDA benchmark (built by nvcc) includes it too.
#pragma once

#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace cuscope_bench {

/// One benchmark's result. `unit` is one of "ns", "records/s", "bytes", "x".
struct Measurement {
  std::string key;     ///< stable id for tools, e.g. "scope.enabled"
  std::string label;   ///< what the table shows
  double value = NAN;  ///< NaN: not measured in this run
  std::string unit;
  double cv = NAN;  ///< coefficient of variation over the repetitions, when there were some
  /// Where `value` is the median of per-round values (a ratio of interleaved configurations): the
  /// smallest and largest of them (NaN: not such a value).
  double low = NAN, high = NAN;
  /// And the interval that holds the median of what they sample with at least 95% probability
  /// (median_interval(); NaN: fewer than 6 of them, or not such a value).
  double ci_low = NAN, ci_high = NAN;
};

/// One goal and how this run did against it.
struct Target {
  std::string key;
  std::string label;
  double measured = NAN;  ///< NaN: an input was not measured in this run
  std::string unit;
  std::string goal;  ///< in words, e.g. "<= 2.00x"
  bool pass = false;
  double low = NAN, high = NAN;        ///< as Measurement's: the range of the per-round values, if any
  double ci_low = NAN, ci_high = NAN;  ///< as Measurement's: the median's 95% interval, if any
};

struct Summary {
  std::string title;
  std::vector<std::pair<std::string, std::string>> context;  ///< printed and written in this order
  std::vector<Measurement> measurements;
  std::vector<Target> targets;
  std::vector<std::string> notes;  ///< how to read the numbers

  void add_context(std::string key, std::string value) {
    context.emplace_back(std::move(key), std::move(value));
  }
};

/// The median of a set of samples (NaN when empty).
inline double median(std::vector<double> v) {
  if (v.empty()) return NAN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// `v` with each sample replaced by the mean of its cycle: rounds of `per_round` samples, each cut
/// into cycles of `cycle` consecutive samples (a round's last, shorter cycle its own). For a step
/// window that records one step in N and runs the others paused (CUSCOPE_REPEAT), the median of
/// single steps is a paused step's: the mean over whole cycles is what the program pays.
inline std::vector<double> cycle_means(std::vector<double> v, std::size_t per_round, std::size_t cycle) {
  if (per_round == 0 || cycle == 0) return v;
  for (std::size_t round = 0; round < v.size(); round += per_round) {
    const std::size_t round_end = std::min(v.size(), round + per_round);
    for (std::size_t begin = round; begin < round_end; begin += cycle) {
      const std::size_t end = std::min(round_end, begin + cycle);
      double sum = 0;
      for (std::size_t i = begin; i < end; ++i) sum += v[i];
      for (std::size_t i = begin; i < end; ++i) v[i] = sum / static_cast<double>(end - begin);
    }
  }
  return v;
}

/// The rounds' ratios of two configurations measured in the same rounds: for each round, the median
/// of `a`'s samples over the median of `b`'s, with `per_round` samples a round in each (the samples
/// of round r are [r * per_round, (r + 1) * per_round)). Rounds either lacks (a run cut short, a
/// configuration skipped) are left out. Under drift between rounds (a VM's neighbours), a ratio
/// taken within each round, then its median over the rounds, is steadier than the ratio of the
/// pooled medians.
inline std::vector<double> round_ratios(const std::vector<double>& a, const std::vector<double>& b,
                                        std::size_t per_round) {
  std::vector<double> out;
  if (per_round == 0) return out;
  const std::size_t rounds = std::min(a.size(), b.size()) / per_round;
  for (std::size_t r = 0; r < rounds; ++r) {
    const auto slice = [&](const std::vector<double>& v) {
      return std::vector<double>(v.begin() + static_cast<std::ptrdiff_t>(r * per_round),
                                 v.begin() + static_cast<std::ptrdiff_t>((r + 1) * per_round));
    };
    const double denominator = median(slice(b));
    if (denominator > 0) out.push_back(median(slice(a)) / denominator);
  }
  return out;
}

/// How far the first timed samples of each round's part stand from the rest: for each round of
/// `per_round` samples, the median of its first `first` over the median of the others (rounds cut
/// short, or with nothing after the first, are left out). 1.00 where the untimed warm-up before the
/// part sufficed; above it, the part's start (a session just made, CUPTI just attached) still slows
/// the steps timed first, which a short block of steps (the alternations) times alone.
inline std::vector<double> round_drift(const std::vector<double>& v, std::size_t per_round,
                                       std::size_t first) {
  std::vector<double> out;
  if (first == 0 || per_round <= first) return out;
  for (std::size_t r = 0; (r + 1) * per_round <= v.size(); ++r) {
    const auto begin = v.begin() + static_cast<std::ptrdiff_t>(r * per_round);
    const double later = median(std::vector<double>(begin + static_cast<std::ptrdiff_t>(first),
                                                    begin + static_cast<std::ptrdiff_t>(per_round)));
    if (later > 0)
      out.push_back(median(std::vector<double>(begin, begin + static_cast<std::ptrdiff_t>(first))) / later);
  }
  return out;
}

/// The distribution-free 95% interval of the median of what `v` samples (independent samples, any
/// distribution): the order statistics x(k) and x(n+1-k) of the n sorted samples, k the largest with
/// P(Binomial(n, 1/2) < k) <= 0.025, so that both ends miss the median with at most 2.5% each. NaN
/// for both below 6 samples, where even the whole range holds the median with less than 95%. With 6
/// to 8 samples it is their whole range; with 48, the 17th to the 32nd.
inline std::pair<double, double> median_interval(std::vector<double> v) {
  const std::size_t n = v.size();
  std::size_t k = 0;  // P(X < k) <= 0.025, X ~ Binomial(n, 1/2), for the largest such k
  double below = 0;   // P(X < k + 1) as k grows: P(X <= k)
  for (std::size_t j = 0; j < n; ++j) {
    const double nd = static_cast<double>(n), jd = static_cast<double>(j);
    below +=
        std::exp(std::lgamma(nd + 1) - std::lgamma(jd + 1) - std::lgamma(nd - jd + 1) - nd * std::log(2.0));
    if (below > 0.025) break;
    k = j + 1;
  }
  if (k == 0) return {NAN, NAN};
  std::sort(v.begin(), v.end());
  return {v[k - 1], v[n - k]};
}

/// A measurement whose value is the median of `ratios` (round_ratios), with their range and the
/// median's 95% interval.
inline Measurement paired_ratio(std::string key, std::string label, const std::vector<double>& ratios) {
  Measurement m{std::move(key), std::move(label), median(ratios), "x"};
  if (!ratios.empty()) {
    m.low = *std::min_element(ratios.begin(), ratios.end());
    m.high = *std::max_element(ratios.begin(), ratios.end());
    std::tie(m.ci_low, m.ci_high) = median_interval(ratios);
  }
  return m;
}

/// The order of `n` interleaved configurations in round `round`, a Williams design (the rows of a
/// balanced Latin square): place j holds (round + w[j]) mod n, w = 0, 1, n-1, 2, n-2, ... Over n
/// rounds each configuration takes each place once, and the one before it changes from round to
/// round (over 5 rounds of 10 to 13, at least 4 different ones). A fixed order puts a warm-up effect
/// on the first and each configuration's after-effects on the same next one every round; a merely
/// rotated order keeps every neighbour but one.
inline std::vector<int> round_order(int n, int round) {
  std::vector<int> order;
  if (n <= 0) return order;
  std::vector<int> w{0};
  for (int k = 1; static_cast<int>(w.size()) < n; ++k) {
    w.push_back(k);
    if (static_cast<int>(w.size()) < n) w.push_back(n - k);
  }
  for (const int x : w) order.push_back((round % n + x) % n);
  return order;
}

/// Sample standard deviation over the mean (NaN with fewer than two samples or a zero mean).
inline double coefficient_of_variation(const std::vector<double>& v) {
  if (v.size() < 2) return NAN;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double var = 0;
  for (double x : v) var += (x - mean) * (x - mean);
  var /= static_cast<double>(v.size() - 1);
  return mean != 0 ? std::sqrt(var) / mean : NAN;
}

inline std::string printf_string(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

/// A value in its unit, three significant digits: "23.4 ns", "1.52 ms", "31.2 M/s", "12.0 KiB".
inline std::string format_value(double v, const std::string& unit) {
  if (std::isnan(v)) return "-";
  auto three = [](double x, const char* suffix) {
    const char* f = std::fabs(x) >= 100 ? "%.0f" : (std::fabs(x) >= 10 ? "%.1f" : "%.2f");
    const std::string text = printf_string(f, x);
    return (text == "-0.00" ? "0.00" : text) + suffix;
  };
  if (unit == "ns") {
    if (std::fabs(v) < 1e3) return three(v, " ns");
    if (std::fabs(v) < 1e6) return three(v / 1e3, " us");
    if (std::fabs(v) < 1e9) return three(v / 1e6, " ms");
    return three(v / 1e9, " s");
  }
  if (unit == "records/s") return three(v / 1e6, " M records/s");
  if (unit == "bytes") {
    if (std::fabs(v) < 1024) return printf_string("%.0f B", v);
    if (std::fabs(v) < 1024.0 * 1024) return three(v / 1024, " KiB");
    return three(v / (1024.0 * 1024), " MiB");
  }
  if (unit == "x") return printf_string("%.2fx", v);
  return printf_string("%g ", v) + unit;
}

inline std::string pad(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : s + std::string(width - s.size(), ' ');
}
inline std::string pad_left(const std::string& s, std::size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

/// "  1.02x-1.09x" for a range of per-round values, then " (1.03x-1.07x)" for the median's 95%
/// interval where there is one; "" when there is no range.
inline std::string format_range(double low, double high, const std::string& unit, double ci_low = NAN,
                                double ci_high = NAN) {
  if (std::isnan(low) || std::isnan(high)) return "";
  const std::string ci = std::isnan(ci_low) || std::isnan(ci_high)
                             ? std::string()
                             : " (" + format_value(ci_low, unit) + "-" + format_value(ci_high, unit) + ")";
  return "  " + format_value(low, unit) + "-" + format_value(high, unit) + ci;
}

inline std::string format_table(const Summary& s) {
  std::ostringstream out;
  out << s.title << "\n";
  for (const auto& [key, value] : s.context) out << "  " << pad(key + ":", 14) << value << "\n";
  std::size_t w = 9;
  for (const Measurement& m : s.measurements) w = std::max(w, m.label.size());
  for (const Target& t : s.targets) w = std::max(w, t.label.size());
  bool ranges = false;     // the "range" column, where some value has one
  bool intervals = false;  // and in it the median's 95% interval, where some value has one
  for (const Measurement& m : s.measurements) {
    ranges = ranges || !std::isnan(m.low);
    intervals = intervals || !std::isnan(m.ci_low);
  }
  for (const Target& t : s.targets) {
    ranges = ranges || !std::isnan(t.low);
    intervals = intervals || !std::isnan(t.ci_low);
  }
  const std::string range_header =
      ranges ? std::string("  range") + (intervals ? " (the median's 95% interval)" : "") : "";
  out << "\n"
      << pad("benchmark", w) << "  " << pad_left("median", 20) << "  " << pad_left("cv", 6) << range_header
      << "\n";
  for (const Measurement& m : s.measurements) {
    const std::string cv = std::isnan(m.cv) ? "" : printf_string("%.1f%%", 100 * m.cv);
    out << pad(m.label, w) << "  " << pad_left(format_value(m.value, m.unit), 20) << "  " << pad_left(cv, 6)
        << format_range(m.low, m.high, m.unit, m.ci_low, m.ci_high) << "\n";
  }
  out << "\n"
      << pad("target", w) << "  " << pad_left("measured", 20) << "  " << pad("goal", 16)
      << (ranges ? pad("result", 12) + range_header : std::string("result")) << "\n";
  for (const Target& t : s.targets) {
    const char* result = std::isnan(t.measured) ? "not measured" : (t.pass ? "PASS" : "MISS");
    out << pad(t.label, w) << "  " << pad_left(format_value(t.measured, t.unit), 20) << "  "
        << pad(t.goal, 16) << (ranges ? pad(result, 12) : std::string(result))
        << format_range(t.low, t.high, t.unit, t.ci_low, t.ci_high) << "\n";
  }
  if (!s.notes.empty()) out << "\n";
  for (const std::string& n : s.notes) out << n << "\n";
  return out.str();
}

inline std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

inline std::string json_number(double v) { return std::isnan(v) ? "null" : printf_string("%.6g", v); }

/// `, "min": x, "max": y` for a range of per-round values, then `, "median_ci95": [a, b]` for the
/// median's 95% interval where there is one; "" when there is no range (older readers see the same
/// keys as before).
inline std::string json_range(double low, double high, double ci_low = NAN, double ci_high = NAN) {
  if (std::isnan(low) || std::isnan(high)) return "";
  const std::string ci =
      std::isnan(ci_low) || std::isnan(ci_high)
          ? std::string()
          : ", \"median_ci95\": [" + json_number(ci_low) + ", " + json_number(ci_high) + "]";
  return ", \"min\": " + json_number(low) + ", \"max\": " + json_number(high) + ci;
}

inline std::string format_json(const Summary& s) {
  std::ostringstream out;
  out << "{\n  \"schema\": \"cuscope.bench/1\",\n  \"title\": " << json_string(s.title)
      << ",\n  \"context\": {";
  for (std::size_t i = 0; i < s.context.size(); ++i) {
    out << (i ? "," : "") << "\n    " << json_string(s.context[i].first) << ": "
        << json_string(s.context[i].second);
  }
  out << "\n  },\n  \"measurements\": [";
  for (std::size_t i = 0; i < s.measurements.size(); ++i) {
    const Measurement& m = s.measurements[i];
    out << (i ? "," : "") << "\n    {\"key\": " << json_string(m.key)
        << ", \"label\": " << json_string(m.label) << ", \"value\": " << json_number(m.value)
        << ", \"unit\": " << json_string(m.unit) << ", \"cv\": " << json_number(m.cv)
        << json_range(m.low, m.high, m.ci_low, m.ci_high) << "}";
  }
  out << "\n  ],\n  \"targets\": [";
  for (std::size_t i = 0; i < s.targets.size(); ++i) {
    const Target& t = s.targets[i];
    const char* result = std::isnan(t.measured) ? "not measured" : (t.pass ? "PASS" : "MISS");
    out << (i ? "," : "") << "\n    {\"key\": " << json_string(t.key)
        << ", \"label\": " << json_string(t.label) << ", \"measured\": " << json_number(t.measured)
        << ", \"unit\": " << json_string(t.unit) << ", \"goal\": " << json_string(t.goal)
        << ", \"result\": " << json_string(result) << json_range(t.low, t.high, t.ci_low, t.ci_high) << "}";
  }
  out << "\n  ],\n  \"notes\": [";
  for (std::size_t i = 0; i < s.notes.size(); ++i)
    out << (i ? "," : "") << "\n    " << json_string(s.notes[i]);
  out << "\n  ]\n}\n";
  return out.str();
}

/// Writes `text` to `path`; false (with a message on stderr) when it could not.
inline bool write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  f << text;
  f.close();
  if (!f) std::fprintf(stderr, "could not write %s\n", path.c_str());
  return static_cast<bool>(f);
}

/// The first "model name" line of /proc/cpuinfo.
inline std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon != std::string::npos) return line.substr(line.find_first_not_of(' ', colon + 1));
  }
  return "unknown";
}

inline std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 ? buf : "unknown";
}

/// "Linux 6.1.0 x86_64": the kernel the run saw.
inline std::string os_name() {
  utsname u{};
  if (uname(&u) != 0) return "unknown";
  return std::string(u.sysname) + " " + u.release + " " + u.machine;
}

inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

/// The context every run starts with; `commit` comes from the command line ("" = unknown).
inline void add_machine_context(Summary& s, const std::string& commit, const char* compiler,
                                const char* build_type) {
  s.add_context("date", utc_now());
  s.add_context("host", host_name());
  s.add_context("os", os_name());
  s.add_context("cpu", cpu_model() + ", " + std::to_string(sysconf(_SC_NPROCESSORS_ONLN)) + " online");
  s.add_context("compiler", compiler);
  s.add_context("build type", build_type);
  s.add_context("git commit", commit.empty() ? "unknown (pass --git-commit)" : commit);
}

}  // namespace cuscope_bench

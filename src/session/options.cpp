// session/options.cpp — CUSCOPE_* environment variables onto Options. A bad value keeps the
// base value and yields one OptionError naming the variable and the value; unknown CUSCOPE_*
// variables (typos) are reported too.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <cuscope/scope.hpp>
#include <cuscope/session.hpp>
#include <string>
#include <string_view>

#include "producers/log.hpp"
#include "session/internal.hpp"

extern char** environ;  // NOLINT: POSIX

namespace cuscope {
inline namespace v0 {
namespace {

// A value as messages quote it: on one line, printable (a newline in a value must not split the
// warning, a stray byte must not end up in the report's notes as it is).
std::string shown(std::string_view value) { return detail::one_line(value); }

struct Reader {
  EnvLookup lookup;
  std::vector<OptionError>* errors;

  const char* get(const char* name) const { return lookup(name); }

  void error(const char* name, std::string_view value, std::string message) const {
    if (errors != nullptr) errors->push_back({name, std::string(value), std::move(message)});
  }

  static std::string trimmed_lower(std::string_view v) {
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
    while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
    std::string out(v);
    std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
    return out;
  }

  void boolean(const char* name, bool& field) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const std::string v = trimmed_lower(raw);
    if (v == "1" || v == "true" || v == "yes" || v == "on") {
      field = true;
    } else if (v == "0" || v == "false" || v == "no" || v == "off") {
      field = false;
    } else {
      error(name, raw,
            fmt::format("{}='{}' is not a boolean (use 1/0, true/false, yes/no, on/off); keeping {}", name,
                        shown(raw), field ? 1 : 0));
    }
  }

  template <class T>
  void number(const char* name, T& field, std::uint64_t min, std::uint64_t max) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const std::string v = trimmed_lower(raw);
    std::uint64_t parsed = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), parsed);
    // A whole number below 0 ("-1") is out of range, not "not a whole number".
    const bool negative =
        v.size() > 1 && v[0] == '-' && v.find_first_not_of("0123456789", 1) == std::string::npos;
    if (negative) {
      error(name, raw,
            fmt::format("{}='{}' is out of range [{}, {}]; keeping {}", name, shown(raw), min, max, field));
    } else if (v.empty() || ec == std::errc::invalid_argument || end != v.data() + v.size()) {
      error(name, raw, fmt::format("{}='{}' is not a whole number; keeping {}", name, shown(raw), field));
    } else if (ec == std::errc::result_out_of_range || parsed < min || parsed > max) {
      error(name, raw,
            fmt::format("{}='{}' is out of range [{}, {}]; keeping {}", name, shown(raw), min, max, field));
    } else {
      field = static_cast<T>(parsed);
    }
  }

  void path(const char* name, std::string& field) const {
    const char* raw = get(name);
    if (raw != nullptr) field = raw;
  }

  // Comma-separated, entries trimmed, empty entries dropped; leading/trailing '/' of paths ignored.
  void list(const char* name, std::vector<std::string>& field) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    field.clear();
    std::string_view rest(raw);
    while (!rest.empty()) {
      const std::size_t comma = rest.find(',');
      std::string_view item = rest.substr(0, comma);
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
      while (!item.empty() &&
             (std::isspace(static_cast<unsigned char>(item.front())) || item.front() == '/')) {
        item.remove_prefix(1);
      }
      while (!item.empty() && (std::isspace(static_cast<unsigned char>(item.back())) || item.back() == '/')) {
        item.remove_suffix(1);
      }
      if (!item.empty()) field.emplace_back(item);
    }
  }

  // Domain names to keep, or names each prefixed with '-' to leave out; not both.
  void domains(const char* name, std::vector<std::string>& field) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const auto trim = [](std::string_view v) {
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.front()))) v.remove_prefix(1);
      while (!v.empty() && std::isspace(static_cast<unsigned char>(v.back()))) v.remove_suffix(1);
      return v;
    };
    const std::string_view all(raw);
    if (trim(all).empty()) {  // set but empty: every domain, as when unset
      field.clear();
      return;
    }
    const std::string keeping = field.empty() ? "every domain" : fmt::format("'{}'", fmt::join(field, ","));
    std::vector<std::string> parsed;
    std::size_t kept = 0;
    for (std::size_t pos = 0, item_no = 1;; ++item_no) {
      const std::size_t comma = all.find(',', pos);
      const std::string_view item =
          trim(all.substr(pos, comma == std::string_view::npos ? comma : comma - pos));
      if (item.empty() || item == "-") {
        error(name, raw,
              fmt::format("{}='{}' has an empty domain name (item {}); keeping {}", name, shown(raw), item_no,
                          keeping));
        return;
      }
      if (item.front() != '-') ++kept;
      parsed.emplace_back(item);
      if (comma == std::string_view::npos) break;
      pos = comma + 1;
    }
    if (kept != 0 && kept != parsed.size()) {
      error(name, raw,
            fmt::format("{}='{}' names both domains to keep and ('-') domains to leave out; use one or the "
                        "other; keeping {}",
                        name, shown(raw), keeping));
      return;
    }
    field = std::move(parsed);
  }

  // "auto", "always", "off" or "sampled:N" (N from 2 to 1e9).
  void events(const char* name, EventTiming& field, std::uint32_t& every) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const std::string v = trimmed_lower(raw);
    for (EventTiming e : {EventTiming::automatic, EventTiming::always, EventTiming::off}) {
      if (v == to_string(e)) {
        field = e;
        every = 0;
        return;
      }
    }
    constexpr std::string_view kSampled = "sampled:";
    std::uint64_t n = 0;
    if (v.compare(0, kSampled.size(), kSampled) == 0) {
      const char* first = v.data() + kSampled.size();
      const auto [end, ec] = std::from_chars(first, v.data() + v.size(), n);
      if (ec == std::errc{} && end == v.data() + v.size() && end != first && n >= 2 &&
          n <= detail::kMaxEventSampleEvery) {
        field = EventTiming::sampled;
        every = static_cast<std::uint32_t>(n);
        return;
      }
    }
    const std::string keeping =
        field == EventTiming::sampled ? fmt::format("sampled:{}", every) : std::string(to_string(field));
    error(name, raw,
          fmt::format("{}='{}' is not an event mode (auto, always, off, or sampled:N with N from 2 to {}); "
                      "keeping {}",
                      name, shown(raw), detail::kMaxEventSampleEvery, keeping));
  }

  // "external" or "launch".
  // One of two named values (`what`: "an attribution"); anything else keeps the field and says so.
  template <class E>
  void either(const char* name, E& field, E first, E second, const char* what) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const std::string v = trimmed_lower(raw);
    for (E e : {first, second}) {
      if (v == to_string(e)) {
        field = e;
        return;
      }
    }
    error(name, raw,
          fmt::format("{}='{}' is not {} ({} or {}); keeping {}", name, shown(raw), what, to_string(first),
                      to_string(second), to_string(field)));
  }

  void sort_key(const char* name, SortKey& field) const {
    const char* raw = get(name);
    if (raw == nullptr) return;
    const std::string v = trimmed_lower(raw);
    constexpr SortKey keys[] = {SortKey::host_total,   SortKey::host_self, SortKey::gpu_total,
                                SortKey::kernel_total, SortKey::gpu_busy,  SortKey::calls,
                                SortKey::name};
    for (SortKey k : keys) {
      if (v == to_string(k)) {
        field = k;
        return;
      }
    }
    std::string all;
    for (SortKey k : keys) all += fmt::format("{}{}", all.empty() ? "" : ", ", to_string(k));
    error(name, raw,
          fmt::format("{}='{}' is not a sort key (one of: {}); keeping {}", name, shown(raw), all,
                      to_string(field)));
  }
};

constexpr const char* kKnown[] = {
    "CUSCOPE_ENABLE", "CUSCOPE_GPU_EVENTS", "CUSCOPE_ACTIVITIES", "CUSCOPE_WAIT", "CUSCOPE_WARMUP",
    "CUSCOPE_ACTIVE", "CUSCOPE_PRINT", "CUSCOPE_OUTPUT", "CUSCOPE_JSON", "CUSCOPE_SORT", "CUSCOPE_ROWS",
    "CUSCOPE_TOP_KERNELS", "CUSCOPE_MAX_DEPTH", "CUSCOPE_METRICS", "CUSCOPE_METRIC_RANGES",
    "CUSCOPE_METRIC_STEPS", "CUSCOPE_TRACE", "CUSCOPE_TRACE_LIMIT", "CUSCOPE_NVTX_DOMAINS",
    "CUSCOPE_FINDINGS", "CUSCOPE_GRAPHS", "CUSCOPE_EVENTS", "CUSCOPE_ATTRIBUTION", "CUSCOPE_SYNC_RECORDS",
    "CUSCOPE_MEMORY_RECORDS", "CUSCOPE_EVENT_TIMESTAMPS", "CUSCOPE_REPORT_EVERY", "CUSCOPE_REPEAT",
    "CUSCOPE_DETACH", "CUSCOPE_DETACH_BETWEEN", "CUSCOPE_STEP_MS", "CUSCOPE_WAIT_MS", "CUSCOPE_WHOLE_MS",
    "CUSCOPE_SAMPLE_MS",
    // Not options: set by `cuscope run` for the processes below it.
    "CUSCOPE_INJECT_LIBRARY", "CUSCOPE_RUN_ID"};

}  // namespace

std::string_view to_string(EventTimestamps t) { return t == EventTimestamps::cupti ? "cupti" : "cuda"; }

std::string_view to_string(Attribution a) { return a == Attribution::launch ? "launch" : "external"; }

std::string_view to_string(EventTiming e) {
  switch (e) {
    case EventTiming::automatic:
      return "auto";
    case EventTiming::always:
      return "always";
    case EventTiming::sampled:
      return "sampled";
    case EventTiming::off:
      return "off";
  }
  return "auto";
}

Options options_from(EnvLookup lookup, Options base, std::vector<OptionError>* errors) {
  const Reader r{lookup, errors};
  r.boolean("CUSCOPE_ENABLE", base.enabled);
  r.boolean("CUSCOPE_GPU_EVENTS", base.gpu_events);
  r.events("CUSCOPE_EVENTS", base.events, base.events_sample_every);
  r.either("CUSCOPE_EVENT_TIMESTAMPS", base.event_timestamps, EventTimestamps::cuda, EventTimestamps::cupti,
           "an event timestamp source");
  r.boolean("CUSCOPE_ACTIVITIES", base.activities);
  r.boolean("CUSCOPE_GRAPHS", base.graphs);
  r.boolean("CUSCOPE_SYNC_RECORDS", base.sync_records);
  r.boolean("CUSCOPE_MEMORY_RECORDS", base.memory_records);
  r.either("CUSCOPE_ATTRIBUTION", base.attribution, Attribution::external, Attribution::launch,
           "an attribution");
  r.number("CUSCOPE_WAIT", base.wait_steps, 0, 1'000'000'000);
  r.number("CUSCOPE_WAIT_MS", base.wait_ms, 0, detail::kMaxStepMs);
  r.number("CUSCOPE_WARMUP", base.warmup_steps, 0, 1'000'000'000);
  r.number("CUSCOPE_ACTIVE", base.active_steps, 0, 1'000'000'000);
  r.number("CUSCOPE_REPEAT", base.repeat, 0, 1'000'000'000);
  r.boolean("CUSCOPE_DETACH", base.detach);
  r.boolean("CUSCOPE_DETACH_BETWEEN", base.detach_between);
  r.number("CUSCOPE_STEP_MS", base.step_ms, 0, detail::kMaxStepMs);
  r.number("CUSCOPE_WHOLE_MS", base.whole_ms, 0, detail::kMaxStepMs);
  r.number("CUSCOPE_SAMPLE_MS", base.sample_ms, 0, detail::kMaxStepMs);
  r.boolean("CUSCOPE_PRINT", base.print_at_exit);
  r.path("CUSCOPE_OUTPUT", base.output_path);
  r.path("CUSCOPE_JSON", base.json_path);
  r.number("CUSCOPE_REPORT_EVERY", base.report_every_s, 0, detail::kMaxReportEvery);
  r.sort_key("CUSCOPE_SORT", base.table.sort);
  r.number("CUSCOPE_ROWS", base.table.max_rows, 0, 1'000'000);
  r.number("CUSCOPE_TOP_KERNELS", base.table.top_kernels, 0, 1000);
  r.number("CUSCOPE_FINDINGS", base.table.max_findings, 0, 1000);
  r.number("CUSCOPE_MAX_DEPTH", base.max_depth, 1, 256);
  r.path("CUSCOPE_METRICS", base.metrics);
  r.list("CUSCOPE_METRIC_RANGES", base.metric_ranges);
  r.number("CUSCOPE_METRIC_STEPS", base.metric_steps, 0, 1'000'000'000);
  r.path("CUSCOPE_TRACE", base.trace_path);
  r.number("CUSCOPE_TRACE_LIMIT", base.trace_limit_mb, 1, 1'000'000);
  r.domains("CUSCOPE_NVTX_DOMAINS", base.nvtx_domains);
  return base;
}

namespace {

// options_from() takes a plain function: the program's settings of the call in progress, on its
// own thread (options_from_env() with `given`).
thread_local EnvLookup t_given = nullptr;

const char* given_or_env(const char* name) {
  if (t_given != nullptr) {
    if (const char* value = t_given(name)) return value;
  }
  return std::getenv(name);
}

}  // namespace

Options options_from_env(Options base, std::vector<OptionError>* errors) {
  return options_from_env(std::move(base), errors, nullptr);
}

Options options_from_env(Options base, std::vector<OptionError>* errors, EnvLookup given) {
  std::vector<OptionError> found;
  t_given = given;
  Options o = options_from(&given_or_env, std::move(base), &found);
  t_given = nullptr;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    if (entry.substr(0, 8) != "CUSCOPE_") continue;
    const std::string_view name = entry.substr(0, entry.find('='));
    const bool known =
        std::any_of(std::begin(kKnown), std::end(kKnown), [&](const char* k) { return name == k; });
    if (!known) {
      const std::string_view value = entry.substr(std::min(entry.size(), name.size() + 1));
      found.push_back({std::string(name), std::string(value),
                       fmt::format("{}='{}' is not a cuscope option; ignored (see docs/options.md)",
                                   shown(name), shown(value))});
    }
  }
  for (const OptionError& e : found) {
    const bool from_environment = given == nullptr || given(e.variable.c_str()) == nullptr;
    if (from_environment) detail::warn_once(e.message);
  }
  if (errors != nullptr) errors->insert(errors->end(), found.begin(), found.end());
  return o;
}

}  // namespace v0
}  // namespace cuscope

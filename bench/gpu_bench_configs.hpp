// bench/gpu_bench_configs.hpp — what cuscope_gpu_bench runs: its command line (Args, parse_args)
// and its launch-loop configurations (how each one's session is set up and how its launches are
// wrapped), and CUPTI as cuscope's defaults set it up (for the minimal client's third floor). For
// gpu_bench.cu and gpu_bench_summary.cpp alone; it times nothing and starts no session.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <optional>
#include <string>

#include "gpu_loops.hpp"
#include "minimal_cupti.hpp"
#include "producers/cupti/adapter.hpp"
#include "producers/cupti/subscriber.hpp"

namespace cuscope_bench {

struct Args {
  int launches = 100'000;
  int rounds = 3;
  int steps = 50;
  std::string json;
  std::string commit;
  bool show_traced = false;     ///< --show-traced: also print the last full-tracing loop's report
  bool minimal_last = false;    ///< --minimal-last: the minimal CUPTI client after cuscope's loops
  std::string trace_dir;        ///< --trace-dir=DIR: each traced loop's last round as DIR/KEY.cuscope
  bool step_per_batch = false;  ///< --step-per-batch: cuscope::step() after each batch, untimed
  int stall_limit_s = 60;       ///< --stall-limit=S: a part running longer prints every stack, exits 3
  std::string skip;             ///< --skip=KEY,KEY: configurations left out (their figures "-")
  /// --alternations=N: each round ends with N alternations (0: none) of short blocks of transformer
  /// steps, each alternation one block of each of kAlternatingBlocks, the order changing from one to
  /// the next; --alternating-steps=K: the timed steps of a block (gpu_bench.cu, "transformer.alternating").
  int alternations = 8;
  int alternating_steps = 20;
  /// --warmup=N: the untimed steps after each part's (and block's) session starts, before its timed
  /// ones (the drift.* figures say whether they suffice).
  int warmup_steps = 3;
  bool keep_attached = false;  ///< --keep-attached: no cuptiFinalize between parts (keep_cupti_attached())
  bool skipped(const std::string& key) const {
    return ("," + skip + ",").find("," + key + ",") != std::string::npos;
  }
};

inline bool parse_args(int argc, char** argv, Args& a) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string("--") + name + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    const char* v = nullptr;  // the value of the option matched
    if ((v = value("launches"))) {
      a.launches = std::max(kBatch, std::atoi(v) / kBatch * kBatch);
    } else if ((v = value("rounds"))) {
      a.rounds = std::max(1, std::atoi(v));
    } else if ((v = value("steps"))) {
      a.steps = std::max(1, std::atoi(v));
    } else if ((v = value("json"))) {
      a.json = v;
    } else if ((v = value("trace-dir"))) {
      a.trace_dir = v;
    } else if ((v = value("stall-limit"))) {
      a.stall_limit_s = std::max(0, std::atoi(v));
    } else if ((v = value("alternations"))) {
      a.alternations = std::max(0, std::atoi(v));
    } else if ((v = value("alternating-steps"))) {
      a.alternating_steps = std::max(1, std::atoi(v));
    } else if ((v = value("warmup"))) {
      a.warmup_steps = std::clamp(std::atoi(v), 0, 100'000);
    } else if ((v = value("skip"))) {
      a.skip = v;
    } else if ((v = value("git-commit"))) {
      a.commit = v;
    } else if (arg == "--show-traced") {
      a.show_traced = true;
    } else if (arg == "--step-per-batch") {
      a.step_per_batch = true;
    } else if (arg == "--minimal-last") {
      a.minimal_last = true;
    } else if (arg == "--keep-attached") {
      a.keep_attached = true;
    } else {
      return false;
    }
  }
  return true;
}

/// One launch-loop configuration: how the session is set up, and how launches are wrapped.
struct LaunchConfig {
  const char* key;
  const char* label;
  Wrap wrap;
  bool enabled;
  cuscope::EventTiming events;
  bool activities, minimal_cupti;
  std::optional<cuscope::Attribution> attribution{};  ///< none: the default's (Options::attribution)
  std::uint32_t sample_every = 0;  ///< with EventTiming::sampled: one call in N after the first
  cuscope::EventTimestamps timestamps = cuscope::EventTimestamps::cuda;
  bool cuscope_setup = false;  ///< with minimal_cupti: CUPTI set up as cuscope's defaults do (below)
};

/// CUPTI as cuscope's defaults set it up, for the minimal client to run doing nothing with it: the
/// defaults' activity kinds, and a subscriber on exactly the callbacks their session enables
/// (session_callbacks(): launch notes and the graph breakdown's). Not cuscope's timestamp callback,
/// which CUPTI may or may not keep across the bench's finalizes between parts (bench/README.md).
inline MinimalSetup cuscope_defaults_setup() {
  const cuscope::Options defaults;
  const bool launch_notes = defaults.attribution == cuscope::Attribution::launch;
  return {cuscope::detail::activity_kinds(cuscope::detail::record_choice(defaults), launch_notes),
          cuscope::detail::session_callbacks(defaults, launch_notes)};
}

constexpr LaunchConfig kLaunchConfigs[] = {
    {"launch.bare", "launch: bare", Wrap::None, false, cuscope::EventTiming::off, false, false},
    {"launch.scopes_host", "launch: in a scope, host timing only", Wrap::ScopePerLaunch, true,
     cuscope::EventTiming::off, false, false},
    {"launch.scopes_events", "launch: in a scope, + CUDA events", Wrap::ScopePerLaunch, true,
     cuscope::EventTiming::always, false, false},
    {"launch.minimal_cupti", "launch: minimal CUPTI client (floor)", Wrap::None, false,
     cuscope::EventTiming::off, false, true},
    {"launch.minimal_cupti_callbacks",
     "launch: CUPTI set up as cuscope's defaults, callbacks doing nothing (floor of launch notes)",
     Wrap::None, false, cuscope::EventTiming::off, false, true, std::nullopt, 0,
     cuscope::EventTimestamps::cuda, true},
    {"launch.full_tracing", "launch: in a scope, full tracing", Wrap::ScopePerLaunch, true,
     cuscope::EventTiming::always, true, false},
    {"launch.tracing_no_events", "launch: in a scope, tracing, no events", Wrap::ScopePerLaunch, true,
     cuscope::EventTiming::off, true, false},
    {"launch.tracing_one_scope", "launch: 1000 per scope, full tracing", Wrap::ScopePerBatch, true,
     cuscope::EventTiming::always, true, false},
    {"launch.defaults", "launch: in a scope, cuscope's defaults (CUSCOPE_EVENTS=auto: tracing, no events)",
     Wrap::ScopePerLaunch, true, cuscope::EventTiming::automatic, true, false},
    {"launch.external",
     "launch: in a scope, the defaults with CUSCOPE_ATTRIBUTION=external (external correlation)",
     Wrap::ScopePerLaunch, true, cuscope::EventTiming::automatic, true, false,
     cuscope::Attribution::external},
    {"launch.sampled", "launch: in a scope, tracing + CUSCOPE_EVENTS=sampled:100", Wrap::ScopePerLaunch, true,
     cuscope::EventTiming::sampled, true, false, std::nullopt, 100},
    {"launch.events_cupti",
     "launch: in a scope, full tracing, events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)",
     Wrap::ScopePerLaunch, true, cuscope::EventTiming::always, true, false, std::nullopt, 0,
     cuscope::EventTimestamps::cupti},
};
constexpr int kLaunchConfigCount = sizeof kLaunchConfigs / sizeof kLaunchConfigs[0];
/// transformer.windowed's step window, repeated without end: kWindowWait steps with CUPTI paused,
/// one warm-up step traced and left out, one step recorded.
constexpr std::uint32_t kWindowWait = 8;
constexpr std::uint32_t kWindowCycle = kWindowWait + 2;
/// transformer.between_windows's wait (CUSCOPE_DETACH_BETWEEN): more steps than a round takes of it
/// (the 1 s the detach waits, about 5,300 steps of 0.19 ms on the H200, and the timed steps), the
/// rest run as empty cuscope::step() calls.
constexpr std::uint32_t kBetweenWait = 100000;
/// The blocks of an alternation (Args::alternations), in round_order over the alternations: the step
/// without cuscope, with its defaults, under CUPTI set up as the defaults with callbacks doing
/// nothing, and without cuscope again (the control: its ratio to the first says what the design
/// itself makes of two identical blocks).
enum AlternatingBlock : int {
  kAltWithout,
  kAltDefaults,
  kAltCallbacks,
  kAltWithoutAgain,
  kAlternatingBlocks
};
/// Indices into kLaunchConfigs, for the ratios.
enum : int {
  kBare,
  kScopesHost,
  kScopesEvents,
  kMinimalCupti,
  kMinimalCallbacks,
  kFullTracing,
  kTracingNoEvents,
  kTracingOneScope,
  kDefaults,
  kExternal,
  kSampled,
  kEventsCupti
};

}  // namespace cuscope_bench

// bench/gpu_bench.cu — cuscope's GPU benchmarks (bench/README.md): the host cost of a kernel launch
// bare, inside scopes, under cuscope's CUPTI tracing and under a minimal CUPTI client (the floor of
// CUPTI tracing); a scope with CUDA events against two bare cudaEventRecord calls; and the demo's
// transformer step with and without cuscope. Exits 77 without a CUDA device.
//
// Every configuration runs in this one process, in rounds (each round runs every configuration
// once), so the ratios come from the same run. Between configurations the cuscope session is
// replaced (reset_for_testing, then start with the configuration's options). This file holds the
// rounds and the summary; the configurations and the command line are gpu_bench_configs.hpp's, the
// timed loops gpu_loops.cu's.
#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuscope/cuscope.hpp>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu_bench_configs.hpp"
#include "gpu_loops.hpp"
#include "session/session.hpp"
#include "summary.hpp"
#include "transformer_step.hpp"
#include "watchdog.hpp"

using namespace cuscope_bench;

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, args)) {
    std::fprintf(stderr,
                 "usage: %s [--launches=N] [--rounds=R] [--steps=S] [--json=PATH] [--git-commit=SHA]\n"
                 "          [--show-traced] [--minimal-last] [--trace-dir=DIR]\n"
                 "          [--step-per-batch] [--stall-limit=S] [--skip=KEY,...]\n"
                 "  runs cuscope's GPU benchmarks (bench/README.md); exits 77 without a CUDA device, and 3\n"
                 "  when one part (a configuration's loop, a session start) runs past S seconds (default\n"
                 "  60, 0: no limit), after printing every thread's stack; --skip leaves configurations out\n"
                 "  by key (launch.events_cupti, transformer.records, ...): their figures read '-'\n",
                 argv[0]);
    return 2;
  }
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("cuscope_gpu_bench: skipped, no CUDA device (cudaGetDeviceCount: %s)\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 77;
  }
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  BENCH_CUDA(cudaDriverGetVersion(&driver));
  BENCH_CUDA(cudaRuntimeGetVersion(&runtime));
  Watchdog dog(args.stall_limit_s);  // names each part on stderr; a stalled one prints every stack
  dog.part("warm-up");
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreate(&stream));
  // CUPTI's one-time attach, and cuscope's timestamp callback, before anything is timed: every
  // minimal-client run then traces under the same CUPTI state.
  restart_session(true, cuscope::EventTiming::always, true);
  launch_ns(stream, kBatch, Wrap::ScopePerLaunch, args.step_per_batch);
  restart_session(false, cuscope::EventTiming::off, false);
  cuscope_bench::transformer_setup();
  std::fprintf(stderr,
               "cuscope_gpu_bench: %d rounds of %d launches per configuration, %d transformer steps...\n",
               args.rounds, args.launches, args.steps);

  std::vector<double> launch[kLaunchConfigCount];
  std::vector<double> event_pair, event_scope, step_without, step_with;
  // The step with cuscope's parts one at a time: where the full configuration's cost comes from.
  std::vector<double> step_host, step_events, step_tracing, step_defaults, step_sampled, step_external,
      step_records, step_events_cupti;
  // The step under the minimal CUPTI client, cuscope off: what tracing kernels costs the step before
  // cuscope does anything, the floor under goal.defaults_step.
  std::vector<double> step_minimal;
  // The same with copy and set records too: the floor of what cuscope's defaults trace (the step
  // copies 1 MiB from pageable memory, which the kernels-only floor does not trace).
  std::vector<double> step_minimal_copies;
  cuscope::Report traced;
  std::uint64_t traced_after_forced_flush = 0;
  // Kernels each traced loop attributed to its scopes, last round (of launches + kBatch).
  std::uint64_t attributed[kLaunchConfigCount] = {};
  std::uint64_t event_timed[kLaunchConfigCount] = {};       // and the calls timed by CUDA events
  cuscope::Diagnostics diagnosed[kLaunchConfigCount] = {};  // and their reports' diagnostics
  // Each round's order of the launch configurations (round_order), with --minimal-last the minimal
  // client pinned last and the others in that order.
  auto launch_order = [&](int round) {
    std::vector<int> others;
    for (int c = 0; c < kLaunchConfigCount; ++c)
      if (!(args.minimal_last && c == kMinimalCupti)) others.push_back(c);
    std::vector<int> order;
    for (const int i : cuscope_bench::round_order(static_cast<int>(others.size()), round))
      order.push_back(others[static_cast<std::size_t>(i)]);
    if (args.minimal_last) order.push_back(kMinimalCupti);
    return order;
  };
  cuscope::Report demo;  // the last transformer run's report, taken at the end of each round
  // The summary of the rounds done so far: written before each part and after each round (so that a
  // run cut short by a stall or its time limit still leaves the figures of every part before), and
  // printed at the end. `next`: the part about to begin, for the PARTIAL note.
  auto summarize = [&](int rounds_done, const std::string& next = "") {
    cuscope_bench::Summary s;
    s.title = "cuscope GPU benchmarks (bench/README.md)";
    const std::string compiler = std::string("nvcc ") + CUSCOPE_BENCH_COMPILER;
    cuscope_bench::add_machine_context(s, args.commit, compiler.c_str(), CUSCOPE_BENCH_BUILD_TYPE);
    s.add_context("gpu", std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
                             std::to_string(prop.minor) + ")");
    s.add_context("cuda", "driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime));
    s.add_context("runs", std::to_string(rounds_done) + " rounds; " + std::to_string(args.launches) +
                              " launches or event pairs and " + std::to_string(args.steps) +
                              " transformer steps per configuration and round");

    double per_launch[kLaunchConfigCount];
    for (int c = 0; c < kLaunchConfigCount; ++c) {
      per_launch[c] = cuscope_bench::median(launch[c]);
      s.measurements.push_back({kLaunchConfigs[c].key, kLaunchConfigs[c].label, per_launch[c], "ns",
                                cuscope_bench::coefficient_of_variation(launch[c])});
    }
    const double pair = cuscope_bench::median(event_pair);
    const double scope = cuscope_bench::median(event_scope);
    const double without = cuscope_bench::median(step_without);
    const double with = cuscope_bench::median(step_with);
    s.measurements.push_back({"events.bare_pair", "events: two bare cudaEventRecord", pair, "ns",
                              cuscope_bench::coefficient_of_variation(event_pair)});
    s.measurements.push_back({"events.scope", "events: empty scope with CUDA events", scope, "ns",
                              cuscope_bench::coefficient_of_variation(event_scope)});
    s.measurements.push_back({"transformer.without", "transformer step, without cuscope", without, "ns",
                              cuscope_bench::coefficient_of_variation(step_without)});
    s.measurements.push_back({"transformer.with", "transformer step, tracing + CUSCOPE_EVENTS=always", with,
                              "ns", cuscope_bench::coefficient_of_variation(step_with)});
    const struct {
      const char *key, *label;
      const std::vector<double>& steps;
    } parts[] = {
        {"transformer.minimal_cupti",
         "transformer step, cuscope off, minimal CUPTI client (kernel records only: the floor of tracing)",
         step_minimal},
        {"transformer.minimal_cupti_copies",
         "transformer step, cuscope off, minimal CUPTI client with copy and set records (what the defaults "
         "trace)",
         step_minimal_copies},
        {"transformer.host_scopes", "transformer step, host-timed scopes only", step_host},
        {"transformer.events", "transformer step, scopes + CUDA events", step_events},
        {"transformer.tracing", "transformer step, scopes + CUPTI tracing", step_tracing},
        {"transformer.defaults", "transformer step, cuscope's defaults (tracing, CUSCOPE_EVENTS=auto)",
         step_defaults},
        {"transformer.sampled", "transformer step, tracing + CUSCOPE_EVENTS=sampled:100", step_sampled},
        {"transformer.external", "transformer step, the defaults with CUSCOPE_ATTRIBUTION=external",
         step_external},
        {"transformer.records",
         "transformer step, the defaults with sync and memory records (CUSCOPE_SYNC_RECORDS=1, "
         "CUSCOPE_MEMORY_RECORDS=1)",
         step_records},
        {"transformer.events_cupti",
         "transformer step, tracing + events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)",
         step_events_cupti}};
    for (const auto& part : parts) {
      const double t = cuscope_bench::median(part.steps);
      s.measurements.push_back(
          {part.key, part.label, t, "ns", cuscope_bench::coefficient_of_variation(part.steps)});
      s.measurements.push_back({std::string("ratio.") + part.key + "_over_without",
                                std::string("ratio: ") + part.label + " / without", t / without, "x"});
    }
    // cuscope's own share of the step: its configurations over the step that CUPTI traces for a
    // client doing nothing else (where goal.defaults_step is missed, whether CUPTI or cuscope).
    const double minimal_step = cuscope_bench::median(step_minimal);
    s.measurements.push_back({"ratio.transformer.defaults_over_minimal_cupti",
                              "ratio: transformer step, cuscope's defaults / minimal CUPTI client",
                              cuscope_bench::median(step_defaults) / minimal_step, "x"});
    s.measurements.push_back(
        {"ratio.transformer.external_over_minimal_cupti",
         "ratio: transformer step, defaults with external correlation / minimal CUPTI client",
         cuscope_bench::median(step_external) / minimal_step, "x"});
    const double bare = per_launch[kBare];
    const double minimal = per_launch[kMinimalCupti];
    s.measurements.push_back({"ratio.scopes_host_over_bare", "ratio: in a scope, host only / bare",
                              per_launch[kScopesHost] / bare, "x"});
    s.measurements.push_back({"ratio.scopes_events_over_bare", "ratio: in a scope, + events / bare",
                              per_launch[kScopesEvents] / bare, "x"});
    s.measurements.push_back({"ratio.minimal_over_bare", "ratio: minimal CUPTI / bare", minimal / bare, "x"});
    s.measurements.push_back({"ratio.defaults_over_minimal",
                              "ratio: in a scope, cuscope's defaults / minimal CUPTI",
                              per_launch[kDefaults] / minimal, "x"});
    s.measurements.push_back({"ratio.external_over_minimal",
                              "ratio: in a scope, the defaults with external correlation / minimal CUPTI",
                              per_launch[kExternal] / minimal, "x"});
    s.measurements.push_back({"ratio.sampled_over_minimal",
                              "ratio: in a scope, tracing + CUSCOPE_EVENTS=sampled:100 / minimal CUPTI",
                              per_launch[kSampled] / minimal, "x"});
    s.measurements.push_back({"ratio.events_cupti_over_full_tracing",
                              "ratio: in a scope, events timed by CUPTI / timed by CUDA (full tracing)",
                              per_launch[kEventsCupti] / per_launch[kFullTracing], "x"});
    s.measurements.push_back({"ratio.no_events_over_minimal", "ratio: tracing, no events / minimal CUPTI",
                              per_launch[kTracingNoEvents] / minimal, "x"});
    s.measurements.push_back({"ratio.one_scope_over_minimal",
                              "ratio: 1000 per scope, tracing / minimal CUPTI",
                              per_launch[kTracingOneScope] / minimal, "x"});
    s.measurements.push_back(
        {"ratio.scope_over_event_pair", "ratio: scope with events / two cudaEventRecord", scope / pair, "x"});

    // The same ratios taken within each round, then their median over the rounds, with their
    // range (cuscope_bench::round_ratios): what the goals read, since the configurations are
    // interleaved round by round and a VM's speed drifts between rounds (on the H200 runs of
    // 2026-11-27 a bare launch took 3.95 us in one and 6.21 us in the other).
    const auto steps_per_round = static_cast<std::size_t>(args.steps);
    const auto paired_step = [&](const std::vector<double>& a, const std::vector<double>& b) {
      return cuscope_bench::round_ratios(a, b, steps_per_round);
    };
    const auto paired_launch = [&](int a, int b) {
      return cuscope_bench::round_ratios(launch[a], launch[b], 1);
    };
    for (const auto& part : parts)
      s.measurements.push_back(cuscope_bench::paired_ratio(
          std::string("paired.") + part.key + "_over_without",
          std::string("paired: ") + part.label + " / without", paired_step(part.steps, step_without)));
    const std::vector<double> defaults_step = paired_step(step_defaults, step_without);
    const std::vector<double> external_step = paired_step(step_external, step_without);
    const std::vector<double> defaults_launch = paired_launch(kDefaults, kMinimalCupti);
    const std::vector<double> external_launch = paired_launch(kExternal, kMinimalCupti);
    s.measurements.push_back(
        cuscope_bench::paired_ratio("paired.transformer.defaults_over_minimal_cupti",
                                    "paired: transformer step, cuscope's defaults / minimal CUPTI client",
                                    paired_step(step_defaults, step_minimal)));
    s.measurements.push_back(cuscope_bench::paired_ratio(
        "paired.transformer.defaults_over_minimal_cupti_copies",
        "paired: transformer step, cuscope's defaults / minimal CUPTI client with copy and set records",
        paired_step(step_defaults, step_minimal_copies)));
    s.measurements.push_back(cuscope_bench::paired_ratio(
        "paired.minimal_over_bare", "paired: minimal CUPTI / bare", paired_launch(kMinimalCupti, kBare)));
    s.measurements.push_back(cuscope_bench::paired_ratio(
        "paired.defaults_over_minimal", "paired: in a scope, cuscope's defaults / minimal CUPTI",
        defaults_launch));
    s.measurements.push_back(cuscope_bench::paired_ratio(
        "paired.external_over_minimal",
        "paired: in a scope, the defaults with external correlation / minimal CUPTI", external_launch));
    s.measurements.push_back(cuscope_bench::paired_ratio(
        "paired.events_cupti_over_full_tracing",
        "paired: in a scope, events timed by CUPTI / timed by CUDA (full tracing)",
        paired_launch(kEventsCupti, kFullTracing)));

    // Issue 24's goals, for the defaults (launch notes since 2026-11-26) and for the defaults with
    // external correlation, the other way (docs/cupti.md, "Attribution"): each the median of the
    // rounds' ratios (above), with their range.
    const auto target = [&](const char* key, const char* label, const std::vector<double>& ratios,
                            double goal) {
      const cuscope_bench::Measurement m = cuscope_bench::paired_ratio(key, label, ratios);
      cuscope_bench::Target t{
          key, label, m.value, "x", cuscope_bench::printf_string("<= %.2fx", goal), m.value <= goal};
      t.low = m.low;
      t.high = m.high;
      s.targets.push_back(t);
    };
    target("goal.defaults_step", "transformer step, cuscope's defaults / without", defaults_step, 1.05);
    target("goal.defaults_launch", "in a scope, cuscope's defaults / minimal CUPTI, per launch",
           defaults_launch, 1.10);
    target("goal.external_step", "transformer step, defaults with external correlation / without",
           external_step, 1.05);
    target("goal.external_launch", "in a scope, defaults with external correlation / minimal CUPTI",
           external_launch, 1.10);

    const std::uint64_t launched_kernels = attributed[kFullTracing];
    const cuscope::RangeStats* step = demo.find("step");
    s.notes = {
        "Launch and event times are host nanoseconds per launch (per pair, per scope), the mean of each",
        "round's loop, median over the rounds; cv is over the rounds. Step times: median over every step.",
        "ratio: the ratio of those medians. paired: each round's ratio (of the round's loop means, or of its",
        "step medians), then the median over the rounds, with the rounds' range; the targets read these.",
        "The configurations run in an order that changes each round (a Williams design, bench/README.md).",
        "Full tracing = cuscope's defaults: CUDA events and CUPTI tracing, one scope per launch.",
        "Last full-tracing loop: activity " + traced.activity_status + "; " +
            std::to_string(launched_kernels) + " kernels attributed to 'launch', " +
            std::to_string(traced.diagnostics.dropped_records) + " records dropped, " +
            std::to_string(traced.diagnostics.gpu_event_failures) + " CUDA-event failures.",
        "Last transformer run with cuscope: activity " + demo.activity_status + ", GPU timing " +
            demo.gpu_timing + "; " + std::to_string(step != nullptr ? step->calls : 0) + " steps recorded, " +
            std::to_string(step != nullptr ? step->total.kernel_calls : 0) +
            " kernels attributed under 'step'."};
    // The full-tracing loop launched (launches + one untimed batch) kernels, each in a 'launch' scope:
    // a loop whose kernels were not all attributed did not measure full tracing (the H100 runs of
    // 2026-11-24 before the fix attributed none: this bench makes its CUDA context before cuscope
    // starts, for which CUPTI gave no API records the way cuscope turned them on; docs/cupti.md).
    const std::uint64_t expected_kernels = static_cast<std::uint64_t>(args.launches + kBatch);
    std::string per_loop = "Kernels each traced loop attributed (last round, of " +
                           std::to_string(expected_kernels) +
                           (args.minimal_last ? "; minimal client last" : "") + "):";
    for (int c = 0; c < kLaunchConfigCount; ++c) {
      if (!kLaunchConfigs[c].activities) continue;
      const cuscope::Diagnostics& d = diagnosed[c];
      per_loop += std::string(" ") + kLaunchConfigs[c].key + " " + std::to_string(attributed[c]) +
                  " (not matched " + std::to_string(d.unresolved_records) + ", zero timestamp " +
                  std::to_string(d.zero_timestamp_records) + ", dropped " +
                  std::to_string(d.dropped_records) + ", outside window " +
                  std::to_string(d.outside_window_records) + ", CUDA-event failures " +
                  std::to_string(d.gpu_event_failures) + ", calls timed by events " +
                  std::to_string(event_timed[c]) + ");";
    }
    s.notes.push_back(per_loop);
    if (!launch[kFullTracing].empty() && launched_kernels != expected_kernels) {  // measured, and short
      s.notes.push_back("NOT MEASURED AS MEANT: the last full-tracing loop attributed " +
                        std::to_string(launched_kernels) + " of its " + std::to_string(expected_kernels) +
                        " kernels to 'launch' (" + std::to_string(traced_after_forced_flush) +
                        " after a forced CUPTI flush); its time and the full-tracing target do not stand.");
    }
    if (rounds_done < args.rounds)
      s.notes.push_back("PARTIAL: " + std::to_string(rounds_done) + " of " + std::to_string(args.rounds) +
                        " rounds done when this was written" +
                        (next.empty() ? std::string() : ", and the parts of the next before '" + next + "'") +
                        "; the run went on.");
    return s;
  };
  for (int round = 0; round < args.rounds; ++round) {
    const std::string in_round =
        "round " + std::to_string(round + 1) + "/" + std::to_string(args.rounds) + ": ";
    // Writes what was measured so far (--json), then names the part `key` on stderr (the watchdog's
    // limit counts from here); false when --skip leaves it out. A stall in round 1 thus still leaves
    // the figures of the parts before it.
    auto part = [&](const char* key) {
      if (args.skipped(key)) return false;
      if (!args.json.empty())
        cuscope_bench::write_file(args.json, cuscope_bench::format_json(summarize(round, key)));
      dog.part(in_round + key);
      return true;
    };
    for (const int c : launch_order(round)) {
      const LaunchConfig& cfg = kLaunchConfigs[c];
      if (!part(cfg.key)) continue;
      const bool trace = cfg.activities && !args.trace_dir.empty() && round + 1 == args.rounds;
      restart_session(cfg.enabled, cfg.events, cfg.activities, 0,
                      trace ? args.trace_dir + "/" + cfg.key + ".cuscope" : "", cfg.sample_every,
                      cfg.attribution.value_or(cuscope::Options{}.attribution),
                      cuscope::Options{}.sync_records, cfg.timestamps);
      if (cfg.minimal_cupti) MinimalCupti::start();
      launch[c].push_back(launch_ns(stream, args.launches, cfg.wrap, args.step_per_batch));
      if (cfg.minimal_cupti) MinimalCupti::stop();
      cuscope::flush();
      if (cfg.activities) {
        cuscope::Report r = cuscope::snapshot();
        attributed[c] = attributed_kernels(r);
        event_timed[c] = event_timed_calls(r);
        diagnosed[c] = r.diagnostics;
        if (c == kFullTracing) {
          traced = std::move(r);
          // What a forced CUPTI flush still hands over: records held in buffers CUPTI deems
          // incomplete (a default flush never returns those), told apart in the note below.
          cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
          cuscope::flush();
          traced_after_forced_flush = attributed_kernels(cuscope::snapshot());
        }
      }
      end_session();  // inside this part: a stalled teardown is named as this configuration's
    }
    if (part("events.bare_pair")) {
      restart_session(false, cuscope::EventTiming::off, false);
      event_pair.push_back(event_ns(stream, args.launches, false));
      end_session();
    }
    if (part("events.scope")) {
      restart_session(true, cuscope::EventTiming::always, false);
      event_scope.push_back(event_ns(stream, args.launches, true));
      end_session();
    }

    using cuscope::Attribution;
    using cuscope::EventTiming;
    // One transformer configuration: its session, then its steps, then `after` (untimed), then the
    // end of its session unless `keep` (the last one: its report is taken below); nothing at all
    // when skipped.
    auto transformer = [&](const char* key, std::vector<double>& into, auto&& start_session,
                           void (*after)() = nullptr, bool keep = false) {
      if (!part(key)) return;
      start_session();
      const std::vector<double> t = step_ns(3, args.steps);
      if (after != nullptr) after();
      if (!keep) end_session();
      into.insert(into.end(), t.begin(), t.end());
    };
    // The step with cuscope off under the minimal CUPTI client tracing `kinds`: a floor.
    auto minimal_floor = [&](const char* key, std::vector<double>& into, MinimalKinds kinds) {
      transformer(
          key, into,
          [kinds] {
            restart_session(false, EventTiming::off, false, 3);
            MinimalCupti::start(kinds);
          },
          &MinimalCupti::stop);
    };
    // The step's configurations, in round_order as the launch loops are; transformer.with
    // runs last in every round (its report is the notes').
    const std::function<void()> sessions[] = {
        [&] {
          transformer("transformer.without", step_without,
                      [] { restart_session(false, EventTiming::off, false, 3); });
        },
        [&] { minimal_floor("transformer.minimal_cupti", step_minimal, MinimalKinds::kernels); },
        [&] {
          minimal_floor("transformer.minimal_cupti_copies", step_minimal_copies,
                        MinimalKinds::kernels_copies_sets);
        },
        [&] {
          transformer("transformer.host_scopes", step_host,
                      [] { restart_session(true, EventTiming::off, false, 3); });
        },
        [&] {
          transformer("transformer.events", step_events,
                      [] { restart_session(true, EventTiming::always, false, 3); });
        },
        [&] {
          transformer("transformer.tracing", step_tracing,
                      [] { restart_session(true, EventTiming::off, true, 3); });
        },
        [&] {
          transformer("transformer.defaults", step_defaults,
                      [] { restart_session(true, EventTiming::automatic, true, 3); });
        },
        [&] {
          transformer("transformer.sampled", step_sampled,
                      [] { restart_session(true, EventTiming::sampled, true, 3, "", 100); });
        },
        [&] {
          transformer("transformer.external", step_external, [] {
            restart_session(true, EventTiming::automatic, true, 3, "", 0, Attribution::external);
          });
        },
        [&] {
          transformer("transformer.records", step_records, [] {
            restart_session(true, EventTiming::automatic, true, 3, "", 0, cuscope::Options{}.attribution,
                            true);
          });
        },
        [&] {
          transformer("transformer.events_cupti", step_events_cupti, [] {
            restart_session(true, EventTiming::always, true, 3, "", 0, cuscope::Options{}.attribution, false,
                            cuscope::EventTimestamps::cupti);
          });
        }};
    constexpr int kSessions = sizeof sessions / sizeof sessions[0];
    for (const int i : cuscope_bench::round_order(kSessions, round)) sessions[i]();
    // Last: its report is the notes' "last transformer run".
    transformer(
        "transformer.with", step_with, [] { restart_session(true, EventTiming::always, true, 3); }, nullptr,
        true);
    dog.part(in_round + "the last transformer run's report");
    cuscope::flush();
    demo = cuscope::snapshot();
    end_session();
    if (!args.json.empty() && round + 1 < args.rounds)
      cuscope_bench::write_file(args.json, cuscope_bench::format_json(summarize(round + 1)));
  }
  dog.part("teardown");
  restart_session(false, cuscope::EventTiming::off, false);
  cuscope_bench::transformer_teardown();
  BENCH_CUDA(cudaStreamDestroy(stream));

  const cuscope_bench::Summary s = summarize(args.rounds);
  std::fputs(cuscope_bench::format_table(s).c_str(), stdout);
  if (args.show_traced) {
    std::printf("\nThe last full-tracing loop's report:\n");
    std::fputs(cuscope::format_table(traced).c_str(), stdout);
  }
  if (!args.json.empty() && !cuscope_bench::write_file(args.json, cuscope_bench::format_json(s))) return 1;
  return 0;
}

// bench/gpu_bench_summary.cpp — see gpu_bench_summary.hpp.
#include "gpu_bench_summary.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace cuscope_bench {

Summary summarize(const Args& args, const BenchMachine& machine, const Measured& m, int rounds_done,
                  const std::string& next) {
  Summary s;
  s.title = "cuscope GPU benchmarks (bench/README.md)";
  const std::string compiler = std::string("nvcc ") + CUSCOPE_BENCH_COMPILER;
  add_machine_context(s, args.commit, compiler.c_str(), CUSCOPE_BENCH_BUILD_TYPE);
  s.add_context("gpu", machine.gpu);
  s.add_context("cuda", machine.cuda);
  s.add_context("runs", std::to_string(rounds_done) + " rounds; " + std::to_string(args.launches) +
                            " launches or event pairs and " + std::to_string(args.steps) +
                            " transformer steps per configuration and round; " +
                            std::to_string(args.alternations) + " alternations of " +
                            std::to_string(args.alternating_steps) + " steps a block each round; " +
                            std::to_string(args.warmup_steps) + " untimed steps after each session's start");

  double per_launch[kLaunchConfigCount];
  for (int c = 0; c < kLaunchConfigCount; ++c) {
    per_launch[c] = median(m.launch[c]);
    s.measurements.push_back({kLaunchConfigs[c].key, kLaunchConfigs[c].label, per_launch[c], "ns",
                              coefficient_of_variation(m.launch[c])});
  }
  const double pair = median(m.event_pair);
  const double scope = median(m.event_scope);
  const double without = median(m.step_without);
  const double with = median(m.step_with);
  s.measurements.push_back({"events.bare_pair", "events: two bare cudaEventRecord", pair, "ns",
                            coefficient_of_variation(m.event_pair)});
  s.measurements.push_back({"events.scope", "events: empty scope with CUDA events", scope, "ns",
                            coefficient_of_variation(m.event_scope)});
  s.measurements.push_back({"transformer.without", "transformer step, without cuscope", without, "ns",
                            coefficient_of_variation(m.step_without)});
  s.measurements.push_back({"transformer.with", "transformer step, tracing + CUSCOPE_EVENTS=always", with,
                            "ns", coefficient_of_variation(m.step_with)});
  const struct {
    const char *key, *label;
    const std::vector<double>& steps;
  } parts[] = {
      {"transformer.minimal_cupti",
       "transformer step, cuscope off, minimal CUPTI client (kernel records only: the floor of tracing)",
       m.step_minimal},
      {"transformer.minimal_cupti_copies",
       "transformer step, cuscope off, minimal CUPTI client with copy and set records (what the defaults "
       "trace)",
       m.step_minimal_copies},
      {"transformer.minimal_cupti_callbacks",
       "transformer step, cuscope off, CUPTI set up as cuscope's defaults with callbacks doing nothing "
       "(the floor of launch notes)",
       m.step_minimal_callbacks},
      {"transformer.host_scopes", "transformer step, host-timed scopes only", m.step_host},
      {"transformer.events", "transformer step, scopes + CUDA events", m.step_events},
      {"transformer.tracing", "transformer step, scopes + CUPTI tracing", m.step_tracing},
      {"transformer.defaults", "transformer step, cuscope's defaults (tracing, CUSCOPE_EVENTS=auto)",
       m.step_defaults},
      {"transformer.sampled", "transformer step, tracing + CUSCOPE_EVENTS=sampled:100", m.step_sampled},
      {"transformer.external", "transformer step, the defaults with CUSCOPE_ATTRIBUTION=external",
       m.step_external},
      {"transformer.records",
       "transformer step, the defaults with sync and memory records (CUSCOPE_SYNC_RECORDS=1, "
       "CUSCOPE_MEMORY_RECORDS=1)",
       m.step_records},
      {"transformer.events_cupti",
       "transformer step, tracing + events timed by CUPTI (CUSCOPE_EVENT_TIMESTAMPS=cupti)",
       m.step_events_cupti}};
  for (const auto& part : parts) {
    const double t = median(part.steps);
    s.measurements.push_back({part.key, part.label, t, "ns", coefficient_of_variation(part.steps)});
    s.measurements.push_back({std::string("ratio.") + part.key + "_over_without",
                              std::string("ratio: ") + part.label + " / without", t / without, "x"});
  }
  // The windowed step: per step, the mean of its cycle (gpu_bench.cu), and the step without cuscope
  // taken the same way, so that the two are compared alike.
  const auto steps_in_round = static_cast<std::size_t>(args.steps);
  const std::vector<double>& windowed = m.step_windowed;
  const std::vector<double> without_cycles = cycle_means(m.step_without, steps_in_round, kWindowCycle);
  const std::string windowed_label =
      "transformer step, cuscope's defaults recording one step in " + std::to_string(kWindowCycle) +
      " (CUSCOPE_WAIT=" + std::to_string(kWindowWait) +
      " CUSCOPE_WARMUP=1 CUSCOPE_ACTIVE=1 CUSCOPE_REPEAT=0), mean over each cycle";
  s.measurements.push_back(
      {"transformer.windowed", windowed_label, median(windowed), "ns", coefficient_of_variation(windowed)});
  s.measurements.push_back({"ratio.transformer.windowed_over_without",
                            "ratio: " + windowed_label + " / without, its cycles' means too",
                            median(windowed) / median(without_cycles), "x"});
  s.measurements.push_back(paired_ratio("paired.transformer.windowed_over_without",
                                        "paired: " + windowed_label + " / without, its cycles' means too",
                                        round_ratios(windowed, without_cycles, steps_in_round)));
  const std::string after_window_label =
      "transformer step, cuscope's defaults after a step window that ended before it (CUSCOPE_WARMUP=1 "
      "CUSCOPE_ACTIVE=1: CUPTI detached, CUSCOPE_DETACH=1)";
  s.measurements.push_back({"transformer.after_window", after_window_label, median(m.step_after_window), "ns",
                            coefficient_of_variation(m.step_after_window)});
  s.measurements.push_back({"ratio.transformer.after_window_over_without",
                            "ratio: " + after_window_label + " / without",
                            median(m.step_after_window) / without, "x"});
  s.measurements.push_back(paired_ratio("paired.transformer.after_window_over_without",
                                        "paired: " + after_window_label + " / without",
                                        round_ratios(m.step_after_window, m.step_without, steps_in_round)));
  const std::string between_label =
      "transformer step, cuscope's defaults in the wait steps of a window detached between windows "
      "(CUSCOPE_WAIT=" +
      std::to_string(kBetweenWait) +
      " CUSCOPE_WARMUP=1 CUSCOPE_ACTIVE=1 CUSCOPE_REPEAT=0 CUSCOPE_DETACH_BETWEEN=1: CUPTI detached)";
  s.measurements.push_back({"transformer.between_windows", between_label, median(m.step_between_windows),
                            "ns", coefficient_of_variation(m.step_between_windows)});
  s.measurements.push_back(paired_ratio(
      "paired.transformer.between_windows_over_without", "paired: " + between_label + " / without",
      round_ratios(m.step_between_windows, m.step_without, steps_in_round)));
  s.measurements.push_back({"transformer.between_windows.reattach_call",
                            "host time of the cuscope::step() that attaches CUPTI again at a window's first "
                            "step (CUSCOPE_DETACH_BETWEEN=1), one per round",
                            median(m.reattach_call), "ns", coefficient_of_variation(m.reattach_call)});
  s.measurements.push_back({"ratio.transformer.between_windows.first_step_after_reattach_over_without",
                            "ratio: the transformer step after CUPTI attached again (its first launches "
                            "instrumented again), one per round / without",
                            median(m.step_after_reattach) / without, "x"});
  const std::string off_label =
      "transformer step, cuscope's defaults with recording off from the start (CUSCOPE_ENABLE=0: CUPTI not "
      "attached)";
  s.measurements.push_back({"transformer.recording_off", off_label, median(m.step_recording_off), "ns",
                            coefficient_of_variation(m.step_recording_off)});
  s.measurements.push_back(paired_ratio("paired.transformer.recording_off_over_without",
                                        "paired: " + off_label + " / without",
                                        round_ratios(m.step_recording_off, m.step_without, steps_in_round)));
  // cuscope's own share of the step: its configurations over the step that CUPTI traces for a
  // client doing nothing else (where goal.defaults_step is missed, whether CUPTI or cuscope).
  const double minimal_step = median(m.step_minimal);
  s.measurements.push_back({"ratio.transformer.defaults_over_minimal_cupti",
                            "ratio: transformer step, cuscope's defaults / minimal CUPTI client",
                            median(m.step_defaults) / minimal_step, "x"});
  s.measurements.push_back(
      {"ratio.transformer.external_over_minimal_cupti",
       "ratio: transformer step, defaults with external correlation / minimal CUPTI client",
       median(m.step_external) / minimal_step, "x"});
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
  s.measurements.push_back({"ratio.one_scope_over_minimal", "ratio: 1000 per scope, tracing / minimal CUPTI",
                            per_launch[kTracingOneScope] / minimal, "x"});
  s.measurements.push_back(
      {"ratio.scope_over_event_pair", "ratio: scope with events / two cudaEventRecord", scope / pair, "x"});

  // The same ratios taken within each round, then their median over the rounds, with their
  // range (round_ratios): what the goals read, since the configurations are
  // interleaved round by round and a VM's speed drifts between rounds (on the H200 runs of
  // 2026-11-27 a bare launch took 3.95 us in one and 6.21 us in the other).
  const auto steps_per_round = static_cast<std::size_t>(args.steps);
  const auto paired_step = [&](const std::vector<double>& a, const std::vector<double>& b) {
    return round_ratios(a, b, steps_per_round);
  };
  const auto paired_launch = [&](int a, int b) { return round_ratios(m.launch[a], m.launch[b], 1); };
  for (const auto& part : parts)
    s.measurements.push_back(paired_ratio(std::string("paired.") + part.key + "_over_without",
                                          std::string("paired: ") + part.label + " / without",
                                          paired_step(part.steps, m.step_without)));
  const std::vector<double> defaults_step = paired_step(m.step_defaults, m.step_without);
  const std::vector<double> external_step = paired_step(m.step_external, m.step_without);
  const std::vector<double> defaults_launch = paired_launch(kDefaults, kMinimalCupti);
  const std::vector<double> external_launch = paired_launch(kExternal, kMinimalCupti);
  s.measurements.push_back(paired_ratio("paired.transformer.defaults_over_minimal_cupti",
                                        "paired: transformer step, cuscope's defaults / minimal CUPTI client",
                                        paired_step(m.step_defaults, m.step_minimal)));
  s.measurements.push_back(paired_ratio(
      "paired.transformer.defaults_over_minimal_cupti_copies",
      "paired: transformer step, cuscope's defaults / minimal CUPTI client with copy and set records",
      paired_step(m.step_defaults, m.step_minimal_copies)));
  s.measurements.push_back(paired_ratio(
      "paired.transformer.defaults_over_minimal_cupti_callbacks",
      "paired: transformer step, cuscope's defaults / CUPTI set up as the defaults (cuscope's own work)",
      paired_step(m.step_defaults, m.step_minimal_callbacks)));
  s.measurements.push_back(paired_ratio("paired.minimal_over_bare", "paired: minimal CUPTI / bare",
                                        paired_launch(kMinimalCupti, kBare)));
  s.measurements.push_back(
      paired_ratio("paired.minimal_callbacks_over_minimal",
                   "paired: CUPTI set up as cuscope's defaults, callbacks doing nothing / minimal CUPTI",
                   paired_launch(kMinimalCallbacks, kMinimalCupti)));
  s.measurements.push_back(paired_ratio(
      "paired.defaults_over_minimal_callbacks",
      "paired: in a scope, cuscope's defaults / CUPTI set up as the defaults (cuscope's own work)",
      paired_launch(kDefaults, kMinimalCallbacks)));
  s.measurements.push_back(paired_ratio("paired.defaults_over_minimal",
                                        "paired: in a scope, cuscope's defaults / minimal CUPTI",
                                        defaults_launch));
  s.measurements.push_back(paired_ratio(
      "paired.external_over_minimal",
      "paired: in a scope, the defaults with external correlation / minimal CUPTI", external_launch));
  s.measurements.push_back(
      paired_ratio("paired.events_cupti_over_full_tracing",
                   "paired: in a scope, events timed by CUPTI / timed by CUDA (full tracing)",
                   paired_launch(kEventsCupti, kFullTracing)));

  // The alternations (Args::alternations): each alternation's ratio of two blocks' step medians,
  // then their median, with their range and the median's 95% interval; the control is two blocks
  // without cuscope.
  const auto block_steps = static_cast<std::size_t>(args.alternating_steps);
  const auto alternating = [&](const std::vector<double>& a, const std::vector<double>& b) {
    return round_ratios(a, b, block_steps);
  };
  const std::vector<double> defaults_alternating = alternating(m.alt_defaults, m.alt_without);
  const std::vector<double> control_alternating = alternating(m.alt_without_again, m.alt_without);
  s.measurements.push_back(paired_ratio(
      "alternating.transformer.without_again_over_without",
      "alternating: transformer step, without cuscope / without (the control: two identical blocks)",
      control_alternating));
  s.measurements.push_back(paired_ratio("alternating.transformer.defaults_over_without",
                                        "alternating: transformer step, cuscope's defaults / without",
                                        defaults_alternating));
  s.measurements.push_back(paired_ratio(
      "alternating.transformer.minimal_cupti_callbacks_over_without",
      "alternating: transformer step, CUPTI set up as cuscope's defaults, callbacks doing nothing / without",
      alternating(m.alt_callbacks, m.alt_without)));
  s.measurements.push_back(
      paired_ratio("alternating.transformer.defaults_over_minimal_cupti_callbacks",
                   "alternating: transformer step, cuscope's defaults / CUPTI set up as the defaults "
                   "(cuscope's own work)",
                   alternating(m.alt_defaults, m.alt_callbacks)));

  // Whether the untimed warm-up steps suffice: each session's first timed steps over its later ones
  // (round_drift), the parts' first tenth and the alternating blocks' first quarter. The blocks time
  // only such early steps, so a start that slows the defaults longer than the steps without would
  // weigh in goal.defaults_step_alternating.
  const std::size_t part_first = std::max<std::size_t>(1, steps_per_round / 10);
  const std::size_t block_first = std::max<std::size_t>(1, block_steps / 4);
  const auto drift = [&](const char* key, const std::string& what, const std::vector<double>& v,
                         std::size_t per, std::size_t first) {
    s.measurements.push_back(paired_ratio(key,
                                          "drift: " + what + ", its first " + std::to_string(first) +
                                              " timed steps / its other " + std::to_string(per - first),
                                          round_drift(v, per, first)));
  };
  drift("drift.transformer.without", "transformer step without cuscope, each round's part", m.step_without,
        steps_per_round, part_first);
  drift("drift.transformer.defaults", "transformer step, cuscope's defaults, each round's part",
        m.step_defaults, steps_per_round, part_first);
  drift("drift.transformer.minimal_cupti_callbacks",
        "transformer step, CUPTI set up as cuscope's defaults, each round's part", m.step_minimal_callbacks,
        steps_per_round, part_first);
  drift("drift.alternating.without", "transformer step without cuscope, each alternating block",
        m.alt_without, block_steps, block_first);
  drift("drift.alternating.defaults", "transformer step, cuscope's defaults, each alternating block",
        m.alt_defaults, block_steps, block_first);

  std::vector<std::string> settled;  // the targets' notes: whether this run settles each
  // Issue 24's goals, for the defaults (launch notes since 2026-11-26) and for the defaults with
  // external correlation, the other way (docs/cupti.md, "Attribution"): each the median of the
  // rounds' ratios (above), with their range.
  // `control`: the ratios of a design's control (two identical blocks), for a goal measured by it. Its
  // interval must hold 1.00x, or the design finds a difference where there is none, and settles nothing.
  const auto target = [&](const char* key, const char* label, const std::vector<double>& ratios, double goal,
                          const std::vector<double>* control = nullptr) {
    const Measurement paired = paired_ratio(key, label, ratios);
    Target t{key, label, paired.value, "x", printf_string("<= %.2fx", goal), paired.value <= goal};
    t.low = paired.low;
    t.high = paired.high;
    t.ci_low = paired.ci_low;
    t.ci_high = paired.ci_high;
    s.targets.push_back(t);
    // Whether this run settles it: the median's interval wholly on one side of the goal.
    if (std::isnan(t.ci_low) || std::isnan(t.ci_high)) return;
    const std::string interval = printf_string("%.3fx", t.ci_low) + "-" + printf_string("%.3fx", t.ci_high);
    if (control != nullptr) {
      const Measurement c = paired_ratio("control", "control", *control);
      if (!(c.ci_low <= 1.0 && 1.0 <= c.ci_high)) {  // NaN too: no interval, nothing shown
        settled.push_back(std::string(key) + ": the median's 95% interval " + interval +
                          ", not settled by this run: the control's " +
                          (std::isnan(c.ci_low)
                               ? std::string("has no interval")
                               : "interval " + printf_string("%.3fx", c.ci_low) + "-" +
                                     printf_string("%.3fx", c.ci_high) + " does not hold 1.00x"));
        return;
      }
    }
    settled.push_back(std::string(key) + ": the median's 95% interval " + interval +
                      (t.ci_high <= goal ? " lies within the goal: met, settled by this run"
                       : t.ci_low > goal ? " lies past the goal: missed, settled by this run"
                                         : " holds the goal (" + t.goal + "): not settled by this run"));
  };
  target("goal.defaults_step", "transformer step, cuscope's defaults / without", defaults_step, 1.05);
  target("goal.defaults_step_alternating",
         "transformer step, cuscope's defaults / without, alternating blocks", defaults_alternating, 1.05,
         &control_alternating);
  target("goal.defaults_launch", "in a scope, cuscope's defaults / minimal CUPTI, per launch",
         defaults_launch, 1.10);
  target("goal.external_step", "transformer step, defaults with external correlation / without",
         external_step, 1.05);
  target("goal.external_launch", "in a scope, defaults with external correlation / minimal CUPTI",
         external_launch, 1.10);

  const std::uint64_t launched_kernels = m.attributed[kFullTracing];
  const cuscope::RangeStats* step = m.demo.find("step");
  s.notes = {
      "Launch and event times are host nanoseconds per launch (per pair, per scope), the mean of each",
      "round's loop, median over the rounds; cv is over the rounds. Step times: median over every step.",
      "ratio: the ratio of those medians. paired: each round's ratio (of the round's loop means, or of its",
      "step medians), then the median over the rounds, with the rounds' range; the targets read these.",
      "The configurations run in an order that changes each round (a Williams design, bench/README.md).",
      "alternating: blocks of a few steps without cuscope, with its defaults, under CUPTI set up as them and",
      "without again, in an order that changes each alternation, at the end of each round; each",
      "alternation's ratio of the blocks' step medians, then the median over the alternations. The control",
      "(without again / without) is what this design makes of no difference. (a-b): the median's 95% "
      "interval.",
      "drift: each session's first timed steps (after its " + std::to_string(args.warmup_steps) +
          " untimed ones, --warmup) over its later ones, per round or",
      "block; 1.00x where the warm-up sufficed. The alternating blocks time only early steps: where the",
      "defaults drift more than the steps without, their start weighs in the alternating goal.",
      m.cupti_detaches.kept
          ? std::string("NOT MEASURED AS MEANT: CUPTI was not detached between parts (--keep-attached): "
                        "each part after one that attached it ran with CUPTI attached and idle, which "
                        "loads the parts without cuscope")
          : "Each starts with CUPTI detached: cuptiFinalize after every part that attached it (" +
                std::to_string(m.cupti_detaches.made) + " made, " + std::to_string(m.cupti_detaches.refused) +
                " refused).",
      "Full tracing = CUDA events on every call (CUSCOPE_EVENTS=always) and CUPTI tracing, one scope per "
      "launch.",
      "Last full-tracing loop: activity " + m.traced.activity_status + "; " +
          std::to_string(launched_kernels) + " kernels attributed to 'launch', " +
          std::to_string(m.traced.diagnostics.dropped_records) + " records dropped, " +
          std::to_string(m.traced.diagnostics.gpu_event_failures) + " CUDA-event failures.",
      "Last transformer run with cuscope: activity " + m.demo.activity_status + ", GPU timing " +
          m.demo.gpu_timing + "; " + std::to_string(step != nullptr ? step->calls : 0) + " steps recorded, " +
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
    const cuscope::Diagnostics& d = m.diagnosed[c];
    per_loop += std::string(" ") + kLaunchConfigs[c].key + " " + std::to_string(m.attributed[c]) +
                " (not matched " + std::to_string(d.unresolved_records) + ", zero timestamp " +
                std::to_string(d.zero_timestamp_records) + ", dropped " + std::to_string(d.dropped_records) +
                ", outside window " + std::to_string(d.outside_window_records) + ", CUDA-event failures " +
                std::to_string(d.gpu_event_failures) + ", calls timed by events " +
                std::to_string(m.event_timed[c]) + ");";
  }
  s.notes.push_back(per_loop);
  s.notes.insert(s.notes.end(), settled.begin(), settled.end());
  // The parts that time steps after a detach, in rounds whose CUPTI had not detached `within` it.
  const auto not_detached = [&s](const char* key, const char* within, int rounds) {
    if (rounds != 0)
      s.notes.push_back(std::string("NOT MEASURED AS MEANT: ") + key + ": CUPTI had not detached " + within +
                        " after the window in " + std::to_string(rounds) +
                        " round(s); their steps ran with CUPTI paused, not detached");
  };
  if (m.cupti_detaches.kept_buffer_bytes != 0)
    s.notes.push_back(
        "CUPTI kept " +
        printf_string("%.2f", static_cast<double>(m.cupti_detaches.kept_buffer_bytes) / (1024.0 * 1024.0)) +
        " MiB of cuscope's activity buffers across the bench's finalizes between parts (never handed back), "
        "taken back after each");
  if (m.cupti_detaches.refused != 0)
    s.notes.push_back("NOT MEASURED AS MEANT: CUPTI's detach between parts was refused " +
                      std::to_string(m.cupti_detaches.refused) + " time(s) (" + m.cupti_detaches.why +
                      "); the part after each ran with CUPTI attached and idle, not detached");
  not_detached("transformer.after_window", "2 s", m.after_window_not_detached);
  not_detached("transformer.between_windows", "3 s", m.between_not_detached);
  if (m.recording_off_attached != 0)
    s.notes.push_back("NOT MEASURED AS MEANT: transformer.recording_off: the session attached CUPTI in " +
                      std::to_string(m.recording_off_attached) +
                      " round(s) (its activity status did not say 'not attached yet'); their steps ran "
                      "with CUPTI attached and paused");
  for (const Measured::Refusal& r : m.floor_refused)
    s.notes.push_back("NOT MEASURED from round " + std::to_string(r.round) + " on: " + r.key +
                      ", CUPTI set up as cuscope's defaults (" + r.why + "); " +
                      (r.round > 1 ? "its figures are of rounds 1 to " + std::to_string(r.round - 1) + "."
                                   : std::string("its figures read '-'.")));
  if (!m.launch[kFullTracing].empty() && launched_kernels != expected_kernels) {  // measured, and short
    s.notes.push_back("NOT MEASURED AS MEANT: the last full-tracing loop attributed " +
                      std::to_string(launched_kernels) + " of its " + std::to_string(expected_kernels) +
                      " kernels to 'launch' (" + std::to_string(m.traced_after_forced_flush) +
                      " after a forced CUPTI flush); its time and the full-tracing target do not stand.");
  }
  if (rounds_done < args.rounds)
    s.notes.push_back("PARTIAL: " + std::to_string(rounds_done) + " of " + std::to_string(args.rounds) +
                      " rounds done when this was written" +
                      (next.empty() ? std::string() : ", and the parts of the next before '" + next + "'") +
                      "; the run went on.");
  return s;
}

}  // namespace cuscope_bench

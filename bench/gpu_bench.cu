// bench/gpu_bench.cu — cuscope's GPU benchmarks (bench/README.md): the host cost of a kernel launch
// bare, inside scopes, under cuscope's CUPTI tracing and under a minimal CUPTI client (the floor of
// CUPTI tracing); a scope with CUDA events against two bare cudaEventRecord calls; and the demo's
// transformer step with and without cuscope. Exits 77 without a CUDA device.
//
// Every configuration runs in this one process, in rounds (each round runs every configuration
// once), so the ratios come from the same run. Between configurations the cuscope session is
// replaced (reset_for_testing, then start with the configuration's options). This file holds the
// rounds; the configurations and the command line are gpu_bench_configs.hpp's, the summary of what
// was measured gpu_bench_summary.cpp's, the timed loops gpu_loops.cu's.
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
#include "gpu_bench_summary.hpp"
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
                 "          [--alternations=N] [--alternating-steps=K] [--warmup=W] [--keep-attached]\n"
                 "  runs cuscope's GPU benchmarks (bench/README.md); exits 77 without a CUDA device, and 3\n"
                 "  when one part (a configuration's loop, a session start) runs past S seconds (default\n"
                 "  60, 0: no limit), after printing every thread's stack; --skip leaves configurations out\n"
                 "  by key (launch.events_cupti, transformer.records, ...): their figures read '-';\n"
                 "  each round ends with N alternations (default 8, 0: none) of blocks of K steps (default\n"
                 "  20) without cuscope, with its defaults, under CUPTI set up as them, and without again;\n"
                 "  --warmup: the untimed steps after each session's start (default 3);\n"
                 "  --keep-attached: no cuptiFinalize between parts (each part starts detached otherwise)\n",
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
  if (args.keep_attached) keep_cupti_attached();
  cudaDeviceProp prop{};
  BENCH_CUDA(cudaGetDeviceProperties(&prop, 0));
  int driver = 0, runtime = 0;
  BENCH_CUDA(cudaDriverGetVersion(&driver));
  BENCH_CUDA(cudaRuntimeGetVersion(&runtime));
  Watchdog dog(args.stall_limit_s);  // names each part on stderr; a stalled one prints every stack
  dog.part("warm-up");
  cudaStream_t stream = nullptr;
  BENCH_CUDA(cudaStreamCreate(&stream));
  // CUPTI's first attach in the process (libcupti loaded, its one-time setup) before anything is
  // timed, then its detach: every part starts with CUPTI detached (end_session()).
  restart_session(true, cuscope::EventTiming::always, true);
  launch_ns(stream, kBatch, Wrap::ScopePerLaunch, args.step_per_batch);
  restart_session(false, cuscope::EventTiming::off, false);
  cuscope_bench::transformer_setup();
  std::fprintf(stderr,
               "cuscope_gpu_bench: %d rounds of %d launches per configuration, %d transformer steps...\n",
               args.rounds, args.launches, args.steps);

  Measured m;  // what each configuration measured, round by round (gpu_bench_summary.hpp)
  // Turns the minimal client on, as CUPTI's floor or (`cuscope_setup`) set up as cuscope's defaults;
  // false when CUPTI refused the latter (noted; the bench goes on without that floor). A floor CUPTI
  // refused is left out of that round and every later one: its samples stay those of the rounds
  // before, each still paired with the same round's of the others (round_ratios pairs by index).
  auto start_floor = [&](const std::string& key, bool cuscope_setup, int round) {
    if (!cuscope_setup) {
      cupti_attached();
      MinimalCupti::start();
      return true;
    }
    if (m.refused(key)) return false;
    cupti_attached();  // a refusal may leave CUPTI attached, if not subscribed
    const std::string why = MinimalCupti::try_start(cuscope_defaults_setup());
    if (!why.empty()) m.floor_refused.push_back({key, why, round + 1});
    return why.empty();
  };
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
  const BenchMachine machine{
      std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")",
      "driver " + std::to_string(driver) + ", runtime " + std::to_string(runtime)};
  // The summary of the rounds done so far: written before each part and after each round (so that a
  // run cut short by a stall or its time limit still leaves the figures of every part before), and
  // printed at the end. `next`: the part about to begin, for the PARTIAL note.
  auto summarize = [&](int rounds_done, const std::string& next = "") {
    m.cupti_detaches = cupti_detaches();
    return cuscope_bench::summarize(args, machine, m, rounds_done, next);
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
      if (cfg.minimal_cupti && !start_floor(cfg.key, cfg.cuscope_setup, round)) {
        end_session();
        continue;
      }
      m.launch[c].push_back(launch_ns(stream, args.launches, cfg.wrap, args.step_per_batch));
      if (cfg.minimal_cupti) MinimalCupti::stop();
      cuscope::flush();
      if (cfg.activities) {
        cuscope::Report r = cuscope::snapshot();
        m.attributed[c] = attributed_kernels(r);
        m.event_timed[c] = event_timed_calls(r);
        m.diagnosed[c] = r.diagnostics;
        if (c == kFullTracing) {
          m.traced = std::move(r);
          // What a forced CUPTI flush still hands over: records held in buffers CUPTI deems
          // incomplete (a default flush never returns those), told apart in the note below.
          cuscope::detail::flush_activity_forced();  // one flush at a time with the collector's
          cuscope::flush();
          m.traced_after_forced_flush = attributed_kernels(cuscope::snapshot());
        }
      }
      end_session();  // inside this part: a stalled teardown is named as this configuration's
    }
    if (part("events.bare_pair")) {
      restart_session(false, cuscope::EventTiming::off, false);
      m.event_pair.push_back(event_ns(stream, args.launches, false));
      end_session();
    }
    if (part("events.scope")) {
      restart_session(true, cuscope::EventTiming::always, false);
      m.event_scope.push_back(event_ns(stream, args.launches, true));
      end_session();
    }

    using cuscope::Attribution;
    using cuscope::EventTiming;
    // A session, then `steps` timed steps after args.warmup_steps untimed ones, then `after` (untimed), then
    // the end of the session unless `keep` (the last one: its report is taken below).
    auto session_steps = [&](std::vector<double>& into, auto&& start_session, int steps,
                             void (*after)() = nullptr, bool keep = false) {
      start_session();
      const std::vector<double> t = step_ns(args.warmup_steps, steps);
      if (after != nullptr) after();
      if (!keep) end_session();
      into.insert(into.end(), t.begin(), t.end());
    };
    // One transformer configuration, its round's steps; nothing at all when skipped.
    auto transformer = [&](const char* key, std::vector<double>& into, auto&& start_session,
                           void (*after)() = nullptr, bool keep = false) {
      if (part(key)) session_steps(into, start_session, args.steps, after, keep);
    };
    // The step with cuscope off under the minimal CUPTI client tracing `kinds`: a floor.
    auto minimal_floor = [&](const char* key, std::vector<double>& into, MinimalKinds kinds) {
      transformer(
          key, into,
          [kinds] {
            restart_session(false, EventTiming::off, false, 3);
            cupti_attached();
            MinimalCupti::start(kinds);
          },
          &MinimalCupti::stop);
    };
    // `steps` steps under CUPTI set up as cuscope's defaults, cuscope off, into `into`; none once
    // CUPTI refused the subscriber for `key` (left out from then on, with a note).
    auto callbacks_steps = [&](const char* key, std::vector<double>& into, int steps) {
      if (m.refused(key)) return;
      restart_session(false, EventTiming::off, false, 3);
      if (!start_floor(key, true, round)) return end_session();
      const std::vector<double> t = step_ns(args.warmup_steps, steps);
      MinimalCupti::stop();
      end_session();
      into.insert(into.end(), t.begin(), t.end());
    };
    auto callbacks_floor = [&] {
      const char* key = "transformer.minimal_cupti_callbacks";
      if (!m.refused(key) && part(key)) callbacks_steps(key, m.step_minimal_callbacks, args.steps);
    };
    // The defaults recording one step in kWindowCycle (CUSCOPE_REPEAT=0), CUPTI paused in the
    // others: one untimed cycle first, so that the timed steps are whole cycles from their first.
    auto windowed = [&] {
      const char* key = "transformer.windowed";
      if (!part(key)) return;
      restart_windowed_session(kWindowWait, 1, 1);
      // Whole cycles, each step its cycle's mean (cycle_means), then the round's steps: a last,
      // cut cycle would be paused steps only.
      const auto steps = static_cast<std::size_t>(args.steps);
      const std::size_t whole = (steps + kWindowCycle - 1) / kWindowCycle * kWindowCycle;
      std::vector<double> t =
          cycle_means(step_ns(static_cast<int>(kWindowCycle), static_cast<int>(whole)), whole, kWindowCycle);
      t.resize(steps);
      end_session();
      m.step_windowed.insert(m.step_windowed.end(), t.begin(), t.end());
    };
    // The defaults after a step window that ended before the timed steps: CUPTI detached
    // (CUSCOPE_DETACH) before the first of them, as in a program after its last window. A round
    // whose CUPTI had not detached 2 s after the window is timed all the same, and counted.
    auto after_window = [&] {
      const char* key = "transformer.after_window";
      if (!part(key)) return;
      if (!restart_after_window_session()) ++m.after_window_not_detached;
      const std::vector<double> t = step_ns(args.warmup_steps, args.steps);
      end_session();
      m.step_after_window.insert(m.step_after_window.end(), t.begin(), t.end());
    };
    // The defaults detaching CUPTI between windows (CUSCOPE_DETACH_BETWEEN): steps timed in a wait
    // once CUPTI detached, then the re-attach at the wait's end and the step after it. A round whose
    // CUPTI had not detached 3 s after its window is timed all the same, and counted.
    auto between_windows = [&] {
      const char* key = "transformer.between_windows";
      if (!part(key)) return;
      std::uint32_t taken = 0;
      if (!restart_between_windows_session(kBetweenWait, &taken)) ++m.between_not_detached;
      const std::vector<double> t = step_ns(0, args.steps);
      double reattach = 0, first = 0;
      time_reattach(kBetweenWait, taken + static_cast<std::uint32_t>(args.steps), &reattach, &first);
      end_session();
      m.step_between_windows.insert(m.step_between_windows.end(), t.begin(), t.end());
      m.reattach_call.push_back(reattach);
      m.step_after_reattach.push_back(first);
    };
    // The defaults with recording off from the start (CUSCOPE_ENABLE=0): CUPTI not attached until
    // recording is switched on, which it never is here. A round whose session attached CUPTI all
    // the same is timed, and counted.
    auto recording_off = [&] {
      const char* key = "transformer.recording_off";
      if (!part(key)) return;
      if (!restart_recording_off_session()) ++m.recording_off_attached;
      const std::vector<double> t = step_ns(args.warmup_steps, args.steps);
      end_session();
      m.step_recording_off.insert(m.step_recording_off.end(), t.begin(), t.end());
    };
    // The step's configurations, in round_order as the launch loops are; transformer.with
    // runs last in every round (its report is the notes').
    const std::function<void()> sessions[] = {
        [&] {
          transformer("transformer.without", m.step_without,
                      [] { restart_session(false, EventTiming::off, false, 3); });
        },
        [&] { minimal_floor("transformer.minimal_cupti", m.step_minimal, MinimalKinds::kernels); },
        [&] {
          minimal_floor("transformer.minimal_cupti_copies", m.step_minimal_copies,
                        MinimalKinds::kernels_copies_sets);
        },
        callbacks_floor,
        [&] {
          transformer("transformer.host_scopes", m.step_host,
                      [] { restart_session(true, EventTiming::off, false, 3); });
        },
        [&] {
          transformer("transformer.events", m.step_events,
                      [] { restart_session(true, EventTiming::always, false, 3); });
        },
        [&] {
          transformer("transformer.tracing", m.step_tracing,
                      [] { restart_session(true, EventTiming::off, true, 3); });
        },
        [&] {
          transformer("transformer.defaults", m.step_defaults,
                      [] { restart_session(true, EventTiming::automatic, true, 3); });
        },
        [&] {
          transformer("transformer.sampled", m.step_sampled,
                      [] { restart_session(true, EventTiming::sampled, true, 3, "", 100); });
        },
        [&] {
          transformer("transformer.external", m.step_external, [] {
            restart_session(true, EventTiming::automatic, true, 3, "", 0, Attribution::external);
          });
        },
        [&] {
          transformer("transformer.records", m.step_records, [] {
            restart_session(true, EventTiming::automatic, true, 3, "", 0, cuscope::Options{}.attribution,
                            true);
          });
        },
        [&] {
          transformer("transformer.events_cupti", m.step_events_cupti, [] {
            restart_session(true, EventTiming::always, true, 3, "", 0, cuscope::Options{}.attribution, false,
                            cuscope::EventTimestamps::cupti);
          });
        },
        windowed,
        after_window,
        between_windows,
        recording_off};
    constexpr int kSessions = sizeof sessions / sizeof sessions[0];
    for (const int i : cuscope_bench::round_order(kSessions, round)) sessions[i]();
    // The goal's contrast again, finely interleaved: short blocks of steps, one of each
    // AlternatingBlock an alternation, in round_order over every alternation of the run. A block is
    // a part's session as above (warm-up steps untimed, CUPTI detached at its end), so a pair of
    // blocks is tens of milliseconds apart where a round puts the configurations up to seconds
    // apart; the control block, the step without cuscope twice, says what the design makes of none.
    if (args.alternations > 0 && part("transformer.alternating")) {
      const int steps = args.alternating_steps;
      const auto without = [] { restart_session(false, EventTiming::off, false, 3); };
      const auto defaults = [] { restart_session(true, EventTiming::automatic, true, 3); };
      for (int i = 0; i < args.alternations; ++i) {
        for (const int b : round_order(kAlternatingBlocks, round * args.alternations + i)) {
          if (b == kAltWithout) session_steps(m.alt_without, without, steps);
          if (b == kAltWithoutAgain) session_steps(m.alt_without_again, without, steps);
          if (b == kAltDefaults) session_steps(m.alt_defaults, defaults, steps);
          if (b == kAltCallbacks) callbacks_steps("transformer.alternating", m.alt_callbacks, steps);
        }
      }
    }
    // Last: its report is the notes' "last transformer run".
    transformer(
        "transformer.with", m.step_with, [] { restart_session(true, EventTiming::always, true, 3); }, nullptr,
        true);
    dog.part(in_round + "the last transformer run's report");
    cuscope::flush();
    m.demo = cuscope::snapshot();
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
    std::fputs(cuscope::format_table(m.traced).c_str(), stdout);
  }
  if (!args.json.empty() && !cuscope_bench::write_file(args.json, cuscope_bench::format_json(s))) return 1;
  return 0;
}

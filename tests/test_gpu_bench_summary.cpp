// tests/test_gpu_bench_summary.cpp — the GPU bench's summary (bench/gpu_bench_summary.hpp): its goals
// read each round's ratio, the floors split the step's cost, the parts after a window or with
// recording off are paired with the step without, the warm-up's drift, and the notes that say where
// a part did not measure what it means to. Never times anything: the inputs are written here.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <string>
#include <vector>

#include "../bench/gpu_bench_summary.hpp"
#include "../bench/summary.hpp"

using cuscope_bench::Measurement;
using cuscope_bench::Summary;
using cuscope_bench::Target;

namespace {

const Measurement* measurement(const Summary& s, const std::string& key) {
  for (const Measurement& m : s.measurements) {
    if (m.key == key) return &m;
  }
  return nullptr;
}

const Target* target(const Summary& s, const std::string& key) {
  for (const Target& t : s.targets) {
    if (t.key == key) return &t;
  }
  return nullptr;
}

// Two rounds of two steps each, the step without cuscope 100 ns, then 200 (the machine twice as slow
// in the second round): what the paired figures' cases summarize.
struct TwoRounds {
  cuscope_bench::Args args;
  cuscope_bench::Measured m;
  TwoRounds() {
    args.rounds = 2;
    args.steps = 2;
    m.step_without = {100, 100, 200, 200};
  }
};

}  // namespace

TEST_CASE("bench: the GPU summary's goals read each round's ratio, and the floors split the step's cost",
          "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  m.step_defaults = {104, 104, 220, 220};           // 1.04, then 1.10
  m.step_minimal_callbacks = {102, 102, 210, 210};  // 1.02, then 1.05
  m.launch[kDefaults] = {110, 210};                 // per launch, each round's mean
  m.launch[kMinimalCupti] = {100, 200};             // 1.10, then 1.05
  m.launch[kMinimalCallbacks] = {105, 200};         // over the minimal client: 1.05, then 1.00
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);

  const Target* step = target(s, "goal.defaults_step");
  REQUIRE(step != nullptr);
  CHECK(step->measured == Approx(1.07));  // the median of 1.04 and 1.10, not 162 / 150 = 1.08
  CHECK(step->low == Approx(1.04));
  CHECK(step->high == Approx(1.10));
  CHECK_FALSE(step->pass);
  const Target* launch = target(s, "goal.defaults_launch");
  REQUIRE(launch != nullptr);
  CHECK(launch->measured == Approx(1.075));
  CHECK(launch->pass);

  // The floor of launch notes: what CUPTI set up as the defaults costs, and cuscope's own part.
  const Measurement* own_step = measurement(s, "paired.transformer.defaults_over_minimal_cupti_callbacks");
  REQUIRE(own_step != nullptr);
  CHECK(own_step->value == Approx((104.0 / 102.0 + 220.0 / 210.0) / 2));
  const Measurement* floor_step = measurement(s, "paired.transformer.minimal_cupti_callbacks_over_without");
  REQUIRE(floor_step != nullptr);
  CHECK(floor_step->value == Approx(1.035));
  const Measurement* callbacks = measurement(s, "paired.minimal_callbacks_over_minimal");
  REQUIRE(callbacks != nullptr);
  CHECK(callbacks->value == Approx(1.025));
  const Measurement* own_launch = measurement(s, "paired.defaults_over_minimal_callbacks");
  REQUIRE(own_launch != nullptr);
  CHECK(own_launch->value == Approx((110.0 / 105.0 + 210.0 / 200.0) / 2));

  // Not measured: no value, and the note says why only where CUPTI refused the setup.
  CHECK(std::isnan(measurement(s, "paired.transformer.minimal_cupti_copies_over_without")->value));
  const auto refused_note = [](const Summary& summary) {
    return std::count_if(summary.notes.begin(), summary.notes.end(),
                         [](const std::string& n) { return n.rfind("NOT MEASURED from round ", 0) == 0; });
  };
  CHECK(refused_note(s) == 0);
  // CUPTI refused the floor's setup in round 2: round 1's samples stay, paired with round 1's.
  m.step_minimal_callbacks = {102, 102};
  m.floor_refused.push_back(
      {"transformer.minimal_cupti_callbacks", "cuptiSubscribe failed: CUPTI_ERROR_X", 2});
  const Summary refused = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(refused_note(refused) == 1);
  CHECK(std::find(
            refused.notes.begin(), refused.notes.end(),
            "NOT MEASURED from round 2 on: transformer.minimal_cupti_callbacks, CUPTI set up as cuscope's "
            "defaults (cuptiSubscribe failed: CUPTI_ERROR_X); its figures are of rounds 1 to 1.") !=
        refused.notes.end());
  const Measurement* one_round =
      measurement(refused, "paired.transformer.defaults_over_minimal_cupti_callbacks");
  REQUIRE(one_round != nullptr);
  CHECK(one_round->value == Approx(104.0 / 102.0));
  CHECK(one_round->low == one_round->high);
  // A summary written while a round runs says so.
  const Summary partial = summarize(args, {"gpu", "cuda"}, m, 1, "transformer.defaults");
  CHECK(std::count_if(partial.notes.begin(), partial.notes.end(), [](const std::string& n) {
          return n ==
                 "PARTIAL: 1 of 2 rounds done when this was written, and the parts of the next before "
                 "'transformer.defaults'; the run went on.";
        }) == 1);
}

TEST_CASE(
    "bench: the alternations pair each block with the same alternation's block without, the control too",
    "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  args.alternating_steps = 2;
  args.steps = 3;  // a round's steps a configuration: not the blocks'
  // Six alternations of two steps a block; without cuscope the machine drifts 100, 200, 150, ...
  m.alt_without = {100, 100, 200, 200, 150, 150, 120, 120, 180, 180, 100, 100};
  m.alt_without_again = {101, 101, 198, 198, 150, 150, 121, 121, 180, 180, 99, 99};
  m.alt_defaults = {103, 103, 208, 208, 153, 153, 126, 126, 189, 189, 103, 103};
  m.alt_callbacks = {102, 102, 204, 204, 153, 153};  // CUPTI refused it from the fourth on
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  const Target* goal = target(s, "goal.defaults_step_alternating");
  REQUIRE(goal != nullptr);
  // Ratios 1.03, 1.04, 1.02, 1.05, 1.05, 1.03: the median 1.035, the interval their range (6 of them).
  CHECK(goal->measured == Approx(1.035));
  CHECK(goal->pass);
  CHECK(goal->low == Approx(1.02));
  CHECK(goal->high == Approx(1.05));
  CHECK(goal->ci_low == Approx(1.02));
  CHECK(goal->ci_high == Approx(1.05));
  // Six ratios: the interval is their range, 1.020x-1.050x, within the goal.
  CHECK(std::count(s.notes.begin(), s.notes.end(),
                   "goal.defaults_step_alternating: the median's 95% interval 1.020x-1.050x lies within the "
                   "goal: met, settled by this run") == 1);
  const Measurement* control = measurement(s, "alternating.transformer.without_again_over_without");
  REQUIRE(control != nullptr);
  CHECK(control->value == Approx(1.0));  // 1.01, 0.99, 1.00, 1.00833, 1.00, 0.99
  CHECK(control->low == Approx(0.99));
  CHECK(control->high == Approx(1.01));
  // The floor's three alternations, each paired with its own.
  const Measurement* own = measurement(s, "alternating.transformer.defaults_over_minimal_cupti_callbacks");
  REQUIRE(own != nullptr);
  CHECK(own->value == Approx(103.0 / 102.0));  // the median of 103/102, 208/204 and 153/153
  CHECK(std::isnan(own->ci_low));              // 3 ratios: no interval
  const Measurement* floor_step =
      measurement(s, "alternating.transformer.minimal_cupti_callbacks_over_without");
  REQUIRE(floor_step != nullptr);
  CHECK(floor_step->value == Approx(1.02));
  CHECK(std::find_if(s.context.begin(), s.context.end(), [](const auto& c) {
          return c.first == "runs" && c.second.ends_with(
                                          "; 8 alternations of 2 steps a block each round; 3 untimed steps "
                                          "after each session's start");
        }) != s.context.end());
  // How many times the summary of `m` as it is now holds `note`.
  const auto says = [&](const std::string& note) {
    const Summary now = summarize(args, {"gpu", "cuda"}, m, 2);
    return std::count(now.notes.begin(), now.notes.end(), note);
  };
  // Across the goal: ratios 1.07, 1.06, 1.06, 1.058, 1.05, 1.06 (1.05 is within "<= 1.05x").
  m.alt_defaults = {107, 107, 212, 212, 159, 159, 127, 127, 189, 189, 106, 106};
  CHECK(says("goal.defaults_step_alternating: the median's 95% interval 1.050x-1.070x holds the goal "
             "(<= 1.05x): not settled by this run") == 1);
  // Past it: 1.08, 1.07, 1.06, 1.067, 1.056, 1.06.
  m.alt_defaults = {108, 108, 214, 214, 159, 159, 128, 128, 190, 190, 106, 106};
  const Summary missed = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(std::count_if(missed.notes.begin(), missed.notes.end(), [](const std::string& n) {
          return n.starts_with("goal.defaults_step_alternating: the median's 95% interval ") &&
                 n.ends_with(" lies past the goal: missed, settled by this run");
        }) == 1);
  // A control whose interval does not hold 1.00x (the second blocks without cuscope 2% slower each
  // time): the design finds a difference where there is none, so the goal's interval settles nothing.
  m.alt_defaults = {103, 103, 208, 208, 153, 153, 126, 126, 189, 189, 103, 103};
  m.alt_without_again = {102, 102, 204, 204, 153, 153, 122.4, 122.4, 183.6, 183.6, 102, 102};
  CHECK(says("goal.defaults_step_alternating: the median's 95% interval 1.020x-1.050x, not settled by "
             "this run: the control's interval 1.020x-1.020x does not hold 1.00x") == 1);
  m.alt_without_again = {101, 101, 198, 198, 150, 150, 121, 121, 180, 180, 99, 99};
  // Fewer than 6 ratios (the rounds' goals here): no interval, no such note.
  CHECK(std::count_if(s.notes.begin(), s.notes.end(),
                      [](const std::string& n) { return n.starts_with("goal.defaults_step:"); }) == 0);
  // No alternations: the goal not measured, not passed.
  m.alt_without.clear();
  const Summary without_alternations = summarize(args, {"gpu", "cuda"}, m, 2);
  const Target* none = target(without_alternations, "goal.defaults_step_alternating");
  REQUIRE(none != nullptr);
  CHECK(std::isnan(none->measured));
}

TEST_CASE(
    "bench: the step after the last window is paired with the step without, and a round not detached named",
    "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  m.step_after_window = {101, 101, 204, 204};  // 1.01, then 1.02
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  const Measurement* after = measurement(s, "paired.transformer.after_window_over_without");
  REQUIRE(after != nullptr);
  CHECK(after->value == Approx(1.015));
  CHECK(after->low == Approx(1.01));
  CHECK(after->high == Approx(1.02));
  REQUIRE(measurement(s, "transformer.after_window") != nullptr);
  CHECK(measurement(s, "transformer.after_window")->value == Approx(152.5));
  const auto not_detached = [](const Summary& summary) {
    return std::count(summary.notes.begin(), summary.notes.end(),
                      "NOT MEASURED AS MEANT: transformer.after_window: CUPTI had not detached 2 s after the "
                      "window in 1 round(s); their steps ran with CUPTI paused, not detached");
  };
  CHECK(not_detached(s) == 0);
  m.after_window_not_detached = 1;
  CHECK(not_detached(summarize(args, {"gpu", "cuda"}, m, 2)) == 1);
}

TEST_CASE(
    "bench: the steps between windows detached are paired with the step without, the re-attach its own, and "
    "a round not detached named",
    "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  m.step_between_windows = {99, 99, 206, 206};  // 0.99, then 1.03
  m.reattach_call = {70000, 60000};
  m.step_after_reattach = {150, 250};
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  const Measurement* between = measurement(s, "paired.transformer.between_windows_over_without");
  REQUIRE(between != nullptr);
  CHECK(between->value == Approx(1.01));
  CHECK(between->low == Approx(0.99));
  CHECK(between->high == Approx(1.03));
  REQUIRE(measurement(s, "transformer.between_windows.reattach_call") != nullptr);
  CHECK(measurement(s, "transformer.between_windows.reattach_call")->value == Approx(65000));
  const Measurement* first =
      measurement(s, "ratio.transformer.between_windows.first_step_after_reattach_over_without");
  REQUIRE(first != nullptr);
  CHECK(first->value == Approx(200.0 / median(m.step_without)));
  const auto not_detached = [](const Summary& summary) {
    return std::count(
        summary.notes.begin(), summary.notes.end(),
        "NOT MEASURED AS MEANT: transformer.between_windows: CUPTI had not detached 3 s after the "
        "window in 2 round(s); their steps ran with CUPTI paused, not detached");
  };
  CHECK(not_detached(s) == 0);
  m.between_not_detached = 2;
  CHECK(not_detached(summarize(args, {"gpu", "cuda"}, m, 2)) == 1);
}

TEST_CASE("bench: the step with recording off is paired with the step without, and a round attached named",
          "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  m.step_recording_off = {100, 100, 196, 196};  // 1.00, then 0.98
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  const Measurement* off = measurement(s, "paired.transformer.recording_off_over_without");
  REQUIRE(off != nullptr);
  CHECK(off->value == Approx(0.99));
  CHECK(off->low == Approx(0.98));
  CHECK(off->high == Approx(1.00));
  REQUIRE(measurement(s, "transformer.recording_off") != nullptr);
  CHECK(measurement(s, "transformer.recording_off")->value == Approx(148));
  const auto attached = [](const Summary& summary) {
    return std::count(summary.notes.begin(), summary.notes.end(),
                      "NOT MEASURED AS MEANT: transformer.recording_off: the session attached CUPTI in 1 "
                      "round(s) (its activity status did not say 'not attached yet'); their steps ran with "
                      "CUPTI attached and paused");
  };
  CHECK(attached(s) == 0);
  m.recording_off_attached = 1;
  CHECK(attached(summarize(args, {"gpu", "cuda"}, m, 2)) == 1);
}

TEST_CASE(
    "bench: the summary counts CUPTI's detaches between parts, and names the parts a refused one left "
    "attached",
    "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  m.cupti_detaches = {31, 0, ""};
  const auto has = [](const Summary& summary, const std::string& note) {
    return std::count(summary.notes.begin(), summary.notes.end(), note);
  };
  const std::string made =
      "Each starts with CUPTI detached: cuptiFinalize after every part that attached it (31 made, 0 "
      "refused).";
  const std::string refused =
      "NOT MEASURED AS MEANT: CUPTI's detach between parts was refused 2 time(s) (cuptiFinalize failed: "
      "CUPTI_ERROR_NOT_SUPPORTED); the part after each ran with CUPTI attached and idle, not detached";
  Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(has(s, made) == 1);
  CHECK(has(s, refused) == 0);
  m.cupti_detaches = {29, 2, "cuptiFinalize failed: CUPTI_ERROR_NOT_SUPPORTED"};
  s = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(has(s, made) == 0);
  CHECK(has(s,
            "Each starts with CUPTI detached: cuptiFinalize after every part that attached it (29 made, 2 "
            "refused).") == 1);
  CHECK(has(s, refused) == 1);
  // Buffers CUPTI kept across the finalizes: said, with how much.
  m.cupti_detaches = {29, 0, "", false, 12u << 20};
  s = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(has(s,
            "CUPTI kept 12.00 MiB of cuscope's activity buffers across the bench's finalizes between parts "
            "(never handed back), taken back after each") == 1);
  // --keep-attached (a lease whose detach hung): none tried, and the figures say what that means.
  m.cupti_detaches = {0, 0, "", true};
  s = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(has(s,
            "NOT MEASURED AS MEANT: CUPTI was not detached between parts (--keep-attached): each part after "
            "one that attached it ran with CUPTI attached and idle, which loads the parts without cuscope") ==
        1);
  CHECK(std::none_of(s.notes.begin(), s.notes.end(),
                     [](const std::string& n) { return n.starts_with("Each starts with CUPTI detached"); }));
}

TEST_CASE("bench: the drift of each part's and each alternating block's first steps is summarized per round",
          "[bench]") {
  using namespace cuscope_bench;
  auto [args, m] = TwoRounds();
  args.steps = 10;             // the first 1 step of each part against its other 9
  args.alternating_steps = 4;  // the first 1 step of each block against its other 3
  m.step_without.assign(20, 100);
  m.step_without[0] = 110;   // round 1: 1.10
  m.step_without[10] = 100;  // round 2: 1.00
  m.step_defaults.assign(20, 200);
  m.step_defaults[0] = 260;                                  // 1.30
  m.step_defaults[10] = 240;                                 // 1.20
  m.alt_without = {105, 100, 100, 100, 100, 100, 100, 100};  // 1.05, then 1.00
  m.alt_defaults = {120, 100, 100, 100};                     // 1.20, one block only
  const Summary s = summarize(args, {"gpu", "cuda"}, m, 2);
  const auto drift = [&](const std::string& key) {
    const Measurement* d = measurement(s, key);
    REQUIRE(d != nullptr);
    return *d;
  };
  CHECK(drift("drift.transformer.without").value == Approx(1.05));
  CHECK(drift("drift.transformer.without").low == Approx(1.00));
  CHECK(drift("drift.transformer.without").high == Approx(1.10));
  CHECK(drift("drift.transformer.without").label ==
        "drift: transformer step without cuscope, each round's part, its first 1 timed steps / its other 9");
  CHECK(drift("drift.transformer.defaults").value == Approx(1.25));
  CHECK(drift("drift.alternating.without").value == Approx(1.025));
  CHECK(drift("drift.alternating.without").label ==
        "drift: transformer step without cuscope, each alternating block, its first 1 timed steps / its "
        "other 3");
  CHECK(drift("drift.alternating.defaults").value == Approx(1.20));
  // The note names the warm-up the run had (--warmup).
  args.warmup_steps = 12;
  const Summary longer = summarize(args, {"gpu", "cuda"}, m, 2);
  CHECK(std::count(longer.notes.begin(), longer.notes.end(),
                   "drift: each session's first timed steps (after its 12 untimed ones, --warmup) over its "
                   "later ones, per round or") == 1);
  // Nothing measured: no ratio, and no range to show.
  CHECK(std::isnan(drift("drift.transformer.minimal_cupti_callbacks").value));
  CHECK(std::isnan(drift("drift.transformer.minimal_cupti_callbacks").low));
}

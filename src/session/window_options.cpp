// session/window_options.cpp — the step window's options as start() takes them: Options::sample_ms
// expanded into the window it stands for, and each value that is out of range or cannot apply said
// once and replaced by what the session does instead.
//
// Never here: a session's state, a step, or CUPTI (window.cpp moves the window; this only settles
// the options it moves by, before the session exists).
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>

#include "producers/event_timestamps.hpp"
#include "producers/log.hpp"
#include "session/internal.hpp"

namespace cuscope {
inline namespace v0 {
namespace detail {

std::uint32_t sample_step_ms(std::uint32_t sample_ms) { return std::clamp(sample_ms / 10, 1u, 100u); }

namespace {

// Options::sample_ms: the program whole for its first sample_ms (or whole_ms where given), then one
// step every sample_ms (a wait of one step that lasts that long, a warm-up step, a recorded step,
// without end), CUPTI detached between; a program that never calls step() gets steps from cuscope's
// clock (sample_step_ms(), or step_ms where given). A window of the program's own is replaced, and
// one note says so.
void expand_sample(Options& o) {
  if (o.sample_ms == 0) return;
  if (o.sample_ms > kMaxStepMs) {
    warn_once(
        fmt::format("Options::sample_ms={} is out of range [0, {}]; every step is recorded as without it",
                    o.sample_ms, kMaxStepMs));
    o.sample_ms = 0;
    return;
  }
  const Options d{};
  if (o.wait_steps != d.wait_steps || o.warmup_steps != d.warmup_steps || o.active_steps != d.active_steps ||
      o.repeat != d.repeat || o.wait_ms != d.wait_ms)
    warn_once(fmt::format(
        "Options::sample_ms={} sets the step window itself (wait_steps 1, wait_ms {}, warmup_steps 1, "
        "active_steps 1, repeat 0): the window given with it (wait_steps {}, wait_ms {}, warmup_steps {}, "
        "active_steps {}, repeat {}) is not used",
        o.sample_ms, o.sample_ms, o.wait_steps, o.wait_ms, o.warmup_steps, o.active_steps, o.repeat));
  o.wait_steps = 1;
  o.wait_ms = o.sample_ms;
  o.warmup_steps = 1;
  o.active_steps = 1;
  o.repeat = 0;
  o.detach_between = true;
  if (o.whole_ms == 0) o.whole_ms = o.sample_ms;
  if (o.step_ms == 0) o.step_ms = sample_step_ms(o.sample_ms);
}

}  // namespace

void settle_window_options(Options& o) {
  expand_sample(o);
  if (o.repeat != 1 && o.active_steps == 0) {
    // Nothing to repeat: every step after the first window is already active.
    warn_once(fmt::format(
        "Options::repeat={} needs active_steps > 0 (a window to repeat); the window runs once", o.repeat));
    o.repeat = 1;
  }
  if (o.detach_between) {
    // Said once, here: a detach that could never be made, or made only while recording is off.
    const char* why = !o.metrics.empty() ? "is not made where hardware counters run (CUSCOPE_METRICS)"
                      : wants_cupti_event_clock(o)
                          ? "is not made where CUPTI times cuscope's events (CUSCOPE_EVENT_TIMESTAMPS=cupti)"
                          : nullptr;
    if (why != nullptr) {
      warn_once(fmt::format(
          "Options::detach_between {}; CUPTI is not detached between step windows or while recording is off",
          why));
      o.detach_between = false;
    } else if (o.repeat == 1 || o.wait_steps == 0) {
      warn_once(
          "Options::detach_between: no step window repeats with wait steps (repeat != 1, wait_steps > 0), "
          "so CUPTI is detached only while recording is off (cuscope::set_enabled(false))");
    }
  }
  if (o.wait_ms > kMaxStepMs) {
    warn_once(fmt::format("Options::wait_ms={} is out of range [0, {}]; waits count steps only", o.wait_ms,
                          kMaxStepMs));
    o.wait_ms = 0;
  } else if (o.wait_ms != 0 && o.wait_steps == 0) {
    warn_once(
        fmt::format("Options::wait_ms={} needs wait_steps > 0 (a wait to make last); ignored", o.wait_ms));
    o.wait_ms = 0;
  }
  if (o.whole_ms > kMaxStepMs) {
    warn_once(fmt::format("Options::whole_ms={} is out of range [0, {}]; the step window begins at the start",
                          o.whole_ms, kMaxStepMs));
    o.whole_ms = 0;
  } else if (o.whole_ms != 0 && o.wait_steps == 0 && o.warmup_steps == 0 && o.active_steps == 0) {
    warn_once(fmt::format(
        "Options::whole_ms={} needs a step window that leaves steps out (wait_steps, warmup_steps or "
        "active_steps > 0): every step is recorded already; ignored",
        o.whole_ms));
    o.whole_ms = 0;
  }
  if (o.step_ms > kMaxStepMs) {
    warn_once(fmt::format("Options::step_ms={} is out of range [0, {}]; cuscope ends no step itself",
                          o.step_ms, kMaxStepMs));
    o.step_ms = 0;
  }
}

}  // namespace detail
}  // namespace v0
}  // namespace cuscope

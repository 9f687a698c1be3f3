// python/src/module.cpp — cuscope._cuscope: the session calls, options and the native report.
//
// A thin layer over the public C++ API (include/cuscope/): no statistic is computed here, and the
// report reaches Python as the library's own JSON and table. The module links its own copy of the
// library, which hands everything over to the injected one under `cuscope run` (session/handover):
// one session per process. Calls that may wait or take long (snapshot, flush, shutdown, the report's
// JSON) release the GIL, safely at the interpreter's exit (gil.hpp).
#include <nanobind/nanobind.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unordered_map.h>
#include <nanobind/stl/vector.h>

#include <cuscope/cuscope.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "gil.hpp"
#include "scope.hpp"

namespace nb = nanobind;

namespace cuscope::python {
namespace {

// CUSCOPE_* variable -> the bytes it would hold (a path that is not UTF-8 included); (variable, message)
// for each bad one: the message quotes the value, escaped.
using Settings = std::unordered_map<std::string, nb::bytes>;
using Problems = std::vector<std::pair<std::string, std::string>>;

// options_from() takes a plain function: the settings of the call in progress, on its own thread.
thread_local const Settings* t_settings = nullptr;

const char* lookup(const char* variable) {
  const auto it = t_settings->find(variable);
  return it == t_settings->end() ? nullptr : it->second.c_str();
}

// `base` with `settings` applied by the library's own parser, and every problem it found.
Options apply(const Settings& settings, const Options& base, Problems* problems) {
  t_settings = &settings;
  std::vector<OptionError> errors;
  Options o = options_from(&lookup, base, &errors);
  t_settings = nullptr;
  for (const OptionError& e : errors) problems->emplace_back(e.variable, e.message);
  return o;
}

// start(): the environment first, the settings on top, each read in its variable's place (a bad
// environment value that a setting replaces is not reported: its note would say a value is kept that
// is not); nothing starts when a setting is bad. Without settings, cuscope::start() itself: a copy
// that forwards (under `cuscope run`) lets the engine read the environment, so what is wrong with it
// is said once, not by this copy and again by the engine.
std::pair<bool, Problems> start_with(const Settings& settings) {
  if (settings.empty()) {
    ReleaseGil release;
    return {cuscope::start(), {}};
  }
  Problems problems;
  std::vector<OptionError> errors;
  t_settings = &settings;
  const Options o = options_from_env(Options{}, &errors, &lookup);
  t_settings = nullptr;
  for (const OptionError& e : errors) {
    if (settings.count(e.variable) != 0) problems.emplace_back(e.variable, e.message);
  }
  if (!problems.empty()) return {false, problems};
  ReleaseGil release;
  return {cuscope::start(o), problems};
}

std::pair<std::string, Problems> table_of(const Report& report, const Settings& settings) {
  Problems problems;
  Options base;
  base.table = cuscope::current_options().table;
  const Options o = apply(settings, base, &problems);
  if (!problems.empty()) return {std::string(), problems};
  return {format_table(report, o.table), problems};
}

// At the interpreter's exit, before it finalizes: an exit by KeyboardInterrupt re-raises SIGINT
// after finalizing, and the C atexit handlers where the library prints would never run. The
// process's session, whichever copy of cuscope runs it (another one, when this module's scopes
// never ran); shutdown() starts none, so a session that never started prints no table.
void shutdown_at_exit() {
  park_other_threads_from_now();  // a daemon thread in snapshot() now must not abort the exit (gil.hpp)
  ReleaseGil release;
  cuscope::shutdown();
}

cudaStream_t push_stream(nb::handle stream) {
  return stream.is_none() ? torch_stream() : stream_from(stream);
}

}  // namespace
}  // namespace cuscope::python

NB_MODULE(_cuscope, m) {
  using namespace cuscope;
  using namespace cuscope::python;
  m.doc() = "cuscope's native half: use the cuscope package, not this module.";
  // A scope that a daemon thread still holds when the interpreter finalizes is never freed, as
  // documented (docs/python.md, Lifetimes); nanobind would call that a reference-counting bug.
  nb::set_leak_warnings(false);
  m.attr("__version__") = nb::str(cuscope::version());
  m.attr("INJECT_BUILD_PATH") = nb::str(CUSCOPE_PYTHON_INJECT_BUILD_PATH);

  bind_scope(m);

  nb::class_<Report>(m, "NativeReport", "A snapshot as the library holds it (cuscope.Report wraps it).")
      .def(
          "json",
          [](const Report& r) {
            ReleaseGil release;  // 100,000 ranges take seconds: other threads run meanwhile
            return format_json(r);
          },
          "The report as the library's JSON.")
      .def("table", &table_of, nb::arg("settings"),
           "The table with CUSCOPE_SORT/ROWS/TOP_KERNELS/FINDINGS settings on top of the session's; "
           "(text, problems).");

  m.def(
      "push", [](nb::str name, nb::handle stream) { cuscope::push(name_bytes(name), push_stream(stream)); },
      nb::arg("name"), nb::arg("stream") = nb::none());
  m.def(
      "pop", [] { cuscope::pop(); },
      R"doc(Closes the calling thread's latest push(); a pop() with no push() is
counted (diagnostics["unbalanced_ends"]), not fatal.

Example::

    cuscope.push("layer")
    run_layer()
    cuscope.pop())doc");
  m.def(
      "count", [](nb::str name, double amount) { cuscope::count(name_bytes(name), amount); }, nb::arg("name"),
      nb::arg("amount") = 1.0, R"doc(Adds ``amount`` to the counter ``name`` of the innermost open scope on
this thread; the report shows it per range with its rates per second of host and GPU
time. inf and NaN are refused and counted.

Example::

    with cuscope.scope("decode"):
        cuscope.count("tokens", batch * new_tokens))doc");
  m.def("_scopes_use_streams", &cuscope::detail::scope_streams_used,
        "Whether a scope entered now would time CUDA events on a stream (cuscope's torch stream lookup asks).");
  m.def("step", &cuscope::step, R"doc(Marks the end of a step (an iteration of the main loop): drives the
wait / warm-up / active window of start(wait_steps=, warmup_steps=, active_steps=, repeat=).

Example::

    for batch in loader:
        with cuscope.scope("step"):
            train(batch)
        cuscope.step())doc");
  m.def("enabled", &cuscope::enabled,
        R"doc(Whether scopes record; before the session starts, whether the first
scope will (CUSCOPE_ENABLE).

Example::

    if cuscope.enabled():
        print(cuscope.snapshot().table()))doc");
  m.def("set_enabled", &cuscope::set_enabled, nb::arg("enabled"),
        R"doc(Turns recording on or off at run time; a scope costs about one branch while off,
and CUPTI's tracing is paused (GPU work launched while off is not recorded).

Example::

    cuscope.set_enabled(False)   # evaluation: not recorded
    evaluate(model)
    cuscope.set_enabled(True))doc");
  m.def(
      "flush",
      [] {
        ReleaseGil release;
        cuscope::flush();
      },
      R"doc(Makes every finished piece of GPU work visible to the next snapshot; never
synchronizes the device (work still running stays pending).

Example::

    torch.cuda.synchronize()
    cuscope.flush()
    report = cuscope.snapshot())doc");
  m.def(
      "shutdown",
      [] {
        ReleaseGil release;
        cuscope::shutdown();
      },
      R"doc(Flushes, prints the exit table if configured, and stops collection; idempotent.
It runs by itself when the interpreter exits; scopes after it record nothing.

Example::

    cuscope.shutdown()           # the table now, not at exit
    final = cuscope.snapshot())doc");
  m.def("shutdown_at_exit", &shutdown_at_exit);
  m.def("snapshot", [] {
    Report r;
    {
      ReleaseGil release;
      r = cuscope::snapshot();
    }
    return r;
  });
  m.def("start", &start_with, nb::arg("settings"));
  m.def("set_python_helpers", &set_python_helpers, nb::arg("torch_stream"), nb::arg("decorate"));
}

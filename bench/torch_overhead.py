#!/usr/bin/env python3
"""What cuscope adds to a PyTorch training step, beside what torch.profiler adds, in one run, as
ratios over the bare step (issue 24, deliverable 5).

    torch_overhead.py --cuscope BUILD/src/cli/cuscope --out DIR [--git-commit SHA] [--rounds R]
                      [--steps N] [--warmup W] [--python-package DIR] [--configs bare,cuscope,...]
                      [--minimal-cupti BUILD/bench/libcuscope_minimal_cupti.so]

The step (torch_overhead_child.py, the children's side): a small, launch-bound transformer-ish
training step on CUDA (layer norm, linear layers, scaled_dot_product_attention, a GELU MLP, a loss,
backward, SGD), its regions marked with torch.cuda.nvtx.range (no-ops with no NVTX tool attached),
the same code in every configuration. Each step ends with torch.cuda.synchronize(); its time is
time.perf_counter_ns() around it. This file is the parent: the rounds, the checks and the figures.

Configurations, each a fresh process of this script (the hidden `--child CONFIG`):
  bare            the step alone
  minimal_cupti   with --minimal-cupti LIB: the step alone under the minimal CUPTI client
                  (CUDA_INJECTION64_PATH=LIB, kernel records only, handed back unread): the floor of
                  CUPTI tracing, what any tracer pays before doing anything with a record
  cuscope         under `cuscope run` with cuscope's defaults (its report: DIR/report-cuscope.json)
  cuscope_external the same with CUSCOPE_ATTRIBUTION=external (the default is launch)
  cuscope_records cuscope's defaults with synchronization and memory records (CUSCOPE_SYNC_RECORDS=1
                  CUSCOPE_MEMORY_RECORDS=1; off by default since they cost): what those records cost
  torch_profiler  torch.profiler.profile(activities=[CPU, CUDA]) around the timed steps; no export
  python_api      with --python-package DIR: the regions as cuscope.scope from that package, no
                  `cuscope run` (its report through CUSCOPE_JSON)
A child runs W warm-up steps (default 50) untimed, then N timed steps (default 200, at least 200
unless --allow-few-steps), and prints one JSON line on standard output: its step times in ns.

Rounds (default 5): every configuration once per round, round r starting at configuration r mod n,
so a slow drift of the machine spreads over every configuration. Per configuration: the median
step of each round, the median of those round medians (the figure), their min and max, and the
median of all steps pooled; ratios over `bare` of the same run: each round's ratio of round
medians (round_ratios_over_bare) and their median (paired_ratio_over_bare, the figure the goal reads:
the bare step drifts between rounds, and a ratio of medians taken from different rounds can hide a
tool's cost inside that drift), beside the ratio of the figures (ratio_over_bare); and
added_ratio = (cuscope - bare) / (torch_profiler - bare) over the paired ratios, the goal being
<= 1/3 (undefined when torch.profiler adds nothing). Each cuscope report must hold the range `step`, entered W + N times,
with kernels attributed; otherwise the run did not measure what it means to. From the same reports,
cuscope's own processing of CUPTI's records (diagnostics.activity_buffers and
activity_processing_ns, off the steps' threads unless a flush lands there) per round, and its
median per step: where cuscope's added time is not in that processing, it is on the launch path.
With minimal_cupti, each configuration's step over that floor's (over_minimal_cupti): what a tool adds
beyond CUPTI's own kernel tracing; the client's line on standard error must say it traced. A
probe child runs under it once before the first round (and gives the versions, so no other probe
runs): a client that does not trace there is left out of every round (a problem, not a failed run),
so the other configurations still measure.

Where each child's wall time went (child_seconds in the JSON, and on each round's line): start (the
interpreter and the tool up to the child's first line), torch (torch's import and CUDA's start),
model, warmup, steps, profiler_exit (torch.profiler's stop), exit (output and teardown: cuscope's
report, torch's and CUDA's). Only the steps are measured; the rest is what a round costs the lease.

Writes DIR/torch-overhead.json (the figures) and DIR/torch-overhead-steps.json (every step time);
each configuration's standard error goes to DIR/stderr-CONFIG.log. Exit status: 2 on bad
arguments; 77 (skipped) when torch with CUDA is not importable, before any configuration runs; 1
when a child fails, a cuscope report is not what the run means or the minimal client did not trace; 0 otherwise (a missed goal is
reported, not an error).

Never time anything but the steps (imports, warm-up, cuscope's exit table and torch.profiler's
processing stay out); never run a configuration's rounds as one block; never take a ratio from
two runs.
"""
import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_overhead_child  # noqa: E402  (beside this script)

from torch_overhead_figures import (  # noqa: E402  (beside this script: the figures of a run)
    CONFIGS, CUSCOPE_RUN, GOAL_ADDED_RATIO, MINIMAL_CUPTI_MARK, WITH_CUSCOPE, added_ratio, added_ratios,
    minimal_cupti_problems, over_minimal_cupti, own_work, report_problems, rotation, spread, summarize,
    verdict)

# What each `cuscope run` configuration sets on top of cuscope's defaults.
CUSCOPE_ENV = {"cuscope": {}, "cuscope_external": {"CUSCOPE_ATTRIBUTION": "external"},
               "cuscope_records": {"CUSCOPE_SYNC_RECORDS": "1", "CUSCOPE_MEMORY_RECORDS": "1"}}
MIN_STEPS = 200
CHILD_TIMEOUT_S = 300


# ---- the parent: rounds of children ----------------------------------------------------------

class ChildFailed(Exception):
    pass


def child_env(extra):
    """The parent's environment without cuscope's settings or any injection, plus `extra`."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUSCOPE_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    env.update(extra)
    return env


def report_path(a, config):
    return os.path.join(a.out, f"report-{config}.json")


def stderr_path(a, config):
    return os.path.join(a.out, f"stderr-{config}.log")


def command(a, config):
    """(argv, extra environment) of one configuration's child."""
    me = [sys.executable, os.path.abspath(__file__), "--child", config,
          "--warmup", str(a.warmup), "--steps", str(a.steps)]
    if a.allow_few_steps:
        me.append("--allow-few-steps")
    if config in CUSCOPE_RUN:
        return [a.cuscope, "run", "--json", report_path(a, config), "--"] + me, dict(CUSCOPE_ENV[config])
    if config == "minimal_cupti":
        return me, {"CUDA_INJECTION64_PATH": a.minimal_cupti}
    if config == "python_api":
        path = os.pathsep.join(filter(None, [a.python_package, os.environ.get("PYTHONPATH")]))
        return me, {"PYTHONPATH": path, "CUSCOPE_JSON": report_path(a, config)}
    return me, {}


def describe(argv, extra):
    """A child's command line as a person would type it: its extra environment, then its argv."""
    return " ".join([f"{k}={v}" for k, v in extra.items()] + argv)


def json_line(stdout):
    """The one line of the child's standard output that is a JSON object (cuscope's own output is not)."""
    found = []
    for line in stdout.splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            found.append(value)
    return found[0] if len(found) == 1 else None


# A child's phases, from its marks (torch_overhead_child.py): (name, mark the phase ends at).
PHASES = [("start", "main"), ("torch", "torch"), ("model", "model"), ("warmup", "warmup"), ("steps", "steps"),
          ("profiler_exit", "profiler_exit")]


def phase_seconds(launched, marks, ended):
    """Where one child's wall time went, in s: start (the interpreter, and `cuscope run` or the
    injected client, up to the child's first line), torch (its import and CUDA's initialization),
    model, warmup, steps, profiler_exit (torch_profiler only), exit (after its last mark, its
    output and the process's teardown: cuscope's report, torch's and CUDA's), and wall."""
    out, last = {}, launched
    for name, mark in PHASES:
        if mark in marks:
            out[name] = round(marks[mark] - last, 3)
            last = marks[mark]
    out["exit"] = round(ended - last, 3)
    out["wall"] = round(ended - launched, 3)
    return out


def describe_phases(seconds):
    """' (wall 12.3 s: start 0.2, torch 3.1, ...)' for the round's line."""
    parts = ", ".join(f"{k} {v:.1f}" for k, v in seconds.items() if k != "wall")
    return f"  wall {seconds['wall']:.1f} s ({parts})"


def run_one(a, config, label):
    """Runs one child; (its JSON line, what it wrote on standard error, where its wall time went).
    Raises ChildFailed when it fails."""
    argv, extra = command(a, config)
    log = stderr_path(a, config)
    with open(log, "a") as err:
        err.write(f"=== {label}: {describe(argv, extra)}\n")
        err.flush()
        start = err.tell()
        launched = time.time()
        try:
            p = subprocess.run(argv, env=child_env(extra), stdout=subprocess.PIPE, stderr=err, text=True,
                               timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise ChildFailed(f"{config} ({label}) ran past {CHILD_TIMEOUT_S} s; its standard error: {log}")
        ended = time.time()
    if p.returncode != 0:
        raise ChildFailed(f"{config} ({label}) exited {p.returncode}; its standard error: {log}")
    result = json_line(p.stdout)
    if result is None or result.get("config") != config:
        raise ChildFailed(f"{config} ({label}) printed no JSON line of its steps; its standard error: {log}")
    seconds = phase_seconds(launched, result.get("marks", {}), ended)
    with open(log, errors="replace") as f:
        f.seek(start)
        return result, f.read(), seconds


def check_report(a, config):
    """(problems of one cuscope configuration's report after a round, [] when none; its own work,
    None when there is no readable report)."""
    path = report_path(a, config)
    try:
        with open(path) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        return [f"{config}: no readable report at {path} ({e})"], None
    steps = a.warmup + a.steps
    return [f"{config}: {p} (report {path})" for p in report_problems(report, steps)], own_work(report, steps)


def own_work_summary(rounds):
    """Per configuration: each round's own work, and the median of its ns per step."""
    per_step = [r["per_step_ns"] for r in rounds if r is not None and r["per_step_ns"] is not None]
    return {"rounds": rounds, "median_per_step_ns": statistics.median(per_step) if per_step else None}


def run_rounds(a, configs):
    """({config: [step times per round]}, problems, {config: [own work per round]}, {config: [where
    each round's child spent its wall time]}), the configurations interleaved round by round."""
    step_ns = {config: [] for config in configs}
    own = {config: [] for config in configs if config in WITH_CUSCOPE}
    seconds = {config: [] for config in configs}
    problems = []
    order = rotation(configs, a.rounds)
    for r, round_order in enumerate(order):
        for config in round_order:
            result, stderr_text, spent = run_one(a, config, f"round {r + 1}/{a.rounds}")
            step_ns[config].append(result["step_ns"])
            seconds[config].append(spent)
            if config == "minimal_cupti":
                problems += [f"round {r + 1}: {p}"
                             for p in minimal_cupti_problems(stderr_text, stderr_path(a, config))]
            if config in WITH_CUSCOPE:
                found, work = check_report(a, config)
                problems += [f"round {r + 1}: {p}" for p in found]
                own[config].append(work)
            print(f"round {r + 1}/{a.rounds}  {config:15} median step "
                  f"{statistics.median(result['step_ns']) / 1e3:9.1f} µs{describe_phases(spent)}", flush=True)
    return step_ns, problems, own, seconds


def summary(a, configs, versions, step_ns, problems, own, seconds=None):
    """The JSON written to torch-overhead.json."""
    figures = summarize(step_ns)
    added = added_ratios(figures)
    goal = added.get("cuscope", {"value": None, "verdict": "undefined"})
    return {
        "what": "PyTorch training step time (ns, perf_counter around the step and its synchronize): "
                "bare, under cuscope and under torch.profiler, as ratios over the bare step of the same run",
        "commit": a.git_commit,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "host": platform.node(),
        **versions,
        "model": torch_overhead_child.MODEL,
        "warmup": a.warmup, "steps": a.steps, "rounds": a.rounds,
        "configurations": {c: describe(*command(a, c)) for c in configs},
        "order": rotation(configs, a.rounds),
        "figures": figures,
        "added_ratio": added,
        "over_minimal_cupti": over_minimal_cupti(figures),
        "goal": {"what": "(cuscope - bare) / (torch_profiler - bare) <= 1/3", **goal},
        "own_work": {c: own_work_summary(rounds) for c, rounds in own.items()},
        "child_seconds": seconds or {},
        "problems": problems,
    }


def print_table(s):
    print(f"\n{'configuration':16} {'median step':>12} {'paired':>7} {'rounds':>21} {'of medians':>10} "
          f"{'round medians':>21} {'pooled':>10}")
    for config, f in s["figures"].items():
        rounds = f"{f['min_round_median_ns'] / 1e3:.1f}-{f['max_round_median_ns'] / 1e3:.1f} µs"
        ratios = f"{min(f['round_ratios_over_bare']):.3f}-{max(f['round_ratios_over_bare']):.3f}"
        print(f"{config:16} {f['median_ns'] / 1e3:9.1f} µs {f['paired_ratio_over_bare']:7.3f} {ratios:>21} "
              f"{f['ratio_over_bare']:10.3f} {rounds:>21} {f['pooled_median_ns'] / 1e3:7.1f} µs")
    print("paired: the median of each round's ratio over that round's bare step (the goal reads it); "
          "of medians: the ratio of the medians of the round medians")
    for config, r in s["added_ratio"].items():
        value = "undefined: torch.profiler added nothing"
        if r["value"] is not None:
            value = f"{r['value']:.3f}: {r['verdict']}"
        goal = {"cuscope": " (the goal: <= 1/3)", "minimal_cupti": " (CUPTI's kernel tracing alone)"}.get(config, "")
        print(f"added by {config} / added by torch_profiler: {value}{goal}")
    for config, ratio in s["over_minimal_cupti"].items():
        print(f"{config} / minimal_cupti (over the floor of CUPTI tracing): {ratio:.3f}")
    for config, w in s["own_work"].items():
        if w["median_per_step_ns"] is not None:
            print(f"cuscope's own processing of CUPTI's records ({config}): {w['median_per_step_ns'] / 1e3:.2f} µs "
                  "a step (median over rounds)")
    for p in s["problems"]:
        print(f"NOT MEASURED AS MEANT: {p}")


def probe_child(extra):
    """Runs the probe child (torch imported, CUDA initialized, no step) with `extra` in its
    environment: (its CompletedProcess, its argv). Raises ChildFailed past the time limit."""
    argv = [sys.executable, os.path.abspath(__file__), "--child", "probe"]
    try:
        return subprocess.run(argv, env=child_env(extra), capture_output=True, text=True,
                              timeout=CHILD_TIMEOUT_S), argv
    except subprocess.TimeoutExpired:
        raise ChildFailed(f"the probe ({describe(argv, extra)}) ran past {CHILD_TIMEOUT_S} s")


def probe_versions(p, argv, extra):
    """The versions a probe child printed, or {'skipped': why} when this Python has no torch with
    CUDA. Raises ChildFailed when the probe failed otherwise."""
    result = json_line(p.stdout)
    if p.returncode not in (0, torch_overhead_child.SKIPPED) or result is None:
        raise ChildFailed(f"the probe ({describe(argv, extra)}) exited {p.returncode}: {p.stderr.strip()[-2000:]}")
    result.pop("marks", None)
    return result


def run_probe(a):
    """The children's versions, or {'skipped': why} when this Python has no torch with CUDA."""
    p, argv = probe_child({})
    return probe_versions(p, argv, {})


def probe_under_minimal_cupti(a):
    """(the children's versions or {'skipped': why}, why the minimal CUPTI client cannot measure the
    floor here, '' when it can): the probe child once under the client, before any round, so that a
    client that fails to load, refuses or crashes the child is left out instead of stopping the
    whole run. The same child gives the versions (one torch import and CUDA start-up fewer than a
    probe of its own); a plain probe only where the client's failed."""
    extra = command(a, "minimal_cupti")[1]  # the client, as its rounds' children have it
    try:
        p, argv = probe_child(extra)
    except ChildFailed as e:
        return run_probe(a), str(e)
    if p.returncode == torch_overhead_child.SKIPPED and json_line(p.stdout) is not None:
        return probe_versions(p, argv, extra), ""  # no torch with CUDA: the run is skipped
    if p.returncode != 0:
        return run_probe(a), f"its probe ({describe(argv, extra)}) exited {p.returncode}: {p.stderr.strip()[-500:]}"
    found = minimal_cupti_problems(p.stderr, "the probe's standard error")
    why = found[0].removeprefix("minimal_cupti: ") if found else ""
    return (probe_versions(p, argv, extra) if json_line(p.stdout) is not None else run_probe(a)), why


def parent(a, configs):
    why = ""
    try:
        if "minimal_cupti" in configs:
            versions, why = probe_under_minimal_cupti(a)
        else:
            versions = run_probe(a)
    except ChildFailed as e:
        print(f"torch_overhead.py: {e}", file=sys.stderr)
        return 1
    if "skipped" in versions:
        print(f"torch_overhead.py: skipped: {versions['skipped']}")
        return torch_overhead_child.SKIPPED
    os.makedirs(a.out, exist_ok=True)
    left_out = []
    if why:
        left_out.append(f"minimal_cupti left out of every round: {why}")
        configs = [c for c in configs if c != "minimal_cupti"]
    for config in configs:
        open(stderr_path(a, config), "w").close()
    try:
        step_ns, problems, own, seconds = run_rounds(a, configs)
    except ChildFailed as e:
        print(f"torch_overhead.py: a child failed: {e}", file=sys.stderr)
        return 1
    problems = left_out + problems
    s = summary(a, configs, versions, step_ns, problems, own, seconds)
    with open(os.path.join(a.out, "torch-overhead.json"), "w") as f:
        json.dump(s, f, indent=2)
        f.write("\n")
    with open(os.path.join(a.out, "torch-overhead-steps.json"), "w") as f:
        json.dump({"unit": "ns", "order": s["order"], "step_ns": step_ns}, f)
        f.write("\n")
    print_table(s)
    return 1 if problems else 0


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuscope", help="the cuscope CLI (BUILD/src/cli/cuscope)")
    ap.add_argument("--out", help="folder for torch-overhead.json, the reports and the children's stderr")
    ap.add_argument("--git-commit", help="the commit measured (kept in the JSON)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--steps", type=int, default=MIN_STEPS, help=f"timed steps per child (at least {MIN_STEPS})")
    ap.add_argument("--warmup", type=int, default=50, help="untimed steps before them")
    ap.add_argument("--allow-few-steps", action="store_true", help=f"allow --steps below {MIN_STEPS} (tests)")
    ap.add_argument("--configs", help=f"comma-separated, from {','.join(CONFIGS)} (default: all that apply)")
    ap.add_argument("--python-package", help="a folder holding the cuscope Python package: adds python_api")
    ap.add_argument("--minimal-cupti", help="the minimal CUPTI client's injection library "
                                            "(BUILD/bench/libcuscope_minimal_cupti.so): adds minimal_cupti")
    ap.add_argument("--child", choices=CONFIGS + ["probe"], help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.steps < MIN_STEPS and not a.allow_few_steps:
        ap.error(f"--steps {a.steps}: the issue asks for at least {MIN_STEPS} timed steps "
                 "(--allow-few-steps for a test run)")
    if a.steps < 1 or a.warmup < 0 or a.rounds < 1:
        ap.error("--steps and --rounds must be at least 1, --warmup at least 0")
    if a.child:
        return a, []
    a.out, a.cuscope, a.python_package, a.minimal_cupti = (
        p and os.path.abspath(p) for p in (a.out, a.cuscope, a.python_package, a.minimal_cupti))
    configs = chosen_configs(ap, a)
    if a.out is None:
        ap.error("--out is required")
    if any(c in CUSCOPE_RUN for c in configs) and not (a.cuscope and os.access(a.cuscope, os.X_OK)):
        ap.error(f"--cuscope must name the cuscope CLI (an executable file), not {a.cuscope!r}")
    if a.minimal_cupti and not os.path.isfile(a.minimal_cupti):
        ap.error(f"--minimal-cupti must name the minimal CUPTI client's library (a file), not {a.minimal_cupti!r}")
    return a, configs


def chosen_configs(ap, a):
    if a.configs is None:
        return [c for c in CONFIGS
                if (c != "python_api" or a.python_package) and (c != "minimal_cupti" or a.minimal_cupti)]
    configs = a.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"unknown configuration '{c}' (known: {', '.join(CONFIGS)})")
    if len(set(configs)) != len(configs) or "bare" not in configs:
        ap.error("--configs names each configuration once, bare among them (the ratios are over it)")
    if "python_api" in configs and not a.python_package:
        ap.error("python_api needs --python-package")
    if "minimal_cupti" in configs and not a.minimal_cupti:
        ap.error("minimal_cupti needs --minimal-cupti")
    return configs


def main(argv):
    a, configs = parse_args(argv)
    if a.child:
        return torch_overhead_child.child(a.child, a.warmup, a.steps)
    return parent(a, configs)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The figures of bench/torch_overhead.py's run, from plain lists in to plain values out: each
configuration's median step and spread over rounds, its ratios over the bare step of the same run
(paired by round, the figure the goal reads), what it adds beside what torch.profiler adds, and
whether a child's report and standard error show it measured what the run means.

Never here: running anything (children, torch, CUDA) or reading files; never a ratio of two runs.
"""
import statistics

CONFIGS = ["bare", "minimal_cupti", "cuscope", "cuscope_external", "cuscope_records", "torch_profiler",
           "python_api"]
CUSCOPE_RUN = ("cuscope", "cuscope_external", "cuscope_records")
WITH_CUSCOPE = CUSCOPE_RUN + ("python_api",)
# The minimal CUPTI client's line on standard error when it traces (bench/minimal_cupti_inject.cpp).
MINIMAL_CUPTI_MARK = "cuscope_minimal_cupti: tracing kernels"
GOAL_ADDED_RATIO = 1 / 3


def rotation(configs, rounds):
    """The order of each round: round r starts at configuration r mod n."""
    n = len(configs)
    return [configs[r % n:] + configs[:r % n] for r in range(rounds)]


def spread(rounds_step_ns):
    """One configuration's figures from its step times, one list per round."""
    medians = [statistics.median(steps) for steps in rounds_step_ns]
    return {
        "round_medians_ns": medians,
        "median_ns": statistics.median(medians),
        "min_round_median_ns": min(medians),
        "max_round_median_ns": max(medians),
        "pooled_median_ns": statistics.median([t for steps in rounds_step_ns for t in steps]),
    }


def summarize(step_ns):
    """{config: figures} from {config: [round's step times, ...]}, with ratios over step_ns['bare']."""
    figures = {config: spread(rounds) for config, rounds in step_ns.items()}
    bare = figures["bare"]
    for f in figures.values():
        f["ratio_over_bare"] = f["median_ns"] / bare["median_ns"]
        f["round_ratios_over_bare"] = [m / b for m, b in zip(f["round_medians_ns"], bare["round_medians_ns"])]
        f["paired_ratio_over_bare"] = statistics.median(f["round_ratios_over_bare"])
    return figures


def added_ratio(bare_ns, tool_ns, profiler_ns):
    """What a tool adds over what torch.profiler adds; None when torch.profiler adds nothing."""
    profiler_added_ns = profiler_ns - bare_ns
    if profiler_added_ns <= 0:
        return None
    return (tool_ns - bare_ns) / profiler_added_ns


def verdict(ratio, goal=GOAL_ADDED_RATIO):
    if ratio is None:
        return "undefined"
    return "met" if ratio <= goal else "missed"


def added_ratios(figures):
    """{tool config: {value, verdict}} for each cuscope configuration measured beside torch.profiler,
    and for the minimal CUPTI client: the share of torch.profiler's added time that CUPTI's kernel
    tracing alone takes."""
    if "torch_profiler" not in figures:
        return {}
    profiler = figures["torch_profiler"]["paired_ratio_over_bare"]
    out = {}
    for config in WITH_CUSCOPE + ("minimal_cupti",):
        if config in figures:
            value = added_ratio(1.0, figures[config]["paired_ratio_over_bare"], profiler)
            out[config] = {"value": value, "verdict": verdict(value)}
    return out


def over_minimal_cupti(figures):
    """{config: the median over rounds of its round median / the minimal CUPTI client's} for every
    tool configuration, when the run measured that floor; {} otherwise."""
    if "minimal_cupti" not in figures:
        return {}
    floor = figures["minimal_cupti"]["round_medians_ns"]
    return {config: statistics.median(m / b for m, b in zip(f["round_medians_ns"], floor))
            for config, f in figures.items() if config not in ("bare", "minimal_cupti")}


def minimal_cupti_problems(stderr_text, log):
    """Why the minimal CUPTI client's child did not measure the floor ([] when it did): its line on
    standard error must say it traced."""
    if MINIMAL_CUPTI_MARK in stderr_text:
        return []
    said = [line for line in stderr_text.splitlines() if line.startswith("cuscope_minimal_cupti:")]
    why = f"it said '{said[0]}'" if said else "the library was not loaded (no CUDA initialized, or not an injection library)"
    return [f"minimal_cupti: no line '{MINIMAL_CUPTI_MARK}' in its standard error: {why} ({log})"]


def own_work(report, steps):
    """cuscope's own processing of CUPTI's records in one report: buffers, ns and ns per step (None
    where the report predates the fields)."""
    d = report.get("diagnostics", {})
    buffers, ns = d.get("activity_buffers"), d.get("activity_processing_ns")
    return {"buffers": buffers, "processing_ns": ns,
            "per_step_ns": None if ns is None or steps <= 0 else ns / steps}


def report_problems(report, expected_calls):
    """Why a cuscope report (its parsed JSON) shows the step was not measured as meant; [] when it was."""
    step = next((r for r in report.get("ranges", []) if r.get("path") == "step"), None)
    if step is None:
        return ["no range 'step' in the report"]
    problems = []
    if step["calls"] != expected_calls:
        problems.append(f"'step' entered {step['calls']} times, not {expected_calls}")
    if step["total"]["kernel_calls"] == 0:
        problems.append("no kernel attributed to 'step'")
    return problems

"""HolisticTraceAnalysis reads `cuscope trace`'s output: its kernel breakdown and temporal breakdown
must find exactly the kernels the synthetic run launched (names, counts, total durations) and the
GPU time they add up to.

usage: check_hta.py TRACE_DIR EXPECTED.json
TRACE_DIR holds one Kineto-format JSON trace (cuscope trace TRACE -o TRACE_DIR/x.json).
EXPECTED.json is what cuscope_trace_program launched.
"""
import json
import os
import sys

# Nanosecond timestamps as they are: HTA otherwise rounds each event inward to whole microseconds.
os.environ["HTA_DISABLE_NS_ROUNDING"] = "1"

from hta.trace_analysis import TraceAnalysis  # noqa: E402

US = 1e-3  # microseconds per nanosecond


def union(intervals):
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def measure(intervals):
    return sum(e - s for s, e in union(intervals))


def minus(a, b):
    """The measure of union(a) outside union(b)."""
    return measure(a) - measure(union(a) and [[max(s, bs), min(e, be)] for s, e in union(a)
                                               for bs, be in union(b) if min(e, be) > max(s, bs)])


def close(a, b):
    return abs(a - b) <= 1e-6 * max(1.0, abs(b))


def main():
    trace_dir, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path) as f:
        launched = json.load(f)["launched"]
    failures = []

    analyzer = TraceAnalysis(trace_dir=trace_dir, include_last_profiler_step=True)
    _, kernels = analyzer.get_gpu_kernel_breakdown(visualize=False, num_kernels=1000, duration_ratio=1.0)

    expected = {}
    for l in launched:
        name = l["name"]
        count, total = expected.get(name, (0, 0))
        expected[name] = (count + 1, total + l["end_ns"] - l["start_ns"])
    got = {}
    for _, row in kernels.iterrows():
        count = round(row["sum (us)"] / row["mean (us)"]) if row["mean (us)"] else 0
        got[row["name"]] = (count, row["sum (us)"])
    if sorted(got) != sorted(expected):
        failures.append(f"kernel names: HTA {sorted(got)}, launched {sorted(expected)}")
    for name, (count, total_ns) in expected.items():
        if name not in got:
            continue
        if got[name][0] != count:
            failures.append(f"{name}: HTA counts {got[name][0]}, launched {count}")
        if not close(got[name][1], total_ns * US):
            failures.append(f"{name}: HTA total {got[name][1]} us, launched {total_ns * US} us")

    temporal = analyzer.get_temporal_breakdown(visualize=False).iloc[0]
    compute = [(l["start_ns"], l["end_ns"]) for l in launched if l["kind"] == "kernel"]
    memory = [(l["start_ns"], l["end_ns"]) for l in launched if l["kind"] != "kernel"]
    everything = compute + memory
    span = max(e for _, e in everything) - min(s for s, _ in everything)
    want = {
        "kernel_time(us)": span * US,
        "compute_time(us)": measure(compute) * US,
        "non_compute_time(us)": minus(memory, compute) * US,
        "idle_time(us)": (span - measure(everything)) * US,
    }
    for column, value in want.items():
        if not close(float(temporal[column]), value):
            failures.append(f"temporal breakdown {column}: HTA {temporal[column]}, expected {value}")

    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print(f"HTA agrees: {len(expected)} kernel names, {len(launched)} launches, "
          f"compute {want['compute_time(us)']:.3f} us, idle {want['idle_time(us)']:.3f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())

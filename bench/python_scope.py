#!/usr/bin/env python3
"""What a Python scope costs: `with cuscope.scope()` (enter and exit) against the alternatives, in
one run, as ratios (issue 25, deliverable 5).

    python bench/python_scope.py [--out FILE] [--note TEXT] [--number N] [--repeat R]

Runs the cases twice, each time in a fresh process: with no NVTX tool attached ("plain"), then
under zero-code cuscope (`python -m cuscope run`, where nvtx.annotate's ranges become cuscope
ranges too). Each case is a timeit loop of N entries, repeated R times with the cases interleaved;
the figure is the fastest repeat (the least disturbed by other load), per entry, loop included.
The goals: cuscope.scope costs no more than a reused nvtx.annotate, and adds at most 2x what
nullcontext adds over an empty loop. Needs the cuscope package (and nvtx; torch when installed).
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import timeit

CASES = {
    "empty loop": ("", "pass"),
    "nullcontext (reused)": ("import contextlib; c = contextlib.nullcontext()", "with c:\n    pass"),
    "nullcontext (made each time)": ("import contextlib", "with contextlib.nullcontext():\n    pass"),
    "cuscope.scope (reused)": ("import cuscope; s = cuscope.scope('bench')", "with s:\n    pass"),
    "cuscope.scope (made each time)": ("import cuscope", "with cuscope.scope('bench'):\n    pass"),
    "cuscope.scope decorator call": ("import cuscope\n@cuscope.scope('bench_f')\ndef f(): pass", "f()"),
    "plain function call": ("def f(): pass", "f()"),
    "nvtx.annotate (reused)": ("import nvtx; a = nvtx.annotate('bench')", "with a:\n    pass"),
    "nvtx.annotate (made each time)": ("import nvtx", "with nvtx.annotate('bench'):\n    pass"),
    "torch record_function (made each time)": (
        "import torch", "with torch.profiler.record_function('bench'):\n    pass"),
}


def available(setup):
    try:
        exec(setup, {})
        return True
    except ImportError:
        return False


def measure(number, repeat):
    """{case: fastest ns per entry} in this process."""
    cases = {name: c for name, c in CASES.items() if available(c[0])}
    timers = {name: timeit.Timer(stmt, setup) for name, (setup, stmt) in cases.items()}
    for t in timers.values():
        t.timeit(number // 10)  # warm up: the session starts, names are interned
    best = {name: float("inf") for name in timers}
    for _ in range(repeat):
        for name, t in timers.items():
            best[name] = min(best[name], t.timeit(number) * 1e9 / number)
    return best


def ratios(ns):
    out = {}
    extra = ns["nullcontext (reused)"] - ns["empty loop"]
    for form in ("reused", "made each time"):
        name = f"cuscope.scope ({form})"
        out[f"{name} / nvtx.annotate (reused)"] = ns[name] / ns["nvtx.annotate (reused)"]
        out[f"{name} over empty loop / nullcontext (reused) over empty loop"] = (ns[name] - ns["empty loop"]) / extra
        out[f"{name} / nullcontext (made each time)"] = ns[name] / ns["nullcontext (made each time)"]
    out["decorator call / plain function call"] = ns["cuscope.scope decorator call"] / ns["plain function call"]
    if "torch record_function (made each time)" in ns:
        out["torch record_function / cuscope.scope (made each time)"] = (
            ns["torch record_function (made each time)"] / ns["cuscope.scope (made each time)"])
    return out


def child(mode, number, repeat):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("CUSCOPE_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
    env["CUSCOPE_PRINT"] = "0"
    prefix = [sys.executable] if mode == "plain" else [sys.executable, "-m", "cuscope", "run", "--"]
    cmd = prefix + [os.path.abspath(__file__), "--child", "--number", str(number), "--repeat", str(repeat)]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(p.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", help="write the figures as JSON here")
    ap.add_argument("--note", default="", help="what a reader must know about the machine (kept in the JSON)")
    ap.add_argument("--number", type=int, default=200_000)
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        print(json.dumps(measure(args.number, args.repeat)))
        return
    import cuscope
    result = {
        "what": "ns per entry (enter + exit, loop included), fastest of the repeats; ratios between cases",
        "date": datetime.date.today().isoformat(),
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpus": os.cpu_count(),
        "note": args.note,
        "python": platform.python_version(),
        "cuscope": cuscope.__version__,
        "number": args.number,
        "repeat": args.repeat,
        "modes": {},
    }
    for mode in ("plain", "zero-code"):
        ns = child(mode, args.number, args.repeat)
        result["modes"][mode] = {"ns_per_entry": ns, "ratios": ratios(ns)}
        print(f"== {mode} ==")
        for name, v in ns.items():
            print(f"  {name:42s} {v:8.1f} ns")
        for name, v in result["modes"][mode]["ratios"].items():
            print(f"  {name:80s} {v:6.2f}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=2)
            f.write("\n")


if __name__ == "__main__":
    main()

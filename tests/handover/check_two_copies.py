#!/usr/bin/env python3
"""Two copies of cuscope in one process that links none (two_copies.cpp), from outside.

    check_two_copies.py TWO_COPIES LIB_A LIB_B WORKDIR

For each mode (first-a, first-b, race), runs the program in a fresh process and compares exactly:
which start() started the session (one of the two), what each copy's snapshot() sees (the same
tree: the copy that did not start forwards to the one that did), the exit report's ranges
(CUSCOPE_JSON) and the number of tables at exit (one). Exits 1 on the first mismatch, naming it.
"""
import json
import os
import subprocess
import sys

PROGRAM, LIB_A, LIB_B, WORK = sys.argv[1:5]
os.makedirs(WORK, exist_ok=True)
ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("CUSCOPE_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}

# mode -> (the start() that starts the session, or None for either; the calls per range path)
CASES = {
    "first-a": ("a", {"copy_a": 2, "copy_a/copy_b": 6}),
    "first-b": ("b", {"copy_b": 2, "copy_b/copy_a": 6}),
    "race": (None, {"copy_a": 4, "copy_b": 5}),
}
PATHS = ["copy_a", "copy_a/copy_b", "copy_b", "copy_b/copy_a"]


def check(mode, starter, ranges):
    out = os.path.join(WORK, f"{mode}.json")
    p = subprocess.run([PROGRAM, LIB_A, LIB_B, mode], env={**ENV, "CUSCOPE_JSON": out},
                       capture_output=True, text=True, timeout=120)
    problems = []
    lines = p.stdout.splitlines()
    if p.returncode != 0 or len(lines) != 3:
        problems.append(f"exit {p.returncode}, stdout {p.stdout!r}")
    else:
        started = lines[0]
        allowed = ["started: a=1 b=0", "started: a=0 b=1"] if starter is None else \
            [f"started: a={int(starter == 'a')} b={int(starter == 'b')}"]
        if started not in allowed:
            problems.append(f"{started!r}, expected one of {allowed}: exactly one start() starts the session")
        seen = " ".join(f"{path}={ranges.get(path, 0)}" for path in PATHS)
        for copy, line in zip("ab", lines[1:]):
            if line != f"{copy} sees: {seen}":
                problems.append(f"{line!r}, expected '{copy} sees: {seen}'")
        with open(out) as f:
            report = {r["path"]: r["calls"] for r in json.load(f)["ranges"] if r["path"]}
        if report != ranges:
            problems.append(f"exit report {report}, expected {ranges}")
    tables = sum(1 for line in p.stderr.splitlines() if line.startswith("cuscope ") and " — device: " in line)
    if tables != 1:
        problems.append(f"{tables} tables at exit, expected 1")
    if problems:
        print(f"FAIL: {mode}:\n  " + "\n  ".join(problems) + f"\nstderr:\n{p.stderr[-3000:]}")
        sys.exit(1)
    print(f"ok: {mode}: {lines[0]}")


for mode, (starter, ranges) in CASES.items():
    check(mode, starter, ranges)
for i in range(20):  # the race again: the claim must hold however the threads interleave
    check("race", *CASES["race"])

"""Checks the shape of `cuscope trace`'s output against the report of the same trace.

usage: check_kineto.py TRACE.json REPORT.json
Every scope instance is one complete event on its thread, properly nested; no two complete events
partially overlap on one track (Perfetto would drop one); every flow arrow starts on a launch and
ends on a piece of GPU work with the same correlation; a copy's launch is named cudaMemcpy exactly
when the copy blocked the host (its "blocking" argument), cudaMemcpyAsync otherwise.
"""
import json
import sys
from collections import defaultdict


def main():
    with open(sys.argv[1]) as f:
        trace = json.load(f)
    with open(sys.argv[2]) as f:
        report = json.load(f)
    events = trace["traceEvents"]
    failures = []

    ranges = [e for e in events if e["ph"] == "X" and e["cat"] == "user_annotation"
              and not e["name"].startswith("ProfilerStep")]
    per_path = defaultdict(int)
    for e in ranges:
        per_path[e["args"]["path"]] += 1
    want = {r["path"]: r["calls"] for r in report["ranges"][1:] if r["calls"] and r["name"] != "(unscoped)"}
    if dict(per_path) != want:
        failures.append(f"range events per path {dict(per_path)}, report calls {want}")

    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            tracks[(e["pid"], e["tid"])].append((float(e["ts"]), float(e["ts"]) + float(e["dur"]), e["name"]))
    for key, spans in tracks.items():
        stack = []
        for start, end, name in sorted(spans, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1][1] <= start + 1e-9:
                stack.pop()
            if stack and end > stack[-1][1] + 1e-9:
                failures.append(f"track {key}: {name} [{start}, {end}] partially overlaps {stack[-1][2]}")
                break
            stack.append((start, end, name))

    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    finishes = {e["id"]: e for e in events if e["ph"] == "f"}
    work = {e["args"]["correlation"] for e in events if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")}
    launches = {e["args"]["correlation"] for e in events if e.get("cat") == "cuda_runtime"}
    if set(starts) != set(finishes) or set(starts) != (work & launches):
        failures.append(f"flows: {len(starts)} starts, {len(finishes)} ends, {len(work & launches)} launches with work")
    for i, f in finishes.items():
        if f.get("bp") != "e" or f.get("cat") != "ac2g" or starts.get(i, {}).get("cat") != "ac2g":
            failures.append(f"flow {i} is not Kineto's ac2g shape")
            break

    copies = {e["args"]["correlation"]: e for e in events if e.get("cat") == "gpu_memcpy"}
    copy_calls = 0
    for e in events:
        copy = copies.get(e["args"].get("correlation")) if e.get("cat") == "cuda_runtime" else None
        if copy is None:
            continue
        copy_calls += 1
        want = "cudaMemcpy" if copy["args"]["blocking"] else "cudaMemcpyAsync"
        if e["name"] != want:
            failures.append(f"the launch of copy {e['args']['correlation']} is {e['name']}, expected {want}")
            break
    if copies and not copy_calls:
        failures.append(f"{len(copies)} copies, none with its launch")

    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"kineto: {len(ranges)} range events over {len(want)} paths, {len(tracks)} tracks, {len(starts)} flows, "
              f"{copy_calls} copy launches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

"""Crafted cuscope JSON reports (schema cuscope.report/1) for the tests of `cuscope diff`, `flame`
and `merge`: a tree given as nested dicts, every other field left at what the reader defaults to.
Also the checks those tests share: the first failed check ends the test with its message."""
import json
import sys


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def report(tree, rank=None, world_size=None):
    """tree: {name: {"calls": n, "host_ns": total, "gpu_ns": total, "kernel_ns": k, "busy": (busy, span),
    "bytes": b, "verdict": {...}, "children": {...}}}. Host and GPU totals are over `calls` calls."""
    ranges = [{"id": 0, "name": "", "path": "", "parent": None, "depth": 0, "children": []}]

    def add(name, spec, parent, depth):
        i = len(ranges)
        path = name if parent == 0 else ranges[parent]["path"] + "/" + name
        calls = spec.get("calls", 1)
        busy, span = spec.get("busy", (0, 0))
        r = {"id": i, "name": name, "path": path, "parent": parent, "depth": depth, "children": [],
             "calls": calls,
             "host": {"count": calls, "total_ns": spec.get("host_ns", 0)},
             "gpu": {"count": calls if spec.get("gpu_ns") else 0, "total_ns": spec.get("gpu_ns", 0)},
             "total": {"kernel_calls": 1 if spec.get("kernel_ns") else 0, "kernel_ns": spec.get("kernel_ns", 0),
                       "gpu_busy_ns": busy, "gpu_span_ns": span,
                       "memcpy": {"HtoD": {"count": 1, "bytes": spec.get("bytes", 0), "total_ns": 0}}}}
        if "verdict" in spec:
            r["verdict"] = spec["verdict"]
        ranges.append(r)
        ranges[parent]["children"].append(i)
        for child, s in spec.get("children", {}).items():
            add(child, s, i, depth + 1)

    for name, spec in tree.items():
        add(name, spec, 0, 1)
    return {"schema": "cuscope.report/1", "device": "no GPU", "rank": rank, "world_size": world_size,
            "ranges": ranges}


def write(path, tree, **kw):
    with open(path, "w") as f:
        json.dump(report(tree, **kw), f, indent=1)

#!/usr/bin/env python3
"""`cuscope diff` as a CI gate, on crafted report pairs: each metric just at its threshold (exit 0)
and just past it (exit 1), --min-time, ranges that appear or disappear, --json, and bad or
mismatched input (exit 2, one line on stderr).

usage: check_diff.py CUSCOPE WORK_DIR"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reports  # noqa: E402

cli, work = sys.argv[1:3]
shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
failures = 0


def diff(*args):
    return subprocess.run([cli, "diff", *args], capture_output=True, text=True)


def expect(what, args, status, stdout_has=(), stderr=None):
    global failures
    r = diff(*args)
    problems = []
    if r.returncode != status:
        problems.append(f"exit {r.returncode}, expected {status}")
    problems += [f"stdout lacks {s!r}" for s in stdout_has if s not in r.stdout]
    if stderr is not None and r.stderr != stderr:
        problems.append(f"stderr {r.stderr!r}, expected {stderr!r}")
    if problems:
        failures += 1
        print(f"FAIL: {what}: {'; '.join(problems)}\n{r.stdout}{r.stderr}")
    else:
        print(f"ok: {what}")
    return r


# A base: step (10 calls, 10 ms mean host) > fwd with GPU work; > old (only in base).
def tree(host=100_000_000, calls=10, gpu=50_000_000, kernel=40_000_000, busy=(800, 1000), nbytes=1000,
         extra="old"):
    return {"step": {"calls": calls, "host_ns": host, "children": {
        "fwd": {"calls": 10, "host_ns": 60_000_000, "gpu_ns": gpu, "kernel_ns": kernel, "busy": busy,
                "bytes": nbytes},
        extra: {"calls": 10, "host_ns": 1_000_000}}}}


reports.write("base.json", tree())
# Each metric of one range at +10% (a regression only past the threshold) and at +10.1%.
cases = {
    "host": (dict(host=110_000_000), dict(host=110_100_000)),
    "calls": (dict(calls=11, host=110_000_000), dict(calls=12, host=120_000_000)),
    "gpu": (dict(gpu=55_000_000), dict(gpu=55_050_000)),
    "kernel": (dict(kernel=44_000_000), dict(kernel=44_040_000)),
    "bytes": (dict(nbytes=1100), dict(nbytes=1101)),
    "busy": (dict(busy=(720, 1000)), dict(busy=(719, 1000))),  # busy share: less is worse
}
for metric, (at, past) in cases.items():
    reports.write(f"{metric}-at.json", tree(**at))
    reports.write(f"{metric}-past.json", tree(**past))
    expect(f"{metric} at +10% (threshold 10%): no regression", ["--metric", metric, "base.json", f"{metric}-at.json"],
           0, ["result: no regression\n"])
    r = expect(f"{metric} just past 10%: regression", ["--metric", metric, "base.json", f"{metric}-past.json"], 1,
               ["result: 1 regression\n"])
    flagged = [l for l in r.stdout.splitlines() if l.endswith("REGRESSED")]
    if len(flagged) != 1 or metric not in flagged[0].split():
        failures += 1
        print(f"FAIL: {metric}: the REGRESSED row is {flagged}")
# Other metrics do not gate unless asked: the default gate is host.
expect("a kernel regression does not gate by default", ["base.json", "kernel-past.json"], 0,
       ["gate: host beyond 10.0%"])
expect("--threshold 5% catches +10%", ["--threshold", "5%", "base.json", "host-at.json"], 1)
expect("--threshold 0.11 passes +10.1%", ["--threshold", "0.11", "base.json", "host-past.json"], 0)
expect("--metric all gates every metric", ["--metric", "all", "base.json", "busy-past.json"], 1)
expect("faster is never a regression", ["--metric", "all", "host-past.json", "base.json"], 0)

# --min-time: step's host total is 100 ms; fwd's largest time is 60 ms.
reports.write("fwd-slow.json", tree(kernel=60_000_000))
expect("a regression in a range above --min-time gates", ["--metric", "kernel", "--min-time", "60ms", "base.json",
                                                          "fwd-slow.json"], 1)
expect("a regression in a range below --min-time does not gate",
       ["--metric", "kernel", "--min-time", "60.001ms", "base.json", "fwd-slow.json"], 0,
       ["2 ranges below --min-time, not gated\n", "(below min-time)"])  # fwd and old

# Ranges that appear or disappear are listed; they gate nothing.
reports.write("renamed.json", tree(extra="new"))
expect("added and removed ranges are listed", ["base.json", "renamed.json"], 0,
       ["added (only in new): step/new\n", "removed (only in base): step/old\n"])

# --json for machines: the same verdict, with every number.
r = expect("--json", ["--json", "--metric", "host,kernel", "base.json", "host-past.json"], 1)
j = json.loads(r.stdout)
want = {"schema": "cuscope.diff/1", "regressed": True, "gated_metrics": ["host", "kernel"], "threshold": 0.1,
        "added": [], "removed": []}
got = {k: j[k] for k in want}
regressions = [(x["path"], x["metric"], x["base"], x["new"], x["change"]) for x in j["regressions"]]
step = j["ranges"][0]["metrics"]["host"]
if got != want or regressions != [("step", "host", 10_000_000.0, 11_010_000.0, 1_010_000.0)] \
        or abs(step["relative"] - 0.101) > 1e-12 or [x["path"] for x in j["ranges"]] != ["step", "step/fwd", "step/old"]:
    failures += 1
    print(f"FAIL: --json content: {got} {regressions} {step}")
reports.write("from-zero.json", tree(gpu=0))
r = diff("--json", "--metric", "gpu", "from-zero.json", "base.json")
fwd_gpu = json.loads(r.stdout)["ranges"][1]["metrics"]["gpu"]
if r.returncode != 1 or fwd_gpu["relative"] is not None or not fwd_gpu["regressed"]:
    failures += 1
    print(f"FAIL: a metric from 0 is a regression with no relative change: {r.returncode} {fwd_gpu}")
else:
    print("ok: a metric that appears from 0 regresses, its relative change null")

# A path that is not UTF-8 (a file name is any bytes): --json still writes UTF-8, the bad byte as
# U+FFFD, and the verdict stands (it once threw from the JSON writer, and the escaped error exited 1,
# "regressed").
shutil.copy("base.json", os.fsdecode(b"base-\xff.json"))
r = subprocess.run([cli, "diff", "--json", b"base-\xff.json", "base.json"], capture_output=True)
try:
    base_name = json.loads(r.stdout.decode("utf-8"))["base"]
except (ValueError, KeyError) as e:
    base_name = f"unreadable: {e}"
if r.returncode != 0 or base_name != "base-\ufffd.json":
    failures += 1
    print(f"FAIL: a path that is not UTF-8 under --json: exit {r.returncode}, base {base_name!r}, {r.stderr!r}")
else:
    print("ok: a path that is not UTF-8 under --json: exit 0, the byte as U+FFFD")

# Bad input: exit 2 and one line on stderr, whichever side is bad.
with open("not-json.json", "w") as f:
    f.write("step: 10 ms\n")
v2 = reports.report(tree())
v2["schema"] = "cuscope.report/2"
json.dump(v2, open("v2.json", "w"))
merged = {"schema": "cuscope.merged/1", "ranges": []}
json.dump(merged, open("merged.json", "w"))
broken = reports.report(tree())
broken["ranges"][1]["children"] = [7]
json.dump(broken, open("broken.json", "w"))
# Values of the wrong type or sign, and ranges the root does not reach: refused, where they once read
# as 0 (a "host" of 5 made the diff say -100% and pass) or were dropped (then listed as removed).
negative = reports.report(tree())
negative["ranges"][1]["calls"] = -5
json.dump(negative, open("negative.json", "w"))
host_number = reports.report(tree())
host_number["ranges"][1]["host"] = 5
json.dump(host_number, open("host-number.json", "w"))
fraction = reports.report(tree())
fraction["ranges"][1]["calls"] = 1.5
json.dump(fraction, open("fraction.json", "w"))
orphan = reports.report(tree())
orphan["ranges"][0]["children"] = [c for c in orphan["ranges"][0]["children"] if c != 1]
json.dump(orphan, open("orphan.json", "w"))
schema_number = reports.report(tree())
schema_number["schema"] = 5
json.dump(schema_number, open("schema-number.json", "w"))
not_schema = "not a cuscope JSON report (its \"schema\" is not \"cuscope.report/1\")"
for what, args, err in [
    ("a missing file", ["base.json", "missing.json"], "missing.json: cannot open 'missing.json': No such file or directory"),
    ("not JSON", ["not-json.json", "base.json"], "not-json.json: not a cuscope trace or JSON report"),
    ("another report schema version", ["base.json", "v2.json"], f"v2.json: {not_schema}"),
    ("a merged report against a report", ["merged.json", "base.json"], f"merged.json: {not_schema}"),
    ("ranges that are not a tree", ["base.json", "broken.json"],
     "broken.json: malformed JSON report: a range's child index is out of range"),
    ("a count below 0", ["base.json", "negative.json"], "negative.json: malformed JSON report: \"calls\" is below 0"),
    ("a duration that is a number", ["base.json", "host-number.json"],
     "host-number.json: malformed JSON report: \"host\" is not an object"),
    ("a count that is not whole", ["base.json", "fraction.json"],
     "fraction.json: malformed JSON report: \"calls\" is not a whole number"),
    ("a range the root does not reach", ["base.json", "orphan.json"],
     "orphan.json: malformed JSON report: the ranges do not form a tree (3 not reached from the root)"),
    ("a schema that is not a string", ["schema-number.json", "base.json"], f"schema-number.json: {not_schema}"),
]:
    expect(f"bad input, {what}: exit 2", args, 2, stderr=f"cuscope diff: {err}\n")
for what, args in [("one report", ["base.json"]), ("a bad threshold", ["--threshold", "ten", "base.json", "base.json"]),
                   ("a bad metric", ["--metric", "speed", "base.json", "base.json"]),
                   ("a bad min-time", ["--min-time", "2 weeks", "base.json", "base.json"])]:
    r = expect(f"bad command line, {what}: exit 2", args, 2)
    if not r.stderr.startswith("cuscope diff: "):
        failures += 1
        print(f"FAIL: {what}: stderr does not name the command: {r.stderr!r}")
sys.exit(1 if failures else 0)

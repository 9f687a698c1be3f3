#!/usr/bin/env python3
"""Many ranks: `cuscope merge` of crafted reports with exact numbers; then, end to end, 4 ranks of
tests/cli/rank_program.cpp started by Open MPI's mpirun on this machine, each writing its own report
(CUSCOPE_JSON=report-%r.json) and table (CUSCOPE_OUTPUT=table-%h-%p.txt), then `cuscope merge`,
with exact expectations: ranks, calls, the slowest rank and the straggler findings (rank 3 is
slower by construction).

usage: check_merge.py CUSCOPE RANK_PROGRAM WORK_DIR"""
import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys

cli, program, work = sys.argv[1:4]

shutil.rmtree(work, ignore_errors=True)
os.makedirs(work)
os.chdir(work)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reports  # noqa: E402
from reports import check, fail  # noqa: E402

# First crafted reports with exact numbers: 3 of 4 ranks, rank 2 slower, diagnostics on two ranks.
MS = 1_000_000
for rank, host, gpu, open_scopes in [(0, 10, 8, 1), (1, 12, 9, 0), (2, 30, 20, 2)]:
    j = reports.report({"step": {"calls": 10, "host_ns": host * MS, "gpu_ns": gpu * MS,
                                 "children": {"io": {"calls": rank + 1, "host_ns": MS // 2}}}},
                       rank=rank, world_size=4)
    j["diagnostics"] = {"open_scopes": open_scopes}
    if rank != 1:  # rank 1's report is from before clock_steps (read as 0)
        j["steps"], j["clock_steps"] = 7, 5 * rank
    json.dump(j, open(f"crafted-{rank}.json", "w"))
crafted = subprocess.run([cli, "merge", "-o", "crafted.json", "crafted-2.json", "crafted-0.json", "crafted-1.json"],
                         capture_output=True, text=True)
check(crafted.returncode == 0, f"merge of crafted reports: exit {crafted.returncode}: {crafted.stderr}")
expected = """cuscope merge — 3 ranks of 4 — device: no GPU
note: 1 of 4 ranks have no report here: 3
all ranks: 3 scopes still open
straggler: rank 2 in step: host 30.0 ms, 2.50x the median 12.0 ms

range                            ranks   calls  host min    median       max slowest imbalance   GPU min    median       max
step                                 3      10   10.0 ms   12.0 ms   30.0 ms       2    150.0%   8.00 ms   9.00 ms   20.0 ms
  io                                 3     1-3    500 µs    500 µs    500 µs       0      0.0%         —         —         —
"""
check(crafted.stdout == expected, f"merge table of crafted reports:\n{crafted.stdout}\nexpected:\n{expected}")
m = json.load(open("crafted.json"))
step = m["ranges"][0]
check(m["missing_ranks"] == [3] and m["world_size"] == 4 and m["diagnostics"]["open_scopes"] == 3,
      f"crafted merged header: {m['missing_ranks']} {m['world_size']} {m['diagnostics']['open_scopes']}")
check(step["host_total_ns"] == {"min": 10e6, "median": 12e6, "max": 30e6, "slowest_rank": 2, "imbalance": 1.5}
      and step["gpu_total_ns"] == {"min": 8e6, "median": 9e6, "max": 20e6, "slowest_rank": 2, "imbalance": 20 / 9 - 1},
      f"crafted step: {step}")
check(m["straggler"] == [{"range": "step", "rank": 2, "host_total_ns": 30e6, "median_ns": 12e6, "ratio": 2.5}],
      f"crafted straggler: {m['straggler']}")
check([(r["rank"], r["clock_steps"]) for r in m["ranks"]] == [(0, 0), (1, 0), (2, 10)],
      f"crafted ranks' clock steps: {m['ranks']}")
print("ok: merge of crafted reports: exact table, medians, slowest rank, imbalance, straggler, missing rank")

# A world size is read from a file: a huge one is counted, its missing ranks listed up to 64.
json.dump(reports.report({"step": {"calls": 1, "host_ns": MS}}, rank=0, world_size=1_000_000_000),
          open("huge.json", "w"))
huge = subprocess.run([cli, "merge", "-o", "huge-merged.json", "huge.json"], capture_output=True, text=True, timeout=30)
listed = ", ".join(str(r) for r in range(1, 65))
check(huge.returncode == 0 and f"note: 999999999 of 1000000000 ranks have no report here: {listed} and 999999935 more\n"
      in huge.stdout and json.load(open("huge-merged.json"))["missing_ranks"] == list(range(1, 65)),
      f"a huge world size: {huge.returncode} {huge.stdout[:300]} {huge.stderr}")
print("ok: a huge world size: missing ranks counted, 64 listed")

mpirun = shutil.which("mpirun")
check(mpirun is not None, "mpirun is not installed (cmake/setup.sh installs Debian's openmpi-bin)")

env = dict(os.environ, CUSCOPE_JSON="report-%r.json", CUSCOPE_OUTPUT="table-%h-%p.txt",
           # Open MPI refuses root unless told twice; the ranks need no network beyond this host.
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self",
           OMPI_MCA_btl_base_warn_component_unused="0")
for name in ("RANK", "WORLD_SIZE", "PMI_RANK", "SLURM_PROCID"):  # the launcher's rank must be the one read
    env.pop(name, None)
run = subprocess.run([mpirun, "--oversubscribe", "-np", "4", program], env=env, capture_output=True, text=True,
                     timeout=120)
check(run.returncode == 0, f"mpirun exited {run.returncode}: {run.stdout}{run.stderr}")

rank_reports = sorted(glob.glob("report-*.json"))
check(rank_reports == [f"report-{r}.json" for r in range(4)], f"one report per rank expected, found {rank_reports}")
for r in range(4):
    with open(f"report-{r}.json") as f:
        j = json.load(f)
    check(j["rank"] == r and j["world_size"] == 4, f"report-{r}.json records rank {j['rank']} of {j['world_size']}")
tables = glob.glob("table-*.txt")
host = re.escape(socket.gethostname())
check(len(tables) == 4 and all(re.fullmatch(f"table-{host}-[0-9]+\\.txt", t) for t in tables),
      f"one table per rank named by host and pid expected, found {tables}")
headers = sorted(open(t).readline().rsplit(" — ", 1)[-1].strip() for t in tables)
check(headers == [f"rank {r} of 4" for r in range(4)], f"table headers: {headers}")
print("ok: 4 ranks under mpirun wrote report-0..3.json and table-<host>-<pid>.txt, each with its rank")

# --straggler 10: ten times the median more, which only rank 3's 800 ms can reach (the others sleep
# 2 ms per step); the median host times are above the default --min-time of 1 ms.
merge = subprocess.run([cli, "merge", "--straggler", "10", "-o", "merged.json"] + rank_reports[::-1],
                       capture_output=True, text=True)
check(merge.returncode == 0, f"cuscope merge exited {merge.returncode}: {merge.stderr}")
out = merge.stdout
print(out, end="")
lines = out.splitlines()
check(lines[0] == "cuscope merge — 4 ranks of 4 — device: " + json.load(open("report-0.json"))["device"],
      f"header: {lines[0]}")
stragglers = [l for l in lines if l.startswith("straggler: ")]
host = socket.gethostname()  # each report names its host: the straggler's node
check(len(stragglers) == 2 and stragglers[0].startswith(f"straggler: rank 3 ({host}) in step: host ")
      and stragglers[1].startswith(f"straggler: rank 3 ({host}) in step/compute: host "), f"stragglers: {stragglers}")
rows = {l.split()[0]: l.split() for l in lines if re.match(r"^ *(step|compute|extra) ", l)}
check(rows["step"][1:3] == ["4", "3"] and rows["compute"][1:3] == ["4", "3"] and rows["extra"][1:3] == ["3", "3-9"],
      f"ranks and calls columns: {rows}")
# slowest is the 9th column (after range, ranks, calls and three values with units).
check(rows["step"][9] == "3" and rows["compute"][9] == "3", f"slowest rank column: {rows}")

with open("merged.json") as f:
    m = json.load(f)
check(m["schema"] == "cuscope.merged/1" and m["world_size"] == 4 and m["missing_ranks"] == [] and m["notes"] == [],
      f"merged header: {m['schema']} {m['world_size']} {m['missing_ranks']} {m['notes']}")
check([r["rank"] for r in m["ranks"]] == [0, 1, 2, 3], f"ranks: {m['ranks']}")
pids = {json.load(open(f"report-{r}.json"))["pid"] for r in range(4)}
check([r["host"] for r in m["ranks"]] == [socket.gethostname()] * 4 and {r["pid"] for r in m["ranks"]} == pids
      and len(pids) == 4 and None not in pids, f"ranks' hosts and pids: {m['ranks']}")
ranges = {r["path"]: r for r in m["ranges"]}
check(list(ranges) == ["step", "step/compute", "step/extra"], f"ranges: {list(ranges)}")
check(ranges["step"]["calls"] == {"min": 3.0, "median": 3.0, "max": 3.0}, f"step calls {ranges['step']['calls']}")
extra = ranges["step/extra"]
check(extra["ranks"] == 3 and extra["calls"] == {"min": 3.0, "median": 6.0, "max": 9.0}
      and [p["rank"] for p in extra["per_rank"]] == [1, 2, 3], f"step/extra: {extra}")
for path in ("step", "step/compute"):
    host = ranges[path]["host_total_ns"]
    per_rank = {p["rank"]: p["host_total_ns"] for p in ranges[path]["per_rank"]}
    check(host["slowest_rank"] == 3 and host["max"] == per_rank[3] and host["min"] == min(per_rank.values()),
          f"{path}: {host} {per_rank}")
    ordered = sorted(per_rank.values())
    check(host["median"] == (ordered[1] + ordered[2]) / 2, f"{path} median: {host} {per_rank}")
    check(abs(host["imbalance"] - (host["max"] / host["median"] - 1)) < 1e-9, f"{path} imbalance: {host}")
    check(per_rank[3] >= 800_000_000, f"{path}: rank 3 slept 800 ms: {per_rank}")
found = [(s["range"], s["rank"]) for s in m["straggler"]]
check(found == [("step", 3), ("step/compute", 3)], f"straggler findings: {found}")
check(all(s["ratio"] > 11 for s in m["straggler"]), f"straggler ratios: {m['straggler']}")
print("ok: cuscope merge of the 4 ranks: ranks, calls, slowest rank 3 and its straggler findings")

# Two reports of one rank cannot be merged; a missing rank is said.
dup = subprocess.run([cli, "merge", "report-1.json", "report-1.json"], capture_output=True, text=True)
check(dup.returncode == 1 and dup.stderr == "cuscope merge: rank 1 twice: report-1.json and report-1.json\n",
      f"a rank twice: exit {dup.returncode}, {dup.stderr!r}")
three = subprocess.run([cli, "merge", "report-0.json", "report-1.json", "report-3.json"], capture_output=True,
                       text=True)
check(three.returncode == 0 and "note: 1 of 4 ranks have no report here: 2\n" in three.stdout,
      f"a missing rank: {three.stdout}{three.stderr}")
bad = subprocess.run([cli, "merge", "--straggler", "lots", "report-1.json"], capture_output=True, text=True)
check(bad.returncode == 2 and bad.stderr.startswith("cuscope merge: --straggler 'lots' is not a share (0.25 or 25%)\n"),
      f"a bad --straggler: exit {bad.returncode}, {bad.stderr!r}")
print("ok: a rank given twice is refused, a missing rank is noted, a bad option named")

# Paths without %r: each rank still writes its own file (the rank before the extension) and says
# so; none is replaced by another rank's, and the trace files are not written by four processes.
env = dict(env, CUSCOPE_JSON="shared.json", CUSCOPE_TRACE="shared.cuscope")
env.pop("CUSCOPE_OUTPUT")
run = subprocess.run([mpirun, "--oversubscribe", "-np", "4", program], env=env, capture_output=True, text=True,
                     timeout=120)
check(run.returncode == 0, f"mpirun (shared paths) exited {run.returncode}: {run.stdout}{run.stderr}")
check(sorted(glob.glob("shared*")) == sorted([f"shared-{r}.{e}" for r in range(4) for e in ("json", "cuscope")]),
      f"one report and one trace per rank expected, found {sorted(glob.glob('shared*'))}")
for r in range(4):
    with open(f"shared-{r}.json") as f:
        j = json.load(f)
    check(j["rank"] == r, f"shared-{r}.json records rank {j['rank']}")
    for variable, name in (("CUSCOPE_JSON", "shared.json"), ("CUSCOPE_TRACE", "shared.cuscope")):
        stem, ext = name.split(".")
        note = (f"{variable}={name} names neither the rank (%r) nor the process (%p), and this is rank {r} of 4: "
                f"it writes {stem}-{r}.{ext}, as each rank writes its own")
        check(note in j["notes"] and f"cuscope: {note}" in run.stderr.splitlines(), f"rank {r}: no note '{note}'")
    replay = subprocess.run([cli, "json", f"shared-{r}.cuscope"], capture_output=True, text=True)
    check(replay.returncode == 0 and json.loads(replay.stdout)["rank"] == r, f"shared-{r}.cuscope: {replay.stderr}")
print("ok: 4 ranks given one path each wrote shared-0..3.json and .cuscope, each saying so")

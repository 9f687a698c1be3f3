#!/usr/bin/env python3
"""Zero-code mode, from outside: unmodified programs run under `cuscope run`.

    check_inject.py CUSCOPE NVTX_PROGRAM LINKED_PROGRAM WORKDIR [NVTX_LIBRARY]

With NVTX_LIBRARY (a shared library with NVTX ranges), a Python program that loads it with ctypes
runs under `cuscope run` too (plain builds only: Python cannot load sanitizer-built libraries).

Each check runs a command, then compares its exit status, its standard error and the JSON report
with exact expectations (the counts nvtx_program.cpp and linked_program.cpp document). Exits 1
on the first mismatch, naming it.
"""
import glob
import json
import os
import re
import subprocess
import sys

from inject_kit import ENV, LAST, expect, fail

CUSCOPE, NVTX, LINKED, WORK = sys.argv[1:5]
PYTHON_LIB = sys.argv[5] if len(sys.argv) > 5 else None
os.makedirs(WORK, exist_ok=True)


def run(args, env_extra=None):
    env = dict(ENV)
    env.update(env_extra or {})
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    LAST.update(args=args, stderr=p.stderr)
    return p.returncode, p.stdout, p.stderr


def report(path):
    with open(path) as f:
        return json.load(f)


def ranges(rep):
    """path -> (calls, threads) for every range but the root."""
    return {r["path"]: (r["calls"], r["threads"]) for r in rep["ranges"] if r["path"]}


def spans(rep):
    return {(s["domain"], s["name"]): (s["host"]["count"], s["open"], s["cross_thread"]) for s in rep["spans"]}


def count_tables(err):
    """How many tables `err` holds: each opens with 'cuscope VERSION — device: ...'."""
    return sum(1 for line in err.splitlines() if line.startswith("cuscope ") and " — device: " in line)


# Lines the table prints under a range row (src/views/table.cpp): top kernels, graph paths,
# findings and their cause, hardware and user counters. Findings depend on timing (a slow first
# call under a sanitizer), so they come and go; range rows do not.
ANNOTATIONS = ("\u00b7 ", "(graph) ", "! ", "cause: ", "@ ", "# ")


def table_rows(err, header):
    """The rows of the exit table's section whose header line starts with `header`, up to the blank
    line that ends it: the name with its indentation (two spaces a level) -> its calls column."""
    lines = err.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(header)]
    if len(starts) != 1:
        fail(f"the exit table has one section '{header.strip()}'", err)
    rows = {}
    for line in lines[starts[0] + 1:]:
        if not line.strip():
            break
        if line.lstrip().startswith(ANNOTATIONS):  # under a range: kernels, findings, counters
            continue
        row = re.match(r"( *\S.*?) {2,}(\d+) ", line)
        if row is None:
            fail(f"a row of the exit table's section '{header.strip()}'", line)
        rows[row.group(1)] = int(row.group(2))
    return rows


ALL = {
    "outer": (9, 3),
    "outer/inner": (18, 3),
    "wide \u00e9t\u00e9": (3, 3),
    "aten::addmm": (6, 3),
    "MyLib": (3, 3),
    "MyLib/lib_call": (3, 3),
    "MyLib/lib_call/registered_step": (3, 3),
}
DEFAULT_ONLY = {k: v for k, v in ALL.items() if not k.startswith("MyLib")}
MYLIB_ONLY = {k: v for k, v in ALL.items() if k.startswith("MyLib")}
DEFAULT_SPANS = {("", "load"): (1, 0, 1), ("", "never_ended"): (0, 1, 0)}
MYLIB_SPANS = {("MyLib", "lib_load"): (1, 0, 0)}
SPANS = {**DEFAULT_SPANS, **MYLIB_SPANS}  # never the "cuscope" domain's linked_span

# Every domain; the program's exit status passes through; the table is printed.
out = os.path.join(WORK, "all.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX, "3"])
expect("exit status of the command passes through", rc, 3)
rep = report(out)
expect("ranges of every domain, with exact calls and threads", ranges(rep), ALL)
expect("start/end ranges, one ended on another thread, one never ended", spans(rep), SPANS)
expect("no unbalanced ends", rep["diagnostics"]["unbalanced_ends"], 0)
expect("the exit table's ranges, nested, with exact calls", table_rows(err, "range "),
       {"outer": 9, "  inner": 18, "MyLib": 3, "  lib_call": 3, "    registered_step": 3,
        "wide \u00e9t\u00e9": 3, "aten::addmm": 6})
expect("the exit table's start/end ranges, with exact calls", table_rows(err, "NVTX start/end range "),
       {"load": 1, "MyLib/lib_load": 1, "never_ended": 0})
if "linked_scope" in err or "cuscope" in ranges(rep):
    fail("the cuscope domain is never counted by the injection", err)

# Trace mode: the trace replays to the very report the session wrote (ranges and start/end ranges).
out, trace = os.path.join(WORK, "traced.json"), os.path.join(WORK, "run.cuscope")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--trace", trace, "--", NVTX])
expect("--trace: exit status", rc, 0)
p = subprocess.run([CUSCOPE, "json", trace], capture_output=True, text=True, timeout=120)
with open(out) as f:
    live = f.read()
if p.returncode != 0 or p.stdout != live:
    fail("cuscope json of the trace equals the session's JSON report",
         f"exit {p.returncode}\n{p.stderr}\nreplayed:\n{p.stdout[:2000]}\nlive:\n{live[:2000]}")
print("ok: cuscope json of the trace equals the session's JSON report")

# A domain left out, then only that domain.
out = os.path.join(WORK, "no-mylib.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--domains", "-MyLib", "--", NVTX])
expect("--domains -MyLib: exit status", rc, 0)
expect("--domains -MyLib: MyLib's ranges are absent", ranges(report(out)), DEFAULT_ONLY)
expect("--domains -MyLib: MyLib's start/end range is absent", spans(report(out)), DEFAULT_SPANS)
out = os.path.join(WORK, "only-mylib.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX], {"CUSCOPE_NVTX_DOMAINS": "MyLib"})
expect("CUSCOPE_NVTX_DOMAINS=MyLib: exit status", rc, 0)
expect("CUSCOPE_NVTX_DOMAINS=MyLib: only MyLib's ranges", ranges(report(out)), MYLIB_ONLY)
expect("CUSCOPE_NVTX_DOMAINS=MyLib: only MyLib's start/end range", spans(report(out)), MYLIB_SPANS)

# Past 510 domains the late ones share one index: their pops pair among themselves.
out = os.path.join(WORK, "domains.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX, "domains"])
expect("600 domains: exit status", rc, 0)
rep = report(out)
expect("600 domains: the late domains' ranges nest and pop in pairs", ranges(rep),
       {"outer": (1, 1), "outer/x": (1, 1), "outer/x/y": (1, 1)})
expect("600 domains: no unbalanced ends", rep["diagnostics"]["unbalanced_ends"], 0)

# One buffer, different messages in turn: each range is named by the text it passes.
out = os.path.join(WORK, "reuse.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX, "reuse"])
expect("reused buffer: exit status", rc, 0)
expect("reused buffer: every call named by its own text", ranges(report(out)),
       {"alpha": (2, 1), "beta": (1, 1), "alphabet": (1, 1), "alp": (1, 1), "ab": (2, 1),
        "a_long_message_of_30_bytes___1": (1, 1), "a_long_message_of_30_bytes___2": (1, 1),
        "edge": (2, 1), "edgy": (1, 1), "aten::add": (2, 1), "aten::add_extra": (1, 1),
        "aten::addmm": (2, 1), "aten::mm": (1, 1), "aten::mm, unrelated": (1, 1)})

# A bad filter: one clear warning, every domain kept.
out = os.path.join(WORK, "bad.json")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX], {"CUSCOPE_NVTX_DOMAINS": "MyLib,,x"})
expect("a bad CUSCOPE_NVTX_DOMAINS: exit status", rc, 0)
warning = ("cuscope: CUSCOPE_NVTX_DOMAINS='MyLib,,x' has an empty domain name (item 2); "
           "keeping every domain")
expect("a bad CUSCOPE_NVTX_DOMAINS is warned about exactly once",
       [line for line in err.splitlines() if "CUSCOPE_NVTX_DOMAINS" in line and line.startswith("cuscope:")],
       [warning])
expect("a bad CUSCOPE_NVTX_DOMAINS keeps every domain", ranges(report(out)), ALL)
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", NVTX], {"CUSCOPE_NVTX_DOMAINS": "MyLib,-x"})
expect("a mixed CUSCOPE_NVTX_DOMAINS: exit status", rc, 0)
expect("mixed keep/leave-out lists are refused in one line",
       [line for line in err.splitlines() if "CUSCOPE_NVTX_DOMAINS" in line and line.startswith("cuscope:")],
       ["cuscope: CUSCOPE_NVTX_DOMAINS='MyLib,-x' names both domains to keep and ('-') domains to leave "
        "out; use one or the other; keeping every domain"])

# A program that loads no NVTX at all runs unchanged: its output, its status, nothing of cuscope.
rc, out_text, err = run([CUSCOPE, "run", "--", "sh", "-c", "echo plain; echo oops >&2; exit 7"])
expect("a program without NVTX: status", rc, 7)
expect("a program without NVTX: stdout", out_text, "plain\n")
expect("a program without NVTX: stderr is its own", err, "oops\n")

# cuscope run's own failures.
rc, _, err = run([CUSCOPE, "run", "--", os.path.join(WORK, "no-such-program")])
expect("a missing command exits 127", rc, 127)
rc, _, err = run([CUSCOPE, "run", "--frobnicate", NVTX])
expect("an unknown option exits 125", rc, 125)
rc, _, err = run([CUSCOPE, "run"])
expect("no command exits 125", rc, 125)
rc, _, err = run([CUSCOPE, "run", "--", NVTX], {"CUSCOPE_INJECT_LIBRARY": os.path.join(WORK, "missing.so")})
expect("a missing injection library exits 125", rc, 125)
# A folder or a file that is not a shared library: refused, never run with nothing injected.
not_library = os.path.join(WORK, "not-a-library.so")
with open(not_library, "w") as f:
    f.write("not ELF\n")
for what, path in [("a folder", WORK), ("a text file", not_library)]:
    rc, _, err = run([CUSCOPE, "run", "--", NVTX], {"CUSCOPE_INJECT_LIBRARY": path})
    expect(f"{what} as the injection library exits 125", rc, 125)
    expect(f"{what} as the injection library: the line says where it looked",
           f"looked at: CUSCOPE_INJECT_LIBRARY={path})" in err, True)

# A program that links cuscope: alone, NVTX ranges are not seen; injected, one session has both.
out = os.path.join(WORK, "linked-alone.json")
rc, stdout, err = run([LINKED], {"CUSCOPE_JSON": out})
expect("linked, alone: exit status", rc, 0)
expect("linked, alone: its snapshot", stdout.strip(), "snapshot: scoped=2 raw=0 items=10 steps=1")
expect("linked, alone: the report", ranges(report(out)), {"scoped": (2, 1)})
out = os.path.join(WORK, "linked-injected.json")
rc, stdout, err = run([CUSCOPE, "run", "--json", out, "--", LINKED])
expect("linked + injected: exit status", rc, 0)
expect("linked + injected: its snapshot comes from the one session",
       stdout.strip(), "snapshot: scoped=2 raw=2 items=10 steps=1")
rep = report(out)
expect("linked + injected: every scope once, NVTX ranges inside", ranges(rep),
       {"scoped": (2, 1), "scoped/raw": (2, 1)})
expect("linked + injected: one table", count_tables(err), 1)
# A bad value, read by the engine alone: one warning (the program's own copy read it too, and said it
# again), and one note in the report.
rc, stdout, err = run([CUSCOPE, "run", "--json", out, "--", LINKED], {"CUSCOPE_ROWS": "ten"})
expect("linked + injected, a bad value: exit status", rc, 0)
bad_rows = "CUSCOPE_ROWS='ten' is not a whole number; keeping 50"
expect("linked + injected: a bad value is warned about exactly once",
       [line for line in err.splitlines() if "CUSCOPE_ROWS" in line and line.startswith("cuscope:")],
       ["cuscope: " + bad_rows])
expect("linked + injected: a bad value is one note of the report",
       [n for n in report(out)["notes"] if "CUSCOPE_ROWS" in n], [bad_rows])

# Processes below one `cuscope run`: the first to start a session writes the files the options name;
# any other one writes its own, with its pid, and says so. Here the program runs itself as a child.
out, trace = os.path.join(WORK, "family.json"), os.path.join(WORK, "family.cuscope")
for stale in glob.glob(os.path.join(WORK, "family*")):
    os.remove(stale)
rc, stdout, err = run([CUSCOPE, "run", "--json", out, "--trace", trace, "--", NVTX, "family"])
expect("two processes of a run: exit status", rc, 0)
child = int(re.fullmatch(r"child (\d+)\n", stdout).group(1))
child_out, child_trace = os.path.join(WORK, f"family-{child}.json"), os.path.join(WORK, f"family-{child}.cuscope")
expect("two processes of a run: the files", sorted(glob.glob(os.path.join(WORK, "family*"))),
       sorted([out, trace, child_out, child_trace]))
expect("two processes of a run: the first's report", ranges(report(out)), {"parent": (3, 1)})
expect("two processes of a run: the child's report", ranges(report(child_out)), {"child": (2, 1)})
for variable, first, own in (("CUSCOPE_JSON", out, child_out), ("CUSCOPE_TRACE", trace, child_trace)):
    note = (f"{variable}={first}: another process of this `cuscope run` started first, and {first} is its; "
            f"this process ({child}) writes {own}")
    expect(f"two processes of a run: the child's {variable} note, in its report and on stderr",
           (note in report(child_out)["notes"], f"cuscope: {note}" in err.splitlines()), (True, True))
expect("two processes of a run: no variable of the run is taken for an unknown option",
       [n for n in report(out)["notes"] + report(child_out)["notes"] + err.splitlines()
        if "is not a cuscope option" in n], [])
for path, want in ((trace, {"parent": (3, 1)}), (child_trace, {"child": (2, 1)})):
    p = subprocess.run([CUSCOPE, "json", path], capture_output=True, text=True, timeout=120)
    expect(f"two processes of a run: {os.path.basename(path)} replays", ranges(json.loads(p.stdout)), want)
# One after the other, below a shell that starts no session: the first writes the file, the second
# finds it written during the run and writes its own.
out = os.path.join(WORK, "turns.json")
for stale in glob.glob(os.path.join(WORK, "turns*")):
    os.remove(stale)
rc, _, err = run([CUSCOPE, "run", "--json", out, "--", "sh", "-c", '"$0" child && "$0" child', NVTX])
expect("two processes in turn: exit status", rc, 0)
second = [f for f in glob.glob(os.path.join(WORK, "turns*")) if f != out]
expect("two processes in turn: one more file", len(second), 1)
expect("two processes in turn: both reports", (ranges(report(out)), ranges(report(second[0]))),
       ({"child": (2, 1)}, {"child": (2, 1)}))
pid = re.fullmatch(r"turns-(\d+)\.json", os.path.basename(second[0])).group(1)
expect("two processes in turn: the second says why",
       f"CUSCOPE_JSON={out}: another process of this `cuscope run` wrote {out} already; this process ({pid}) "
       f"writes {second[0]}" in report(second[0])["notes"], True)

# A process below the run that records nothing (an environment check run before the work) leaves
# nothing: no table, no file, no note, no trace; the work after it writes the files the options name.
for stale in glob.glob(os.path.join(WORK, "checked*")):
    os.remove(stale)
out, trace = os.path.join(WORK, "checked.json"), os.path.join(WORK, "checked.cuscope")
rc, _, err = run([CUSCOPE, "run", "--json", out, "--trace", trace, "--", "sh", "-c", '"$0" idle', NVTX])
expect("a check alone below the run: exit status, files, tables, lines from cuscope",
       (rc, glob.glob(os.path.join(WORK, "checked*")), count_tables(err),
        [line for line in err.splitlines() if line.startswith("cuscope")]), (0, [], 0, []))
rc, _, err = run([CUSCOPE, "run", "--json", out, "--trace", trace, "--", "sh", "-c", '"$0" idle && "$0" child', NVTX])
expect("a check, then the work: exit status and files", (rc, sorted(glob.glob(os.path.join(WORK, "checked*")))),
       (0, sorted([out, trace])))
expect("a check, then the work: the work's report, without a note of paths",
       (ranges(report(out)), [n for n in report(out)["notes"] if "cuscope run" in n]), ({"child": (2, 1)}, []))
p = subprocess.run([CUSCOPE, "json", trace], capture_output=True, text=True, timeout=120)
expect("a check, then the work: the trace is the work's", ranges(json.loads(p.stdout)), {"child": (2, 1)})
expect("a check, then the work: one table", count_tables(err), 1)

# Python: the interpreter inherits the injection, and the library it loads reports its ranges.
if PYTHON_LIB:
    out = os.path.join(WORK, "python.json")
    script = "import ctypes, sys; ctypes.CDLL(sys.argv[1]).work(2); sys.exit(4)"
    rc, _, err = run([CUSCOPE, "run", "--json", out, "--", sys.executable, "-c", script, PYTHON_LIB])
    expect("python under cuscope run: the script's exit status", rc, 4)
    expect("python under cuscope run: the ranges of the library it loaded", ranges(report(out)),
           {"py_step": (2, 1), "py_step/py_inner": (4, 1)})
else:
    print("not run here: the Python case (sanitizer build; it runs in the plain build's suite)")
print("all zero-code checks passed")

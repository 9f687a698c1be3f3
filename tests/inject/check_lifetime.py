#!/usr/bin/env python3
"""Zero-code mode through a program's whole life: lifetime_program.cpp under `cuscope run`.

    check_lifetime.py CUSCOPE LIFETIME_PROGRAM WORKDIR [plain]

With `plain` (builds without sanitizers: their allocators are not fork-safe beside a thread that
allocates), the fork_domains case runs too.

Each case runs one mode of the program (its documented counts are repeated here) and checks its
exit status, the number of tables on its standard error, and the JSON report's ranges (path ->
calls, threads) and diagnostics, exactly. Exits 1 on the first mismatch, naming it.
"""
import json
import os
import subprocess
import sys

from inject_kit import ENV, LAST, expect, fail

CUSCOPE, PROGRAM, WORK = sys.argv[1:4]
PLAIN = len(sys.argv) > 4 and sys.argv[4] == "plain"
os.makedirs(WORK, exist_ok=True)


def run_mode(mode):
    out = os.path.join(WORK, mode + ".json")
    if os.path.exists(out):
        os.remove(out)
    env = dict(ENV, LIFETIME_MODE=mode)
    args = [CUSCOPE, "run", "--json", out, "--", PROGRAM, mode]
    p = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
    LAST.update(args=args, stderr=p.stderr)
    if not os.path.exists(out):
        fail(f"{mode}: the JSON report is written", f"exit {p.returncode}")
    with open(out) as f:
        rep = json.load(f)
    tables = sum(1 for line in p.stderr.splitlines() if line.startswith("cuscope ") and " — device: " in line)
    ranges = {r["path"]: (r["calls"], r["threads"]) for r in rep["ranges"] if r["path"]}
    return p.returncode, p.stderr, tables, ranges, rep["diagnostics"]


def diagnostics(d, **want):
    """The diagnostics that say what was open or unbalanced, with `want` over the zeros."""
    keys = ("open_scopes", "unbalanced_ends", "cross_thread_ends", "depth_overflows", "unrecorded_scopes")
    return {k: d[k] for k in keys}, dict({k: 0 for k in keys}, **want)


def check(mode, status, ranges_want, **diag_want):
    rc, err, tables, ranges, diag = run_mode(mode)
    expect(f"{mode}: exit status", rc, status)
    expect(f"{mode}: one table, the process's own", tables, 1)
    expect(f"{mode}: ranges (calls, threads)", ranges, ranges_want)
    got, want = diagnostics(diag, **diag_want)
    expect(f"{mode}: diagnostics", got, want)
    if "lifetime_program: FAILED" in err:
        fail(f"{mode}: the program's own checks", err)
    return err


# A static constructor's ranges, before main: one closed there, one closed in main.
check("static", 0, {"static_ctor": (1, 1), "before_main": (1, 1), "before_main/in_main": (1, 1)})

# fork() with a range open: the child's ranges, its pops (of the parent's range, and one too many)
# and its exit() leave nothing in the parent's report and print no second table.
check("fork", 0, {"parent_before": (2, 1), "around_fork": (1, 1), "parent_after": (1, 1)})

# fork() while another thread holds the domains' lock now and then: every child can create a domain.
if PLAIN:
    check("fork_domains", 0, {"forked": (20, 1)})
else:
    print("not run here: fork_domains (sanitizer build; it runs in the plain build's suite)")

# std::quick_exit with a range open: the table and the JSON, the open range listed and counted.
err = check("quick_exit", 0, {"quick_work": (3, 1), "quick_open": (0, 1)}, open_scopes=1)
expect("quick_exit: the table says what is still open", "lost or off: 1 scope still open" in err, True)

# std::exit from a thread while two other threads hold ranges open: the exit status passes
# through, the finished ranges are counted, the two open ones listed.
err = check("exit_thread", 5, {"main_open": (0, 1), "worker_open": (0, 1), "exiting_work": (2, 1)},
            open_scopes=2)
expect("exit_thread: the table says what is still open", "lost or off: 2 scopes still open" in err, True)

# thread_local destructors at thread exit: a range left open by the thread is popped there, after
# the thread's first range made its state, with a range inside; main's, in exit(), before the table.
check("tl_dtor", 0, {"thread_body": (2, 2), "thread_body/tl_dtor": (2, 2), "main_tl_dtor": (1, 1)})

print("all zero-code lifetime checks passed")

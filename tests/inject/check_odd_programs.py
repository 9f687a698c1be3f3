#!/usr/bin/env python3
"""Zero-code mode with the programs a stranger runs: `cuscope run` from outside, exact expectations.

    check_odd_programs.py CUSCOPE NVTX_PROGRAM WORKDIR [STATIC_PROGRAM...]

Each STATIC_PROGRAM is nvtx_program.cpp linked statically (-static, -static-pie; where the
toolchain can, never with sanitizers): cuscope cannot run inside it, and says so in one line; the
program runs as if nothing were injected (it faulted before). The other cases: a relative --json
FILE stays where `cuscope run` was run when the program's script changes folder before the program
starts (it went to the other folder), a '%' in that folder's name is not expanded, and a script
whose #! interpreter is missing is named as such (it read "No such file or directory" of a file that
is there), and an empty FILE is refused (it wrote no file and said nothing).

Exits 1 on the first mismatch, naming it, with the last command's standard error.
"""
import glob
import os
import shutil
import subprocess
import sys

from inject_kit import ENV, LAST, expect

CUSCOPE, NVTX, WORK = sys.argv[1:4]
STATIC = sys.argv[4:]
shutil.rmtree(WORK, ignore_errors=True)
os.makedirs(WORK)


def run(args, cwd=WORK):
    p = subprocess.run(args, env=ENV, cwd=cwd, capture_output=True, text=True, timeout=120)
    LAST.update(args=args, stderr=p.stderr)
    return p.returncode, p.stdout, p.stderr


def files(folder):
    return sorted(os.path.relpath(f, folder) for f in glob.glob(os.path.join(folder, "**", "*.json"), recursive=True))


# A statically linked program: no dynamic loader, so NVTX loads cuscope's library with a second C
# library, whose first thread faulted (SIGSEGV, status -11). Now: one line, the program's status,
# nothing recorded.
for program in STATIC:
    kind = os.path.basename(program)
    rc, _, err = run([CUSCOPE, "run", "--json", "static.json", "--", program, "child"])
    expect(f"{kind}: its own exit status, not a fault", rc, 0)
    expect(f"{kind}: one line says cuscope cannot run inside it", err.splitlines(),
           [f"cuscope: {os.path.realpath(program)} is statically linked: cuscope cannot run inside it (NVTX "
            "would load cuscope's library with a C library of its own, which crashes), so nothing of it is "
            "recorded; link it dynamically to profile it"])
    expect(f"{kind}: no report", files(WORK), [])
    rc, _, err = run([CUSCOPE, "run", "--", program, "5"])  # threads, domains, start/end ranges
    expect(f"{kind} with threads: its own exit status", rc, 5)
    expect(f"{kind} with threads: said once", len(err.splitlines()), 1)
# The dynamic loader run as a program has no interpreter either, and is no static program.
loader = "/lib64/ld-linux-x86-64.so.2"
if os.path.exists(loader):
    rc, _, err = run([CUSCOPE, "run", "--json", "loader.json", "--", loader, NVTX, "child"])
    expect("ld.so NVTX_PROGRAM: exit status and the report", (rc, files(WORK)), (0, ["loader.json"]))
    os.remove(os.path.join(WORK, "loader.json"))
else:
    print(f"not run here: the dynamic loader run as a program ({loader} is not on this system)")
if not STATIC:
    print("not run here: the static programs (a sanitizer build, or no static C library)")

# A script that changes folder before its program starts: the relative FILE is where `cuscope run`
# was run, not the folder the program's session starts in.
os.makedirs(os.path.join(WORK, "build"))
rc, _, err = run([CUSCOPE, "run", "--json", "cd.json", "--trace", "cd.cuscope", "--", "sh", "-c",
                  'cd build && exec "$0" child', NVTX])
expect("a script that changes folder: exit status", rc, 0)
expect("a script that changes folder: the report is where cuscope run was run", files(WORK), ["cd.json"])
expect("a script that changes folder: the trace too", os.path.exists(os.path.join(WORK, "cd.cuscope")), True)
# A '%' in that folder's name is the folder's, never a field to expand.
percent = os.path.join(WORK, "100%p")
os.makedirs(percent)
rc, _, err = run([CUSCOPE, "run", "--json", "r.json", "--", "sh", "-c", 'cd .. && exec "$0" child', NVTX],
                 cwd=percent)
expect("a folder named with %p: exit status", rc, 0)
expect("a folder named with %p: the report keeps the folder's name", files(WORK), ["100%p/r.json", "cd.json"])

# A script whose #! interpreter is missing: execvp says ENOENT of a file that is there.
script = os.path.join(WORK, "old-tool.sh")
with open(script, "w") as f:
    f.write("#!/no/such/interpreter -e\necho never\n")
os.chmod(script, 0o755)
rc, _, err = run([CUSCOPE, "run", "--", script])
expect("a script whose interpreter is missing: 127, naming the interpreter", (rc, err),
       (127, f"cuscope run: cannot run '{script}': its interpreter '/no/such/interpreter' (its #! line) is not "
             "found\n"))
rc, _, err = run([CUSCOPE, "run", "--", os.path.join(WORK, "no-such-program")])
expect("a program that is not there: 127, as before", (rc, err),
       (127, f"cuscope run: cannot run '{os.path.join(WORK, 'no-such-program')}': No such file or directory\n"))
# An empty FILE is a bad command line, not a report silently never written.
for flag in ("--json", "--trace", "--output"):
    rc, _, err = run([CUSCOPE, "run", flag, "", "--", NVTX, "child"])
    expect(f"{flag} '': 125 and one line saying why", (rc, err.splitlines()[0]),
           (125, f"cuscope run: {flag} needs a file name, not ''"))
print("all odd-program checks passed")

"""What the zero-code checks (check_inject.py, check_lifetime.py, check_odd_programs.py) share: the
environment their commands run in (none of the caller's CUSCOPE_* settings or injection paths),
the last command run, and the failure that names it.

Never: run anything itself, or print but for a check's result.
"""
import os
import sys

ENV = {k: v for k, v in os.environ.items()
       if not k.startswith("CUSCOPE_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}
LAST = {}  # the last command run (args, stderr), for the failure message


def fail(what, detail):
    print(f"FAIL: {what}\n{detail}")
    if LAST:
        print(f"last command: {LAST['args']}\nits stderr (last 3000 characters):\n{LAST['stderr'][-3000:]}")
    sys.exit(1)


def expect(what, got, want):
    if got != want:
        fail(what, f"  got:  {got!r}\n  want: {want!r}")
    print(f"ok: {what}")

"""python -m cuscope run [options] [--] SCRIPT.py ARGS... | -m MODULE ARGS...

Zero-code mode for a Python program, as ``cuscope run -- python SCRIPT.py`` does it: the same
Python runs the script in a new process with NVTX and the CUDA driver pointed at
libcuscope_inject.so, so every NVTX range (torch.cuda.nvtx.range, nvtx.annotate, emit_nvtx())
and every cuscope.scope become one tree, and the table prints at exit. The exit status is the
script's; this command's own failures exit with 125.
"""
from __future__ import annotations

import os
import sys
import time
from typing import List, Optional

USAGE = """usage: python -m cuscope run [--json FILE] [--trace FILE] [--output FILE] [--domains LIST] \
[--report-every S] [--sample-ms MS] [--] SCRIPT.py [ARGS...]
       python -m cuscope run [options] [--] -m MODULE [ARGS...]

Runs the script with this Python under cuscope's zero-code mode, in a new process: its NVTX ranges
and cuscope.scope ranges become one tree, GPU work is attributed to them, the table prints at exit.

  --json FILE      also write the report as JSON (CUSCOPE_JSON)
  --trace FILE     record a trace file (CUSCOPE_TRACE)
  --output FILE    write the table to FILE instead of standard error (CUSCOPE_OUTPUT)
  --domains LIST   NVTX domains to keep ("default,Megatron"), or to leave out ("-NCCL")
                   (CUSCOPE_NVTX_DOMAINS)
  --report-every S rewrite the JSON (and a table FILE) every S seconds while the script runs, so a
                   script stopped by a signal leaves its report (CUSCOPE_REPORT_EVERY)
  --sample-ms MS   leave it on: record the script whole for its first MS milliseconds, then 100 ms
                   (a tenth of MS, at most 100) every MS, CUPTI detached in between
                   (CUSCOPE_SAMPLE_MS; docs/options.md)
A relative FILE is taken from the folder this command is run in, wherever the script goes.

Processes the script starts inherit the injection: the first to start a session writes FILE, any
other one FILE with its pid before the extension, and says so (docs/zero-code.md).

The exit status is the script's; 125 when this command fails (bad command line, no injection
library). CUSCOPE_INJECT_LIBRARY overrides where libcuscope_inject.so is looked for.
"""

FLAGS = {"--json": "CUSCOPE_JSON", "--trace": "CUSCOPE_TRACE", "--output": "CUSCOPE_OUTPUT",
         "--domains": "CUSCOPE_NVTX_DOMAINS", "--report-every": "CUSCOPE_REPORT_EVERY",
         "--sample-ms": "CUSCOPE_SAMPLE_MS"}
PATH_FLAGS = ("--json", "--trace", "--output")
RUN_ERROR = 125


def anchored(path: str) -> str:
    """A relative FILE taken from the folder this command runs in, as `cuscope run` takes it: the
    script may change folder before its session starts, and the session takes a relative path from
    the folder it starts in. A '%' of this folder's name is doubled, so that the session does not
    expand it (%p, %r, %h)."""
    if os.path.isabs(path):
        return path
    return os.path.join(os.getcwd().replace("%", "%%"), path)


def fail(message: str) -> int:
    print(f"python -m cuscope run: {message}", file=sys.stderr)
    return RUN_ERROR


def injection_library() -> Optional[str]:
    """CUSCOPE_INJECT_LIBRARY, else the one installed beside this package, else the build tree's."""
    override = os.environ.get("CUSCOPE_INJECT_LIBRARY")
    if override:
        return override if os.path.isfile(override) else None
    beside = os.path.join(os.path.dirname(os.path.realpath(__file__)), "libcuscope_inject.so")
    from . import _cuscope
    for candidate in (beside, _cuscope.INJECT_BUILD_PATH):
        if candidate and os.path.isfile(candidate):
            return candidate
    return None


def parse(args: List[str]):
    """(settings, command) or raises ValueError saying what is wrong."""
    settings = {}
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return settings, args[i + 1:]
        name, eq, value = a.partition("=")
        if name in FLAGS:
            if not eq:
                if i + 1 >= len(args):
                    raise ValueError(f"{a} needs a value")
                i += 1
                value = args[i]
            if name in PATH_FLAGS:
                # An empty FILE would set the variable to "", which writes no file and says nothing.
                if not value:
                    raise ValueError(f"{name} needs a file name, not ''")
                value = anchored(value)
            settings[FLAGS[name]] = value
            i += 1
            continue
        if a.startswith("--"):
            raise ValueError(f"unknown option {a}")
        return settings, args[i:]
    return settings, []


def run(args: List[str]) -> int:
    if args and args[0] in ("-h", "--help"):
        print(USAGE, end="")
        return 0
    try:
        settings, command = parse(args)
    except ValueError as e:
        return fail(f"{e}\n{USAGE}")
    if not command or command == ["-m"]:
        return fail(f"no script to run\n{USAGE}")
    library = injection_library()
    if library is None:
        return fail("cannot find libcuscope_inject.so; set CUSCOPE_INJECT_LIBRARY to its path")
    library = os.path.realpath(library)  # the script may change directory before its first NVTX call
    env = dict(os.environ)
    for variable in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH"):
        was = env.get(variable)
        if was and was != library:
            print(f"python -m cuscope run: {variable} was '{was}' (another tool); cuscope's library replaces it",
                  file=sys.stderr)
        env[variable] = library
    env.update(settings)
    # The run's id, for every process below it: the first to start a session writes the report files
    # that name no process; the others write theirs with their pid (docs/zero-code.md).
    env["CUSCOPE_RUN_ID"] = f"{os.getpid()}-{time.time_ns()}"
    argv = [sys.executable, *command]
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execve(sys.executable, argv, env)
    except OSError as e:
        return fail(f"cannot run {sys.executable}: {e}")
    return RUN_ERROR  # not reached: execve returns only by raising


def main(argv: List[str]) -> int:
    if argv and argv[0] in ("-h", "--help", "help"):
        print(USAGE, end="")
        return 0
    if not argv or argv[0] != "run":
        return fail(f"the only command is run\n{USAGE}")
    return run(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

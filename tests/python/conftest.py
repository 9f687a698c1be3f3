"""Shared helpers of the Python package's tests (tests/python, run by CTest: tests/python/CMakeLists.txt).

Tests in this process share one cuscope session (one per process, by design): each uses range
names of its own and compares counts before and after. What concerns a whole process (exit,
fork, zero-code mode, start()) runs in a fresh interpreter through run_python().
"""
import importlib.util
import os
import subprocess
import sys
import textwrap

import pytest

# This process's session: no table at pytest's exit.
os.environ["CUSCOPE_PRINT"] = "0"

CLEAN_ENV = {k: v for k, v in os.environ.items()
             if not k.startswith("CUSCOPE_") and k not in ("NVTX_INJECTION64_PATH", "CUDA_INJECTION64_PATH")}


def find(path):
    """The range at `path` in this process's report now; None while there is none."""
    import cuscope  # here, not at the top: CUSCOPE_PRINT is set above before any session starts
    return cuscope.snapshot().find(path)


def calls(path):
    """The calls of the range at `path` in this process's report now; 0 while there is none."""
    r = find(path)
    return 0 if r is None else r.calls


def unbalanced_ends():
    """This process's unbalanced ends so far (diagnostics["unbalanced_ends"])."""
    import cuscope
    return cuscope.snapshot().diagnostics["unbalanced_ends"]


def load_script(path, name):
    """The Python file at `path` (a script of bench/ or tests/gpu/, not a package) as module `name`."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_python(code, *args, env=None, timeout=120, python_args=()):
    """Runs `code` (dedented) in a fresh interpreter with no CUSCOPE_* or injection variables but `env`."""
    full_env = dict(CLEAN_ENV)
    full_env.update(env or {})
    return subprocess.run([sys.executable, *python_args, "-c", textwrap.dedent(code), *args], env=full_env,
                          capture_output=True, text=True, timeout=timeout)


def report_calls(path, name):
    """The calls of range `name` in the JSON report at `path` (a pathlib.Path); 0 while there is none.
    Parses whatever is there: a report rewritten while its program runs must always be whole."""
    if not path.exists():
        return 0
    import json
    return sum(r["calls"] for r in json.loads(path.read_text())["ranges"] if r["path"] == name)


def wait_for_calls(path, name, timeout=10.0):
    """Polls the report at `path` until range `name` has calls (or `timeout` s pass); those calls."""
    import time
    deadline = time.monotonic() + timeout
    calls = report_calls(path, name)
    while calls == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
        calls = report_calls(path, name)
    return calls


def killed_after_its_first_report(args, report, name, **popen):
    """Starts `args`, a program that never exits, waits until its report at `report` holds calls of
    range `name`, and stops it with SIGTERM; returns (calls seen before, exit status, its stderr,
    calls in the report after)."""
    import signal
    p = subprocess.Popen(args, env=dict(CLEAN_ENV), stderr=subprocess.PIPE, text=True, **popen)
    try:
        seen = wait_for_calls(report, name)
    finally:
        p.send_signal(signal.SIGTERM)
        _, err = p.communicate(timeout=30)
    return seen, p.returncode, err, report_calls(report, name)


def count_tables(text):
    """How many tables `text` holds: each opens with 'cuscope VERSION — device: ...'."""
    return sum(1 for line in text.splitlines() if line.startswith("cuscope ") and " — device: " in line)


def table_lines(stderr, name):
    """The table rows of range `name` (a row starts with the indented name, then its calls)."""
    return [line for line in stderr.splitlines() if line.strip().split(" ")[0] == name]


@pytest.fixture
def script(tmp_path):
    """Writes a script file and returns its path."""
    def write(code, name="script.py"):
        path = tmp_path / name
        path.write_text(textwrap.dedent(code))
        return str(path)
    return write

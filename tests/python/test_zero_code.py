"""One session per process, from outside: the module alone, under `cuscope run`, and under
`python -m cuscope run`; NVTX ranges (the nvtx package) and cuscope.scope ranges in one tree.

Each case runs a script in a fresh process and reads its JSON report and its standard error:
exact calls per range, and exactly one table.
"""
import json
import os
import signal
import sys

import pytest

from conftest import CLEAN_ENV, count_tables, killed_after_its_first_report, run_python

CLI = os.environ.get("CUSCOPE_TEST_CLI", "")

MIXED = """
import sys
import nvtx
import cuscope
for _ in range(3):
    with cuscope.scope("zc_step"):
        with nvtx.annotate("zc_nvtx"):
            with cuscope.scope("zc_inner"):
                pass
        with nvtx.annotate("zc_lib_call", domain="zc_lib"):
            pass
    cuscope.step()
r = cuscope.snapshot()
print(r.find("zc_step").calls, sorted(x.path for x in r.ranges if x.path.startswith("zc_step")))
sys.exit(int(sys.argv[1]) if len(sys.argv) > 1 else 0)
"""

# nvtx.annotate's ranges with no domain are in NVTX's default domain; a named domain's ranges sit
# under a range named after the domain.
ZERO_CODE_RANGES = {
    "zc_step": 3,
    "zc_step/zc_nvtx": 3,
    "zc_step/zc_nvtx/zc_inner": 3,
    "zc_step/zc_lib": 3,
    "zc_step/zc_lib/zc_lib_call": 3,
}


def ranges_of(path):
    with open(path) as f:
        rep = json.load(f)
    return {r["path"]: r["calls"] for r in rep["ranges"] if r["path"].startswith("zc_")}


def one_table(stderr):
    return count_tables(stderr) == 1


def run_script(args, tmp_path, env_extra=None):
    import subprocess
    env = dict(CLEAN_ENV)
    env.update(env_extra or {})
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=120, cwd=tmp_path)


@pytest.fixture
def mixed(script):
    pytest.importorskip("nvtx")
    return script(MIXED, "mixed.py")


def test_module_alone_counts_its_scopes_and_nvtx_stays_nvtx(mixed, tmp_path):
    out = tmp_path / "alone.json"
    p = run_script([sys.executable, mixed, "3"], tmp_path, {"CUSCOPE_JSON": str(out)})
    assert p.returncode == 3, p.stderr
    # No NVTX tool: nvtx.annotate's ranges are NVTX's no-ops; the scopes nest among themselves.
    assert ranges_of(out) == {"zc_step": 3, "zc_step/zc_inner": 3}
    assert one_table(p.stderr), p.stderr


@pytest.mark.skipif(not CLI, reason="CUSCOPE_TEST_CLI (the cuscope command) is not set")
def test_under_cuscope_run_one_session_one_tree(mixed, tmp_path):
    out = tmp_path / "run.json"
    p = run_script([CLI, "run", "--json", str(out), "--", sys.executable, mixed, "4"], tmp_path)
    assert p.returncode == 4, p.stderr
    assert ranges_of(out) == ZERO_CODE_RANGES
    calls, paths = p.stdout.split(" ", 1)
    assert calls == "3" and eval(paths) == sorted(ZERO_CODE_RANGES)  # snapshot() reads the injected session
    assert one_table(p.stderr), p.stderr


def test_python_m_cuscope_run_one_session_one_tree(mixed, tmp_path):
    out = tmp_path / "pyrun.json"
    p = run_script([sys.executable, "-m", "cuscope", "run", "--json", str(out), mixed, "5"], tmp_path)
    assert p.returncode == 5, p.stderr
    assert ranges_of(out) == ZERO_CODE_RANGES
    assert one_table(p.stderr), p.stderr


OUTER = """
import nvtx
import cuscope
with {outer}("zc_main"):
    for _ in range(3):
        with cuscope.scope("zc_step"):
            with nvtx.annotate("zc_nvtx"):
                pass
        cuscope.step()
"""


@pytest.mark.parametrize("how", ["injected", "module"])
def test_an_outer_range_open_when_the_window_opens_keeps_its_place(script, tmp_path, how):
    # CUSCOPE_WAIT=1: "zc_main" (an NVTX range under the injection, a scope of the module alone)
    # begins in the wait step and is open when the window opens; the two recorded steps go under it
    # (they went to the top before), and it counts one call. Without the injection the nvtx
    # package's ranges are no-ops.
    pytest.importorskip("nvtx")
    program = script(OUTER.format(outer="nvtx.annotate" if how == "injected" else "cuscope.scope"), "outer.py")
    out = tmp_path / f"outer-{how}.json"
    env = {"CUSCOPE_WAIT": "1", "CUSCOPE_JSON": str(out)}
    args = [sys.executable, "-m", "cuscope", "run", program] if how == "injected" else [sys.executable, program]
    p = run_script(args, tmp_path, env)
    assert p.returncode == 0, p.stderr
    inner = {"zc_main/zc_step/zc_nvtx": 2} if how == "injected" else {}
    assert ranges_of(out) == {"zc_main": 1, "zc_main/zc_step": 2, **inner}


CLOCKED = """
import time
import nvtx
import cuscope
deadline = time.monotonic() + 10
with nvtx.annotate("zc_main"):
    while cuscope.snapshot().steps < 4 and time.monotonic() < deadline:
        with nvtx.annotate("zc_work"):
            time.sleep(0.0002)
print(cuscope.snapshot().steps)
"""


def test_a_program_that_never_steps_gets_its_window_from_cuscope_step_ms(script, tmp_path):
    # Under `python -m cuscope run`, NVTX ranges only and no cuscope.step(): CUSCOPE_STEP_MS ends
    # the steps, so the window of one wait step and two active ones opens inside "zc_main" and
    # closes; its work goes under "zc_main". Without the stepper no step ends (the script gives up
    # after 10 s and nothing is recorded).
    pytest.importorskip("nvtx")
    program = script(CLOCKED, "clocked.py")
    out = tmp_path / "clocked.json"
    env = {"CUSCOPE_STEP_MS": "50", "CUSCOPE_WAIT": "1", "CUSCOPE_ACTIVE": "2", "CUSCOPE_JSON": str(out)}
    p = run_script([sys.executable, "-m", "cuscope", "run", program], tmp_path, env)
    assert p.returncode == 0, p.stderr
    assert int(p.stdout) >= 4, p.stdout
    with open(out) as f:
        rep = json.load(f)
    assert rep["recorded_steps"] == 2
    ranges = ranges_of(out)
    assert set(ranges) == {"zc_main", "zc_main/zc_work"}, ranges
    assert ranges["zc_main"] == 1 and ranges["zc_main/zc_work"] >= 1
    assert rep["notes"] == []


SAMPLED = """
import time
import nvtx
import cuscope
deadline = time.monotonic() + 20
n, whole = 0, None
while time.monotonic() < deadline:
    with nvtx.annotate("zc_sampled"):
        time.sleep(0.001)
    n += 1
    r = cuscope.snapshot()
    if whole is None and r.steps > r.recorded_steps:  # a wait step ended: the whole start is over
        whole = r.recorded_steps
    if whole is not None and r.recorded_steps == whole + 2:  # two samples after it
        break
print(n, whole)
"""


@pytest.mark.parametrize("how", ["cuscope run", "python -m cuscope run"])
def test_sample_ms_records_the_start_whole_then_a_sample_after_each_wait(how, script, tmp_path):
    # --sample-ms 300: steps of 30 ms by cuscope's clock (the script never calls step()), all recorded
    # until one ends 300 ms after the start, then a wait of at least 300 ms, a warm-up step and a
    # recorded one, each time: the report holds the whole start and the two samples, no wait.
    out = tmp_path / "sampled.json"
    command = zero_code(how, ["--json", str(out), "--sample-ms", "300"], script(SAMPLED, "sampled.py"))
    # No CUPTI, on a GPU machine too (tests/gpu-check.sh runs this suite there): a wait of 300 ms calls
    # off the detach the whole start's end asks for, with a note (the GPU cases detach for real).
    p = run_script(command, tmp_path, {"CUSCOPE_ACTIVITIES": "0"})
    assert p.returncode == 0, p.stderr
    n, whole = (int(x) for x in p.stdout.split())
    with open(out) as f:
        rep = json.load(f)
    assert whole >= 1
    assert rep["recorded_steps"] == whole + 2
    assert rep["clock_steps"] == rep["steps"] and rep["step_ms"] == 30
    assert rep["steps"] > rep["recorded_steps"] + 2  # the waits' steps, taken again
    assert rep["window_start_step"] == 0
    assert 0 < ranges_of(out)["zc_sampled"] < n
    assert rep["notes"] == []


def test_python_m_cuscope_run_takes_the_options(mixed, tmp_path):
    out = tmp_path / "domains.json"
    table = tmp_path / "table.txt"
    p = run_script([sys.executable, "-m", "cuscope", "run", f"--json={out}", "--output", str(table),
                    "--domains", "-zc_lib", "--", mixed], tmp_path)
    assert p.returncode == 0, p.stderr
    assert ranges_of(out) == {k: v for k, v in ZERO_CODE_RANGES.items() if "zc_lib" not in k}
    assert "zc_step" in table.read_text() and "zc_step" not in p.stderr


SERVER = """
import time
import nvtx
while True:
    with nvtx.annotate("zc_request"):
        time.sleep(0.01)
"""


def zero_code(how, options, script):
    """The command line that runs `script` under `how` ("cuscope run" or "python -m cuscope run") with
    `options`; skips without the nvtx package, or without the cuscope command."""
    pytest.importorskip("nvtx")
    if how == "python -m cuscope run":
        return [sys.executable, "-m", "cuscope", "run", *options, "--", script]
    if not CLI:
        pytest.skip("CUSCOPE_TEST_CLI (the cuscope command) is not set")
    return [CLI, "run", *options, "--", sys.executable, script]


@pytest.mark.parametrize("how", ["cuscope run", "python -m cuscope run"])
def test_an_unmodified_server_killed_by_sigterm_leaves_its_last_report(how, script, tmp_path):
    """Zero-code mode on a program that never exits: --report-every rewrites the JSON while it runs,
    whole each time, and what it held is there after SIGTERM (which runs no exit handler)."""
    out = tmp_path / "served.json"
    command = zero_code(how, ["--json", str(out), "--report-every", "1"], script(SERVER, "server.py"))
    seen, status, err, after = killed_after_its_first_report(command, out, "zc_request", cwd=tmp_path)
    assert seen > 0
    assert status == -signal.SIGTERM
    assert count_tables(err) == 0  # killed: no exit table, only the files written while it ran
    assert after >= seen


FAMILY = """
import subprocess
import sys
import nvtx
with nvtx.annotate("zc_parent"):
    pass
child = "import os\\nimport nvtx\\nwith nvtx.annotate('zc_child'):\\n    pass\\nprint(os.getpid())"
print(subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, check=True).stdout.strip())
"""


@pytest.mark.parametrize("how", ["cuscope run", "python -m cuscope run"])
def test_a_child_process_writes_its_own_report_beside_the_first(how, script, tmp_path):
    """A script that runs another Python process (a worker, a tool): the child inherits the injection,
    and writes its report with its pid instead of replacing the script's."""
    out = tmp_path / "family.json"
    p = run_script(zero_code(how, ["--json", str(out)], script(FAMILY, "family.py")), tmp_path)
    assert p.returncode == 0, p.stderr
    child = int(p.stdout.strip())
    assert sorted(f.name for f in tmp_path.glob("family*.json")) == sorted(["family.json", f"family-{child}.json"])
    assert ranges_of(out) == {"zc_parent": 1}
    assert ranges_of(tmp_path / f"family-{child}.json") == {"zc_child": 1}


def test_python_m_cuscope_run_runs_a_module(tmp_path):
    (tmp_path / "zc_mod.py").write_text("import cuscope\nwith cuscope.scope('zc_mod'):\n    pass\n")
    out = tmp_path / "mod.json"
    p = run_script([sys.executable, "-m", "cuscope", "run", "--json", str(out), "-m", "zc_mod"], tmp_path)
    assert p.returncode == 0, p.stderr
    assert ranges_of(out) == {"zc_mod": 1}


def test_python_m_cuscope_run_takes_a_relative_file_from_where_it_runs(tmp_path):
    # The script changes folder before its first scope: the report still lands where the command
    # was run, as with `cuscope run`; a '%' in that folder's name is not expanded.
    here = tmp_path / "100%p"
    (here / "elsewhere").mkdir(parents=True)
    (here / "zc_cd.py").write_text(
        "import os\nos.chdir('elsewhere')\nimport cuscope\nwith cuscope.scope('zc_cd'):\n    pass\n")
    p = run_script([sys.executable, "-m", "cuscope", "run", "--json", "cd.json", "zc_cd.py"], here)
    assert p.returncode == 0, p.stderr
    assert not (here / "elsewhere" / "cd.json").exists()
    assert ranges_of(here / "cd.json") == {"zc_cd": 1}


@pytest.mark.parametrize("args, message", [
    ([], "the only command is run"),
    (["run"], "no script to run"),
    (["run", "--json"], "--json needs a value"),
    (["run", "--bogus", "x.py"], "unknown option --bogus"),
    (["run", "--json", "", "x.py"], "--json needs a file name, not ''"),
    (["run", "--trace=", "x.py"], "--trace needs a file name, not ''"),
])
def test_python_m_cuscope_run_refuses_a_bad_command_line(args, message, tmp_path):
    p = run_script([sys.executable, "-m", "cuscope", *args], tmp_path)
    assert p.returncode == 125
    assert message in p.stderr


@pytest.mark.parametrize("args", [["--help"], ["-h"], ["help"], ["run", "--help"]])
def test_python_m_cuscope_help_prints_the_usage_and_exits_0(args, tmp_path):
    p = run_script([sys.executable, "-m", "cuscope", *args], tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("usage: python -m cuscope run"), p.stdout
    assert p.stderr == ""


def test_python_m_cuscope_run_without_the_injection_library(mixed, tmp_path):
    p = run_script([sys.executable, "-m", "cuscope", "run", mixed], tmp_path,
                   {"CUSCOPE_INJECT_LIBRARY": str(tmp_path / "missing.so")})
    assert p.returncode == 125
    assert "cannot find libcuscope_inject.so" in p.stderr


def test_the_module_forwards_under_injection_without_a_tree_of_its_own():
    """Under injection the module's session calls reach the injected engine: start() returns what
    the engine says, and the module never prints a table of its own."""
    p = run_python("""
        import cuscope
        with cuscope.scope("zc_fwd"):
            pass
        print(cuscope.start())  # the engine started on the first scope
    """, python_args=("-m", "cuscope", "run", "--"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "False"
    assert p.stderr.count("zc_fwd") == 1, p.stderr


def test_an_exit_with_no_entry_under_injection_is_counted_in_the_injected_session(tmp_path):
    """The module hands the count to the injected engine: a count kept in the module's own copy,
    which runs no session, would be lost."""
    out = tmp_path / "unentered.json"
    p = run_python("""
        import cuscope
        cuscope.scope("zc_unentered").__exit__(None, None, None)  # before any scope: the first call
        with cuscope.scope("zc_entered"):
            pass
        cuscope.scope("zc_unentered").__exit__(None, None, None)  # on a thread in a scope since
        print(cuscope.snapshot().diagnostics["unbalanced_ends"])
    """, env={"CUSCOPE_JSON": str(out)}, python_args=("-m", "cuscope", "run", "--"))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "2"
    with open(out) as f:
        assert json.load(f)["diagnostics"]["unbalanced_ends"] == 2


def test_keyboard_interrupt_under_injection_with_the_module_unused_still_prints_the_table():
    """The module imported but none of its scopes run: at an exit by KeyboardInterrupt (no C exit
    handlers), its atexit still shuts the injected session down, and the table prints once."""
    pytest.importorskip("nvtx")
    p = run_python("""
        import os, signal
        import nvtx
        import cuscope
        with nvtx.annotate("zc_unused_module"):
            pass
        os.kill(os.getpid(), signal.SIGINT)
        import time; time.sleep(5)
    """, python_args=("-m", "cuscope", "run", "--"))
    assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr)
    assert one_table(p.stderr), p.stderr
    assert p.stderr.count("zc_unused_module") == 1, p.stderr

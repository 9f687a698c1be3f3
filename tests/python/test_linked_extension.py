"""One session per process with a C++ extension that links cuscope itself (linked_ext.cpp, built
as cuscope_linked_ext) beside the cuscope module: whichever copy starts the session, the other
hands over to it (session/handover.hpp), so both copies' scopes land in one tree, both copies'
snapshot() read it, and one table prints at exit. Under `python -m cuscope run` both hand over to
the injected engine, and NVTX ranges join the same tree.

Each case runs a script in a fresh process and reads what the script's snapshots saw (its
standard output), the exit report (CUSCOPE_JSON) and its standard error: exact calls per range.
"""
import json
import os
import signal
import textwrap

import pytest

from conftest import count_tables, run_python, table_lines

EXT_DIR = os.environ.get("CUSCOPE_TEST_EXT_DIR", "")


@pytest.fixture
def ext_env(tmp_path):
    """The environment a script needs to import cuscope_linked_ext, and its exit report's path."""
    if not EXT_DIR or not any(f.startswith("cuscope_linked_ext.") for f in os.listdir(EXT_DIR or ".")):
        pytest.fail(f"cuscope_linked_ext is not built in CUSCOPE_TEST_EXT_DIR={EXT_DIR!r} "
                    "(python/CMakeLists.txt builds it with the tests)")
    out = tmp_path / "report.json"
    path = os.pathsep.join([EXT_DIR, os.environ.get("PYTHONPATH", "")])
    return {"PYTHONPATH": path, "CUSCOPE_JSON": str(out)}, out


def exit_ranges(path):
    """Calls per range path in the exit report, every range but the root."""
    with open(path) as f:
        return {r["path"]: r["calls"] for r in json.load(f)["ranges"] if r["path"]}


def seen(p):
    """What the script printed: one JSON object on its last line of standard output."""
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


def expect_one_table_row(p, name, calls):
    assert count_tables(p.stderr) == 1, p.stderr
    rows = table_lines(p.stderr, name)
    assert len(rows) == 1 and rows[0].split()[1] == str(calls), p.stderr


def reporting(body):
    """`body`, then what the module's and the extension's snapshots see of range INNER, printed."""
    return textwrap.dedent(body) + textwrap.dedent("""
        r = cuscope.snapshot()
        inner = r.find(INNER)
        print(json.dumps({
            "module": {x.path: x.calls for x in r.ranges if x.path},
            "items": inner.counters["ext_items"].total if inner is not None else None,
            "extension": ext.calls(INNER),
        }))
    """)


def test_module_first_then_the_extension_joins_its_session(ext_env):
    env, out = ext_env
    p = run_python(reporting("""
        import json
        import cuscope
        import cuscope_linked_ext as ext
        INNER = "lx_outer/ext_inner"
        for _ in range(2):
            with cuscope.scope("lx_outer"):
                ext.inner(3)
    """), env=env)
    expected = {"lx_outer": 2, "lx_outer/ext_inner": 6}
    # Two sessions would show the extension's scopes at the root of its own tree, and two tables.
    assert seen(p) == {"module": expected, "items": 12.0, "extension": 6}
    assert exit_ranges(out) == expected
    expect_one_table_row(p, "ext_inner", 6)
    assert "cannot share a session" not in p.stderr, p.stderr


def test_extension_first_then_the_module_joins_its_session(ext_env):
    env, out = ext_env
    p = run_python(reporting("""
        import json
        import cuscope_linked_ext as ext
        started_by_extension = ext.start()  # before the module is even imported
        import cuscope
        started_by_module = cuscope.start()
        INNER = "lx_outer/ext_inner"
        for _ in range(2):
            with cuscope.scope("lx_outer"):
                ext.inner(3)
        def body():
            with cuscope.scope("lx_py"):
                pass
        ext.around(body)
        print(started_by_extension, started_by_module)
    """), env=env)
    expected = {"lx_outer": 2, "lx_outer/ext_inner": 6, "ext_around": 1, "ext_around/lx_py": 1}
    assert p.stdout.splitlines()[0] == "True False", p.stdout  # one session: the second start() finds it
    assert seen(p) == {"module": expected, "items": 12.0, "extension": 6}
    assert exit_ranges(out) == expected
    expect_one_table_row(p, "ext_inner", 6)  # the module's exit shuts the extension's session down
    expect_one_table_row(p, "lx_py", 1)


def test_an_exit_with_no_entry_is_counted_in_the_session_the_extension_runs(ext_env):
    env, out = ext_env
    p = run_python("""
        import json
        import cuscope_linked_ext as ext
        ext.start()
        import cuscope
        cuscope.scope("lx_unentered").__exit__(None, None, None)
        ext.inner(1)
        cuscope.scope("lx_unentered").__exit__(None, None, None)  # the thread has a tree now
        print(json.dumps(cuscope.snapshot().diagnostics["unbalanced_ends"]))
    """, env=env)
    assert seen(p) == 2
    with open(out) as f:
        assert json.load(f)["diagnostics"]["unbalanced_ends"] == 2


def test_under_python_m_cuscope_run_both_copies_and_nvtx_share_one_tree(ext_env):
    pytest.importorskip("nvtx")
    env, out = ext_env
    p = run_python(reporting("""
        import json
        import nvtx
        import cuscope
        import cuscope_linked_ext as ext
        INNER = "lx_outer/lx_nvtx/ext_inner"
        for _ in range(2):
            with cuscope.scope("lx_outer"):
                with nvtx.annotate("lx_nvtx"):
                    ext.inner(3)
    """), env=env, python_args=("-m", "cuscope", "run", "--"))
    expected = {"lx_outer": 2, "lx_outer/lx_nvtx": 2, "lx_outer/lx_nvtx/ext_inner": 6}
    assert seen(p) == {"module": expected, "items": 12.0, "extension": 6}
    assert exit_ranges(out) == expected
    expect_one_table_row(p, "ext_inner", 6)


def test_keyboard_interrupt_while_the_extension_runs_the_session_still_prints_its_table(ext_env):
    # The module's scopes never ran, and the C exit handlers never run after SIGINT: the module's
    # atexit shuts down the session the extension's copy runs.
    env, out = ext_env
    p = run_python("""
        import os, signal
        import cuscope_linked_ext as ext
        import cuscope
        ext.inner(2)
        os.kill(os.getpid(), signal.SIGINT)
        import time; time.sleep(5)
    """, env=env)
    assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr)
    assert exit_ranges(out) == {"ext_inner": 2}
    expect_one_table_row(p, "ext_inner", 2)

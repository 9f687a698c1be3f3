"""Lifetimes and misuse, each in a fresh interpreter: the program neither crashes nor hangs, and
the table prints once (at the interpreter's exit), with what was left open counted."""
import signal
import subprocess
import sys

import pytest

from conftest import CLEAN_ENV, count_tables, run_python, table_lines


def expect_one_table(p, name, calls):
    """One table in the output, whose row for range `name` says `calls` calls."""
    assert count_tables(p.stderr) == 1, p.stderr
    rows = table_lines(p.stderr, name)
    assert len(rows) == 1, p.stderr
    assert rows[0].split()[1] == str(calls), rows[0]


def test_table_prints_once_at_exit():
    p = run_python("""
        import cuscope
        for _ in range(4):
            with cuscope.scope("lt_step"):
                pass
        cuscope.shutdown()  # an explicit shutdown, then the interpreter's: one table
    """)
    assert p.returncode == 0, p.stderr
    expect_one_table(p, "lt_step", 4)


def test_a_session_that_never_started_prints_nothing():
    p = run_python("""
        import cuscope
        cuscope.enabled()
    """)
    assert p.returncode == 0, p.stderr
    assert count_tables(p.stderr) == 0 and p.stderr == "", p.stderr


def test_a_scope_left_open_at_exit_is_counted():
    p = run_python("""
        import cuscope
        with cuscope.scope("lt_closed"):
            pass
        cuscope.scope("lt_left_open").__enter__()
        cuscope.push("lt_pushed")
    """)
    assert p.returncode == 0, p.stderr
    expect_one_table(p, "lt_closed", 1)
    assert "2 scopes still open" in p.stderr, p.stderr


def test_an_uncaught_exception_inside_a_scope():
    p = run_python("""
        import cuscope
        with cuscope.scope("lt_outer"):
            with cuscope.scope("lt_raises"):
                raise RuntimeError("lt boom")
    """)
    assert p.returncode == 1
    assert "RuntimeError: lt boom" in p.stderr
    expect_one_table(p, "lt_outer", 1)
    assert "still open" not in p.stderr, p.stderr


def test_keyboard_interrupt_inside_a_scope_still_prints_the_table():
    # Python exits by re-raising SIGINT after finalizing: the C exit handlers never run, so the
    # table comes from the interpreter's atexit.
    p = run_python("""
        import os, signal, cuscope
        with cuscope.scope("lt_interrupted"):
            os.kill(os.getpid(), signal.SIGINT)
            import time; time.sleep(5)
    """)
    assert p.returncode == -signal.SIGINT, (p.returncode, p.stderr)
    assert "KeyboardInterrupt" in p.stderr
    expect_one_table(p, "lt_interrupted", 1)


def test_a_daemon_thread_inside_a_scope_at_exit():
    p = run_python("""
        import threading, time, cuscope
        started = threading.Event()
        def daemon():
            with cuscope.scope("lt_daemon"):
                started.set()
                time.sleep(60)
        threading.Thread(target=daemon, daemon=True).start()
        started.wait()
        with cuscope.scope("lt_main"):
            pass
    """, timeout=30)
    assert p.returncode == 0, p.stderr
    expect_one_table(p, "lt_main", 1)
    assert "1 scope still open" in p.stderr, p.stderr


def test_a_scope_held_by_a_daemon_thread_at_exit_prints_no_leak_report():
    # The daemon thread's frame still holds the scope when the interpreter finalizes: nanobind
    # would report it as a leak "likely caused by a reference counting issue in the binding code".
    p = run_python("""
        import threading, time, cuscope
        started = threading.Event()
        held = cuscope.scope("lt_held_by_daemon")
        def daemon():
            with held:
                started.set()
                time.sleep(60)
        threading.Thread(target=daemon, daemon=True).start()
        started.wait()
    """, env={"CUSCOPE_PRINT": "0"}, timeout=30)
    assert p.returncode == 0, p.stderr
    assert p.stderr == "", p.stderr


@pytest.mark.parametrize("call", ["snapshot", "flush"])
def test_a_daemon_thread_in_a_call_that_releases_the_gil_at_exit(call):
    # The docs' live report from any thread: a daemon thread that polls it while the program ends.
    # Python ends a daemon thread that takes the GIL back once it finalizes; ended inside the C++
    # frame that took it back, the process aborted (std::terminate, status 134) in 10 runs of 10.
    # Now such a thread parks from the interpreter's exit on, and the exit is the program's.
    for run in range(3):
        p = run_python(f"""
            import threading, time, cuscope
            def poll():
                while True:
                    cuscope.{call}()
            threading.Thread(target=poll, daemon=True).start()
            with cuscope.scope("lt_polled"):
                time.sleep(0.05)
        """, timeout=60)
        assert p.returncode == 0, (run, p.stderr)
        assert "terminate" not in p.stderr, p.stderr
        expect_one_table(p, "lt_polled", 1)


def test_multiprocessing_fork_child_records_nothing_and_prints_nothing():
    p = run_python("""
        import multiprocessing as mp, cuscope
        def child(q):
            with cuscope.scope("lt_in_child"):
                pass
            q.put(cuscope.snapshot().find("lt_in_child") is None)
        if __name__ == "__main__":
            with cuscope.scope("lt_parent"):
                ctx = mp.get_context("fork")
                q = ctx.Queue()
                procs = [ctx.Process(target=child, args=(q,)) for _ in range(3)]
                for pr in procs: pr.start()
                print([q.get(timeout=30) for _ in procs])
                for pr in procs: pr.join(30)
                print([pr.exitcode for pr in procs])
    """, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("\n")[:2] == ["[True, True, True]", "[0, 0, 0]"], p.stdout
    expect_one_table(p, "lt_parent", 1)
    assert "lt_in_child" not in p.stderr


def test_many_threads_at_once():
    p = run_python("""
        import threading, cuscope
        def work():
            for _ in range(200):
                with cuscope.scope("lt_thread"):
                    cuscope.count("items", 1)
        threads = [threading.Thread(target=work) for _ in range(32)]
        for t in threads: t.start()
        for t in threads: t.join()
        r = cuscope.snapshot().find("lt_thread")
        print(r.calls, r.threads, r.counters["items"].total)
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["6400", "32", "6400.0"]
    expect_one_table(p, "lt_thread", 6400)



def test_multiprocessing_forkserver_child_records_and_prints_only_at_its_own_shutdown(script):
    # A forkserver child is forked from the server, a new interpreter where no session started: it
    # records. It ends with os._exit(), which runs no exit handler: its table prints only when it
    # calls shutdown() itself. (A script file: the server imports the child's function from it.)
    path = script("""
        import multiprocessing as mp, sys, cuscope
        def child(q, shut_down):
            with cuscope.scope("lt_in_forkserver_child"):
                pass
            q.put(cuscope.snapshot().find("lt_in_forkserver_child").calls)
            if shut_down:
                cuscope.shutdown()
        if __name__ == "__main__":
            ctx = mp.get_context("forkserver")
            q = ctx.Queue()
            for shut_down in (False, True):
                pr = ctx.Process(target=child, args=(q, shut_down))
                pr.start()
                print(q.get(timeout=30), flush=True)
                pr.join(30)
                print(pr.exitcode, flush=True)
                print(f"after child {shut_down}", file=sys.stderr, flush=True)
    """)
    p = subprocess.run([sys.executable, path], env=CLEAN_ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "0", "1", "0"], p.stdout
    without, with_shutdown = p.stderr.split("after child False\n")
    assert count_tables(without) == 0, p.stderr
    assert count_tables(with_shutdown) == 1, p.stderr
    assert len(table_lines(with_shutdown, "lt_in_forkserver_child")) == 1, p.stderr

"""cuscope.start(**options): the C++ Options, checked by the library's CUSCOPE_* parser. Each case
runs in a fresh interpreter: a process starts its session once."""
import json
import os

import pytest

from conftest import run_python


def test_start_applies_the_options_and_starts_once(tmp_path):
    out = tmp_path / "report.json"
    p = run_python(f"""
        import cuscope
        assert cuscope.start(json_path={str(out)!r}, print_at_exit=False, warmup_steps=1, max_rows=5,
                             nvtx_domains=["default", "Megatron"], metric_ranges=("a/b",))
        assert cuscope.start() is False           # already started: nothing changes
        for i in range(3):
            with cuscope.scope("st_step"):
                pass
            cuscope.step()
        r = cuscope.snapshot()
        print(r.steps, r.recorded_steps, r.find("st_step").calls)
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["3", "2", "2"]  # the warm-up step is left out
    assert p.stderr == ""                          # print_at_exit=False
    assert json.loads(out.read_text())["schema"] == "cuscope.report/1"


def test_a_repeated_window_records_each_cycles_active_steps():
    p = run_python("""
        import cuscope
        assert cuscope.start(print_at_exit=False, wait_steps=2, active_steps=1, repeat=0)
        for i in range(9):  # steps 2, 5 and 8 recorded
            with cuscope.scope("cycled"):
                pass
            cuscope.step()
        r = cuscope.snapshot()
        print(r.steps, r.recorded_steps, r.find("cycled").calls)
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["9", "3", "3"]
    assert p.stderr == ""


def test_start_takes_the_text_a_variable_holds():
    p = run_python("""
        import cuscope
        assert cuscope.start(print_at_exit="off", max_depth="8", sort="calls")
    """)
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""


def test_a_setting_replaces_a_bad_environment_value_with_no_note_that_it_was_kept():
    # Before, CUSCOPE_WAIT='abc' was reported as "keeping 0" while the setting's 1 ran; a bad value
    # beside the settings is still reported.
    p = run_python("""
        import cuscope
        assert cuscope.start(print_at_exit=False, wait_steps=1)
        for i in range(3):
            with cuscope.scope("st_replaced"):
                pass
            cuscope.step()
        r = cuscope.snapshot()
        print(r.recorded_steps, r.find("st_replaced").calls)
        print("|".join(r.notes))
    """, env={"CUSCOPE_WAIT": "abc", "CUSCOPE_FINDINGS": "x"})
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split() == ["2", "2"]  # one wait step: the setting's
    assert "CUSCOPE_WAIT" not in p.stdout + p.stderr
    assert lines[1].startswith("CUSCOPE_FINDINGS='x' is not a whole number")


def test_a_sample_records_the_start_whole_then_a_step_after_each_wait():
    # sample_ms=400: every step recorded until one ends 400 ms after the start, then a wait of at
    # least 400 ms (its step taken again), a warm-up step and a recorded one.
    p = run_python("""
        import time, cuscope
        assert cuscope.start(print_at_exit=False, sample_ms=400, step_ms=86400000)  # no clock step
        def steps(n):
            for i in range(n):
                with cuscope.scope("sampled"):
                    pass
                cuscope.step()
        steps(3)
        time.sleep(0.45)
        steps(4)  # the last whole step, then the wait's step again and again
        time.sleep(0.45)
        steps(3)  # the wait ends, the warm-up step, the recorded step
        r = cuscope.snapshot()
        print(r.steps, r.recorded_steps, r.find("sampled").calls)
    """)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["10", "5", "5"]


def test_options_come_on_top_of_the_environment(tmp_path):
    p = run_python("""
        import cuscope
        cuscope.start(output_path=__import__("sys").argv[1])
        with cuscope.scope("st_env"):
            pass
    """, str(tmp_path / "table.txt"), env={"CUSCOPE_ROWS": "7"})
    assert p.returncode == 0, p.stderr
    assert "st_env" in (tmp_path / "table.txt").read_text()


@pytest.mark.parametrize("call, message", [
    ("max_rows='ten'", "max_rows='ten': CUSCOPE_ROWS='ten' is not a whole number"),
    ("max_depth=0", r"max_depth=0: CUSCOPE_MAX_DEPTH='0' is out of range \[1, 256\]"),
    ("sort='bogus'", "sort='bogus': CUSCOPE_SORT='bogus' is not a sort key"),
    ("nvtx_domains='a,-b'", "nvtx_domains='a,-b': CUSCOPE_NVTX_DOMAINS='a,-b' names both domains"),
    ("enabled='maybe'", "enabled='maybe': CUSCOPE_ENABLE='maybe' is not a boolean"),
    ("warmup_steps=-1", r"warmup_steps=-1: CUSCOPE_WARMUP='-1' is out of range \[0, 1000000000\]"),
    ("wait_ms='soon'", "wait_ms='soon': CUSCOPE_WAIT_MS='soon' is not a whole number"),
    ("sample_ms=-1", "sample_ms=-1: CUSCOPE_SAMPLE_MS='-1' is out of range"),
    ("max_rows=2.5", "max_rows=2.5: CUSCOPE_ROWS takes a whole number"),
    ("gpu_events=1", "gpu_events=1: CUSCOPE_GPU_EVENTS takes a bool"),
    ("events='sampled:1'", "events='sampled:1': CUSCOPE_EVENTS='sampled:1' is not an event mode"),
    # No variable holds a NUL: a value cut at it would start with another value ('name', '5', a path).
    (r"sort='name\0junk'", r"sort='name\\x00junk': CUSCOPE_SORT cannot hold a NUL character"),
    (r"max_rows='5\0'", r"max_rows='5\\x00': CUSCOPE_ROWS cannot hold a NUL character"),
    (r"json_path='r\0.json'", r"json_path='r\\x00.json': CUSCOPE_JSON cannot hold a NUL character"),
    (r"sort='\ud800'", r"sort='\\ud800': CUSCOPE_SORT cannot hold a lone surrogate that escapes no byte"),
])
def test_a_bad_value_raises_value_error_naming_it_and_nothing_starts(call, message):
    p = run_python(f"""
        import re, sys, cuscope
        try:
            cuscope.start({call})
        except ValueError as e:
            print(e)
            assert re.search(sys.argv[1], str(e)), str(e)
        else:
            sys.exit("no ValueError")
        assert cuscope.start(print_at_exit=False)  # the failed call started nothing
    """, message)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_path_from_undecodable_bytes_is_taken_as_those_bytes(tmp_path):
    # os.listdir() and sys.argv give a name that is not UTF-8 as lone surrogates; os.fsencode()
    # turns them back into the bytes a CUSCOPE_JSON variable would hold.
    p = run_python("""
        import os, sys, cuscope
        assert cuscope.start(json_path=os.path.join(sys.argv[1], "r\\udcff.json"), print_at_exit=False)
        with cuscope.scope("st_bytes_path"):
            pass
    """, str(tmp_path))
    assert p.returncode == 0, p.stderr
    assert os.listdir(os.fsencode(tmp_path)) == [b"r\xff.json"]


def test_an_unknown_option_raises_type_error():
    p = run_python("""
        import cuscope
        try:
            cuscope.start(max_rowz=3)
        except TypeError as e:
            assert "unknown cuscope option 'max_rowz'" in str(e), str(e)
        else:
            raise SystemExit("no TypeError")
    """)
    assert p.returncode == 0, p.stdout + p.stderr


def test_a_server_killed_by_sigterm_leaves_its_last_report(tmp_path):
    """A process stopped by a signal runs no exit handler: with report_every_s the JSON written while
    it ran is there, whole, after SIGTERM."""
    import signal
    import sys
    import textwrap

    from conftest import killed_after_its_first_report

    out = tmp_path / "served.json"
    code = textwrap.dedent(f"""
        import time, cuscope
        cuscope.start(json_path={str(out)!r}, report_every_s=1, print_at_exit=False)
        while True:
            with cuscope.scope("st_request"):
                time.sleep(0.01)
    """)
    seen, status, err, after = killed_after_its_first_report([sys.executable, "-c", code], out, "st_request")
    assert seen > 0
    assert status == -signal.SIGTERM
    assert err == ""
    assert after >= seen

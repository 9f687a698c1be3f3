"""bench/torch_overhead.py without a GPU: its statistics, its arguments, its skip without torch, and
its rounds end to end with a stand-in torch module.

The stand-in (STAND_IN_TORCH below, written to a temporary folder on PYTHONPATH) has the calls the
step makes, with shapes checked, its NVTX ranges through the nvtx package (real NVTX calls, which
`cuscope run` turns into cuscope ranges) and a log of synchronizations and profiler entries. Only
torch and the GPU are stood in: the parent, the children, `cuscope run` and cuscope.scope are real.
"""
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import CLEAN_ENV, load_script

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "bench", "torch_overhead.py")
CLI = os.environ.get("CUSCOPE_TEST_CLI", "")
# The minimal CUPTI client's injection library this build made (bench/minimal_cupti_inject.cpp).
MINIMAL_CUPTI = os.environ.get("CUSCOPE_TEST_MINIMAL_CUPTI", "")
# Its line on standard error when it traces, and when CUPTI refuses (no driver, as here).
TRACING = "cuscope_minimal_cupti: tracing kernels (CONCURRENT_KERNEL records only, handed back unread)"
REFUSED = ("cuscope_minimal_cupti: not tracing: cuptiActivityEnable(CONCURRENT_KERNEL) failed: "
           "CUPTI_ERROR_UNKNOWN")


bench = load_script(SCRIPT, "torch_overhead")


def run_bench(*args, env=None):
    return subprocess.run([sys.executable, SCRIPT, *args], env={**CLEAN_ENV, **(env or {})},
                          capture_output=True, text=True, timeout=240)


def test_round_order_rotates_one_configuration_each_round():
    assert bench.rotation(["a", "b", "c"], 4) == [["a", "b", "c"], ["b", "c", "a"], ["c", "a", "b"], ["a", "b", "c"]]


def test_spread_takes_the_median_of_round_medians_and_the_pooled_median():
    f = bench.spread([[3, 1, 2], [10, 20], [5]])
    assert f == {"round_medians_ns": [2, 15, 5], "median_ns": 5, "min_round_median_ns": 2,
                 "max_round_median_ns": 15, "pooled_median_ns": 4}


def test_ratios_are_over_the_bare_step_of_the_same_rounds():
    figures = bench.summarize({"bare": [[100, 100], [200, 200]], "tool": [[110], [220]]})
    assert figures["bare"]["ratio_over_bare"] == 1
    assert figures["tool"]["median_ns"] == 165
    assert figures["tool"]["ratio_over_bare"] == pytest.approx(1.1)
    assert figures["tool"]["round_ratios_over_bare"] == pytest.approx([1.1, 1.1])
    assert figures["tool"]["paired_ratio_over_bare"] == pytest.approx(1.1)


def test_the_paired_ratio_keeps_a_cost_that_the_bare_steps_drift_hides():
    # The H200 run of 2026-11-27 (a1456a7): the bare step drifted between rounds by more than the tool
    # cost, and the ratio of medians read 1.000 where every round but one said about 1.18.
    figures = bench.summarize({"bare": [[4258], [3399], [4270]], "tool": [[5054], [4015], [4259]],
                               "torch_profiler": [[7996], [7791], [6739]]})
    assert figures["tool"]["ratio_over_bare"] == pytest.approx(4259 / 4258)
    assert figures["tool"]["paired_ratio_over_bare"] == pytest.approx(4015 / 3399)
    assert figures["torch_profiler"]["paired_ratio_over_bare"] == pytest.approx(7996 / 4258)
    added = bench.added_ratios({**figures, "cuscope": figures["tool"]})
    assert added["cuscope"]["value"] == pytest.approx((4015 / 3399 - 1) / (7996 / 4258 - 1))
    assert added["cuscope"]["verdict"] == "met"


def test_added_ratio_and_its_verdict():
    assert bench.added_ratio(100, 110, 160) == pytest.approx(1 / 6)
    assert bench.verdict(bench.added_ratio(100, 110, 160)) == "met"
    assert bench.verdict(bench.added_ratio(100, 120, 160)) == "met"  # exactly 1/3
    assert bench.verdict(bench.added_ratio(100, 130, 160)) == "missed"
    assert bench.verdict(bench.added_ratio(100, 90, 160)) == "met"  # cuscope faster than bare: noise
    assert bench.added_ratio(100, 110, 100) is None
    assert bench.added_ratio(100, 110, 90) is None
    assert bench.verdict(None) == "undefined"


def test_added_ratios_need_torch_profiler_in_the_run():
    step_ns = {"bare": [[100]], "cuscope": [[130]], "torch_profiler": [[160]], "python_api": [[110]],
               "minimal_cupti": [[106]]}
    added = bench.added_ratios(bench.summarize(step_ns))
    assert added["cuscope"]["value"] == pytest.approx(0.5) and added["cuscope"]["verdict"] == "missed"
    assert added["python_api"]["value"] == pytest.approx(1 / 6) and added["python_api"]["verdict"] == "met"
    assert added["minimal_cupti"]["value"] == pytest.approx(0.1)  # the floor's share of torch.profiler's cost
    assert "cuscope_external" not in added
    assert bench.added_ratios(bench.summarize({"bare": [[100]], "cuscope": [[130]]})) == {}


def test_over_minimal_cupti_divides_each_tool_by_the_floor_of_the_same_run():
    step_ns = {"bare": [[100]], "minimal_cupti": [[104]], "cuscope": [[130]], "torch_profiler": [[156]]}
    assert bench.over_minimal_cupti(bench.summarize(step_ns)) == pytest.approx({"cuscope": 1.25, "torch_profiler": 1.5})
    assert bench.over_minimal_cupti(bench.summarize({"bare": [[100]], "cuscope": [[130]]})) == {}


def test_the_minimal_client_must_say_it_traced():
    log = "/out/stderr-minimal_cupti.log"
    assert bench.minimal_cupti_problems("x\ncuscope_minimal_cupti: tracing kernels (...)\n", log) == []
    assert bench.minimal_cupti_problems(
        "cuscope_minimal_cupti: not tracing: cuptiActivityEnable(CONCURRENT_KERNEL) failed: CUPTI_ERROR_UNKNOWN\n", log) == [
        "minimal_cupti: no line 'cuscope_minimal_cupti: tracing kernels' in its standard error: it said "
        "'cuscope_minimal_cupti: not tracing: cuptiActivityEnable(CONCURRENT_KERNEL) failed: CUPTI_ERROR_UNKNOWN' "
        "(/out/stderr-minimal_cupti.log)"]
    assert bench.minimal_cupti_problems("", log) == [
        "minimal_cupti: no line 'cuscope_minimal_cupti: tracing kernels' in its standard error: the library was "
        "not loaded (no CUDA initialized, or not an injection library) (/out/stderr-minimal_cupti.log)"]


def require_driverless_minimal_client():
    """Skips a case about the library this build made on a machine without a CUDA driver, where
    there is no such library or there is a driver (CUPTI may start there)."""
    if not MINIMAL_CUPTI:
        pytest.skip("no minimal CUPTI client in this build (CUSCOPE_TEST_MINIMAL_CUPTI)")
    try:
        ctypes.CDLL("libcuda.so.1")
    except OSError:
        return
    pytest.skip("a CUDA driver is here: CUPTI may start, and this case is about a machine without one")


def test_the_minimal_client_library_without_a_driver_says_why_and_lets_the_program_go_on():
    """The injection entry point called as the CUDA driver would, on a machine without one: CUPTI
    refuses, the library says so in one line and returns 0; the program is not stopped."""
    require_driverless_minimal_client()
    code = ("import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); r = lib.InitializeInjection(); "
            "print('returned', r, 'and went on')")
    p = subprocess.run([sys.executable, "-c", code, MINIMAL_CUPTI], env=CLEAN_ENV, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == "returned 0 and went on\n"
    assert p.stderr == REFUSED + "\n"


def test_report_problems_name_what_the_report_misses():
    def report(calls, kernels):
        return {"ranges": [{"path": "step", "calls": calls, "total": {"kernel_calls": kernels}},
                           {"path": "step/forward", "calls": calls, "total": {"kernel_calls": kernels}}]}
    assert bench.report_problems(report(250, 4000), 250) == []
    assert bench.report_problems(report(200, 4000), 250) == ["'step' entered 200 times, not 250"]
    assert bench.report_problems(report(250, 0), 250) == ["no kernel attributed to 'step'"]
    assert bench.report_problems({"ranges": []}, 250) == ["no range 'step' in the report"]


def test_own_work_reads_the_reports_processing_per_step():
    report = {"diagnostics": {"activity_buffers": 4, "activity_processing_ns": 2_000}}
    assert bench.own_work(report, 250) == {"buffers": 4, "processing_ns": 2_000, "per_step_ns": 8.0}
    # A report from before the fields: unknown, not zero.
    assert bench.own_work({"diagnostics": {}}, 250) == {"buffers": None, "processing_ns": None, "per_step_ns": None}
    rounds = [bench.own_work({"diagnostics": {"activity_buffers": 1, "activity_processing_ns": ns}}, 10)
              for ns in (30, 10, 20)] + [None]
    assert bench.own_work_summary(rounds) == {"rounds": rounds, "median_per_step_ns": 2.0}
    assert bench.own_work_summary([None])["median_per_step_ns"] is None


def test_phase_seconds_say_where_a_childs_wall_time_went():
    marks = {"main": 100.5, "torch": 103.0, "model": 104.0, "warmup": 105.25, "steps": 106.5}
    assert bench.phase_seconds(100.0, marks, 110.0) == {
        "start": 0.5, "torch": 2.5, "model": 1.0, "warmup": 1.25, "steps": 1.25, "exit": 3.5, "wall": 10.0}
    profiled = bench.phase_seconds(100.0, {**marks, "profiler_exit": 108.0}, 110.0)
    assert (profiled["profiler_exit"], profiled["exit"], profiled["wall"]) == (1.5, 2.0, 10.0)
    # A child that printed no marks (an older child): all of it is "exit".
    assert bench.phase_seconds(100.0, {}, 102.0) == {"exit": 2.0, "wall": 2.0}
    assert bench.describe_phases(bench.phase_seconds(100.0, marks, 110.0)) == (
        "  wall 10.0 s (start 0.5, torch 2.5, model 1.0, warmup 1.2, steps 1.2, exit 3.5)")


def test_without_torch_it_exits_77_with_one_line(tmp_path):
    if importlib.util.find_spec("torch") is not None:
        pytest.skip("torch is importable here: the skip does not apply")
    cli = tmp_path / "cuscope"
    cli.write_text("#!/bin/sh\nexit 3\n")
    cli.chmod(0o755)
    p = run_bench("--cuscope", str(cli), "--out", str(tmp_path / "out"))
    assert p.returncode == 77, p.stderr
    assert p.stdout == ("torch_overhead.py: skipped: torch with CUDA is not importable "
                        "(ModuleNotFoundError: No module named 'torch')\n")
    assert p.stderr == ""
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args, message", [
    (["--steps", "10"], "--steps 10: the issue asks for at least 200 timed steps (--allow-few-steps for a test run)"),
    (["--configs", "bare,bogus"], "unknown configuration 'bogus' (known: bare, minimal_cupti, cuscope, "
                                  "cuscope_external, cuscope_records, torch_profiler, python_api)"),
    (["--configs", "cuscope,torch_profiler"], "--configs names each configuration once, bare among them"),
    (["--configs", "bare,python_api"], "python_api needs --python-package"),
    (["--configs", "bare,minimal_cupti"], "minimal_cupti needs --minimal-cupti"),
    (["--configs", "bare,minimal_cupti", "--minimal-cupti", "/nonexistent/libm.so"],
     "--minimal-cupti must name the minimal CUPTI client's library (a file), not '/nonexistent/libm.so'"),
    (["--configs", "bare,cuscope", "--cuscope", "/nonexistent/cuscope"], "--cuscope must name the cuscope CLI"),
])
def test_bad_arguments_exit_2_and_say_why(tmp_path, args, message):
    p = run_bench("--out", str(tmp_path / "out"), *args)
    assert p.returncode == 2
    assert p.stderr.splitlines()[-1].startswith("torch_overhead.py: error: " + message), p.stderr
    assert p.stdout == ""
    assert not (tmp_path / "out").exists()


STAND_IN_TORCH = '''
"""A stand-in for torch: the calls bench/torch_overhead.py makes, shapes checked, no GPU."""
import contextlib
import ctypes
import math
import os
import sys
import types

import nvtx

__version__ = "0+stand-in"
version = types.SimpleNamespace(cuda="stand-in")


def log(event):
    with open(os.environ["STAND_IN_TORCH_LOG"], "a") as f:
        f.write(event + "\\n")


class Tensor:
    def __init__(self, *shape):
        self.shape = tuple(shape)

    def chunk(self, n, dim):
        assert dim == -1 and self.shape[-1] % n == 0
        return [Tensor(*self.shape[:-1], self.shape[-1] // n) for _ in range(n)]

    def view(self, *shape):
        assert math.prod(shape) == math.prod(self.shape), (shape, self.shape)
        return Tensor(*shape)

    reshape = view

    def transpose(self, a, b):
        s = list(self.shape)
        s[a], s[b] = s[b], s[a]
        return Tensor(*s)

    def __add__(self, other):
        assert other.shape == self.shape
        return Tensor(*self.shape)

    def backward(self):
        assert self.shape == ()


class Module:
    def cuda(self):
        return self


class Linear(Module):
    def __init__(self, n_in, n_out):
        self.n_in, self.n_out = n_in, n_out

    def __call__(self, x):
        assert x.shape[-1] == self.n_in
        return Tensor(*x.shape[:-1], self.n_out)

    def parameters(self):
        return [self]


class LayerNorm(Linear):
    def __init__(self, dim):
        super().__init__(dim, dim)


class ModuleDict(dict, Module):
    def parameters(self):
        return [p for m in self.values() for p in m.parameters()]


def scaled_dot_product_attention(q, k, v, is_causal):
    assert len(q.shape) == 4 and q.shape == k.shape == v.shape and is_causal
    return Tensor(*q.shape)


def mse_loss(a, b):
    assert a.shape == b.shape
    return Tensor()


class SGD:
    def __init__(self, params, lr):
        assert params

    def step(self):
        pass

    def zero_grad(self, set_to_none):
        pass


@contextlib.contextmanager
def nvtx_range(name):
    nvtx.push_range(name)
    try:
        yield
    finally:
        nvtx.pop_range()


@contextlib.contextmanager
def profile(activities):
    assert activities == ["CPU", "CUDA"]
    log("profile enter")
    yield
    log("profile exit")


def manual_seed(seed):
    pass


_driver_started = False


def is_available():
    """CUDA's first use, as the driver does it: the library CUDA_INJECTION64_PATH names is loaded
    once and its InitializeInjection called (a .so), or, for a scripted client (any other file),
    its text written on standard error as a client's own line."""
    global _driver_started
    path = os.environ.get("CUDA_INJECTION64_PATH")
    if path and not _driver_started:
        if path.endswith(".so"):
            ctypes.CDLL(path).InitializeInjection()
        else:
            with open(path) as f:
                sys.stderr.write(f.read())
            sys.stderr.flush()
    _driver_started = True
    return True


def randn(*shape, device):
    assert device == "cuda"
    return Tensor(*shape)


nn = types.SimpleNamespace(Linear=Linear, LayerNorm=LayerNorm, ModuleDict=ModuleDict,
                           functional=types.SimpleNamespace(scaled_dot_product_attention=scaled_dot_product_attention,
                                                            gelu=lambda x: Tensor(*x.shape), mse_loss=mse_loss))
optim = types.SimpleNamespace(SGD=SGD)
cuda = types.SimpleNamespace(is_available=is_available, get_device_name=lambda i: "stand-in GPU",
                             synchronize=lambda: log("synchronize"), nvtx=types.SimpleNamespace(range=nvtx_range))
profiler = types.SimpleNamespace(profile=profile, ProfilerActivity=types.SimpleNamespace(CPU="CPU", CUDA="CUDA"))
'''

CONFIGS = ["bare", "minimal_cupti", "cuscope", "cuscope_external", "cuscope_records", "torch_profiler",
           "python_api"]
WARMUP, STEPS, ROUNDS = 2, 4, 3


@pytest.fixture
def stand_in(tmp_path):
    """The environment that puts the stand-in torch, and the cuscope package this build made, on the path."""
    folder = tmp_path / "stand_in"
    folder.mkdir()
    (folder / "torch.py").write_text(textwrap.dedent(STAND_IN_TORCH))
    path = os.pathsep.join([str(folder), os.environ["PYTHONPATH"]])
    return {"PYTHONPATH": path, "STAND_IN_TORCH_LOG": str(tmp_path / "torch.log")}


def scripted_client(tmp_path, line):
    """A minimal CUPTI client for the stand-in driver (STAND_IN_TORCH's is_available): a file whose
    text it writes on standard error when CUDA starts, as the real library writes its line."""
    path = tmp_path / "scripted_client.txt"
    path.write_text(line + "\n")
    return str(path)


def run_rounds(tmp_path, env, configs=CONFIGS, minimal=None):
    if not CLI:
        pytest.skip("no cuscope CLI in this build (CUSCOPE_TEST_CLI)")
    package = os.environ["PYTHONPATH"].split(os.pathsep)[0]
    minimal = minimal or scripted_client(tmp_path, TRACING)
    return run_bench("--cuscope", CLI, "--out", str(tmp_path / "out"), "--python-package", package,
                     "--minimal-cupti", minimal,
                     "--configs", ",".join(configs), "--git-commit", "abc1234", "--warmup", str(WARMUP),
                     "--steps", str(STEPS), "--rounds", str(ROUNDS), "--allow-few-steps", env=env)


def test_rounds_end_to_end_with_a_stand_in_torch(tmp_path, stand_in):
    p = run_rounds(tmp_path, stand_in)
    # Without a GPU no kernel is attributed: each cuscope report is flagged, and nothing else is (the
    # scripted minimal client said it traced, every round).
    flagged = [line for line in p.stdout.splitlines() if line.startswith("NOT MEASURED AS MEANT")]
    expected = [f"NOT MEASURED AS MEANT: round {r + 1}: {c}: no kernel attributed to 'step' "
                f"(report {tmp_path / 'out' / f'report-{c}.json'})"
                for r, order in enumerate(bench.rotation(CONFIGS, ROUNDS)) for c in order
                if c not in ("bare", "torch_profiler", "minimal_cupti")]
    assert flagged == expected, p.stdout + p.stderr
    assert p.returncode == 1
    with open(tmp_path / "out" / "torch-overhead.json") as f:
        s = json.load(f)
    assert s["commit"] == "abc1234"
    assert (s["torch"], s["cuda"], s["gpu"]) == ("0+stand-in", "stand-in", "stand-in GPU")
    assert s["order"] == bench.rotation(CONFIGS, ROUNDS)
    assert list(s["figures"]) == CONFIGS
    assert all(len(f["round_medians_ns"]) == ROUNDS for f in s["figures"].values())
    # Where each child's wall time went, every round, every phase (torch.profiler's stop only there).
    phases = ["start", "torch", "model", "warmup", "steps", "exit", "wall"]
    assert set(s["child_seconds"]) == set(CONFIGS)
    for config, rounds in s["child_seconds"].items():
        expected = phases[:5] + (["profiler_exit"] if config == "torch_profiler" else []) + phases[5:]
        assert [list(r) for r in rounds] == [expected] * ROUNDS, config
        assert all(v >= 0 for r in rounds for v in r.values()), config
        assert all(r["wall"] == pytest.approx(sum(v for k, v in r.items() if k != "wall"), abs=0.01)
                   for r in rounds), config
    assert len([line for line in p.stdout.splitlines() if line.startswith("round ") and " wall " in line]) == \
        ROUNDS * len(CONFIGS)
    assert set(s["added_ratio"]) == {"cuscope", "cuscope_external", "cuscope_records", "python_api", "minimal_cupti"}
    assert set(s["over_minimal_cupti"]) == set(CONFIGS) - {"bare", "minimal_cupti"}
    assert s["configurations"]["minimal_cupti"].startswith("CUDA_INJECTION64_PATH=")
    assert s["goal"]["verdict"] in ("met", "missed", "undefined")
    assert "CUSCOPE_ATTRIBUTION=external " in s["configurations"]["cuscope_external"]
    assert "CUSCOPE_SYNC_RECORDS=1 CUSCOPE_MEMORY_RECORDS=1 " in s["configurations"]["cuscope_records"]
    assert s["configurations"]["cuscope"].startswith(f"{CLI} run --json ")
    # No CUDA driver here: CUPTI traced nothing, so each round's report says no buffer was processed.
    assert set(s["own_work"]) == {"cuscope", "cuscope_external", "cuscope_records", "python_api"}
    for config, w in s["own_work"].items():
        assert [r["buffers"] for r in w["rounds"]] == [0] * ROUNDS, config
        assert w["median_per_step_ns"] == 0.0, config
    with open(tmp_path / "out" / "torch-overhead-steps.json") as f:
        steps = json.load(f)
    assert all(len(r) == STEPS for c in CONFIGS for r in steps["step_ns"][c])
    # The children ran in the rotated order, every step synchronized, the profiler around the timed steps only.
    log = (tmp_path / "torch.log").read_text().split("\n")
    per_child = ["synchronize"] * WARMUP + ["synchronize"] * STEPS
    profiled = ["synchronize"] * WARMUP + ["profile enter"] + ["synchronize"] * STEPS + ["profile exit"]
    assert log == sum((profiled if c == "torch_profiler" else per_child for order in s["order"] for c in order),
                      []) + [""]
    # cuscope saw every step's ranges: the step and its regions, entered as the step enters them.
    for config in ("cuscope", "cuscope_external", "cuscope_records", "python_api"):
        with open(tmp_path / "out" / f"report-{config}.json") as f:
            calls = {r["path"]: r["calls"] for r in json.load(f)["ranges"] if r["path"].startswith("step")}
        n = WARMUP + STEPS
        assert calls == {"step": n, "step/forward": n, "step/forward/attention": 2 * n, "step/forward/mlp": 2 * n,
                         "step/loss": n, "step/backward": n, "step/optimizer": n}, config
    for config in CONFIGS:
        headers = [line for line in (tmp_path / "out" / f"stderr-{config}.log").read_text().splitlines()
                   if line.startswith("=== round ")]
        assert len(headers) == ROUNDS, config
    assert (tmp_path / "out" / "stderr-minimal_cupti.log").read_text().count(TRACING) == ROUNDS


def left_out_run(tmp_path, stand_in, client):
    p = run_rounds(tmp_path, stand_in, configs=["bare", "minimal_cupti", "torch_profiler"], minimal=client)
    with open(tmp_path / "out" / "torch-overhead.json") as f:
        return p, json.load(f)


def test_a_minimal_client_that_does_not_trace_is_left_out_and_the_run_goes_on(tmp_path, stand_in):
    p, s = left_out_run(tmp_path, stand_in, scripted_client(tmp_path, REFUSED))
    assert p.returncode == 1, p.stderr
    flagged = [line for line in p.stdout.splitlines() if line.startswith("NOT MEASURED AS MEANT")]
    assert flagged == ["NOT MEASURED AS MEANT: minimal_cupti left out of every round: no line "
                       f"'cuscope_minimal_cupti: tracing kernels' in its standard error: it said '{REFUSED}' "
                       "(the probe's standard error)"]
    assert list(s["figures"]) == ["bare", "torch_profiler"]
    assert s["order"] == bench.rotation(["bare", "torch_profiler"], ROUNDS)
    assert s["over_minimal_cupti"] == {} and "minimal_cupti" not in s["configurations"]
    assert not (tmp_path / "out" / "stderr-minimal_cupti.log").exists()


def test_the_real_minimal_client_without_a_driver_is_left_out_saying_why(tmp_path, stand_in):
    """The library this build made, loaded by the stand-in driver: CUPTI refuses here, so the run
    leaves it out with the library's own line."""
    require_driverless_minimal_client()
    p, s = left_out_run(tmp_path, stand_in, MINIMAL_CUPTI)
    assert p.returncode == 1, p.stderr
    assert f"in its standard error: it said '{REFUSED}' (the probe's standard error)" in p.stdout
    assert list(s["figures"]) == ["bare", "torch_profiler"]


def test_a_failing_child_stops_the_run_and_names_its_log(tmp_path, stand_in):
    # Each child fails at its first step's synchronize, which logs into a folder that does not exist.
    stand_in["STAND_IN_TORCH_LOG"] = str(tmp_path / "no-such-folder" / "torch.log")
    p = run_rounds(tmp_path, stand_in, configs=["bare", "torch_profiler"])
    assert p.returncode == 1
    log = tmp_path / "out" / "stderr-bare.log"
    assert p.stderr == (f"torch_overhead.py: a child failed: bare (round 1/{ROUNDS}) exited 1; "
                        f"its standard error: {log}\n")
    assert "FileNotFoundError" in log.read_text()
    assert not (tmp_path / "out" / "torch-overhead.json").exists()

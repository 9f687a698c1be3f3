"""cuscope.Report: the library's JSON view as Python objects, the table, the DataFrame."""
import json
import os
import subprocess
import sys

import pytest

import cuscope
from cuscope._report import Range, Report

CLI = os.environ.get("CUSCOPE_TEST_CLI", "")
GPU_TRACES = os.path.join(os.path.dirname(__file__), "..", "data", "gpu")


@pytest.fixture(scope="module")
def report():
    for _ in range(3):
        with cuscope.scope("rep_step"):
            with cuscope.scope("rep_fwd"):
                cuscope.count("tokens", 4)
    return cuscope.snapshot()


def test_to_dict_is_the_library_json(report):
    d = report.to_dict()
    assert d["schema"] == "cuscope.report/1"
    assert d["version"] == cuscope.__version__
    assert [r["path"] for r in d["ranges"]] == [r.path for r in report.ranges]
    assert report.to_dict() is not report.to_dict()  # a fresh copy each time
    assert report.to_json().startswith("{")


def test_the_report_names_its_process_host_and_rank(report):
    import socket
    assert (report.pid, report.host) == (os.getpid(), socket.gethostname())
    d = report.to_dict()
    assert (d["pid"], d["host"]) == (report.pid, report.host)
    expected_rank = int(os.environ["RANK"]) if "RANK" in os.environ else None  # no launcher here: None
    assert report.rank == expected_rank and report.rank == d["rank"]
    assert report.world_size == d["world_size"]


def test_a_snapshot_while_the_program_runs_is_not_final(report):
    assert report.final is False and report.to_dict()["final"] is False
    assert report.table().splitlines()[0].endswith(" — while running")


def test_find_returns_a_range_or_none(report):
    fwd = report.find("rep_step/rep_fwd")
    assert fwd is not None
    assert (fwd.name, fwd.path, fwd.depth, fwd.calls, fwd.open, fwd.threads) == ("rep_fwd", "rep_step/rep_fwd", 2, 3, 0, 1)
    assert report.find("/rep_step/rep_fwd/") is fwd
    assert report.find("rep_fwd") is None
    assert report.find("no/such/range") is None
    assert report.find("") is report.root and report.root.parent is None


def test_range_fields_read_the_json(report):
    step = report.find("rep_step")
    d = step.to_dict()
    assert step.host.count == d["host"]["count"] == 3
    assert step.host.total_ns == d["host"]["total_ns"] > 0
    assert step.host.mean_ns == d["host"]["mean_ns"]
    assert step.host_self_ns == d["host_self_ns"]
    assert step.gpu.count == 0  # no GPU here
    assert step.gpu_projected.count == 0 and step.gpu_time.count == 0
    assert step.self.kernel_calls == 0 and step.total.kernel_ns == 0
    assert set(step.self.memcpy) == {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other"}
    assert step.copies == {} and step.kernels == [] and step.metrics == {}
    assert (step.counters["tokens"].self, step.counters["tokens"].total) == (0.0, 12.0)  # rolled up
    assert report.find("rep_step/rep_fwd").counters["tokens"].total == 12.0
    with pytest.raises(AttributeError, match="no field 'nope'"):
        step.host.nope


def test_diagnostics_and_findings(report):
    assert set(report.diagnostics) == set(report.to_dict()["diagnostics"])
    assert report.diagnostics["open_scopes"] == report.to_dict()["diagnostics"]["open_scopes"]
    want = [(r["path"], f["id"]) for r in report.to_dict()["ranges"] for f in r["findings"]]
    assert [(f.path, f.id) for f in report.findings] == want
    assert report.device == "no GPU"
    assert isinstance(report.notes, list)


def test_table_is_the_library_table(report):
    text = report.table()
    assert "rep_step" in text and "rep_fwd" in text
    assert report.table(sort="name", max_rows=0) != report.table(sort="calls", max_rows=1)


@pytest.mark.parametrize("options, message", [
    ({"sort": "bogus"}, r"sort='bogus': CUSCOPE_SORT='bogus' is not a sort key"),
    ({"max_rows": "ten"}, r"max_rows='ten': CUSCOPE_ROWS='ten' is not a whole number"),
    ({"max_rows": 1.5}, r"max_rows=1.5: CUSCOPE_ROWS takes a whole number"),
    ({"sort": "name\0junk"}, r"sort='name\\x00junk': CUSCOPE_SORT cannot hold a NUL character"),
])
def test_table_refuses_bad_options_naming_them(report, options, message):
    with pytest.raises(ValueError, match=message):
        report.table(**options)


def test_table_refuses_options_it_does_not_have(report):
    with pytest.raises(TypeError, match="unknown cuscope option 'json_path'"):
        report.table(json_path="x.json")


def test_to_dataframe_one_row_a_range(report):
    pandas = pytest.importorskip("pandas")
    df = report.to_dataframe()
    assert isinstance(df, pandas.DataFrame)
    assert len(df) == len(report.ranges) - 1
    row = df.set_index("path").loc["rep_step/rep_fwd"]
    assert (row["calls"], row["depth"], row["count:tokens"]) == (3, 2, 12.0)
    assert (row["gpu_count"], row["gpu_projected_count"], row["gpu_projected_total_ns"]) == (0, 0, 0)


def test_to_dataframe_without_pandas_says_to_install_it(report, monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas raises ImportError
    with pytest.raises(ImportError, match="pip install pandas"):
        report.to_dataframe()


def test_a_report_is_a_value(report):
    before = report.find("rep_step").calls
    with cuscope.scope("rep_step"):
        pass
    assert report.find("rep_step").calls == before
    assert cuscope.snapshot().find("rep_step").calls == before + 1


class _Replayed:
    """A native report's stand-in holding the JSON of a committed GPU trace (an H100 run, replayed by
    `cuscope json`): the Python view over real GPU numbers, on a machine without a GPU."""

    def __init__(self, trace):
        if not CLI:
            pytest.skip("no cuscope CLI in this build (CUSCOPE_TEST_CLI)")
        self._json = subprocess.run([CLI, "json", os.path.join(GPU_TRACES, trace)], check=True,
                                    capture_output=True, text=True).stdout

    def json(self):
        return self._json


def test_gpu_time_is_the_projected_span_where_cupti_traced_else_the_event_time():
    report = Report(_Replayed("h100-demo.cuscope"))  # every scope timed by events and traced by CUPTI
    step = report.find("step")
    d = step.to_dict()
    assert (step.gpu.count, step.gpu_projected.count) == (20, 20)
    assert step.gpu_projected.total_ns == d["gpu_projected"]["total_ns"] == step.total.gpu_span_ns
    assert step.gpu.total_ns == d["gpu"]["total_ns"]
    # The projected span leaves out the lead-in an event pair counts: shorter, and the one chosen.
    assert 0 < step.gpu_projected.total_ns < step.gpu.total_ns
    assert step.gpu_time.to_dict() == d["gpu_projected"]
    # A range CUPTI did not trace (no GPU work attributed): its event time is its GPU time.
    d["gpu_projected"] = {k: 0 for k in d["gpu_projected"]}
    untraced = Range(report, d)
    assert untraced.gpu_time.to_dict() == d["gpu"] and untraced.gpu_time.count == 20


def test_gpu_time_without_events_is_the_projected_span():
    report = Report(_Replayed("h100-kernel-counts.cuscope"))  # no CUDA events: CUPTI only
    counted = report.find("counted")
    assert (counted.calls, counted.gpu.count, counted.gpu_projected.count) == (4, 0, 4)
    assert counted.gpu_time.total_ns == counted.gpu_projected.total_ns == 131008
    assert report.find("counted/three").gpu_time.total_ns == 42240


class _Json:
    """A native report's stand-in holding given JSON."""

    def __init__(self, d):
        self._json = json.dumps(d)

    def json(self):
        return self._json


@pytest.mark.parametrize("status, traced", [
    ("on", True),
    ("on, synchronizes and allocations seen by callbacks, without their records "
     "(CUSCOPE_SYNC_RECORDS=0, CUSCOPE_MEMORY_RECORDS=0)", True),  # the defaults' status
    ("only the host: no CUDA driver", False),
    ("disabled by option (CUSCOPE_ACTIVITIES=0)", False),
    ("", False),
])
def test_tracing_on_is_true_for_both_on_forms_only(report, status, traced):
    d = report.to_dict()
    d["activity_status"] = status
    assert Report(_Json(d)).tracing_on is traced

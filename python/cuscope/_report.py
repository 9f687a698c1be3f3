"""cuscope.Report: a snapshot, read from the library's own JSON view (schema ``cuscope.report/1``).

Nothing here computes a statistic: every number is the one the JSON carries (README, "JSON
schema"), so ``to_dict()`` and the attributes can never disagree with ``cuscope json`` or the
exit table. A Report is a plain value: it never reaches back into the live session, and any
thread may read it.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from . import _cuscope, _options


class _Record:
    """A JSON object with its fields as attributes (``r.total_ns`` for ``r.to_dict()["total_ns"]``)."""

    __slots__ = ("_d",)

    def __init__(self, fields: Dict[str, Any]):
        self._d = fields

    def __getattr__(self, name: str) -> Any:
        try:
            return self._d[name]
        except KeyError:
            raise AttributeError(f"{type(self).__name__} has no field {name!r}") from None

    def to_dict(self) -> Dict[str, Any]:
        """The JSON object this record reads (a copy)."""
        return json.loads(json.dumps(self._d))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self._d.items() if not isinstance(v, (dict, list)))
        return f"{type(self).__name__}({shown})"


class Duration(_Record):
    """count, total_ns, min_ns, max_ns, mean_ns (and max_call for a range's host time)."""

    __slots__ = ()


class Copy(_Record):
    """Copies in one direction: count, bytes, total_ns, bytes_per_s."""

    __slots__ = ()


class Activity(_Record):
    """GPU work of a range (``self``) or of its subtree (``total``): kernel_calls, kernel_ns,
    gpu_busy_ns, gpu_span_ns, busy_share, memset_*, sync_*, alloc_*, free_*, peak_bytes, ..."""

    __slots__ = ()

    @property
    def memcpy(self) -> Dict[str, Copy]:
        """Copies by direction: ``HtoD``, ``DtoH``, ``DtoD``, ``HtoH``, ``PtoP``, ``other``."""
        return {k: Copy(v) for k, v in self._d["memcpy"].items()}


class Kernel(_Record):
    """One kernel by name and launch shape inside one range."""

    __slots__ = ()

    @property
    def duration(self) -> Duration:
        return Duration(self._d["duration"])

    @property
    def calls(self) -> int:
        """Launches of this kernel in the range."""
        return self._d["duration"]["count"]

    @property
    def total_ns(self) -> int:
        """Their summed duration."""
        return self._d["duration"]["total_ns"]

    @property
    def grid(self) -> tuple:
        return tuple(self._d["grid"])

    @property
    def block(self) -> tuple:
        return tuple(self._d["block"])


class Count(_Record):
    """A user counter of a range (cuscope.count): self, total, per_host_second, per_gpu_second."""

    __slots__ = ()


class Finding(_Record):
    """What a rule found: id, severity ("warning" or "info"), observation, cause, fix; and ``path``,
    the range it is about."""

    __slots__ = ()


class Span(_Record):
    """An NVTX start/end range (zero-code mode): domain, name, host, open, cross_thread."""

    __slots__ = ()


class Range:
    """One node of the range tree: a scope name under a given parent path.

    Example::

        r = cuscope.snapshot().find("step/forward")
        if r is not None:
            print(r.calls, r.host.mean_ns, r.total.kernel_calls, [k.name for k in r.kernels])
    """

    __slots__ = ("_report", "_d")

    def __init__(self, report: "Report", fields: Dict[str, Any]):
        self._report = report
        self._d = fields

    name = property(lambda self: self._d["name"], doc="The scope's name; '' for the root.")
    path = property(lambda self: self._d["path"], doc="'step/forward/attention'; '' for the root.")
    depth = property(lambda self: self._d["depth"], doc="0 for the root, 1 for top-level ranges.")
    calls = property(lambda self: self._d["calls"], doc="Completed entries, direct recursion included.")
    open = property(lambda self: self._d["open"], doc="Entries still open when the snapshot was taken.")
    recursive_calls = property(lambda self: self._d["recursive_calls"], doc="Entries that re-entered the range.")
    threads = property(lambda self: self._d["threads"], doc="Distinct threads that entered the range.")
    host_self_ns = property(lambda self: self._d["host_self_ns"], doc="Host time minus child ranges' time.")
    profiled_kernels = property(lambda self: self._d["profiled_kernels"], doc="Kernels replayed for counters.")

    @property
    def host(self) -> Duration:
        """Inclusive host time per completed (outermost) entry."""
        return Duration(self._d["host"])

    @property
    def gpu(self) -> Duration:
        """CUDA-event time between the scope's start and stop events, for the calls timed by events
        (count 0 when none was: with CUPTI tracing and CUSCOPE_EVENTS=auto, the default, no scope
        records events; gpu_time is the range's GPU time either way)."""
        return Duration(self._d["gpu"])

    @property
    def gpu_projected(self) -> Duration:
        """The projected span of each call that launched GPU work (its own or its subtree's), from
        CUPTI: the start of its first kernel, copy or set to the end of its last one, whatever the
        stream. Leaves out the idle lead-in before the first operation that an event pair counts.
        count: the calls with GPU work."""
        return Duration(self._d["gpu_projected"])

    @property
    def gpu_time(self) -> Duration:
        """The range's GPU time per call: the projected span where CUPTI traced its work, else the
        CUDA-event time (the table's "GPU total").

        Example::

            step = cuscope.snapshot().find("step")
            if step is not None and step.gpu_time.count:
                print(f"step: {step.gpu_time.mean_ns / 1e3:.1f} us of GPU time a call")
        """
        projected = self.gpu_projected
        return projected if projected.count else self.gpu

    @property
    def self(self) -> Activity:
        """GPU work launched directly in this range."""
        return Activity(self._d["self"])

    @property
    def total(self) -> Activity:
        """This range's GPU work plus every descendant's."""
        return Activity(self._d["total"])

    @property
    def kernels(self) -> List[Kernel]:
        """The range's own kernels, by total duration, longest first."""
        return [Kernel(k) for k in self._d["kernels"]]

    @property
    def copies(self) -> Dict[str, Copy]:
        """The range's own copies, by direction, the directions with at least one copy."""
        return {k: Copy(v) for k, v in self._d["self"]["memcpy"].items() if v["count"]}

    @property
    def counters(self) -> Dict[str, Count]:
        """User counters (cuscope.count), by name."""
        return {c["name"]: Count(c) for c in self._d["counts"]}

    @property
    def metrics(self) -> Dict[str, float]:
        """Hardware counters (CUSCOPE_METRICS), by CUPTI name: value."""
        return {m["name"]: m["value"] for m in self._d["metrics"]}

    @property
    def findings(self) -> List[Finding]:
        """What the rules found about this range, warnings first."""
        return [Finding(dict(f, path=self.path)) for f in self._d["findings"]]

    @property
    def children(self) -> List["Range"]:
        """Child ranges, in order of first entry."""
        return [self._report.ranges[i] for i in self._d["children"]]

    @property
    def parent(self) -> Optional["Range"]:
        """The parent range; None for the root."""
        p = self._d["parent"]
        return None if p is None else self._report.ranges[p]

    def to_dict(self) -> Dict[str, Any]:
        """This range as the JSON has it (a copy)."""
        return json.loads(json.dumps(self._d))

    def __repr__(self) -> str:
        return f"Range(path={self.path!r}, calls={self.calls}, host_total_ns={self._d['host']['total_ns']})"


class Report:
    """A snapshot of everything cuscope knows: the range tree, diagnostics and findings.

    Example::

        report = cuscope.snapshot()
        fwd = report.find("step/forward")
        if fwd is not None:
            print(f"forward: {fwd.calls} calls, {fwd.total.kernel_ns / 1e6:.2f} ms of kernels")
        print(report.table())
    """

    def __init__(self, native: "_cuscope.NativeReport"):
        self._native = native
        self._json = native.json()
        self._d = json.loads(self._json)
        self._ranges = [Range(self, r) for r in self._d["ranges"]]
        self._by_path = {r["path"]: i for i, r in enumerate(self._d["ranges"])}

    @property
    def ranges(self) -> List[Range]:
        """Every range, the root first (``ranges[0]``, path '')."""
        return list(self._ranges)

    @property
    def root(self) -> Range:
        return self._ranges[0]

    def find(self, path: str) -> Optional[Range]:
        """The range at ``path`` ("step/forward"; leading and trailing '/' ignored), or None."""
        i = self._by_path.get(path.strip("/"))
        return None if i is None else self._ranges[i]

    @property
    def diagnostics(self) -> Dict[str, int]:
        """Counters of everything that was off, dropped or misused (open_scopes, unbalanced_ends, ...)."""
        return dict(self._d["diagnostics"])

    @property
    def findings(self) -> List[Finding]:
        """Every range's findings, in range order; each names its range in ``path``."""
        return [f for r in self._ranges for f in r.findings]

    @property
    def spans(self) -> List[Span]:
        """NVTX start/end ranges (zero-code mode), longest first."""
        return [Span(s) for s in self._d["spans"]]

    notes = property(lambda self: list(self._d["notes"]), doc="Other things a reader must know.")
    device = property(lambda self: self._d["device"], doc="The GPU, or 'no GPU'.")
    gpu_timing = property(lambda self: self._d["gpu_timing"], doc="'on', or why CUDA-event timing is off.")
    activity_status = property(
        lambda self: self._d["activity_status"],
        doc="'on'; 'on, ...' when records were left out (the defaults: 'on, synchronizes and allocations seen by "
            "callbacks, without their records (...)'); or why CUPTI is off.")
    tracing_on = property(
        lambda self: self._d["activity_status"] == "on" or self._d["activity_status"].startswith("on, "),
        doc="Whether CUPTI traced the GPU work (activity_status 'on' or 'on, ...'): compare with this, not 'on'.")
    counters_status = property(lambda self: self._d["counters_status"], doc="Hardware counters' state.")
    steps = property(lambda self: self._d["steps"], doc="Steps marked with cuscope.step().")
    recorded_steps = property(lambda self: self._d["recorded_steps"], doc="Steps inside the active window.")
    clock_steps = property(lambda self: self._d.get("clock_steps", 0),
                           doc="Of the steps, those cuscope's clock ended (CUSCOPE_STEP_MS); 0: the program's own.")
    step_ms = property(lambda self: self._d.get("step_ms", 0),
                       doc="The clock's period in ms where clock_steps > 0, else 0.")
    wall_ns = property(lambda self: self._d["wall_ns"], doc="Session start to snapshot.")
    final = property(lambda self: self._d.get("final", True),
                     doc="Built once the session had ended (the exit report, snapshot() after shutdown()); False "
                         "while the program runs (snapshot(), CUSCOPE_REPORT_EVERY's files): later work is not in it.")
    rank = property(lambda self: self._d.get("rank"),
                    doc="This process's rank in its job (RANK, OMPI_COMM_WORLD_RANK, ...), or None.")
    world_size = property(lambda self: self._d.get("world_size"), doc="The job's size, or None when not known.")
    pid = property(lambda self: self._d.get("pid"), doc="The process that made the report, or None.")
    host = property(lambda self: self._d.get("host"), doc="Its host's name, or None.")

    def to_dict(self) -> Dict[str, Any]:
        """The report as the library's JSON (schema cuscope.report/1), parsed: a fresh copy."""
        return json.loads(self._json)

    def to_json(self) -> str:
        """The report as the library's JSON text (what CUSCOPE_JSON writes)."""
        return self._json

    def table(self, **options: Any) -> str:
        """The table as text; ``sort``, ``max_rows``, ``top_kernels``, ``max_findings`` override the
        session's (CUSCOPE_SORT, ...). A bad value raises ValueError naming it."""
        given = _options.settings(options, _options.TABLE_OPTIONS)
        text, problems = self._native.table(given)
        _options.raise_problems(problems, options)
        return text

    def to_dataframe(self):
        """One row a range (the root left out), as a pandas DataFrame; needs pandas."""
        try:
            import pandas
        except ImportError as e:
            raise ImportError("Report.to_dataframe() needs pandas: pip install pandas") from e
        return pandas.DataFrame([_row(r) for r in self._d["ranges"][1:]])

    def __repr__(self) -> str:
        return f"Report({len(self._ranges) - 1} ranges, device={self.device!r}, steps={self.steps})"


def _row(r: Dict[str, Any]) -> Dict[str, Any]:
    row = {
        "path": r["path"], "name": r["name"], "depth": r["depth"], "calls": r["calls"], "open": r["open"],
        "threads": r["threads"], "host_total_ns": r["host"]["total_ns"], "host_mean_ns": r["host"]["mean_ns"],
        "host_min_ns": r["host"]["min_ns"], "host_max_ns": r["host"]["max_ns"], "host_self_ns": r["host_self_ns"],
        "gpu_count": r["gpu"]["count"], "gpu_total_ns": r["gpu"]["total_ns"],
        "gpu_projected_count": r["gpu_projected"]["count"], "gpu_projected_total_ns": r["gpu_projected"]["total_ns"],
    }
    for part in ("self", "total"):
        a = r[part]
        row.update({f"{part}_kernel_calls": a["kernel_calls"], f"{part}_kernel_ns": a["kernel_ns"],
                    f"{part}_gpu_busy_ns": a["gpu_busy_ns"],
                    f"{part}_memcpy_bytes": sum(c["bytes"] for c in a["memcpy"].values())})
    row["findings"] = len(r["findings"])
    for c in r["counts"]:
        row[f"count:{c['name']}"] = c["total"]
    return row

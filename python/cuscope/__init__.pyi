# Type stubs for the cuscope package (its native half, cuscope._cuscope, included).
from os import PathLike
from typing import Any, Callable, Dict, List, Optional, Protocol, Sequence, Tuple, TypeVar, Union, overload

__version__: str

class _HasCudaStream(Protocol):
    @property
    def cuda_stream(self) -> int: ...

class _CudaStreamProtocol(Protocol):
    def __cuda_stream__(self) -> Tuple[int, int]: ...

Stream = Union[int, _HasCudaStream, _CudaStreamProtocol]
"""An int handle, torch.cuda.Stream (``cuda_stream``), or any ``__cuda_stream__`` object."""

_F = TypeVar("_F", bound=Callable[..., Any])

class scope:
    """A named region: host time, GPU time, and every kernel, copy and set launched inside it. Where
    CUPTI traces (the default) its GPU time is the span of that work; where it does not, CUDA events
    on ``stream`` (torch's current stream when torch is imported and none is given).

    Example::

        with cuscope.scope("step"):
            with cuscope.scope("forward", stream=torch.cuda.current_stream()):
                y = model(x)

        @cuscope.scope("loss")
        def loss(y): ...
    """

    def __init__(self, name: str, stream: Optional[Stream] = None) -> None: ...
    @property
    def name(self) -> str: ...
    def __enter__(self) -> "scope": ...
    def __exit__(self, exc_type: Any, exc: Any, traceback: Any) -> bool: ...
    def __call__(self, func: _F) -> _F: ...

def push(name: str, stream: Optional[Stream] = None) -> None:
    """Opens a range that a later pop() on the same thread closes.

    Example::

        cuscope.push("layer"); run_layer(); cuscope.pop()
    """

def pop() -> None:
    """Closes the calling thread's latest push(); one without a push is counted, not fatal."""

def count(name: str, amount: float = 1.0) -> None:
    """Adds ``amount`` to the counter ``name`` of the innermost open scope (rates per second of
    host and GPU time in the report).

    Example::

        with cuscope.scope("decode"):
            cuscope.count("tokens", batch * new_tokens)
    """

def step() -> None:
    """Marks the end of a step: drives the wait / warm-up / active window (repeated by repeat=).

    Example::

        for batch in loader:
            with cuscope.scope("step"): train(batch)
            cuscope.step()
    """

def start(
    *,
    enabled: Union[bool, str] = ...,
    gpu_events: Union[bool, str] = ...,
    events: str = ...,
    event_timestamps: str = ...,
    activities: Union[bool, str] = ...,
    graphs: Union[bool, str] = ...,
    attribution: str = ...,
    sync_records: Union[bool, str] = ...,
    memory_records: Union[bool, str] = ...,
    wait_steps: Union[int, str] = ...,
    wait_ms: Union[int, str] = ...,
    warmup_steps: Union[int, str] = ...,
    active_steps: Union[int, str] = ...,
    repeat: Union[int, str] = ...,
    detach: Union[bool, str] = ...,
    detach_between: Union[bool, str] = ...,
    step_ms: Union[int, str] = ...,
    whole_ms: Union[int, str] = ...,
    sample_ms: Union[int, str] = ...,
    print_at_exit: Union[bool, str] = ...,
    output_path: Union[str, PathLike[str]] = ...,
    json_path: Union[str, PathLike[str]] = ...,
    report_every_s: Union[int, str] = ...,
    sort: str = ...,
    max_rows: Union[int, str] = ...,
    top_kernels: Union[int, str] = ...,
    max_findings: Union[int, str] = ...,
    max_depth: Union[int, str] = ...,
    metrics: Union[str, Sequence[str]] = ...,
    metric_ranges: Union[str, Sequence[str]] = ...,
    metric_steps: Union[int, str] = ...,
    trace_path: Union[str, PathLike[str]] = ...,
    trace_limit_mb: Union[int, str] = ...,
    nvtx_domains: Union[str, Sequence[str]] = ...,
) -> bool:
    """Starts the session with these options on top of CUSCOPE_*; False if it had started.
    A bad value raises ValueError naming the option.

    Example::

        cuscope.start(warmup_steps=3, json_path="report.json")
    """

def enabled() -> bool:
    """Whether scopes record (before the session starts: whether the first scope will)."""

def set_enabled(enabled: bool) -> None:
    """Turns recording on or off at run time; while off, CUPTI's tracing is paused too.

    Example::

        cuscope.set_enabled(False)   # evaluation: scopes cost one branch
    """

def flush() -> None:
    """Makes finished GPU work visible to the next snapshot; never synchronizes the device."""

def shutdown() -> None:
    """Flushes, prints the exit table if configured and stops collection; idempotent."""

def snapshot() -> Report:
    """A consistent copy of everything aggregated so far; any thread.

    Example::

        r = cuscope.snapshot().find("step/forward")
        if r is not None:
            print(r.calls, r.total.gpu_busy_ns / 1e6, "ms busy")
    """

class Duration:
    count: int
    total_ns: int
    min_ns: int
    max_ns: int
    mean_ns: float
    max_call: int  # a range's host time only
    def to_dict(self) -> Dict[str, Any]: ...

class Copy:
    count: int
    bytes: int
    total_ns: int
    bytes_per_s: float
    def to_dict(self) -> Dict[str, Any]: ...

class Activity:
    kernel_calls: int
    kernel_ns: int
    gpu_busy_ns: int
    gpu_span_ns: int
    busy_share: float
    memset_count: int
    memset_bytes: int
    memset_ns: int
    sync_count: int
    sync_ns: int
    alloc_count: int
    alloc_bytes: int
    free_count: int
    free_bytes: int
    peak_bytes: int
    pageable_copies: int
    pageable_bytes: int
    blocking_copies: int
    blocking_bytes: int
    kernel_streams: int
    busiest_stream_ns: int
    @property
    def memcpy(self) -> Dict[str, Copy]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Kernel:
    name: str
    registers_per_thread: int
    static_shared_bytes: int
    dynamic_shared_bytes: int
    device: int
    @property
    def duration(self) -> Duration: ...
    @property
    def calls(self) -> int: ...
    @property
    def total_ns(self) -> int: ...
    @property
    def grid(self) -> Tuple[int, int, int]: ...
    @property
    def block(self) -> Tuple[int, int, int]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Count:
    name: str
    self: float
    total: float
    per_host_second: float
    per_gpu_second: float
    def to_dict(self) -> Dict[str, Any]: ...

class Finding:
    id: str
    severity: str
    observation: str
    cause: str
    fix: str
    path: str
    def to_dict(self) -> Dict[str, Any]: ...

class Span:
    domain: str
    name: str
    open: int
    cross_thread: int
    host: Dict[str, Any]
    def to_dict(self) -> Dict[str, Any]: ...

class Range:
    """One node of the range tree.

    Example::

        r = cuscope.snapshot().find("step/forward")
        print(r.calls, r.host.mean_ns, [k.name for k in r.kernels])
    """

    name: str
    path: str
    depth: int
    calls: int
    open: int
    recursive_calls: int
    threads: int
    host_self_ns: int
    profiled_kernels: int
    @property
    def host(self) -> Duration: ...
    @property
    def gpu(self) -> Duration: ...
    @property
    def gpu_projected(self) -> Duration: ...
    @property
    def gpu_time(self) -> Duration: ...
    @property
    def self(self) -> Activity: ...
    @property
    def total(self) -> Activity: ...
    @property
    def kernels(self) -> List[Kernel]: ...
    @property
    def copies(self) -> Dict[str, Copy]: ...
    @property
    def counters(self) -> Dict[str, Count]: ...
    @property
    def metrics(self) -> Dict[str, float]: ...
    @property
    def findings(self) -> List[Finding]: ...
    @property
    def children(self) -> List[Range]: ...
    @property
    def parent(self) -> Optional[Range]: ...
    def to_dict(self) -> Dict[str, Any]: ...

class Report:
    """A snapshot: the range tree, diagnostics and findings.

    Example::

        report = cuscope.snapshot()
        fwd = report.find("step/forward")
        print(report.table(sort="gpu_busy", max_rows=20))
    """

    notes: List[str]
    device: str
    gpu_timing: str
    activity_status: str
    tracing_on: bool
    counters_status: str
    steps: int
    recorded_steps: int
    clock_steps: int
    step_ms: int
    wall_ns: int
    final: bool
    rank: Optional[int]
    world_size: Optional[int]
    pid: Optional[int]
    host: Optional[str]
    @property
    def ranges(self) -> List[Range]: ...
    @property
    def root(self) -> Range: ...
    def find(self, path: str) -> Optional[Range]: ...
    @property
    def diagnostics(self) -> Dict[str, int]: ...
    @property
    def findings(self) -> List[Finding]: ...
    @property
    def spans(self) -> List[Span]: ...
    def to_dict(self) -> Dict[str, Any]: ...
    def to_json(self) -> str: ...
    def table(
        self, *, sort: str = ..., max_rows: Union[int, str] = ..., top_kernels: Union[int, str] = ...,
        max_findings: Union[int, str] = ...
    ) -> str: ...
    def to_dataframe(self) -> Any:
        """One row a range, as a pandas DataFrame (ImportError naming pandas when it is missing)."""

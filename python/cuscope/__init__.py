"""cuscope: in-process GPU profiling scopes for Python and PyTorch code.

Two lines for a PyTorch program::

    import cuscope
    with cuscope.scope("step"):      # each kernel launched inside is attributed to "step"
        loss = model(x).sum(); loss.backward()

The table prints at exit; ``cuscope.snapshot()`` reads the same numbers at any time, from any
thread. One cuscope session runs per process: under ``cuscope run`` (or ``python -m cuscope run``)
this module's scopes go to the injected session, where NVTX ranges (``nvtx.annotate``,
``torch.cuda.nvtx.range``) nest with them in one tree. See docs/python.md.

Importing cuscope never imports torch.
"""
from __future__ import annotations

import atexit
import functools
import inspect
import sys
from typing import Any

from . import _cuscope, _options
from ._cuscope import count, enabled, flush, pop, scope, set_enabled, shutdown, step
from ._report import Activity, Copy, Count, Duration, Finding, Kernel, Range, Report, Span

__version__ = _cuscope.__version__

__all__ = [
    "scope", "push", "pop", "count", "step", "start", "enabled", "set_enabled", "flush", "shutdown",
    "snapshot", "Report", "Range", "Duration", "Activity", "Copy", "Kernel", "Count", "Finding", "Span",
]


def start(**options: Any) -> bool:
    """Starts the session with ``options`` on top of the CUSCOPE_* environment; the first scope
    starts it otherwise. Returns False when it had started already (nothing changes then, and the
    report's notes say so once).

    The options are ``cuscope::Options``' fields, checked as the CUSCOPE_* variables are: a bad value
    raises ValueError naming the option, an unknown one TypeError, and nothing starts.

    Example::

        cuscope.start(warmup_steps=3, json_path="report.json", sort="gpu_busy")
    """
    given = _options.settings(options)
    started, problems = _cuscope.start(given)
    _options.raise_problems(problems, options)
    return started


def push(name: str, stream: Any = None) -> None:
    """Opens a range that a later ``pop()`` on the same thread closes, for code where a ``with``
    block cannot hold a scope (hooks, callbacks). ``stream`` as for ``scope``.

    Example::

        handle = module.register_forward_pre_hook(lambda *a: cuscope.push("layer"))
        module.register_forward_hook(lambda *a: cuscope.pop())
    """
    _cuscope.push(name, stream)


def snapshot() -> Report:
    """A consistent copy of everything aggregated so far (collection goes on); any thread.

    Example::

        r = cuscope.snapshot().find("step/forward")
        if r is not None:
            log({"forward_gpu_ms": r.total.gpu_busy_ns / 1e6, "forward_kernels": r.total.kernel_calls})
    """
    return Report(_cuscope.snapshot())


_scopes_use_streams = _cuscope._scopes_use_streams


def _torch_stream() -> int:
    """torch's current stream when a scope would time CUDA events on it, torch is imported and has
    initialized CUDA; else 0 (default). Most sessions time no events (CUPTI traces, CUSCOPE_EVENTS=auto):
    then torch is not asked, whose current_stream() costs more than the scope itself."""
    if not _scopes_use_streams():
        return 0
    cuda = getattr(sys.modules.get("torch"), "cuda", None)
    try:
        if cuda is None or not cuda.is_initialized():
            return 0
        return int(cuda.current_stream().cuda_stream)
    except Exception:  # a torch without CUDA, a torch half torn down at exit: no stream, no failure
        return 0


def _awaited_generator(func: Any) -> bool:
    """Whether ``func`` is a generator function made awaitable by ``@types.coroutine``: a coroutine
    function to the caller (``await f()``), which a plain generator wrapping it would not be."""
    while isinstance(func, functools.partial):
        func = func.func
    code = getattr(getattr(func, "__func__", func), "__code__", None)
    return code is not None and bool(code.co_flags & inspect.CO_ITERABLE_COROUTINE)


def _decorate(s: scope, func: Any) -> Any:
    """``func`` with each call inside ``s``; a coroutine function's await runs inside it too (one
    made by ``@types.coroutine`` also). A generator function (sync or async) stays one, and each
    resumption of its body is a call."""
    awaited = _awaited_generator(func)
    if inspect.isgeneratorfunction(func) and not awaited:
        return _scoped_generator(s, func)
    if inspect.isasyncgenfunction(func):
        return _scoped_async_generator(s, func)
    if inspect.iscoroutinefunction(func) or awaited:
        @functools.wraps(func)
        async def scoped_coroutine(*args: Any, **kwargs: Any) -> Any:
            with s:
                return await func(*args, **kwargs)
        return scoped_coroutine

    @functools.wraps(func)
    def scoped(*args: Any, **kwargs: Any) -> Any:
        with s:
            return func(*args, **kwargs)
    return scoped


# A decorated generator drives the generator ``func`` makes, one resumption at a time, each inside
# the scope: the scope never stays open across a yield, so what the consumer does between items is
# not in it. Values sent, exceptions thrown (GeneratorExit from close() among them), the return value
# and the body's exceptions pass through unchanged. A thrown exception is thrown into the inner
# generator outside the ``except`` that caught it, so that it is not the context of what the body
# raises. Making the generator runs none of its body: it is not a call.
def _scoped_generator(s: scope, func: Any) -> Any:
    @functools.wraps(func)
    def scoped_generator(*args: Any, **kwargs: Any) -> Any:
        inner = func(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                with s:
                    value = inner.send(sent) if thrown is None else inner.throw(thrown)
            except StopIteration as done:
                return done.value
            sent, thrown = None, None
            try:
                sent = yield value
            except BaseException as e:  # thrown in by throw() or close(): the body handles it
                thrown = e
    return scoped_generator


def _scoped_async_generator(s: scope, func: Any) -> Any:
    @functools.wraps(func)
    async def scoped_async_generator(*args: Any, **kwargs: Any) -> Any:
        inner = func(*args, **kwargs)
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                with s:
                    value = await (inner.asend(sent) if thrown is None else inner.athrow(thrown))
            except StopAsyncIteration:
                return
            sent, thrown = None, None
            try:
                sent = yield value
            except BaseException as e:  # thrown in by athrow() or aclose()
                thrown = e
    return scoped_async_generator


_cuscope.set_python_helpers(_torch_stream, _decorate)
# The table prints when the interpreter exits, before it finalizes (an exit by KeyboardInterrupt
# never reaches the C library's own exit handler); once, whatever else calls shutdown().
atexit.register(_cuscope.shutdown_at_exit)

"""cuscope's Python API in one process: scopes, decorator, push/pop, count, step, streams (threads: test_threads.py)."""
import os
import sys
import threading

import pytest

import cuscope
from conftest import calls, find, unbalanced_ends


def test_import_needs_no_torch():
    assert "torch" not in sys.modules


def test_with_scope_counts_each_entry():
    for _ in range(3):
        with cuscope.scope("api_with"):
            pass
    assert calls("api_with") == 3


def test_scopes_nest_by_path():
    for _ in range(2):
        with cuscope.scope("api_outer"):
            with cuscope.scope("api_inner"):
                pass
    assert calls("api_outer") == 2
    assert calls("api_outer/api_inner") == 2
    assert [c.path for c in find("api_outer").children] == ["api_outer/api_inner"]
    assert find("api_outer/api_inner").parent.path == "api_outer"


def test_enter_returns_the_scope():
    with cuscope.scope("api_as") as s:
        assert isinstance(s, cuscope.scope)
        assert s.name == "api_as"


def test_decorator_scopes_every_call_and_keeps_the_function():
    @cuscope.scope("api_decorated")
    def add(a, b=1):
        """Adds."""
        return a + b

    assert [add(i, b=2) for i in range(4)] == [2, 3, 4, 5]
    assert add.__name__ == "add" and add.__doc__ == "Adds."
    assert calls("api_decorated") == 4


def test_an_exception_in_a_decorated_function_closes_its_scope_and_propagates():
    @cuscope.scope("api_decorated_raises")
    def fail():
        raise ValueError("decorated boom")

    for _ in range(2):
        with pytest.raises(ValueError, match="decorated boom"):
            fail()
    r = find("api_decorated_raises")
    assert (r.calls, r.open) == (2, 0)


def test_decorated_recursion_reenters_the_open_range():
    @cuscope.scope("api_fact")
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    assert fact(5) == 120
    r = find("api_fact")
    assert (r.calls, r.recursive_calls) == (5, 4)


def test_one_object_entered_twice_while_open():
    s = cuscope.scope("api_reused")
    with s:
        with s:
            pass
    r = find("api_reused")
    assert (r.calls, r.recursive_calls, r.open) == (2, 1, 0)


def test_an_exception_closes_the_scope_and_propagates():
    with pytest.raises(KeyError, match="boom"):
        with cuscope.scope("api_raises"):
            raise KeyError("boom")
    with cuscope.scope("api_after_raise"):
        pass
    r = find("api_raises")
    assert (r.calls, r.open) == (1, 0)
    assert calls("api_after_raise") == 1  # top level: the raising scope did not stay open


def test_keyboard_interrupt_closes_the_scope_and_propagates():
    with pytest.raises(KeyboardInterrupt):
        with cuscope.scope("api_interrupted"):
            raise KeyboardInterrupt
    r = find("api_interrupted")
    assert (r.calls, r.open) == (1, 0)


def test_push_pop():
    for _ in range(2):
        cuscope.push("api_pushed")
        cuscope.push("api_pushed_inner")
        cuscope.pop()
        cuscope.pop()
    assert calls("api_pushed") == 2
    assert calls("api_pushed/api_pushed_inner") == 2


def test_pop_without_push_is_counted_not_fatal():
    before = cuscope.snapshot().diagnostics["unbalanced_ends"]
    cuscope.pop()
    assert cuscope.snapshot().diagnostics["unbalanced_ends"] == before + 1


def adjusted_names():
    return cuscope.snapshot().diagnostics["adjusted_names"]


def test_a_name_with_a_nul_is_adjusted_whole_not_cut_at_the_nul():
    # A NUL is a control byte: '?' and counted, as for push(); a name cut at its NUL would merge
    # with the genuine range named by the text before it, uncounted.
    before = adjusted_names()
    with cuscope.scope("api_nul"):
        pass
    with cuscope.scope("api_nul\0tail"):
        pass
    cuscope.push("api_nul\0pushed")
    cuscope.pop()
    assert [calls("api_nul"), calls("api_nul?tail"), calls("api_nul?pushed")] == [1, 1, 1]
    assert adjusted_names() == before + 2


def test_a_name_with_lone_surrogates_is_recorded_adjusted():
    # os.fsdecode() and sys.argv write undecodable bytes as lone surrogates: such a name is
    # recorded, each escaped byte as '?' (an unescaped surrogate is three bytes, each a '?'), and
    # counted as adjusted, as C++ does for bytes that are not UTF-8.
    before = adjusted_names()
    with cuscope.scope("api_undecodable_\udcff"):
        cuscope.count("api_count_\udcff", 2)
    cuscope.push("api_lone_\ud800")
    cuscope.pop()
    assert calls("api_undecodable_?") == 1
    assert find("api_undecodable_?").counters["api_count_?"].total == 2.0
    assert calls("api_lone_???") == 1
    assert adjusted_names() == before + 3


def test_count_adds_to_the_innermost_scope():
    with cuscope.scope("api_counted"):
        cuscope.count("tokens", 5)
        cuscope.count("tokens", 2.5)
        cuscope.count("requests")
    counters = find("api_counted").counters
    assert counters["tokens"].self == 7.5
    assert counters["requests"].total == 1.0


def test_step_counts_steps():
    before = cuscope.snapshot().steps
    cuscope.step()
    cuscope.step()
    assert cuscope.snapshot().steps == before + 2


def test_set_enabled_false_records_nothing():
    assert cuscope.enabled()
    cuscope.set_enabled(False)
    try:
        assert not cuscope.enabled()
        with cuscope.scope("api_disabled"):
            pass
    finally:
        cuscope.set_enabled(True)
    with cuscope.scope("api_enabled_again"):
        pass
    assert calls("api_disabled") == 0
    assert calls("api_enabled_again") == 1


class HasCudaStream:
    cuda_stream = 0


class CudaStreamProtocol:
    def __cuda_stream__(self):
        return (0, 0)


@pytest.mark.parametrize("stream", [0, 12345, 2**64 - 1, HasCudaStream(), CudaStreamProtocol()],
                         ids=["zero", "int", "top_of_64_bits", "cuda_stream", "__cuda_stream__"])
def test_stream_forms_are_taken(stream):
    # No GPU here: the CUDA events cannot be recorded, and the scope's host time still counts.
    name = f"api_stream_{type(stream).__name__}_{stream if isinstance(stream, int) else ''}"
    with cuscope.scope(name, stream=stream):
        pass
    assert calls(name) == 1


@pytest.mark.parametrize("stream, error, message", [
    ("0", TypeError, "stream= takes an int handle"),
    (1.5, TypeError, "stream= takes an int handle"),
    (-1, ValueError, "cannot be negative"),
    (True, TypeError, "stream= takes an int handle"),
    (2**64, ValueError, "a stream handle must fit in 64 bits"),
])
def test_bad_streams_are_refused(stream, error, message):
    with pytest.raises(error, match=message):
        cuscope.scope("api_bad_stream", stream=stream)


@pytest.fixture
def events_timed(monkeypatch):
    """As in a session that times CUDA events, where a scope needs a stream (no GPU here: the real
    answer is False, and torch is never asked; see the last of these tests)."""
    monkeypatch.setattr(cuscope, "_scopes_use_streams", lambda: True)


def test_a_torch_stand_in_in_sys_modules_gives_the_stream(monkeypatch, events_timed):
    """With `torch` imported and CUDA initialized, a scope without stream= asks torch for its stream."""
    asked = []

    class Stream:
        cuda_stream = 777

    class Cuda:
        @staticmethod
        def is_initialized():
            return True

        @staticmethod
        def current_stream():
            asked.append(1)
            return Stream()

    class Torch:
        cuda = Cuda

    monkeypatch.setitem(sys.modules, "torch", Torch)
    with cuscope.scope("api_torch_stream"):
        pass
    with cuscope.scope("api_explicit_stream", stream=5):
        pass
    assert asked == [1]  # once, for the scope with no stream= only
    assert calls("api_torch_stream") == 1


class TorchStandIn:
    """Just enough of `torch` for cuscope's stream lookup: torch.cuda.is_initialized() and
    torch.cuda.current_stream().cuda_stream, counting the lookups."""

    def __init__(self, initialized=True, stream=777, fails=False):
        self.asked = 0
        stand_in = self

        class Stream:
            cuda_stream = stream

        class Cuda:
            @staticmethod
            def is_initialized():
                return initialized

            @staticmethod
            def current_stream():
                stand_in.asked += 1
                if fails:
                    raise RuntimeError("torch half torn down")
                return Stream()

        self.cuda = Cuda


def test_torch_before_cuda_is_initialized_is_not_asked_for_a_stream(monkeypatch, events_timed):
    torch = TorchStandIn(initialized=False)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with cuscope.scope("api_torch_uninitialized"):
        pass
    assert torch.asked == 0  # asking would initialize CUDA in the user's stead
    assert calls("api_torch_uninitialized") == 1


def test_a_failing_torch_stream_lookup_leaves_the_scope_on_the_default_stream(monkeypatch, events_timed):
    torch = TorchStandIn(fails=True)
    monkeypatch.setitem(sys.modules, "torch", torch)
    with cuscope.scope("api_torch_fails"):
        pass
    assert torch.asked == 1
    assert calls("api_torch_fails") == 1


def test_a_scope_asks_torch_at_each_entry_and_push_asks_too(monkeypatch, events_timed):
    """torch.cuda.stream(s) may switch the current stream between two entries of one scope object
    (a decorated function): the stream is torch's at each entry, not at the scope's making."""
    torch = TorchStandIn()
    monkeypatch.setitem(sys.modules, "torch", torch)
    s = cuscope.scope("api_torch_each_entry")
    assert torch.asked == 0
    for _ in range(3):
        with s:
            pass
    assert torch.asked == 3
    cuscope.push("api_torch_pushed")
    cuscope.pop()
    cuscope.push("api_torch_pushed", stream=5)
    cuscope.pop()
    assert torch.asked == 4  # the push with no stream= only
    assert (calls("api_torch_each_entry"), calls("api_torch_pushed")) == (3, 2)


def test_a_session_that_times_no_events_never_asks_torch_for_a_stream(monkeypatch):
    """The default while CUPTI traces (CUSCOPE_EVENTS=auto), and here, with no GPU: no scope needs a
    stream, and torch's current_stream(), which costs more than the scope, is not called."""
    assert cuscope._cuscope._scopes_use_streams() is False
    torch = TorchStandIn()
    monkeypatch.setitem(sys.modules, "torch", torch)
    for _ in range(3):
        with cuscope.scope("api_torch_not_asked"):
            pass
    cuscope.push("api_torch_not_asked_pushed")
    cuscope.pop()
    assert torch.asked == 0
    assert (calls("api_torch_not_asked"), calls("api_torch_not_asked_pushed")) == (3, 1)


def test_a_subclass_that_skips_scope_init_is_refused_at_entry():
    class Timed(cuscope.scope):
        def __init__(self, name):  # forgets super().__init__(name)
            self.label = name

    open_before = cuscope.snapshot().diagnostics["open_scopes"]
    with pytest.raises(TypeError, match=r"cuscope\.scope\.__init__\(\) was not called"):
        Timed("api_uninit").__enter__()
    with cuscope.scope("api_after_uninit"):
        pass
    assert find("api_after_uninit").calls == 1  # at the top: nothing was left open
    assert cuscope.snapshot().diagnostics["open_scopes"] == open_before


def test_long_names_share_no_site_and_hold_no_memory():
    # The library keeps a name's first 200 bytes; each distinct long name once kept a site with
    # two whole copies of it (300 names of 1 MiB: 600 MB resident).
    def resident_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20

    before = resident_mb()
    for i in range(200):
        with cuscope.scope(f"api_long_{i:03d}" + "x" * (1 << 20)):
            pass
    grown = resident_mb() - before
    assert grown < 64, f"{grown:.0f} MB resident for 200 scopes of 1 MiB names"
    r = [x for x in cuscope.snapshot().ranges if x.name.startswith("api_long_")]
    assert len(r) == 200 and all(x.calls == 1 for x in r)


def test_an_exit_with_no_entry_is_counted_as_an_unbalanced_end():
    s = cuscope.scope("api_exit_unentered")
    before = unbalanced_ends()
    s.__exit__(None, None, None)  # never entered
    assert unbalanced_ends() == before + 1
    with s:
        pass
    s.__exit__(None, None, None)  # one exit more than entries
    assert unbalanced_ends() == before + 2
    r = find("api_exit_unentered")
    assert (r.calls, r.open) == (1, 0)


def test_an_exit_with_no_entry_on_a_thread_that_never_opened_a_scope_is_counted():
    s = cuscope.scope("api_exit_unentered_thread")
    before = unbalanced_ends()
    t = threading.Thread(target=lambda: s.__exit__(None, None, None))
    t.start()
    t.join()
    assert unbalanced_ends() == before + 1


def test_an_exit_with_no_entry_leaves_the_threads_pushes_open():
    s = cuscope.scope("api_exit_unentered_push")
    cuscope.push("api_pushed_kept")
    s.__exit__(None, None, None)  # counted, and not taken for the push's pop
    with cuscope.scope("api_under_kept_push"):
        pass
    cuscope.pop()
    assert calls("api_pushed_kept/api_under_kept_push") == 1
    r = find("api_pushed_kept")
    assert (r.calls, r.open) == (1, 0)


def test_the_type_stub_declares_every_public_name():
    import ast
    import os
    stub_path = os.path.join(os.path.dirname(os.path.realpath(cuscope.__file__)), "__init__.pyi")
    with open(stub_path) as f:
        tree = ast.parse(f.read())
    declared = {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert set(cuscope.__all__) <= declared
    assert {n for n in declared if not n.startswith("_")} == set(cuscope.__all__)


def test_every_public_name_has_a_docstring_with_an_example():
    plain_records = {"Duration", "Activity", "Copy", "Kernel", "Count", "Finding", "Span"}
    for name in cuscope.__all__:
        doc = getattr(cuscope, name).__doc__ or ""
        assert doc.strip(), name
        if name not in plain_records:
            assert "Example::" in doc, name

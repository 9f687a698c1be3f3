"""@cuscope.scope on generator functions, sync and async: each resumption of the body (next(),
send(), throw(), close() and their async forms, up to the body's next yield, return or raise) is
one call of the scope; making the generator is none, and the consumer's code between resumptions
is outside the scope. The decorated function stays a generator function, and what passes through
a generator (sent values, thrown exceptions, GeneratorExit, the return value, the body's
exceptions) passes through unchanged. docs/python.md ("Lifetimes") says so."""
import asyncio
import inspect
import time
import types

import pytest

import cuscope
from conftest import find, unbalanced_ends

BODY_S = 0.01       # the body's sleep in each resumption
CONSUMER_S = 0.2    # the consumer's sleep between items: more than all the body's sleeps together
BODY_NS = int(BODY_S * 1e9)
CONSUMER_NS = int(CONSUMER_S * 1e9)


def test_a_decorated_generator_function_stays_one_and_keeps_its_name():
    @cuscope.scope("gen_kind")
    def produce():
        """Yields."""
        yield 1

    @cuscope.scope("gen_kind_async")
    async def produce_async():
        yield 1

    @cuscope.scope("gen_kind_coroutine")
    async def coroutine():
        return 1

    assert inspect.isgeneratorfunction(produce)
    assert (produce.__name__, produce.__doc__) == ("produce", "Yields.")
    assert inspect.isasyncgenfunction(produce_async)
    assert not inspect.isgeneratorfunction(produce_async)
    assert inspect.iscoroutinefunction(coroutine)  # as before: a coroutine function stays one


def test_each_resumption_is_a_call_and_the_consumer_between_items_is_outside_the_scope():
    @cuscope.scope("gen_timed")
    def produce():
        for i in range(3):
            time.sleep(BODY_S)
            with cuscope.scope("gen_timed_body"):
                pass
            yield i
        time.sleep(BODY_S)

    before = unbalanced_ends()
    items = []
    for item in produce():
        items.append(item)
        with cuscope.scope("gen_timed_consumer"):
            time.sleep(CONSUMER_S)
    assert items == [0, 1, 2]
    r = find("gen_timed")
    # Three resumptions up to a yield, and the one that runs off the end.
    assert (r.calls, r.open, r.recursive_calls) == (4, 0, 0)
    assert r.host.min_ns >= BODY_NS  # every resumption holds one sleep of the body
    assert r.host.total_ns < CONSUMER_NS, r.host.to_dict()  # and no sleep of the consumer
    assert find("gen_timed/gen_timed_body").calls == 3
    assert find("gen_timed_consumer").calls == 3  # at the top level: the scope was not open
    assert find("gen_timed/gen_timed_consumer") is None
    assert unbalanced_ends() == before


def test_making_a_decorated_generator_is_not_a_call_and_runs_none_of_its_body():
    ran = []

    @cuscope.scope("gen_made")
    def produce():
        ran.append("body")
        yield 1

    g = produce()
    assert ran == [] and find("gen_made") is None
    assert next(g) == 1
    assert ran == ["body"] and find("gen_made").calls == 1
    produce().close()  # closing one never started runs none of its body either: no call
    assert ran == ["body"] and find("gen_made").calls == 1


def test_values_sent_reach_the_body():
    @cuscope.scope("gen_send")
    def running_total():
        total = 0
        while True:
            amount = yield total
            if amount is None:
                return total
            total += amount

    g = running_total()
    assert next(g) == 0
    assert g.send(5) == 5
    assert g.send(7) == 12
    with pytest.raises(StopIteration) as stop:
        g.send(None)
    assert stop.value.value == 12
    r = find("gen_send")
    assert (r.calls, r.open) == (4, 0)


def test_exceptions_thrown_in_reach_the_body_and_propagate_as_the_same_object():
    @cuscope.scope("gen_throw")
    def resilient():
        while True:
            try:
                yield "ready"
            except KeyError as e:
                yield f"handled {e.args[0]}"

    g = resilient()
    assert next(g) == "ready"
    assert g.throw(KeyError("k")) == "handled k"
    boom = ValueError("not handled")
    with pytest.raises(ValueError) as raised:
        g.throw(boom)
    assert raised.value is boom
    r = find("gen_throw")
    assert (r.calls, r.open) == (3, 0)


def test_what_the_body_raises_after_handling_a_thrown_exception_has_no_context_of_the_wrapper():
    @cuscope.scope("gen_throw_context")
    def handles_then_fails():
        try:
            yield 1
        except KeyError:
            pass
        raise RuntimeError("after")

    def undecorated():
        try:
            yield 1
        except KeyError:
            pass
        raise RuntimeError("after")

    for make in (handles_then_fails, undecorated):
        g = make()
        next(g)
        with pytest.raises(RuntimeError, match="after") as raised:
            g.throw(KeyError("k"))
        assert raised.value.__context__ is None, make.__name__  # as without the decorator


def test_close_reaches_the_body_whose_finally_runs_inside_the_scope():
    events = []

    @cuscope.scope("gen_close")
    def closable():
        try:
            yield 1
            yield 2
        except GeneratorExit:
            events.append("GeneratorExit")
            raise
        finally:
            with cuscope.scope("gen_close_finally"):
                events.append("finally")

    g = closable()
    assert next(g) == 1
    g.close()
    assert events == ["GeneratorExit", "finally"]
    assert find("gen_close/gen_close_finally").calls == 1
    assert find("gen_close_finally") is None
    r = find("gen_close")
    assert (r.calls, r.open) == (2, 0)  # the first item, and the close


def test_a_body_that_ignores_generator_exit_makes_close_fail_as_without_the_decorator():
    @cuscope.scope("gen_stubborn")
    def stubborn():
        ignored = False
        while True:
            try:
                yield 1
            except GeneratorExit:
                if ignored:  # the second close (the collector's): ends, and leaves no unraisable error
                    raise
                ignored = True

    g = stubborn()
    next(g)
    with pytest.raises(RuntimeError, match="ignored GeneratorExit"):
        g.close()
    r = find("gen_stubborn")
    assert (r.calls, r.open) == (2, 0)


def test_the_return_value_reaches_yield_from():
    @cuscope.scope("gen_return")
    def two_then_answer():
        yield 1
        yield 2
        return 42

    def delegate():
        answer = yield from two_then_answer()
        yield answer

    assert list(delegate()) == [1, 2, 42]
    g = two_then_answer()
    assert [next(g), next(g)] == [1, 2]
    with pytest.raises(StopIteration) as stop:
        next(g)
    assert stop.value.value == 42
    r = find("gen_return")
    assert (r.calls, r.open) == (6, 0)


def test_an_exception_of_the_body_closes_its_call_and_propagates_as_the_same_object():
    boom = OSError("disk")

    @cuscope.scope("gen_raises")
    def failing():
        yield 1
        raise boom

    g = failing()
    assert next(g) == 1
    with pytest.raises(OSError) as raised:
        next(g)
    assert raised.value is boom
    with pytest.raises(StopIteration):
        next(g)  # finished: no resumption runs the body, no call
    r = find("gen_raises")
    assert (r.calls, r.open) == (2, 0)


def test_each_resumption_of_an_async_generator_is_a_call_and_the_consumer_is_outside():
    @cuscope.scope("agen_timed")
    async def ticks():
        for i in range(3):
            await asyncio.sleep(BODY_S)  # inside the call, as a decorated coroutine's awaits are
            yield i
        await asyncio.sleep(BODY_S)

    async def consume():
        items = []
        async for item in ticks():
            items.append(item)
            with cuscope.scope("agen_timed_consumer"):
                await asyncio.sleep(CONSUMER_S)
        return items

    before = unbalanced_ends()
    assert asyncio.run(consume()) == [0, 1, 2]
    r = find("agen_timed")
    assert (r.calls, r.open, r.recursive_calls) == (4, 0, 0)
    assert r.host.min_ns >= BODY_NS
    assert r.host.total_ns < CONSUMER_NS, r.host.to_dict()
    assert find("agen_timed_consumer").calls == 3
    assert find("agen_timed/agen_timed_consumer") is None
    assert unbalanced_ends() == before


def test_an_async_generator_passes_asend_athrow_and_aclose_through():
    events = []

    @cuscope.scope("agen_protocol")
    async def echo():
        try:
            received = None
            while True:
                try:
                    received = yield received
                except KeyError as e:
                    received = f"handled {e.args[0]}"
        finally:
            with cuscope.scope("agen_protocol_finally"):
                await asyncio.sleep(0)
                events.append("finally")

    boom = ValueError("not handled")

    async def drive():
        g = echo()
        got = [await g.asend(None), await g.asend("a"), await g.athrow(KeyError("k"))]
        await g.aclose()
        h = echo()
        await h.asend(None)
        with pytest.raises(ValueError) as raised:
            await h.athrow(boom)
        return got, raised.value

    got, raised = asyncio.run(drive())
    assert got == [None, "a", "handled k"]
    assert raised is boom
    assert events == ["finally", "finally"]
    assert find("agen_protocol/agen_protocol_finally").calls == 2
    assert find("agen_protocol_finally") is None
    r = find("agen_protocol")
    assert (r.calls, r.open) == (6, 0)  # asend, asend, athrow, aclose; asend, athrow


def test_a_decorated_types_coroutine_generator_stays_awaitable_and_its_await_is_one_call():
    # A generator function made awaitable by @types.coroutine is a coroutine function to its caller:
    # decorated, it is one, as an async def is (a plain generator wrapping it could not be awaited).
    @cuscope.scope("legacy_coroutine")
    @types.coroutine
    def legacy():
        yield None  # one trip through the event loop, inside the scope
        return 7

    async def drive():
        return [await legacy(), await legacy()]

    assert inspect.iscoroutinefunction(legacy)
    assert asyncio.run(drive()) == [7, 7]
    r = find("legacy_coroutine")
    assert (r.calls, r.open) == (2, 0)

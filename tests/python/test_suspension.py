"""Generators and asyncio tasks that suspend inside a scope: what happens is what docs/python.md
says ("Lifetimes"). The range tree is per thread and in time order, as NVTX's is."""
import asyncio

import cuscope
from conftest import find, unbalanced_ends


def test_what_the_consumer_does_while_a_generator_is_suspended_nests_under_its_scope():
    def produce():
        with cuscope.scope("sus_gen"):
            yield from range(3)

    before = unbalanced_ends()
    for _ in produce():
        with cuscope.scope("sus_consumer"):
            pass
    assert find("sus_gen").calls == 1
    assert find("sus_gen/sus_consumer").calls == 3
    assert find("sus_consumer") is None
    assert unbalanced_ends() == before


def test_a_generator_closed_outside_the_scope_it_was_suspended_in():
    def produce():
        with cuscope.scope("sus_gen_b"):
            yield 1
            yield 2

    g = produce()
    before = unbalanced_ends()
    with cuscope.scope("sus_outer"):
        next(g)  # sus_gen_b opens inside sus_outer, and stays open when sus_outer ends
    g.close()  # its end comes after: nothing of it is open any more
    assert find("sus_outer").calls == 1
    r = find("sus_outer/sus_gen_b")
    assert (r.calls, r.open) == (0, 0)  # closed by sus_outer's end, not as a completed call
    assert unbalanced_ends() == before + 2   # sus_outer's end past an open range, and sus_gen_b's own


def test_a_decorated_generator_is_closed_while_suspended_so_it_nests_wherever_it_resumes():
    @cuscope.scope("sus_decorated_gen")
    def produce():
        yield 1
        yield 2

    g = produce()
    assert find("sus_decorated_gen") is None  # making it runs none of its body: no call
    before = unbalanced_ends()
    with cuscope.scope("sus_outer_d"):
        next(g)  # a call inside sus_outer_d, closed at the yield
    g.close()  # a call of its own, at the top level: nothing is out of order
    assert find("sus_outer_d/sus_decorated_gen").calls == 1
    r = find("sus_decorated_gen")
    assert (r.calls, r.open) == (1, 0)
    assert unbalanced_ends() == before


def test_asyncio_tasks_holding_scopes_across_awaits_share_the_thread_tree():
    async def task(name):
        with cuscope.scope(name):
            await asyncio.sleep(0)
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(task("sus_task_a"), task("sus_task_b"))

    before = unbalanced_ends()
    asyncio.run(main())
    assert find("sus_task_a").calls == 1
    nested = find("sus_task_a/sus_task_b")  # b began while a was open on the same thread
    assert (nested.calls, nested.open) == (0, 0)  # a's end closed it, not as a completed call
    assert find("sus_task_b") is None
    assert unbalanced_ends() == before + 2  # a's end past b's open range, and b's own end after it


def test_asyncio_scopes_that_do_not_span_an_await_are_exact():
    async def task():
        for _ in range(3):
            with cuscope.scope("sus_sync_part"):
                pass
            await asyncio.sleep(0)

    async def main():
        await asyncio.gather(*(task() for _ in range(4)))

    before = unbalanced_ends()
    asyncio.run(main())
    assert find("sus_sync_part").calls == 12
    assert unbalanced_ends() == before


def test_a_decorated_coroutine_function_scopes_the_await():
    @cuscope.scope("sus_coroutine")
    async def work():
        await asyncio.sleep(0)
        return 7

    assert asyncio.run(work()) == 7
    r = find("sus_coroutine")
    assert (r.calls, r.open) == (1, 0)

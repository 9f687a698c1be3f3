"""cuscope's Python scopes across threads: each thread's own tree, one object shared, snapshots from
another thread, and a scope ended on another thread than its own, alive or exited."""
import threading

import cuscope
from conftest import calls, find


def test_threads_each_count_and_one_shared_object():
    shared = cuscope.scope("api_shared")
    barrier = threading.Barrier(8)

    def work():
        barrier.wait()
        for _ in range(100):
            with shared:
                with cuscope.scope("api_thread_inner"):
                    pass

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    r = find("api_shared")
    assert (r.calls, r.threads, r.open, r.recursive_calls) == (800, 8, 0, 0)
    assert calls("api_shared/api_thread_inner") == 800


def test_snapshot_from_another_thread():
    with cuscope.scope("api_snap_thread"):
        pass
    got = []
    t = threading.Thread(target=lambda: got.append(calls("api_snap_thread")))
    t.start()
    t.join()
    assert got == [1]


def test_a_scope_closed_on_another_thread_is_counted_and_closed_on_its_own():
    s = cuscope.scope("api_cross_thread")
    before = cuscope.snapshot().diagnostics["cross_thread_ends"]
    s.__enter__()
    t = threading.Thread(target=lambda: s.__exit__(None, None, None))
    t.start()
    t.join()
    assert cuscope.snapshot().diagnostics["cross_thread_ends"] == before + 1
    with cuscope.scope("api_after_cross_thread"):  # the owner's next scope boundary closes it
        pass
    r = find("api_cross_thread")
    assert (r.calls, r.open) == (1, 0)
    assert calls("api_after_cross_thread") == 1  # at top level: the ended scope was not open
    unbalanced = cuscope.snapshot().diagnostics["unbalanced_ends"]
    s.__exit__(None, None, None)  # no entry left: closes nothing, counted as an unbalanced end
    assert cuscope.snapshot().diagnostics["unbalanced_ends"] == unbalanced + 1
    assert find("api_cross_thread").calls == 1


def test_a_scope_entered_on_a_thread_that_exited_and_ended_on_a_later_one():
    # A response stream started on one request's thread and finished on the next one's: the first
    # thread's state passes to the second when it exits, and the stream's end once closed the
    # second thread's own scopes (request2/db with 0 calls, query and render at the top).
    def stream():
        with cuscope.scope("api_stream"):
            yield 1
            yield 2

    g = stream()
    t = threading.Thread(target=lambda: next(g))
    t.start()
    t.join()
    before = cuscope.snapshot().diagnostics["cross_thread_ends"]

    def request():
        with cuscope.scope("api_request"):
            with cuscope.scope("db"):
                assert list(g) == [2]
                with cuscope.scope("query"):
                    pass
            with cuscope.scope("render"):
                pass

    t = threading.Thread(target=request)
    t.start()
    t.join()
    for path in ("api_request", "api_request/db", "api_request/db/query", "api_request/render"):
        r = find(path)
        assert (r.calls, r.open) == (1, 0), path
    assert find("query") is None and find("render") is None
    assert cuscope.snapshot().diagnostics["cross_thread_ends"] == before + 1
    assert find("api_stream").calls == 0  # its thread exited with it open: counted there, not here

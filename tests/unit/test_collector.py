"""The garbage collector is held off while requests are answered and runs what came due once
none is (extender.serving.collector)."""

from __future__ import annotations

import gc

import pytest

from extender.serving.collector import Collector


class Tracked:
    """An object the collector counts (no free list recycles it)."""


@pytest.fixture
def passes():
    """Every collection run while a test runs: the generation of each."""
    seen: list[int] = []

    def record(phase: str, info: dict) -> None:
        if phase == "stop":
            seen.append(info["generation"])

    gc.collect()
    gc.enable()
    gc.callbacks.append(record)
    yield seen
    gc.callbacks.remove(record)
    gc.enable()


def allocate(count: int) -> list[Tracked]:
    return [Tracked() for _ in range(count)]


def past_threshold() -> int:
    return gc.get_threshold()[0] * 3


def test_no_collection_while_a_request_is_answered_and_the_due_one_after(passes):
    collector = Collector()
    collector.take()
    assert not gc.isenabled()
    kept = allocate(past_threshold())  # would have run young collections
    assert passes == []
    assert gc.get_count()[0] > gc.get_threshold()[0]
    collector.done()
    assert gc.isenabled()
    assert passes == [0]  # run at once, not at some later allocation
    assert gc.get_count()[0] < gc.get_threshold()[0]
    del kept


def test_nothing_run_when_nothing_is_due(passes):
    collector = Collector()
    collector.take()
    collector.done()
    assert gc.isenabled() and passes == []


def test_overlapping_requests_hold_it_until_the_last_is_answered(passes):
    collector = Collector()
    collector.take()
    collector.take()
    kept = allocate(past_threshold())
    collector.done()
    assert not gc.isenabled() and passes == []
    collector.done()
    assert gc.isenabled() and passes == [0]
    del kept


def test_requests_overlapping_without_a_gap_do_not_starve_it(passes):
    now = [0.0]
    collector = Collector(hold=1.0, clock=lambda: now[0])
    collector.take()
    kept = allocate(past_threshold())
    now[0] = 0.5
    collector.take()  # within the hold: nothing run
    collector.done()
    assert passes == []
    now[0] = 1.5
    collector.take()  # requests have overlapped for 1.5 s: what is due runs now, and it is off again
    assert passes == [0] and not gc.isenabled()
    more = allocate(past_threshold())
    now[0] = 2.0
    collector.take()  # the hold counts again from the last run
    assert passes == [0]
    for _ in range(3):
        collector.done()
    assert passes == [0, 0] and gc.isenabled()
    del kept, more


def test_left_off_if_something_else_turned_it_off(passes):
    gc.disable()
    collector = Collector()
    collector.take()
    kept = allocate(past_threshold())
    collector.done()
    assert not gc.isenabled() and passes == []
    del kept


def test_full_collections_by_cpythons_own_rules(passes):
    """What is due is CPython's choice: with young collections enough for a full one (and few
    long-lived objects, so that a quarter of them are new), a full collection runs at done."""
    collector = Collector()
    gc.collect()
    gc.freeze()  # the long-lived objects out of the count, as the server does
    passes.clear()  # gc.collect()'s
    try:
        kept = []
        for _ in range(2 * (gc.get_threshold()[1] + 1) * (gc.get_threshold()[2] + 1)):  # twice what one needs
            collector.take()
            before = len(passes)
            kept.append(allocate(gc.get_threshold()[0] + 1))
            assert len(passes) == before  # none while answering
            collector.done()
            if 2 in passes:
                break
        assert passes[-1] == 2  # run by done
    finally:
        gc.unfreeze()


def test_the_server_answers_with_the_collector_off_and_runs_what_is_due_after(passes):
    """Through extender.serving.connection on loopback: a verb answered inline (small body)
    and one on a thread (large body) each run with the collector off, allocating past its
    threshold; the collection runs once the answer is written, and the collector is on between
    requests."""
    import asyncio
    import http.client
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor
    from functools import partial

    from extender.config import Settings
    from extender.metrics import Metrics
    from extender.serving.connection import INLINE_BYTES, Connections, Listener

    during: list[tuple[bool, int]] = []  # (collector on, collections so far) while answering
    kept: list[list[Tracked]] = []  # alive: freeing them would take them off the collector's count

    def answer(body: bytes, *, arrived: float, closed) -> tuple[int, bytes]:
        kept.append(allocate(past_threshold()))
        during.append((gc.isenabled(), len(passes)))
        return 200, b"{}"

    started, stop = threading.Event(), None
    pool = ThreadPoolExecutor(2)
    connections = Connections(lambda env, start: [], Settings(), pool, Metrics(), {"/preempt": answer})
    port: list[int] = []

    async def run() -> None:
        nonlocal stop
        stop = asyncio.Event()
        server = await asyncio.start_server(partial(connections.serve, Listener("verbs")), "127.0.0.1", 0)
        port.append(server.sockets[0].getsockname()[1])
        started.set()
        await stop.wait()
        server.close()
        await asyncio.wait_for(connections.all_closed.wait(), 5)

    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_until_complete, args=(run(),))
    thread.start()
    try:
        assert started.wait(10)
        client = http.client.HTTPConnection("127.0.0.1", port[0], timeout=10)
        for body in (b"{}", b" " * (INLINE_BYTES + 1)):
            # The young count back to 0, so that what the client and the loop allocate before
            # the server takes the request cannot reach the threshold on its own (it would, by
            # what ran before in the process, and count a pass the server did not hold off).
            gc.collect()
            passes.clear()
            client.request("POST", "/preempt", body)
            response = client.getresponse()
            assert (response.status, response.read()) == (200, b"{}")
            assert during[-1] == (False, 0)  # answered with the collector off, nothing collected
            waited = 0  # the client may read the answer before the server's thread goes on
            while not passes and waited < 100:
                time.sleep(0.01)
                waited += 1
            assert passes, "the collection due ran once the answer was written"
            assert gc.isenabled()
    finally:
        client.close()
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        pool.shutdown()

"""The view's lag behind the watch streams, and the lag injected on purpose (extender.live.lag)."""

from __future__ import annotations

import time

import pytest

from extender.live.lag import Lag, delayed


def test_lag_counts_from_arrival_until_the_view_that_includes_the_event():
    now = [10.0]
    lag = Lag(clock=lambda: now[0])
    assert lag.seconds() == 0.0
    lag.arrived("pods")  # at 10
    now[0] = 11.0
    lag.arrived("nodes")  # at 11
    now[0] = 12.5
    assert lag.seconds() == 2.5  # the pod event has waited since 10
    lag.applied("pods")
    assert lag.seconds() == 2.5  # applied, but not yet in a published view
    assert lag.publishing() == 10.0
    assert lag.seconds() == 1.5  # the node event, still queued
    lag.applied("nodes")
    assert lag.publishing() == 11.0 and lag.seconds() == 0.0
    assert lag.publishing() is None


def test_a_restarted_watch_forgets_the_events_it_never_applied():
    now = [0.0]
    lag = Lag(clock=lambda: now[0])
    lag.arrived("pods")
    lag.arrived("pods")
    lag.applied("pods")
    lag.restarted("pods")  # the stream broke with one event still queued
    now[0] = 5.0
    lag.publishing()
    assert lag.seconds() == 0.0
    lag.applied("pods")  # nothing left to apply: no effect
    assert lag.publishing() is None


def test_delayed_yields_each_event_its_delay_after_arrival_without_adding_delays_up():
    arrivals = []
    started = time.monotonic()
    out = []
    for event in delayed(iter([{"n": 1}, {"n": 2}, {"n": 3}]), 0.3, lambda: arrivals.append(time.monotonic())):
        out.append((event["n"], time.monotonic()))
    assert [n for n, _ in out] == [1, 2, 3]
    assert all(at >= arrived + 0.3 for (_, at), arrived in zip(out, arrivals))
    # Three events that arrived together are all out about 0.3 s later, not 0.9 s.
    assert out[-1][1] - started < 0.8


def test_delayed_raises_the_streams_error_after_the_events_before_it():
    def stream():
        yield {"n": 1}
        raise OSError("connection reset")

    seen = []
    with pytest.raises(OSError, match="connection reset"):
        for event in delayed(stream(), 0.05, lambda: None):
            seen.append(event["n"])
    assert seen == [1]


def test_an_abandoned_delayed_watch_stops_counting_arrivals():
    # The reflector stops consuming on an error and watches again; the old stream's reader must
    # not go on counting arrivals against the new watch (found in review).
    import threading

    release, arrivals = threading.Event(), []

    def stream():
        yield {"n": 1}
        release.wait(5)
        yield from ({"n": i} for i in range(2, 20))

    events = delayed(stream(), 0.01, lambda: arrivals.append(1))
    assert next(events) == {"n": 1}
    events.close()
    release.set()
    time.sleep(0.2)
    assert len(arrivals) <= 2  # the first, and at most the one the reader was holding


def test_an_event_that_changed_nothing_is_in_the_published_view_already():
    now = [0.0]
    lag = Lag(clock=lambda: now[0])
    lag.arrived("pods")
    lag.applied("pods", changed=False)
    now[0] = 3.0
    assert lag.seconds() == 0.0 and lag.publishing() is None

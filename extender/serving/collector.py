"""The garbage collector held off while a verb is answered, and let run once it is sent (issue 31).

A full collection walks every object tracked since the server's ``gc.freeze()`` (the view's
summaries built by the first requests against it, the live cache's newer records): 1.7-5 ms at
5,000 nodes, run by whichever allocation crosses the threshold, often in the middle of a
500-candidate preempt request (docs/benchmarks.md). The collector is off from the moment a
request is taken until its answer is written, and back on when no request is being answered;
the collection that came due meanwhile (young or full, by CPython's own rules, whose full
collections wait until a quarter of the long-lived objects are new) then runs at once, in the
thread that sent the last answer, before the loop reads the next request.

The collector is process-wide: the live cache's threads collect nothing while a request is
answered either, and what they allocate meanwhile is collected after it. If requests overlap
without a gap for longer than ``hold`` seconds, the next one taken runs the collection that is
due first, so that back-to-back requests never starve it.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable


class Collector:
    """``take`` when a request is taken, ``done`` once its answer is written (each exactly once
    per request, from any thread); the server has one (extender.serving.connection)."""

    def __init__(self, *, hold: float = 1.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.hold, self._clock = hold, clock
        self._lock = threading.Lock()
        self._answering = 0  # requests taken and not yet answered
        self._off_since = 0.0  # when this collector turned the collector off
        self._owned = False  # whether it did (not if something else had turned it off)

    def take(self) -> None:
        with self._lock:
            if self._answering == 0:
                self._owned = gc.isenabled()
                if self._owned:
                    gc.disable()
                    self._off_since = self._clock()
            elif self._owned and self._clock() - self._off_since > self.hold:
                _run_due()
                gc.disable()
                self._off_since = self._clock()
            self._answering += 1

    def done(self) -> None:
        # The due collection runs with the lock held, so a finalizer it runs must not reach take
        # or done (the lock is not reentrant). None does: a connection's task, whose ``finally``
        # calls done, is referenced by the loop until it ends.
        with self._lock:
            if self._answering <= 0:
                raise RuntimeError("Collector.done without a request taken")
            self._answering -= 1
            if self._answering == 0 and self._owned:
                self._owned = False
                _run_due()


class _Allocation:
    """An object the collector tracks and no free list recycles: making one is what runs a due
    collection (a list or dict may come from CPython's free lists, which skip the collector)."""


def _run_due() -> None:
    """Turn the collector on and let it run what is due. CPython collects when a tracked object
    is allocated past the young generation's threshold, choosing the generation by its own rules
    (whether a full collection is due depends on counts Python cannot read), so one is allocated
    here rather than a generation chosen and collected. Called by the collector's owner."""
    gc.enable()
    if gc.get_count()[0] > gc.get_threshold()[0]:
        _Allocation()

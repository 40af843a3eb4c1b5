"""How far the published view is behind what the API server has sent, and a lag injected on purpose.

``Lag`` counts from each watch event's arrival (read off the stream) to the first published
view that includes it: events still queued, still being applied, or applied and waiting for the
publisher all count. ``delayed`` holds every event of a watch stream for a fixed time after it
arrives, a fault injected for the end-to-end suite (`reprieve serve --fault-watch-delay`): the
scheduler's view then runs ahead of reprieve's, as it does under load.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator


class Lag:
    """Arrival times of the events not yet in a published view, per kind (thread-safe)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._arrived: dict[str, deque[float]] = {}  # kind -> arrival of each event not applied yet, in order
        self._unpublished: float | None = None  # arrival of the oldest event applied since the last view

    def arrived(self, kind: str) -> None:
        """An event came off ``kind``'s watch stream (called by the thread reading it)."""
        now = self._clock()
        with self._lock:
            waiting = self._arrived.get(kind)
            if waiting is None:
                waiting = self._arrived[kind] = deque()
            waiting.append(now)

    def applied(self, kind: str, *, changed: bool = True) -> None:
        """The oldest event of ``kind`` not applied yet is applied (or was a bookmark or an error);
        an event that ``changed`` nothing is in the published view already."""
        with self._lock:
            waiting = self._arrived.get(kind)
            if not waiting:
                return
            at = waiting.popleft()
            if changed and (self._unpublished is None or at < self._unpublished):
                self._unpublished = at

    def restarted(self, kind: str) -> None:
        """A new watch of ``kind``: events of the old stream that were never applied are gone."""
        with self._lock:
            self._arrived.pop(kind, None)

    def publishing(self) -> float | None:
        """A view is being built from everything applied so far: the oldest arrival it includes."""
        with self._lock:
            oldest, self._unpublished = self._unpublished, None
        return oldest

    def seconds(self) -> float:
        """How long the oldest event not yet in a published view has waited; 0 if none waits."""
        with self._lock:
            times = [w[0] for w in self._arrived.values() if w]
            if self._unpublished is not None:
                times.append(self._unpublished)
            oldest = min(times, default=None)
        return 0.0 if oldest is None else max(0.0, self._clock() - oldest)


def delayed(events: Iterator[dict], seconds: float, arrived: Callable[[], None]) -> Iterator[dict]:
    """``events``, each yielded ``seconds`` after it arrived (``arrived`` is called on arrival).

    A thread reads the stream, so the delays do not add up; an error of the stream is raised in
    its turn, after the events before it."""
    inbox: queue.SimpleQueue = queue.SimpleQueue()
    end = object()
    abandoned = threading.Event()  # the consumer stopped (an error, a relist): the reader goes quiet

    def read() -> None:
        try:
            for event in events:
                if abandoned.is_set():
                    return  # the stream ends when the server closes it (timeoutSeconds)
                arrived()
                inbox.put((time.monotonic() + seconds, event))
        except BaseException as exc:  # noqa: BLE001 - handed to the consumer, which raises it
            inbox.put((time.monotonic() + seconds, exc))
        else:
            inbox.put((time.monotonic() + seconds, end))

    threading.Thread(target=read, name="delayed-watch", daemon=True).start()
    try:
        while True:
            due, item = inbox.get()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            if item is end:
                return
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        abandoned.set()

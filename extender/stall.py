"""Whether this process has just been stopped or starved, so that its view may miss what the
scheduler did meanwhile.

A stopped reprieve (SIGSTOP, or a CPU starved for seconds) misses its calls: the
scheduler goes on without it (``ignorable: true``), preempting as stock does, and when reprieve
runs again its view does not show those preemptions yet (their events wait in its watch
streams' sockets) while the scheduler's does: a victim reprieve then named could be one the
scheduler has already deleted, and the scheduler rejects the answer ("claims to preempt").
Calls queued while it was stopped are answered after their callers have gone. So for a while
after a stall the verbs give the answer they give while the view is not ready: the
scheduler's own (tests/e2e/test_faults.py; docs/upstream-semantics.md).

A ticker thread notes the time every ``tick``; a gap of more than ``gap`` is a stall, and the
``settle`` seconds after it are "recent". A request served before the ticker has run again
sees the gap itself (the last tick is old); a decision made across a stall is checked again
before it is answered or recorded (extender.serving.verbs.preempt).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class Stall:
    def __init__(
        self, *, tick: float = 0.1, gap: float = 1.0, settle: float = 2.0, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._tick, self._gap, self._settle, self._clock = tick, gap, settle, clock
        self._last = clock()
        self._until = float("-inf")  # the end of the window after the latest stall
        self._stop = threading.Event()

    def start(self) -> "Stall":
        threading.Thread(target=self._run, name="reprieve-stall", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def note(self) -> None:
        """One tick: a gap since the last one longer than ``gap`` opens the window."""
        now = self._clock()
        if now - self._last > self._gap:
            self._until = now + self._settle
        self._last = now

    def recent(self) -> bool:
        """Stopped or starved just now: within ``settle`` of a stall, or in one not yet noticed."""
        now = self._clock()
        return now - self._last > self._gap or now < self._until

    def _run(self) -> None:
        while not self._stop.wait(self._tick):
            self.note()

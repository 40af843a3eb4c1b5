"""The queue standing for each decision: one assessment per cluster view, plus the
preemptions reprieve answered that the view does not show yet.

Assessing queue usage walks every pod; views are immutable and published at most every
50 ms, so the preempt calls between two publications share one assessment. Between a preempt
answer and the view that shows its nomination and its terminating victims lie a few
milliseconds to a second, in which kube-scheduler may already ask about the next pod of the
same queue: without the in-flight record that pod would see its queue still below its share
and preempt once too often.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from policy import tenancy
from policy.model import Pod
from policy.view import ClusterView

# An answer the view never confirms (the scheduler chose no node, or failed) is forgotten after
# this long; the scheduler retries a failed preemption well after it.
IN_FLIGHT_SECONDS = 30.0


class Standings:
    def __init__(self, rules: tenancy.Rules, *, clock: Callable[[], float] = time.monotonic) -> None:
        self.rules = rules
        self._clock = clock
        self._lock = threading.Lock()
        self._view: ClusterView | None = None
        self._standing: tenancy.Standing | None = None
        self._in_flight: dict[str, tuple[float, tenancy.InFlight]] = {}  # preemptor UID -> (since, answer)

    def of(self, view: ClusterView) -> tenancy.Standing:
        with self._lock:
            if self._view is not view or self._standing is None:
                self._standing = tenancy.assess(self.rules, view)
                self._view = view
            return self._standing

    def in_flight(self, view: ClusterView) -> tuple[tenancy.InFlight, ...]:
        """Answers not yet shown by ``view`` and not expired (the others are dropped)."""
        now = self._clock()
        with self._lock:
            for uid, (since, flight) in list(self._in_flight.items()):
                if now - since > IN_FLIGHT_SECONDS or _shown(view, flight):
                    del self._in_flight[uid]
            return tuple(flight for _, flight in self._in_flight.values())

    def record(self, preemptor: Pod, node: str, victims: tuple[Pod, ...]) -> None:
        if not preemptor.uid:
            return  # the scheduler always sends one; without it there is nothing to match
        with self._lock:
            self._in_flight[preemptor.uid] = (self._clock(), tenancy.InFlight(preemptor, node, victims))


def _shown(view: ClusterView, flight: tenancy.InFlight) -> bool:
    seen = view.pods.get(flight.preemptor.uid)
    if seen is None or not (seen.node_name or seen.nominated_node_name == flight.node):
        return False
    return all((v := view.pods.get(p.uid)) is None or v.terminating for p in flight.victims)

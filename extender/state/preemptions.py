"""Preemptions under way as a view of the cluster shows them, without reprieve's ledger.

kube-scheduler writes both halves of a preemption into the API before it is over: the
preemptor's ``status.nominatedNodeName`` (its nominator holds the room from then on) and, on
each victim, the ``DisruptionTarget`` condition with reason ``PreemptionByScheduler``, before it
deletes the victim. The ledger (extender.state.ledger) only covers the moments between reprieve's
answer and a view that shows those writes. So a reprieve started in the middle of a wave, its
predecessor's ledger lost, knows from its first view every preemption the scheduler has begun to
carry out: the nominations hold their room (policy.view.ClusterView.reservations) and the
victims terminating are not offered again (docs/upstream-semantics.md, "When reprieve restarts").
``under_way`` counts them for the log line, the metric and the Event that say so.

``Nominations`` tells how long the oldest nomination a view shows has stood, for the metric
``reprieve_nominated_oldest_seconds`` and its alert: a preemptor nominated for minutes is stuck
(its victims never go, or the scheduler never comes back to it: kubernetes#141694).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import NamedTuple

from policy.view import ClusterView


class UnderWay(NamedTuple):
    nominated: int  # pending pods with a nominated node (preemptors; since 1.35 also pods in a binding cycle)
    victims: int  # pods terminating with the scheduler's DisruptionTarget condition

    def __bool__(self) -> bool:
        return bool(self.nominated or self.victims)

    def describe(self) -> str:
        return f"{self.nominated} pod(s) nominated to a node and {self.victims} victim(s) terminating for a preemption"


def under_way(view: ClusterView) -> UnderWay:
    """What ``view`` shows of preemptions begun and not over (one pass over its pods)."""
    nominated = sum(len(pods) for pods in view.nominated.values())
    victims = sum(1 for p in view.pods.values() if p.terminating and p.preempted)
    return UnderWay(nominated, victims)


class Nominations:
    """How long the nominations the views show have stood: each from the first view handed to
    ``oldest`` that showed the pod nominated to that node (a nomination older than the process
    counts from its first look). Read at each scrape, so as fine as the scrape interval."""

    def __init__(self, *, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._since: dict[tuple[str, str], float] = {}  # (pod UID, node) -> first seen there

    def oldest(self, view: ClusterView | None) -> float:
        """Seconds the oldest nomination ``view`` shows has stood (0: none). Without a view (not
        ready), the nominations last seen are kept and aged."""
        now = self._clock()
        with self._lock:
            if view is not None:
                current = {(p.uid, node) for node, pods in view.nominated.items() for p in pods}
                self._since = {key: self._since.get(key, now) for key in current}
            return now - min(self._since.values()) if self._since else 0.0

"""The queue standing for each decision: one assessment per cluster view, updated from the
last one.

Assessing queue usage from scratch walks every pod. Views are immutable and published at
most every 50 ms, so the preempt calls between two publications share one assessment; and
when the live store can say which pods and nodes changed since the view last assessed
(policy.view.Changes), the new assessment updates the old one with just those
(tenancy.reassess) instead of walking every pod. The answers reprieve gave that the view does
not show yet are added per decision (extender.state.ledger, policy.tenancy.with_in_flight).
"""

from __future__ import annotations

import threading

from policy import tenancy
from policy.view import ClusterView


class Standings:
    def __init__(self, rules: tenancy.Rules) -> None:
        self.rules = rules
        self._lock = threading.Lock()
        self._view: ClusterView | None = None
        self._standing: tenancy.Standing | None = None

    def of(self, view: ClusterView) -> tenancy.Standing:
        with self._lock:
            if self._view is not view or self._standing is None:
                self._standing = self._assess(view)
                self._view = view
            return self._standing

    def _assess(self, view: ClusterView) -> tenancy.Standing:
        last = self._view
        if last is not None and self._standing is not None and view.changes is not None and last.changes is view.changes:
            changed = view.changes.since(last.revision)
            if changed is not None and last.revision <= view.revision:
                return tenancy.reassess(self._standing, last, view, *changed)
        return tenancy.assess(self.rules, view)

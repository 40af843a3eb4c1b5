"""The queue standing for each decision: one assessment per cluster view.

Assessing queue usage walks every pod; views are immutable and published at most every
50 ms, so the preempt calls between two publications share one assessment. The answers
reprieve gave that the view does not show yet are added per decision (extender.state.ledger,
policy.tenancy.with_in_flight).
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
                self._standing = tenancy.assess(self.rules, view)
                self._view = view
            return self._standing

"""One module per extender verb: parse -> translate -> decide -> answer (enforce or shadow).

Each verb decides the same way in both modes, counts and logs the decision through
``Context.decided``, and only then chooses its answer: reprieve's decision (enforce), or the
scheduler's own (shadow; also the safe answer while the view is not ready).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from extender.config import Mode
from extender.stall import Stall
from extender.serving.logs import event
from extender.metrics import NOT_READY, Metrics
from extender.state.ledger import Ledger
from extender.state.standings import Standings
from policy.causes import Refusal
from policy import ranking
from policy.guards import Guards
from policy.model import Pod
from policy.view import ClusterView

if TYPE_CHECKING:
    from extender.events.witness import Witness


@dataclass(frozen=True)
class Context:
    view: ClusterView | None  # None: not ready, give the documented safe answer
    metrics: Metrics
    log: logging.Logger
    standings: Standings | None = None  # the --policy rules; None: Kubernetes rules only
    ledger: Ledger = field(default_factory=Ledger)  # preempt answers the view may not show yet
    mode: Mode = Mode.ENFORCE
    started: float = field(default_factory=time.perf_counter)
    events: Witness | None = None  # preempt answers to record Events about (extender.events)
    order: ranking.Order = ranking.DEFAULT  # the ranking's order (the --policy file's)
    stall: Stall | None = None  # extender.stall: was the process just stopped or starved?
    guards: Guards | None = None  # strictBudgets and minimumRuntime (the --policy file's: policy.guards)
    # Why the caller no longer waits for this answer ("connection closed", "past httpTimeout"),
    # or None while it may (extender.serving.app); None: nothing to tell (tests, other servers).
    caller_gone: Callable[[], str | None] | None = None

    def stalled(self) -> bool:
        """The process was stopped or starved just now (a decision made before may rest on a
        view that misses what the scheduler did meanwhile: extender.stall)."""
        return self.stall is not None and self.stall.recent()

    def gone(self) -> str | None:
        """Why the caller has gone (see ``caller_gone``); None: it may still be waiting."""
        return self.caller_gone() if self.caller_gone is not None else None

    @property
    def shadow(self) -> bool:
        return self.mode is Mode.SHADOW

    def not_ready(self, verb: str, stock: Callable[[], bytes]) -> bytes:
        """The scheduler's own answer, counted: the view is not ready, so nothing is decided."""
        self.metrics.not_ready.labels(verb).inc()
        self.metrics.fallbacks.labels(verb, NOT_READY).inc()
        return stock()

    def decided(
        self,
        verb: str,
        *,
        pod: Pod,
        outcome: str,
        changed: bool,
        notable: bool,
        details: Callable[[], dict],
        fallbacks: Iterable[str] = (),
        refusal: Refusal = Refusal.NONE,
    ) -> None:
        """Count one decision and write its log line: INFO if ``notable``, else DEBUG.

        ``changed``: reprieve's answer differs from the scheduler's own (in shadow mode, would
        have). ``details`` builds the verb's own log fields; it is called only if the line is
        written. Log names and numbers only, never pod specs, environment or annotations.
        """
        m = self.metrics
        m.decisions.labels(verb, outcome, refusal.value).inc()
        if changed:
            m.disagreements.labels(verb, self.mode.value).inc()
        for cause in set(fallbacks):
            m.fallbacks.labels(verb, cause).inc()
        level = logging.INFO if notable else logging.DEBUG
        if self.log.isEnabledFor(level):
            event(
                self.log,
                verb,
                level,
                mode=self.mode.value,
                pod=pod.key,
                priority=pod.priority,
                outcome=outcome,
                changed=changed,
                **details(),
                duration_ms=round((time.perf_counter() - self.started) * 1000, 3),
            )

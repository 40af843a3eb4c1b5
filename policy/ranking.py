"""Ranking preemption candidates: which node's victims cost the least.

Criteria, in order (each only breaks ties left by the ones before it):

0. fewest victims whose PriorityClass opts out of preemption (only with a policy, see
   policy.tenancy: such pods are a last resort);
1. fewest broken gangs (policy.gangs: a gang that loses more members than it can spare
   loses every running member's work, so one broken gang costs more than any PDB violation);
2. fewest PodDisruptionBudget violations;
3. lowest priority of the most important victim;
4. fewest Guaranteed victims;
5. fewest Burstable victims;
6. smallest sum of victim priorities, each shifted by 2**31 as upstream does so that
   negative priorities do not make more victims look cheaper;
7. fewest victims;
8. latest "earliest start among the highest-priority victims" (upstream's rule: evict the
   youngest work).

Upstream's ``pickOneNodeForPreemption`` uses 2, 3, 6, 7 and 8; reprieve adds 1 and the QoS
criteria 4 and 5. Terminating victims are already leaving and cost nothing, so only live
victims are counted. Nodes equal on every criterion are all returned; the scheduler then
picks among them with its own rules.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from policy.model import Pod
from policy.pdb import Violations
from policy.qos import QoS

SHIFT = 2**31

CRITERIA = (
    "opted-out victims",
    "broken gangs",
    "PDB violations",
    "highest victim priority",
    "Guaranteed victims",
    "Burstable victims",
    "sum of victim priorities",
    "victims",
    "start of the most important victims (later is better)",
)


@dataclass(frozen=True, slots=True)
class Cost:
    """One candidate's rank key; smaller is better, compared criterion by criterion."""

    key: tuple
    # Where the key's criteria are, so that versus() can show them plainly (policy.stock's
    # upstream key reuses this with its own layout).
    criteria: ClassVar[tuple[str, ...]] = CRITERIA
    sum_step: ClassVar[int] = CRITERIA.index("sum of victim priorities")  # shifted
    count_step: ClassVar[int] = CRITERIA.index("victims")  # to undo the shift
    start_step: ClassVar[int] = len(CRITERIA) - 1  # the negated earliest start
    unknown_start: ClassVar[str] = "unknown"

    def versus(self, winner: "Cost") -> str:
        """Why ``winner`` ranks before this cost: the first criterion on which they differ."""
        step = next(i for i, (a, b) in enumerate(zip(self.key, winner.key)) if a != b)
        return f"{self.criteria[step]} {self._show(step)} here vs {winner._show(step)}"

    def _show(self, step: int) -> str:
        value = self.key[step]
        if step == self.sum_step:  # undo the shift: the plain sum of victim priorities
            return str(value - self.key[self.count_step] * SHIFT)
        if step == self.start_step:
            return self.unknown_start if value == -math.inf else f"{-value:.0f}s since the epoch"
        return "none" if value == -math.inf else str(value)

    def describe(self) -> str:
        opted_out, broken, v, top, g, b, _, n, _ = self.key
        top_text = "none" if top == -math.inf else str(top)
        return (
            (f"{opted_out} opted-out victim(s), " if opted_out else "")
            + (f"{broken} broken gang(s), " if broken else "")
            + f"{v} PDB violation(s), highest victim priority {top_text}, "
            f"{g} Guaranteed / {b} Burstable of {n} live victim(s)"
        )


def cost(victims: Sequence[Pod], violations: Violations, opted_out: int = 0, broken: int = 0) -> Cost:
    """The key of evicting ``victims``: ``violations`` their PDB violations (policy.pdb),
    ``opted_out`` how many opted out of preemption, ``broken`` the gangs they break."""
    live = [p for p in victims if not p.terminating]
    top = max((p.priority for p in live), default=-math.inf)
    starts = [p.start_time if p.start_time is not None else math.inf for p in live if p.priority == top]
    earliest_top_start = min(starts, default=math.inf)
    return Cost(
        (
            opted_out,
            broken,
            violations.count,
            top,
            sum(p.qos == QoS.GUARANTEED for p in live),
            sum(p.qos == QoS.BURSTABLE for p in live),
            sum(p.priority + SHIFT for p in live),
            len(live),
            -earliest_top_start,
        )
    )


def floor(
    *, violations: int, top: float, guaranteed: int, burstable: int, victims: int, lowest: float, start: float
) -> tuple:
    """A lower bound on ``cost(...).key`` for a node, from bounds on its violations, its most
    important victim's priority, its Guaranteed, Burstable and live victims, the lowest
    priority a victim can have, and the start criterion (policy.bounds). It MUST stay a lower
    bound of the key criterion by criterion, except the start criterion, which needs to hold
    only where the key's priority of the most important victim equals ``top`` (where it does
    not, the key is already above the floor before the start): policy.preempt skips the exact
    victim search on nodes whose floor is above the best cost found. When a criterion is added
    to the key, add its bound here, or -math.inf if it has none."""
    shifted = victims * (lowest + SHIFT) if victims else 0
    # No bound on broken gangs: a gang's spare changes with members on other nodes, which a
    # per-node summary would not see change (0 is a lower bound; nodes where a gang must
    # break are solved rather than skipped).
    return (0, 0, violations, top, guaranteed, burstable, shifted, victims, start)


def best(costs: dict[str, Cost]) -> tuple[str, ...]:
    """The node names with the lowest cost (all exact ties), sorted by name."""
    if not costs:
        return ()
    lowest = min(c.key for c in costs.values())
    return tuple(sorted(name for name, c in costs.items() if c.key == lowest))

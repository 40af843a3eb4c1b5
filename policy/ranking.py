"""Ranking preemption candidates: which node's victims cost the least.

A cost is a lexicographic key over named criteria (``Criterion``), each only breaking ties left
by the ones before it. The default order (``DEFAULT``):

0. fewest victims whose PriorityClass opts out of preemption (only with a policy, see
   policy.tenancy: such pods are a last resort);
1. fewest PodDisruptionBudget violations;
2. fewest broken gangs (policy.gangs: a gang that loses more members than it can spare loses
   every running member's work; after the budgets, which are their owners' written promise of
   availability: docs/policy.md says why, with the measurements);
3. lowest priority of the most important victim;
4. fewest Guaranteed victims;
5. fewest Burstable victims;
6. fewest victims with no home (policy.homes: nothing re-creates them, or their replacement
   fits on no other node without preempting in turn; after the QoS classes, docs/policy.md
   says why);
7. smallest sum of victim priorities, each shifted by 2**31 as upstream does so that
   negative priorities do not make more victims look cheaper;
8. fewest victims;
9. latest "earliest start among the highest-priority victims" (upstream's rule: evict the
   youngest work).

Upstream's ``pickOneNodeForPreemption`` uses 1, 3, 7, 8 and 9; reprieve adds 2, the QoS
criteria 4 and 5, and 6. A policy may reorder 1-8 (``Order``; docs/policy.md): the opted-out victims
stay first (a last resort is last whatever else) and the start last (a tie-breaker, whose
lower bound holds only where the priorities before it are equal). Terminating victims are
already leaving and cost nothing, so only live victims are counted. Nodes equal on every
criterion are all returned; the scheduler then picks among them with its own rules.

Adding a criterion: its ``Criterion`` here and its place in CANONICAL, its value in
``Order.cost``, a lower bound in ``Order.floor`` (policy.bounds) and in policy.exact's
``_Bound`` (-inf or 0 if it has none: a bound only has to be low).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from policy.model import Pod
from policy.pdb import Violations
from policy.qos import QoS

SHIFT = 2**31


@dataclass(frozen=True, slots=True)
class Criterion:
    name: str  # as reasons, explain and the policy file say it
    field: str  # its name in JSON (reprieve explain --output json)


OPTED_OUT = Criterion("opted-out victims", "opted_out_victims")
BROKEN_GANGS = Criterion("broken gangs", "broken_gangs")
PDB_VIOLATIONS = Criterion("PDB violations", "pdb_violations")
TOP_PRIORITY = Criterion("highest victim priority", "highest_priority")
HOMELESS = Criterion("victims with no home", "homeless_victims")
GUARANTEED = Criterion("Guaranteed victims", "guaranteed")
BURSTABLE = Criterion("Burstable victims", "burstable")
PRIORITY_SUM = Criterion("sum of victim priorities", "priority_sum")
VICTIMS = Criterion("victims", "victims")
START = Criterion("start of the most important victims (later is better)", "top_victims_start")

# The order in which Order.cost computes them (and the default ranking order).
CANONICAL = (
    OPTED_OUT, PDB_VIOLATIONS, BROKEN_GANGS, TOP_PRIORITY, GUARANTEED, BURSTABLE, HOMELESS, PRIORITY_SUM, VICTIMS, START,
)
MOVABLE = CANONICAL[1:-1]  # what a policy may reorder
BY_NAME = {c.name: c for c in CANONICAL}


class Layout:
    """Criteria by position in a key (policy.stock's upstream key has a layout of its own)."""

    def __init__(self, criteria: Sequence[Criterion]) -> None:
        self.criteria = tuple(criteria)
        self._positions = {c: i for i, c in enumerate(self.criteria)}

    def position(self, criterion: Criterion) -> int:
        return self._positions[criterion]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.criteria)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Layout) and self.criteria == other.criteria

    def __hash__(self) -> int:
        return hash(self.criteria)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(self.names)})"


class Order(Layout):
    """A ranking order: CANONICAL with MOVABLE in the order given (all of them, once each)."""

    def __init__(self, movable: Sequence[Criterion] = MOVABLE) -> None:
        if sorted(c.name for c in movable) != sorted(c.name for c in MOVABLE):
            raise ValueError(
                "name each of " + ", ".join(repr(c.name) for c in MOVABLE) + " once"
                + (f" (given: {', '.join(repr(c.name) for c in movable)})" if movable else "")
            )
        super().__init__((OPTED_OUT, *movable, START))
        # Where each criterion of this order sits in CANONICAL: a key is the canonical tuple
        # read in this order (None: the canonical order itself, no copy needed).
        index = tuple(CANONICAL.index(c) for c in self.criteria)
        self._index = None if index == tuple(range(len(CANONICAL))) else index

    @classmethod
    def named(cls, names: Iterable[str]) -> "Order":
        """These criteria (by Criterion.name) first, in the order given, then the others in the
        default order; ValueError ``[index]: why`` for an unknown or repeated one."""
        criteria: list[Criterion] = []
        for i, name in enumerate(names):
            if name not in BY_NAME or BY_NAME[name] not in MOVABLE:
                choices = ", ".join(c.name for c in MOVABLE)
                raise ValueError(f"[{i}]: {name!r} is not a criterion a policy may order; one of: {choices}")
            if BY_NAME[name] in criteria:
                raise ValueError(f"[{i}]: {name!r} is named twice")
            criteria.append(BY_NAME[name])
        return cls([*criteria, *(c for c in MOVABLE if c not in criteria)])

    def arrange(self, canonical: tuple) -> tuple:
        """A tuple of CANONICAL's criteria in this order."""
        index = self._index
        return canonical if index is None else tuple(canonical[i] for i in index)

    def arrange_prefix(self, canonical: tuple) -> tuple:
        """``arrange`` for every criterion but the last (START), of a tuple without it."""
        index = self._index
        return canonical if index is None else tuple(canonical[i] for i in index[:-1])

    def cost(
        self, victims: Sequence[Pod], violations: Violations, opted_out: int = 0, broken: int = 0, homeless: int = 0
    ) -> "Cost":
        """The key of evicting ``victims``: ``violations`` their PDB violations (policy.pdb),
        ``opted_out`` how many opted out of preemption, ``broken`` the gangs they break,
        ``homeless`` how many of the live ones have no home (policy.homes)."""
        live = [p for p in victims if not p.terminating]
        top = max((p.priority for p in live), default=-math.inf)
        starts = [p.start_time if p.start_time is not None else math.inf for p in live if p.priority == top]
        earliest_top_start = min(starts, default=math.inf)
        canonical = (
            opted_out,
            violations.count,
            broken,
            top,
            sum(p.qos == QoS.GUARANTEED for p in live),
            sum(p.qos == QoS.BURSTABLE for p in live),
            homeless,
            sum(p.priority + SHIFT for p in live),
            len(live),
            -earliest_top_start,
        )
        return Cost(self.arrange(canonical), self)

    def floor(
        self, *, violations: int, top: float, guaranteed: int, burstable: int, victims: int, lowest: float, start: float,
        homeless: int = 0,
    ) -> tuple:
        """A lower bound on ``cost(...).key`` for a node, from bounds on its violations, its most
        important victim's priority, its Guaranteed, Burstable and live victims, the lowest
        priority a victim can have, the start criterion and its victims with no home
        (policy.bounds). It MUST stay a
        lower bound of the key criterion by criterion, except the start criterion, which needs
        to hold only where every criterion before it is equal (policy.bounds bounds it where the
        key's priority of the most important victim equals ``top``): policy.preempt skips the
        exact victim search on nodes whose floor is above the best cost found."""
        shifted = victims * (lowest + SHIFT) if victims else 0
        # No bound on broken gangs: a gang's spare changes with members on other nodes, which a
        # per-node summary would not see change (0 is a lower bound: a node is never skipped
        # for the gangs it must break, only for what comes after them in the key).
        return self.arrange((0, violations, 0, top, guaranteed, burstable, homeless, shifted, victims, start))


DEFAULT = Order()


@dataclass(frozen=True, slots=True)
class Cost:
    """One candidate's rank key; smaller is better, compared criterion by criterion."""

    key: tuple
    order: Layout | None = field(default=None, compare=False)  # None: the class's (DEFAULT)
    default_layout: ClassVar[Layout] = DEFAULT
    unknown_start: ClassVar[str] = "unknown"

    @property
    def layout(self) -> Layout:
        return self.order or self.default_layout

    def value(self, criterion: Criterion) -> object:
        return self.key[self.layout.position(criterion)]

    def versus(self, winner: "Cost") -> str:
        """Why ``winner`` ranks before this cost: the first criterion on which they differ."""
        step = next(i for i, (a, b) in enumerate(zip(self.key, winner.key)) if a != b)
        return f"{self.layout.criteria[step].name} {self._show(step)} here vs {winner._show(step)}"

    def _show(self, step: int) -> str:
        criterion = self.layout.criteria[step]
        value = self.key[step]
        if criterion is PRIORITY_SUM:  # undo the shift: the plain sum of victim priorities
            return str(value - self.value(VICTIMS) * SHIFT)
        if criterion is START:
            return self.unknown_start if value == -math.inf else f"{-value:.0f}s since the epoch"
        return "none" if value == -math.inf else str(value)

    def describe(self) -> str:
        opted_out, broken, v, homeless, g, b, n = (
            self.value(c) for c in (OPTED_OUT, BROKEN_GANGS, PDB_VIOLATIONS, HOMELESS, GUARANTEED, BURSTABLE, VICTIMS)
        )
        return (
            (f"{opted_out} opted-out victim(s), " if opted_out else "")
            + (f"{broken} broken gang(s), " if broken else "")
            + f"{v} PDB violation(s), highest victim priority {self._show(self.layout.position(TOP_PRIORITY))}, "
            + (f"{homeless} with no home, " if homeless else "")
            + f"{g} Guaranteed / {b} Burstable of {n} live victim(s)"
        )


def cost(victims: Sequence[Pod], violations: Violations, opted_out: int = 0, broken: int = 0, homeless: int = 0) -> Cost:
    """DEFAULT.cost: the key of evicting ``victims`` in the default order."""
    return DEFAULT.cost(victims, violations, opted_out, broken, homeless)


def best(costs: dict[str, Cost]) -> tuple[str, ...]:
    """The node names with the lowest cost (all exact ties), sorted by name."""
    if not costs:
        return ()
    lowest = min(c.key for c in costs.values())
    return tuple(sorted(name for name, c in costs.items() if c.key == lowest))

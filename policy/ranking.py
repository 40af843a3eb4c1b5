"""Ranking preemption candidates: which node's victims cost the least.

A cost is a lexicographic key over the criteria of policy.criteria (one module each, the
default order their registry's), each only breaking ties left by the ones before it.
Upstream's ``pickOneNodeForPreemption`` uses PDB violations, the highest victim priority, the
sum of priorities, the count and the start; reprieve adds broken gangs, the pods lost with
them and with their managers, the QoS classes, victims with no home and the pod-deletion-cost.
A policy may reorder the criteria between the first and the last (``Order``; docs/policy.md):
the opted-out victims stay first (a last resort is last whatever else) and the start last (a
tie-breaker, whose lower bound holds only where the priorities before it are equal).
Terminating victims are already leaving and cost nothing, so only live victims are counted.
Nodes equal on every criterion are all returned; the scheduler then picks among them with its
own rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, ClassVar

from policy import criteria
from policy.criteria import (
    BROKEN_GANGS,
    BURSTABLE,
    BY_NAME,
    DELETION_COST,
    FOLLOWS,
    GANG_WORK,
    CANONICAL,
    GUARANTEED,
    HOMELESS,
    JOBS_FAILED,
    MANAGERS,
    MOVABLE,
    OPTED_OUT,
    PDB_VIOLATIONS,
    PENDING_ROOM,
    PRIORITY_SUM,
    RETRIES_BURNED,
    START,
    STRICT_BUDGETS,
    TOP_PRIORITY,
    VICTIMS,
    WORK_LOST,
    Criterion,
    Facts,
    Kind,
    Reach,
    Unit,
)
from policy.criteria.priority_sum import SHIFT
from policy.model import Pod

# The criteria by name, with the rest of the ranking's vocabulary.
__all__ = [
    "BROKEN_GANGS", "BURSTABLE", "BY_NAME", "CANONICAL", "DEFAULT", "DELETION_COST", "GANG_WORK", "GUARANTEED", "HOMELESS", "JOBS_FAILED", "MANAGERS",
    "MOVABLE", "OPTED_OUT", "PDB_VIOLATIONS", "PENDING_ROOM", "PRIORITY_SUM", "RETRIES_BURNED", "SHIFT", "START", "STRICT_BUDGETS", "TOP_PRIORITY", "VICTIMS", "WORK_LOST", "Cost",
    "Criterion", "Facts", "FULL", "Kind", "Layout", "Order", "Reach", "Unit", "best",
]

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


# How Order.cost measures CANONICAL: where each per-pod criterion sits, how its column of the
# live victims' values combines and its value for none; where each set-wide one sits.
_POD_AT = tuple(CANONICAL.index(c) for c in criteria.PER_POD)
_POD_OPS = tuple(sum if c.kind is Kind.SUM else max for c in criteria.PER_POD)
_NO_POD = dict(zip(_POD_AT, (c.least for c in criteria.PER_POD)))
_SET_AT = tuple((CANONICAL.index(c), c.of_set, c) for c in CANONICAL if c.kind in (Kind.SET, Kind.TIE))
# What Order.floor reads of a Reach: its fields, then each computed floor, then the leasts.
_FIELDS = Reach._fields
_COMPUTED = tuple(c.floor for c in CANONICAL if callable(c.floor))
_LEASTS = tuple(c.least for c in CANONICAL if c.floor is None)


def _floor_index(c: Criterion) -> int:
    if isinstance(c.floor, str):
        return _FIELDS.index(c.floor)
    if callable(c.floor):
        return len(_FIELDS) + _COMPUTED.index(c.floor)
    return len(_FIELDS) + len(_COMPUTED) + [x for x in CANONICAL if x.floor is None].index(c)


class Order(Layout):
    """A ranking order: CANONICAL with MOVABLE in the order given (all of them, once each), each
    followed by what FOLLOWS it.
    ``strict``: the policy's strictBudgets is on, and its violations come first of all;
    otherwise the order leaves that criterion out (its value is 0 for every set)."""

    def __init__(self, movable: Sequence[Criterion] = MOVABLE, *, strict: bool = False) -> None:
        if sorted(c.name for c in movable) != sorted(c.name for c in MOVABLE):
            raise ValueError(
                "name each of " + ", ".join(repr(c.name) for c in MOVABLE) + " once"
                + (f" (given: {', '.join(repr(c.name) for c in movable)})" if movable else "")
            )
        placed = (x for c in movable for x in (c, *((FOLLOWS[c],) if c in FOLLOWS else ())))
        super().__init__((*((STRICT_BUDGETS,) if strict else ()), OPTED_OUT, *placed, START))
        self.strict = strict
        # Where each criterion of this order sits in CANONICAL: a key is the canonical tuple
        # read in this order (None: the canonical order itself, no copy needed; _skip: the
        # canonical order less its first criterion, a slice).
        index = tuple(CANONICAL.index(c) for c in self.criteria)
        self._index = None if index == tuple(range(len(CANONICAL))) else index
        self._skip = index == tuple(range(1, len(CANONICAL)))
        self._floors = itemgetter(*(_floor_index(c) for c in self.criteria))

    def with_strict(self) -> "Order":
        """This order with the strict budget violations first (itself if they are already)."""
        return self if self.strict else Order([c for c in self.criteria[1:-1] if c in MOVABLE], strict=True)

    @classmethod
    def named(cls, names: Iterable[str]) -> "Order":
        """These criteria (by Criterion.name) first, in the order given, then the others in the
        default order; ValueError ``[index]: why`` for an unknown or repeated one."""
        chosen: list[Criterion] = []
        for i, name in enumerate(names):
            if name not in BY_NAME or BY_NAME[name] not in MOVABLE:
                choices = ", ".join(c.name for c in MOVABLE)
                raise ValueError(f"[{i}]: {name!r} is not a criterion a policy may order; one of: {choices}")
            if BY_NAME[name] in chosen:
                raise ValueError(f"[{i}]: {name!r} is named twice")
            chosen.append(BY_NAME[name])
        return cls([*chosen, *(c for c in MOVABLE if c not in chosen)])

    def arrange(self, canonical: tuple) -> tuple:
        """A tuple of CANONICAL's criteria in this order."""
        index = self._index
        if index is None:
            return canonical
        return canonical[1:] if self._skip else tuple(canonical[i] for i in index)

    def arrange_prefix(self, canonical: tuple) -> tuple:
        """``arrange`` for every criterion but the last (START), of a tuple without it."""
        index = self._index
        if index is None:
            return canonical
        return canonical[1:] if self._skip else tuple(canonical[i] for i in index[:-1])

    def cost(self, victims: Sequence[Pod], facts: Facts) -> "Cost":
        """The key of evicting ``victims`` (policy.criteria.Facts: what the criteria know of the
        request), with what the set-wide criteria counted (``Cost.detail``)."""
        live = [p for p in victims if not p.terminating]
        canonical: list = [None] * len(CANONICAL)
        if live:
            values = criteria.values
            for at, op, column in zip(_POD_AT, _POD_OPS, zip(*[values(p, facts) for p in live])):
                canonical[at] = op(column)
        else:
            for at, least in _NO_POD.items():
                canonical[at] = least
        details: dict[Criterion, Any] = {}
        for at, of_set, c in _SET_AT:
            canonical[at], details[c] = of_set(victims, live, facts)
        return Cost(self.arrange(tuple(canonical)), self, details)

    def floor(self, reach: Reach) -> tuple:
        """A lower bound on ``cost(...).key`` for a node, from bounds on its victims (policy.bounds).
        It MUST stay a lower bound of the key criterion by criterion, except the start
        criterion, which needs to hold only where every criterion before it is equal (policy.bounds
        bounds it where the key's priority of the most important victim equals ``reach.top``):
        policy.preempt skips the exact victim search on nodes whose floor is above the best cost
        found. A criterion without a floor is bounded by its least value."""
        return self._floors((*reach, *(f(reach) for f in _COMPUTED), *_LEASTS))


DEFAULT = Order()
# Every criterion in CANONICAL's order: the order policy.bounds keeps its floors in.
FULL = Order(strict=True)


@dataclass(frozen=True, slots=True)
class Cost:
    """One candidate's rank key; smaller is better, compared criterion by criterion."""

    key: tuple
    order: Layout | None = field(default=None, compare=False)  # None: the class's (DEFAULT)
    details: dict = field(default_factory=dict, compare=False)  # criterion -> what it counted (Kind.SET)
    default_layout: ClassVar[Layout] = DEFAULT
    unknown_start: ClassVar[str] = "unknown"

    @property
    def layout(self) -> Layout:
        return self.order or self.default_layout

    def value(self, criterion: Criterion) -> object:
        return self.key[self.layout.position(criterion)]

    def detail(self, criterion: Criterion) -> Any:
        """What a set-wide criterion counted (PDB violations: policy.pdb.Violations, ...)."""
        return self.details[criterion]

    def versus(self, winner: "Cost") -> str:
        """Why ``winner`` ranks before this cost: the first criterion on which they differ."""
        step = self._first_difference(winner)
        return f"{self.layout.criteria[step].name} {self._show(step)} here vs {winner._show(step)}"

    def deciding(self, other: "Cost") -> Criterion | None:
        """The first criterion, in the order both costs share, on which ``other`` differs from
        this one; None where they are equal on every criterion."""
        step = self._first_difference(other)
        return None if step is None else self.layout.criteria[step]

    def decided_by(self, other: "Cost", here: str = "", there: str = "") -> str:
        """What sets this cost and ``other`` apart, in words (explain's differences, the decision
        log, Events): ``decided by <criterion>: <this value><here> against <other's><there>`` on
        the first criterion where they differ, each value as its criterion shows it; ``equal on
        every criterion`` where none does."""
        criterion = self.deciding(other)
        if criterion is None:
            return "equal on every criterion"
        return f"decided by {criterion.name}: {self.show(criterion)}{here} against {other.show(criterion)}{there}"

    def show(self, criterion: Criterion) -> str:
        """This cost's value of ``criterion``, as the criterion shows it."""
        return self._show(self.layout.position(criterion))

    def _first_difference(self, other: "Cost") -> int | None:
        if self.layout is not other.layout and self.layout != other.layout:
            raise ValueError(f"costs in different orders: {self.layout!r} and {other.layout!r}")
        return next((i for i, (a, b) in enumerate(zip(self.key, other.key)) if a != b), None)

    def _show(self, step: int) -> str:
        criterion = self.layout.criteria[step]
        value = self.key[step]
        if criterion.unit is Unit.TIME and value == -math.inf:
            return self.unknown_start
        return criterion.show(value, self.value)

    def at_least(self, step: int) -> str:
        """This key, a floor (policy.bounds), in words on one criterion that stay true whatever
        the node's victims."""
        criterion = self.layout.criteria[step]
        if criterion.at_least is not None:
            return criterion.at_least(self.key[step], self.value)
        return f"at least {self._show(step)}"

    def best(self, step: int) -> str:
        """This key, a solved node's, on one criterion, where a floor is set beside it."""
        criterion = self.layout.criteria[step]
        if criterion.best is not None:
            return criterion.best(self.key[step], self.value)
        return self._show(step)

    def describe(self) -> str:
        parts = (c.brief(self.value(c), self.value) for c in criteria.SUMMARY)
        return ", ".join(p for p in parts if p)


def best(costs: dict[str, Cost]) -> tuple[str, ...]:
    """The node names with the lowest cost (all exact ties), sorted by name."""
    if not costs:
        return ()
    lowest = min(c.key for c in costs.values())
    return tuple(sorted(name for name, c in costs.items() if c.key == lowest))

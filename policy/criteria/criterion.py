"""What a ranking criterion is: what it measures, how a victim set combines it, its lower bound
for the search, and its words.

A criterion is measured in one of three ways (``Kind``):

- ``SUM`` or ``MAX``: each live victim has a value of its own (``of_pod``), computed once per
  pod and request (``Facts.values``), and a set's value is their sum or their largest. The
  exact search (policy.exact) and the cost (policy.ranking) then only add and compare numbers.
- ``SET``: the value belongs to the set as a whole (``of_set``: PDB violations, broken gangs),
  with what was counted kept as the cost's detail for reasons and answers. ``running`` counts
  it as the exact search adds victims; a criterion without one is bounded there by ``least``.
- ``TIE``: a tie-breaker read from the whole set once every criterion before it is known (the
  start of the most important victims); the search never bounds it.

Every value is "smaller is better", so that a cost is a plain tuple compared in order; a set's
value never drops when a victim is added (the search's bounds rest on it), and ``least`` is the
value of no victims at all, a lower bound of every set's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, NamedTuple

from policy.apps import AppOf
from policy.gangs import GangOf
from policy.jobs import Stake, StakeOf
from policy.model import Pod
from policy.pdb import BudgetsOf
from policy.resources import Vector


class Kind(Enum):
    SUM = "sum"
    MAX = "max"
    SET = "set"
    TIE = "tie"


class Unit(Enum):
    """What a value counts, for the JSON explain writes (the extender formats times)."""

    NUMBER = "number"  # a count or a priority; -inf: no live victim
    TIME = "time"  # seconds since the epoch, negated (later is better); -inf: unknown


@dataclass(slots=True)
class Facts:
    """What the criteria know of one request beyond a victim set: built once per node attempt
    (policy.victims) and read by every criterion. Its cache of per-pod values is its own."""

    budgets_of: BudgetsOf
    gang_of: GangOf | None = None
    opted_out: frozenset[str] = frozenset()  # UIDs whose eviction is a last resort (policy.tenancy)
    no_home: frozenset[str] = frozenset()  # UIDs of candidates with no home off the node (policy.homes)
    app_of: AppOf | None = None  # applications with a manager (policy.apps)
    strict_of: BudgetsOf | None = None  # the strict budgets covering a pod (policy.guards); None: no such rule
    stake_of: StakeOf | None = None  # what evicting a pod costs its Job (policy.jobs)
    now: float | None = None  # the request's time, seconds since the epoch (policy.criteria.work_lost)
    allocatable: Vector | None = None  # the node's, where the victims are (policy.criteria.work_lost)
    pending_room: Any = None  # the node's room for the pending pods (policy.criteria.pending_room.Room), or None
    values: dict[str, tuple] = field(default_factory=dict)  # UID -> its per-pod values (policy.criteria.values)
    memo: dict = field(default_factory=dict)  # what a criterion keeps per pod for the request, by its own keys


class Reach(NamedTuple):
    """Lower bounds on one node's victims, whatever set is chosen (policy.bounds)."""

    violations: int
    top: float  # the most important victim's priority
    guaranteed: int
    burstable: int
    victims: int
    lowest: float  # the lowest priority a victim can have
    start: float  # the start criterion, where the most important victims have priority ``top``
    homeless: int = 0
    deletion_cost: float = -math.inf  # the lowest pod-deletion-cost a victim can have
    grace: float = 0  # the shortest grace period a live victim can have (policy.criteria.time_to_room)
    work_lost: int = 0  # the least work the victims can lose (policy.criteria.work_lost), set per request


class Running:
    """A SET criterion counted as the exact search (policy.exact) evicts classes of alike pods.
    ``state`` is whatever it needs so far (hashable)."""

    def start(self, live: Sequence[Pod], facts: Facts) -> Any:
        """The state before any victim, for the candidates ``live``."""
        raise NotImplementedError

    def alike(self, state: Any, pod: Pod, facts: Facts) -> Any:
        """What two pods must share to be interchangeable for this criterion (hashable)."""
        raise NotImplementedError

    def of_class(self, state: Any, pod: Pod, facts: Facts) -> Any:
        """What ``add`` needs of a class, read from its first pod once."""
        raise NotImplementedError

    def add(self, state: Any, of_class: Any, pods: Sequence[Pod], before: Sequence[Pod], facts: Facts) -> tuple[Any, int]:
        """The state and the value added once ``pods`` (of one class) go after ``before``."""
        raise NotImplementedError


def _plain(value: float, key: Callable[["Criterion"], float]) -> str:
    return "none" if value == -math.inf else str(value)


@dataclass(frozen=True, slots=True, eq=False)
class Criterion:
    """One criterion of the ranking; compared by identity (the registry holds one of each)."""

    name: str  # as reasons, explain and the policy file say it
    field: str  # its name in JSON (reprieve explain --output json)
    kind: Kind
    least: float = 0  # the value of no victims: a lower bound of every set's
    unit: Unit = Unit.NUMBER
    of_pod: Callable[[Pod, Facts], float] | None = None  # SUM, MAX
    # SET, TIE: (victims, the live ones, facts) -> (value, what it counted: Cost.detail)
    of_set: Callable[[Sequence[Pod], Sequence[Pod], Facts], tuple[float, Any]] | None = None
    running: Running | None = None  # SET: counted incrementally by the exact search
    # Its lower bound from a node's Reach: a field's name, or a function of it; None: ``least``
    floor: str | Callable[[Reach], float] | None = None
    # A value in words: (value, the cost's value of another criterion) -> text
    show: Callable[[float, Callable[["Criterion"], float]], str] = _plain
    # The same, plain, for JSON (None where there is none)
    plain: Callable[[float, Callable[["Criterion"], float]], Any] | None = None
    # A floor in words that stay true whatever the node's victims ("at least ..." otherwise)
    at_least: Callable[[float, Callable[["Criterion"], float]], str] | None = None
    # A solved node's value where a floor is set beside it (``show`` otherwise)
    best: Callable[[float, Callable[["Criterion"], float]], str] | None = None
    # Its part of a cost's one-line summary (policy.ranking.Cost.describe), or None
    brief: Callable[[float, Callable[["Criterion"], float]], str | None] | None = None
    # Why ``pod`` stays rather than ``victim`` by this criterion, in an Event, or None (policy: Stay)
    stays: Callable[[Pod, Pod, "Stay"], str | None] | None = None

    def __repr__(self) -> str:
        return f"Criterion({self.name!r})"


@dataclass(frozen=True, slots=True)
class Stay:
    """What an Event knows of the pods around a victim (extender/events/notes captures it)."""

    budgets: Mapping[str, tuple[str, ...]]  # UID -> PodDisruptionBudgets covering it
    in_gangs: Mapping[str, str]  # UID -> its gang, described, where the victims kept it whole
    no_home: Mapping[str, str]  # UID -> why it has no home off the node
    manages: Mapping[str, str] = field(default_factory=dict)  # UID -> the running pods it manages, described
    stakes: Mapping[str, Stake] = field(default_factory=dict)  # UID -> what evicting it costs its Job
    lost: Mapping[str, int] = field(default_factory=dict)  # UID -> its work lost if evicted (policy.criteria.work_lost)

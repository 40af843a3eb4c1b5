"""Cheap lower bounds on what preemption on a node can cost, so that preempt solves exactly
only the nodes that can still win (policy.preempt).

Whatever victims policy.victims picks on a node, the preemptor must fit once they are gone:
the live victims free at least ``need`` = what the live lower-priority pods, the pods that
stay (priority >= the preemptor's), the room held for nominated pods and the preemptor
itself ask beyond the node's allocatable. Terminating pods are counted as gone, and pods the
rules protect as possible victims: both only make ``need`` smaller, so the bounds stay valid.
From ``need`` and a per-node summary of the lower-priority pods (``Below``, computed once per
view and priority level) follow, each a floor for one criterion of policy.ranking's key:

* PDB violations: the pods evicted without a violation free at most ``spared`` (the pods no
  budget covers, plus for each budget its ``disruptionsAllowed`` largest members); each
  violating victim adds at most the next largest covered pod;
* the most important victim's priority: the lowest level whose pods (and those below) can
  free ``need`` together;
* the number of victims: the fewest pods, largest first, that free ``need``.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from policy import ranking, resources
from policy.model import Pod
from policy.pdb import _spent_on
from policy.view import BUDGETS, ClusterView, NodeInfo

# No victim set makes room: the node would be dropped (compares above every key).
NO_ROOM: tuple = (math.inf,)


@dataclass(frozen=True, slots=True)
class Below:
    """The live pods of a node below one priority, summarised for lower bounds."""

    live: dict[str, int]  # their requests together
    # Ascending priority levels, each with what the pods at or below it request together.
    levels: tuple[tuple[int, dict[str, int]], ...]
    spared: dict[str, int]  # the most they free without violating a budget, per resource
    covered: dict[str, tuple[int, ...]]  # running sums of budget-covered pods' requests, largest first
    largest: dict[str, tuple[int, ...]]  # running sums of all their requests, largest first


def below(view: ClusterView, info: NodeInfo, priority: int) -> Below:
    """``Below`` for the pods on ``info`` (a node of ``view``) with priority < ``priority``,
    computed once per view (ClusterView.summary; it reads the budgets)."""
    table = view.summary((BUDGETS, "below", priority), lambda node, _: _summarise(view, node, priority))
    return table(info.name)


def _summarise(view: ClusterView, info: NodeInfo, priority: int) -> Below:
    live = sorted((p for p in info.pods if p.priority < priority and not p.terminating), key=lambda p: p.priority)
    budgets_of = view.budgets_covering
    total: dict[str, int] = {}
    levels: list[tuple[int, dict[str, int]]] = []
    sizes: dict[str, list[int]] = {}
    covered: dict[str, list[int]] = {}
    spared: dict[str, int] = {}
    members: dict[str, tuple[int, list[Pod]]] = {}
    for i, pod in enumerate(live):
        budgets = _spent_on(pod, budgets_of)
        for r, v in pod.requests.items():
            total[r] = total.get(r, 0) + v
            sizes.setdefault(r, []).append(v)
            if budgets:
                covered.setdefault(r, []).append(v)
            else:
                spared[r] = spared.get(r, 0) + v
        for b in budgets:
            members.setdefault(b.key, (b.disruptions_allowed, []))[1].append(pod)
        if i + 1 == len(live) or live[i + 1].priority != pod.priority:
            levels.append((pod.priority, dict(total)))
    for allowed, pods in members.values():
        if allowed <= 0:
            continue
        for r in {r for p in pods for r in p.requests}:
            spared[r] = spared.get(r, 0) + sum(sorted((p.requests.get(r, 0) for p in pods), reverse=True)[:allowed])
    return Below(
        live=total,
        levels=tuple(levels),
        spared=spared,
        covered={r: _running(vs) for r, vs in covered.items()},
        largest={r: _running(vs) for r, vs in sizes.items()},
    )


def _running(values: list[int]) -> tuple[int, ...]:
    """0, then the running sums of ``values`` largest first."""
    sums = [0]
    for v in sorted(values, reverse=True):
        sums.append(sums[-1] + v)
    return tuple(sums)


class Floors:
    """``floor`` for many nodes of one view and one preemptor: what depends only on the
    preemptor (its summary table, the resources it needs) is looked up once per request."""

    def __init__(self, view: ClusterView, preemptor: Pod) -> None:
        priority = preemptor.priority
        self._below = view.summary((BUDGETS, "below", priority), lambda node, _: _summarise(view, node, priority))
        self._priority = priority
        self._asked = tuple((r, preemptor.requests[r]) for r in resources.checked_resources(preemptor.requests))

    def __call__(self, info: NodeInfo, reservations: Sequence[Pod]) -> tuple:
        """A lower bound on policy.ranking's key for any victims select_victims may pick on
        ``info`` (its screen, ``nameable`` and ``at_least`` only make them cost more), or
        NO_ROOM when even every lower-priority pod gone leaves too little room."""
        summary: Below = self._below(info.name)
        alloc = info.node.allocatable
        kept = info.requested_at_or_above(self._priority)
        held = resources.add(*(p.requests for p in reservations)) if reservations else resources.EMPTY
        need: dict[str, int] = {}
        live_sums = summary.live
        for r, asked in self._asked:
            live = live_sums.get(r, 0)
            short = live + kept.get(r, 0) + held.get(r, 0) + asked - alloc.get(r, 0)
            if short > live:
                return NO_ROOM
            if short > 0:
                need[r] = short
        if not need:
            return ranking.floor(violations=0, top=-math.inf, victims=0, lowest=0)
        violations = victims = 0
        for r, amount in need.items():
            victims = max(victims, bisect.bisect_left(summary.largest[r], amount))
            rest = amount - summary.spared.get(r, 0)
            if rest > 0:
                violations = max(violations, bisect.bisect_left(summary.covered[r], rest))
        top = next(p for p, sums in summary.levels if all(sums.get(r, 0) >= v for r, v in need.items()))
        return ranking.floor(violations=violations, top=top, victims=victims, lowest=summary.levels[0][0])


def floor(view: ClusterView, info: NodeInfo, preemptor: Pod, reservations: Sequence[Pod]) -> tuple:
    """Floors(view, preemptor)(info, reservations), for one node."""
    return Floors(view, preemptor)(info, reservations)

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
* the number of victims: the fewest pods, largest first, that free ``need``;
* the Guaranteed (Burstable) victims: that many victims, less the pods of the other classes;
* the start of the most important victims, given that their priority is the bound's: at
  least ``m`` victims have it (the victim bound less the pods below it), so the earliest of
  them started no later than the ``m``-th latest start at that priority;
* the victims with no home (policy.homes): at most the candidates of a shape with a home have
  one, so the victim bound less those; whether a shape has a home depends on the other nodes,
  so it is looked up per view and request (``Floors``), never kept in a node's summary;
* the highest pod-deletion-cost among the victims: at least the lowest among the candidates
  (some victim must go);
* the longest time to room: at least the shortest grace period among the candidates (some
  live victim must go; terminating victims count nothing);
* the pending pods left without room (policy.criteria.pending_room), where the victims are the
  victims' bound (a set with more is above the floor on the number already): the pending pods
  that would not fit, each alone, in what the node has left once that many of the largest
  candidates and every terminating one are gone; per request, as the pending pods change;
* the work lost since the last checkpoint (policy.criteria.work_lost): the victims are at least
  the victims' bound, and each loses at least the smallest weight among the candidates times its
  age, so at least that weight times the bound's number of youngest ages; the ages depend on the
  request's ``now``, so it is computed per request (``Floors``) from what the summary keeps.

On identical nodes these make the bound equal to the cost, so that preempt solves one node
and proves the others no better (policy.preempt, ties going to the first name).
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

from policy import ranking, resources
from policy.criteria import Reach, pending_room, work_lost
from policy.homes import Homes, shape_of
from policy.model import Pod
from policy.pdb import spent_on
from policy.qos import QoS
from policy.view import BUDGETS, REQUEST, ClusterView, NodeInfo

# No victim set makes room: the node would be dropped (compares above every key).
NO_ROOM: tuple = (math.inf,)
_NOTHING = (0, 0)  # the room of a resource neither the node nor its pods name
# Room without any live victim: nothing to pay (and, where pods are terminating, perhaps no
# need to preempt at all: policy.preempt always solves such a node). In CANONICAL's order, like
# every floor a summary keeps; Floors returns them in the ranking's order.
FREE = ranking.FULL.floor(
    Reach(violations=0, top=-math.inf, guaranteed=0, burstable=0, victims=0, lowest=0, start=-math.inf)
)
# Where a canonical floor holds the victims' bound and the bound on victims with no home, which
# Floors lowers per request (_with_homeless).
_VICTIMS = ranking.FULL.position(ranking.VICTIMS)
_HOMELESS = ranking.FULL.position(ranking.HOMELESS)
_WORK = ranking.FULL.position(ranking.WORK_LOST)


class Level(NamedTuple):
    """One priority level of the live pods below the preemptor's."""

    priority: int
    sums: dict[str, int]  # what the pods at or below it request together
    under: int  # how many pods are below it
    starts: tuple[float, ...]  # its pods' start times, latest first (unknown: math.inf)


@dataclass(frozen=True, slots=True)
class Below:
    """The live pods of a node below one priority, summarised for lower bounds."""

    # Per resource: (their requests + those of the pods that stay - allocatable, i.e. how much
    # of it they hold beyond the node's free room; their requests together).
    room: dict[str, tuple[int, int]]
    levels: tuple[Level, ...]  # ascending priority
    level_sums: dict[str, tuple[int, ...]]  # per resource, the levels' sums (ascending, as levels are)
    not_guaranteed: int  # how many of them are not Guaranteed
    not_burstable: int  # how many are not Burstable
    spared: dict[str, int]  # the most they free without violating a budget, per resource
    covered: dict[str, tuple[int, ...]]  # running sums of budget-covered pods' requests, largest first
    largest: dict[str, tuple[int, ...]]  # running sums of all their requests, largest first
    shapes: tuple[tuple[Pod, int], ...] = ()  # one pod per shape (policy.homes.shape_of), and how many
    lowest_cost: int = 0  # the lowest pod-deletion-cost among them
    shortest_grace: int = 0  # the shortest grace period among them
    youngest: work_lost.Youngest = work_lost.Youngest()  # their weights and starts, for the work lost


def below(view: ClusterView, info: NodeInfo, priority: int) -> Below:
    """``Below`` for the pods on ``info`` (a node of ``view``) with priority < ``priority``,
    computed once per view (ClusterView.summary; it reads the budgets)."""
    return _below_table(view, priority)(info.name)


def _below_table(view: ClusterView, priority: int):
    """node name -> Below for ``priority``, kept with the view (its name holds the request's priority)."""
    return view.summary((BUDGETS, REQUEST, "below", priority), lambda node, _: _summarise(view, node, priority))


def _summarise(view: ClusterView, info: NodeInfo, priority: int) -> Below:
    live = sorted((p for p in info.pods if p.priority < priority and not p.terminating), key=lambda p: p.priority)
    budgets_of = view.budgets_covering
    total: dict[str, int] = {}
    levels: list[Level] = []
    first = 0  # index of the first pod at the current level
    sizes: dict[str, list[int]] = {}
    covered: dict[str, list[int]] = {}
    spared: dict[str, int] = {}
    members: dict[str, tuple[int, list[Pod]]] = {}
    shapes: dict[tuple, list] = {}
    for i, pod in enumerate(live):
        if pod.placement.owner_kind is not None:  # the others have no home anywhere
            seen = shapes.setdefault(shape_of(pod), [pod, 0])
            seen[1] += 1
        budgets = spent_on(pod, budgets_of)
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
            starts = sorted((math.inf if p.start_time is None else p.start_time for p in live[first : i + 1]), reverse=True)
            levels.append(Level(pod.priority, dict(total), first, tuple(starts)))
            first = i + 1
    for allowed, pods in members.values():
        if allowed <= 0:
            continue
        for r in {r for p in pods for r in p.requests}:
            spared[r] = spared.get(r, 0) + sum(sorted((p.requests.get(r, 0) for p in pods), reverse=True)[:allowed])
    kept = info.requested_at_or_above(priority)
    alloc = info.node.allocatable
    room = {r: (total.get(r, 0) + kept.get(r, 0) - alloc.get(r, 0), total.get(r, 0)) for r in {*total, *kept, *alloc}}
    return Below(
        room=room,
        levels=tuple(levels),
        level_sums={r: tuple(level.sums.get(r, 0) for level in levels) for r in total},
        not_guaranteed=sum(p.qos != QoS.GUARANTEED for p in live),
        not_burstable=sum(p.qos != QoS.BURSTABLE for p in live),
        spared=spared,
        covered={r: _running(vs) for r, vs in covered.items()},
        largest={r: _running(vs) for r, vs in sizes.items()},
        shapes=tuple((pod, count) for pod, count in shapes.values()),
        lowest_cost=min((p.deletion_cost for p in live), default=0),
        shortest_grace=min((p.grace for p in live), default=0),
        youngest=work_lost.Youngest.of(live, alloc),
    )


def _running(values: list[int]) -> tuple[int, ...]:
    """0, then the running sums of ``values`` largest first."""
    sums = [0]
    for v in sorted(values, reverse=True):
        sums.append(sums[-1] + v)
    return tuple(sums)


class Floors:
    """``floor`` for many nodes of one view and one preemptor: what depends only on the
    preemptor (its summary table, the resources it needs) is looked up once per request.
    Floors are in ``order`` (policy.ranking), FREE as ``free``."""

    def __init__(
        self, view: ClusterView, preemptor: Pod, order: ranking.Order = ranking.DEFAULT, homes: Homes | None = None,
        now: float | None = None, pending: pending_room.Queue | None = None,
    ) -> None:
        priority = preemptor.priority
        self._preemptor = preemptor
        # The pending pods' queue (policy.criteria.pending_room), where the order ranks it and it has any.
        self._pending = pending if pending is not None and pending.has_pods and ranking.PENDING_ROOM in order.criteria else None
        self._pending_at = order.position(ranking.PENDING_ROOM) if self._pending is not None else None
        self._victims_at = order.position(ranking.VICTIMS)
        self._pending_reads = pending_room.reads(self._pending) if self._pending is not None else ()
        self._now = now
        self._order = order
        self._homes = homes
        self.free = order.arrange(FREE)
        self._below = _below_table(view, priority)
        self._view = view
        self._priority = priority
        self._asked = tuple((r, preemptor.requests[r]) for r in resources.checked_resources(preemptor.requests))
        # The floor of a node of the view with no room held there depends on nothing else but
        # the order, where its victims could go and the time: kept with the view, for the next
        # preemptor asking the same (a burst of replicas), whole where no pod of the node has a
        # shape with an owner (else _with_homeless looks their homes up per request) but for
        # the work lost, bounded at the request's ``now`` in its slot (``_work_at``).
        self._plain = view.summary(
            (BUDGETS, REQUEST, "floor", priority, self._asked, tuple(c.name for c in order.criteria), homes is not None),
            lambda node, _: self._kept(node.name),
        )
        self._work_at = order.position(ranking.WORK_LOST) if now is not None and ranking.WORK_LOST in order.criteria else None

    def _kept(self, name: str) -> tuple[tuple, bool]:
        """(floor, whole) of node ``name`` with no room held: whole where no home can change
        it, as (the floor in this order, its bound on the victims: the work lost's, per
        request); else as _floor found it (NO_ROOM and FREE: whole, alone)."""
        below = self._below(name)
        found = self._floor(below, ())
        if found is NO_ROOM or found is FREE:
            return found, True  # FREE: each request's own ``free`` (policy.preempt tells it by identity)
        if self._homes is None:
            return (self._order.arrange(found), found[_VICTIMS]), True
        if not below.shapes:
            return (self._order.arrange(self._with_homeless(found, name, below)), found[_VICTIMS]), True
        return found, False

    def __call__(
        self, info: NodeInfo, reservations: Sequence[Pod], *, kept_with_view: bool = True, pending: bool = True
    ) -> tuple:
        """A lower bound on policy.ranking's key for any victims select_victims may pick on
        ``info`` (its screen, ``unnameable`` and ``at_least`` only make them cost more), or
        NO_ROOM when even every lower-priority pod gone leaves too little room. ``info`` is a
        node of the view, or (``kept_with_view=False``) one built for this request, whose
        summary is then computed afresh. ``pending=False``: without the bound on the pending
        pods left without room (its least, 0, stands), which ``with_pending`` adds later for a
        node of the view: policy.preempt reads it only for the nodes that may still win."""
        summary = _summarise(self._view, info, self._priority) if not kept_with_view else None
        found = self._without_pending(info, reservations, summary)
        if not pending:
            return found
        return self.with_pending(found, info, summary)

    def with_pending(self, found: tuple, info: NodeInfo, summary: Below | None = None) -> tuple:
        """``found``, a floor of ``info`` (a node of the view unless ``summary`` is its own), with
        its bound on the pending pods left without room."""
        if self._pending_at is None or found is NO_ROOM or found is self.free:
            return found
        return self._with_pending(found, info, summary or self._below(info.name))

    def _with_pending(self, found: tuple, info: NodeInfo, summary: Below) -> tuple:
        """``found`` (arranged) with its bound on the pending pods left without room, for sets
        of as many victims as its bound (policy.criteria.pending_room): never kept."""
        needs = pending_room.admitted(self._pending, info.node)
        if not needs:
            return found
        victims = found[self._victims_at]
        free = {}
        room, largest, asked = summary.room, summary.largest, self._preemptor.requests
        for r in self._pending_reads:  # only what the pending pods need
            over = room.get(r, _NOTHING)[0]
            sums = largest.get(r)
            free[r] = (sums[min(victims, len(sums) - 1)] if sums else 0) - over - asked.get(r, 0)
        least = pending_room.without_room(needs, free)
        at = self._pending_at
        return (*found[:at], least, *found[at + 1 :]) if least else found

    def _without_pending(self, info: NodeInfo, reservations: Sequence[Pod], summary: Below | None) -> tuple:
        """``__call__`` but for the pending pods' bound."""
        if summary is not None:
            found = self._floor(summary, reservations)
        elif not reservations:
            found, whole = self._plain(info.name)
            if whole:
                if found is FREE or found is NO_ROOM:
                    return self.free if found is FREE else found
                arranged, victims = found
                if self._work_at is None:
                    return arranged
                return self._with_work(arranged, victims, self._below(info.name), self._work_at)
        else:
            found = self._floor(self._below(info.name), reservations)
        if found is NO_ROOM:
            return found
        if found is FREE:
            return self.free
        summary = summary or self._below(info.name)
        if self._homes is not None:
            found = self._with_homeless(found, info.name, summary)
        if self._now is not None:
            found = self._with_work(found, found[_VICTIMS], summary, _WORK)
        return self._order.arrange(found)

    def _with_work(self, found: tuple, victims: int, summary: Below, at: int) -> tuple:
        """``found`` with its bound on the work lost of at least ``victims`` at the request's
        ``now`` in its slot ``at`` (FULL's, or the order's where ``found`` is arranged): never kept."""
        least = summary.youngest.floor(victims, self._now)
        return (*found[:at], least, *found[at + 1 :]) if least else found

    def _with_homeless(self, found: tuple, name: str, summary: Below) -> tuple:
        """``found`` with its bound on victims with no home: the victims less the candidates
        whose shape has a home off this node (looked up in this view: never kept)."""
        home = self._homes.home
        homed = sum(count for pod, count in summary.shapes if home(pod, excluding=name) is not None)
        least = found[_VICTIMS] - homed
        if least <= 0:
            return found
        return (*found[:_HOMELESS], least, *found[_HOMELESS + 1 :])

    def _floor(self, summary: Below, reservations: Sequence[Pod]) -> tuple:
        held = resources.add(*(p.requests for p in reservations)) if reservations else resources.EMPTY
        need: dict[str, int] = {}
        room = summary.room
        for r, asked in self._asked:
            over, live = room.get(r, _NOTHING)
            short = over + held.get(r, 0) + asked
            if short > live:
                return NO_ROOM
            if short > 0:
                need[r] = short
        if not need:
            return FREE
        violations = victims = level = 0
        bisect_left = bisect.bisect_left
        for r, amount in need.items():
            # A resource needed is one the pods below request (short <= live), so it has sums.
            victims = max(victims, bisect_left(summary.largest[r], amount))
            rest = amount - summary.spared.get(r, 0)
            if rest > 0:  # then budget-covered pods request it: covered[r] exists
                violations = max(violations, bisect_left(summary.covered[r], rest))
            level = max(level, bisect_left(summary.level_sums[r], amount))
        top = summary.levels[level]
        at_top = max(1, victims - top.under)  # victims at the top priority, if it is the bound's
        return ranking.FULL.floor(Reach(
            violations=violations,
            top=top.priority,
            guaranteed=max(0, victims - summary.not_guaranteed),
            burstable=max(0, victims - summary.not_burstable),
            victims=victims,
            lowest=summary.levels[0].priority,
            start=-top.starts[min(at_top, len(top.starts)) - 1],
            deletion_cost=summary.lowest_cost,
            grace=summary.shortest_grace,
        ))


def floor(
    view: ClusterView, info: NodeInfo, preemptor: Pod, reservations: Sequence[Pod], order: ranking.Order = ranking.DEFAULT,
    homes: Homes | None = None, now: float | None = None, pending: pending_room.Queue | None = None,
) -> tuple:
    """Floors(view, preemptor, order, homes, now, pending)(info, reservations), for one node."""
    return Floors(view, preemptor, order, homes, now, pending)(info, reservations)

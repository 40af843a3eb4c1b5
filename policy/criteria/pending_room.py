"""Fewest pending pods left without room: where victim sets tie on everything before it, the one
whose node, once its victims are gone and the preemptor placed, still has room for more of the
pods waiting to be scheduled (issue 28: what the room left is good for).

The pods waiting are the view's pods the scheduler queues (no node, not terminating, not
scheduling-gated: policy.scheduling_queue) but the preemptor and those nominated to a node (the
scheduler holds their room already), that the node's filters admit (policy.placement: cordon, taints, node selector and
affinity); each is counted by its requests alone, against the room the node has left: its
allocatable, less what its pods request, plus what the victims free, less the preemptor's
requests (room held by nominated pods is not subtracted). A set's value is how many of them would
not fit there, each alone; with no pending pod in the view every set's value is 0 and the
criterion decides nothing.

The preempt verb decides for one pod; the view holds the rest of the queue (the live watch sees
every pending pod; policy.replay puts the queue's pods in its view, as a dump holds them).

Not monotone in the victims: a victim more frees room, so the value may drop. Placed after the
number of victims it never makes reprieve evict a pod more for room (a set with a victim more
is worse on the number before this criterion is read); the exact search reads its least, 0,
which no set is below. Its node bound (policy.bounds) holds for the sets with the fewest victims
the node can need, the only ones that tie with the bound up to this criterion: they free at most
the largest candidates' requests, that many of them, and the terminating pods."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policy.criteria.criterion import Criterion, Facts, Kind
from policy.model import Node, Pod
from policy.placement import Placement
from policy.resources import Vector, checked_resources
from policy.scheduling_queue import left_out

# A pending pod's shape: its requests (sorted items) and its node constraints.
Shape = tuple[tuple[tuple[str, int], ...], Placement]


@dataclass(frozen=True, slots=True)
class Queue:
    """The pending pods of one request's view, grouped by shape, with their counts."""

    shapes: tuple[tuple[Shape, int], ...]


@dataclass(frozen=True, slots=True)
class Room:
    """One node's room for the pending pods, before any victim: ``base`` is its allocatable less
    its pods' requests and the preemptor's (may be negative); ``needs`` the requests of the
    pending pods its filters admit, each with the resources the scheduler checks, and count."""

    base: Vector
    needs: tuple[tuple[tuple[tuple[str, int], ...], int], ...]


def queue(pods: Iterable[Pod], preemptor: Pod) -> Queue:
    """The pods among ``pods`` the scheduler queues (policy.scheduling_queue: no node, not
    terminating, not gated) and nominated nowhere, but ``preemptor``."""
    counts: Counter = Counter()
    for pod in pods:
        if not left_out(pod) and pod.nominated_node_name is None and pod.uid != preemptor.uid:
            counts[(tuple(sorted(pod.requests.items())), pod.placement)] += 1
    return Queue(tuple(counts.items()))


def room(pending: Queue | None, node: Node, requested: Vector, preemptor: Pod) -> Room | None:
    """``node``'s Room for ``pending`` (None where nothing is pending)."""
    if pending is None or not pending.shapes:
        return None
    base = dict(node.allocatable)
    for name, value in requested.items():
        base[name] = base.get(name, 0) - value
    for name, value in preemptor.requests.items():
        base[name] = base.get(name, 0) - value
    needs: Counter = Counter()
    for (items, placement), count in pending.shapes:
        if not placement.refusal(node):
            wanted = dict(items)
            needs[tuple((name, wanted[name]) for name in checked_resources(wanted))] += count
    return Room(base, tuple(needs.items()))


def unfit(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, int]:
    """How many pending pods would not fit in the room the node has left with ``victims`` gone."""
    here = facts.pending_room
    if here is None or not here.needs:
        return 0, 0
    free = dict(here.base)
    for victim in victims:
        for name, value in victim.requests.items():
            free[name] = free.get(name, 0) + value
    left = without_room(here, free)
    return left, left


def without_room(here: Room, free: Vector) -> int:
    """How many of ``here``'s pending pods would not fit, each alone, in ``free``."""
    return sum(count for need, count in here.needs if any(value > free.get(name, 0) for name, value in need))


def _show(value: float, _) -> str:
    return f"{int(value)} pending pod(s) without room"


CRITERION = Criterion(
    name="pending pods left without room", field="pending_without_room", kind=Kind.SET, of_set=unfit, show=_show,
)

"""Room held against the preemptor on a node: nominated pods and reprieve's answers in flight
(their victims leaving, their preemptors holding room), as the scheduler's proposal shows it
holds them, and what the scheduler's victims free beside them."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from typing import NamedTuple

from policy import resources
from policy.model import InFlight, Pod
from policy.resources import Vector
from policy.view import ClusterView, NodeInfo, known_to_scheduler


class Here(NamedTuple):
    """A candidate node as reprieve's records leave it (records_here)."""

    node: NodeInfo  # without the victims of answers in flight held here (unless terminating)
    reservations: tuple[Pod, ...]  # nominated pods and preemptors of answers in flight holding room
    promised: set[str]  # UIDs of those answers' victims
    set_aside: tuple[Pod, ...]  # holders the asking scheduler's proposal shows it has moved past


def records_here(
    view: ClusterView, node: NodeInfo, preemptor: Pod, in_flight: Sequence[InFlight], proposed: Sequence[Pod]
) -> Here:
    """The node once the records that hold room against the preemptor take effect: nominations
    (view.reservations) and reprieve's answers in flight (as_it_will_be: their victims gone,
    their preemptors holding room).

    The scheduler holds room for the pods it knows (its own nominations, and so the preemptors
    of the answers it took from reprieve: policy.view.known_to_scheduler), from its nominator,
    which is never behind reprieve's view, and its victims make room for the preemptor next to
    them. Where its victims make room here only once some of those holders are left out, the
    scheduler has moved past them (the nomination cleared, the pod bound or deleted, the answer
    not taken): reprieve's record is older, and their room is set aside, an answer's victims with
    it (they are not leaving for it). Holders the scheduler cannot know (another scheduler's)
    always hold, the victims of their answers staying promised. (The victims then free at least
    as much as the scheduler's: policy.preempt.candidate.)"""
    holders = view.reservations(node.name, pod=preemptor)
    flights = _outranking(in_flight, node.name, preemptor)
    later, held = as_it_will_be(view, node, holders, preemptor, flights)
    promised = {v.uid for f in flights for v in f.victims}
    if not any(known_to_scheduler(h, preemptor) for h in held) or _makes_room(later, preemptor, held, proposed):
        return Here(later, held, promised, ())
    # Left out: the holders the scheduler knows, and with an answer's preemptor its victims,
    # which the proposal shows the scheduler has not taken (it proposes them live, or needs
    # them back to make room).
    kept = [f for f in flights if not known_to_scheduler(f.preemptor, preemptor)]
    alone, others = as_it_will_be(
        view, node, tuple(h for h in holders if not known_to_scheduler(h, preemptor)), preemptor, kept
    )
    if not _makes_room(alone, preemptor, others, proposed):
        return Here(later, held, promised, ())  # something else differs too: see candidate._no_room_here
    return Here(alone, others, {v.uid for f in kept for v in f.victims}, tuple(h for h in held if known_to_scheduler(h, preemptor)))


def _makes_room(node: NodeInfo, preemptor: Pod, held: Sequence[Pod], proposed: Sequence[Pod]) -> bool:
    """The scheduler's victims still on ``node`` (those of answers in flight are gone already)
    make room for the preemptor next to ``held``."""
    on = {p.uid for p in node.pods}
    return room_after(node, preemptor, held, [p for p in proposed if p.uid in on]) is not None


def room_after(node: NodeInfo, preemptor: Pod, held: Sequence[Pod], gone: Sequence[Pod]) -> Vector | None:
    """The room left on ``node`` for each resource the preemptor's fit checks once ``gone``
    leave and the preemptor and ``held`` are placed; None if it does not fit."""
    request = preemptor.requests
    freed = resources.add(*(p.requests for p in gone))
    used = resources.add(node.requested, *(p.requests for p in held))
    alloc = node.node.allocatable
    room = {r: alloc.get(r, 0) - used.get(r, 0) + freed.get(r, 0) - request[r] for r in resources.checked_resources(request)}
    return room if all(v >= 0 for v in room.values()) else None


def freed(proposed: list[Pod], promised: set[str]) -> Vector:
    """What the scheduler's victims free that is not already another answer's."""
    return resources.add(*(p.requests for p in proposed if p.uid not in promised))


def scheduler_sees_less(
    node: NodeInfo, preemptor: Pod, reservations: Sequence[Pod], proposed: list[Pod], promised: set[str]
) -> Vector | None:
    """What the scheduler's victims free, if its proposal shows it sees less room than reprieve.

    Upstream's victims are inclusion-minimal in the scheduler's view: every one of them is
    needed. If, in reprieve's view with the same victims gone, one of them could stay (or
    nothing needed to go at all), the scheduler counts something reprieve cannot see yet: a
    pod it has just bound, a nomination it has just made. Victims that free at least as much
    as the scheduler's own make room in the scheduler's view whatever it counts. (Victims
    promised to an earlier answer leave anyway and are not counted in what must be freed.)
    """
    live = [p for p in proposed if not p.terminating]
    if not live:
        return None
    room = room_after(node, preemptor, reservations, proposed)
    if room is not None and any(all(p.requests.get(r, 0) <= room[r] for r in room) for p in live):
        return freed(proposed, promised)
    return None


def assumed_floor(
    view: ClusterView,
    node: NodeInfo,
    preemptor: Pod,
    reservations: Sequence[Pod],
    proposed: list[Pod],
    promised: set[str],
) -> Vector | None:
    """The least reprieve's victims must free because pods of the scheduler's own with a lower
    priority than the preemptor are nominated here (may_be_assumed); None if none is, or if the
    proposal shows that the scheduler counts none of them.

    Such a nomination holds no room against the preemptor if it is a preemption's, but it may
    be a binding cycle's (NominatedNodeNameForExpectation): the scheduler then has the pod
    assumed on the node, counted against every pod, and reprieve cannot tell the two apart
    (docs/upstream-semantics.md). Whatever the scheduler counts of them, its dry run
    (SelectVictimsOnNode) found that its victims make room next to it: it counts a set of them
    that fits in ``room``, what its victims leave once the preemptor is placed.

    - Where they all fit there together, the proposal is consistent with every one of them
      assumed: reprieve's victims free at least what the scheduler's free, in every resource,
      and so make room in the scheduler's view whatever it counts.
    - Where they do not, it counts at most ``most`` of each resource (counted_at_most), and
      victims V that free the scheduler's less the room its victims P leave beyond that make
      room next to any set T it can be counting: in its view what V leaves is
      room - T - (freed(P) - freed(V)) >= room - most - (room - most) = 0.
    - Where none of them fits alone, it counts none (``most`` is 0): victims that make room in
      reprieve's view make room in the scheduler's, and there is no floor.

    That bound reads the rest of the node as reprieve's view shows it, as the choice of victims
    does where no such pod is nominated. Where the scheduler's view differs otherwise (a
    binding or a deletion reprieve has not seen yet), the victims may free too little in its
    view: the preemptor preempts again once they are gone, more victims but never stranded
    (docs/upstream-semantics.md, "What reprieve still cannot see"). Where the scheduler's
    victims make no room in reprieve's view even without those pods, the views differ and
    nothing bounds what it counts: the floor is what its victims free."""
    nominees = [p for p in view.nominated.get(node.name, ()) if may_be_assumed(p, preemptor)]
    if not nominees:
        return None
    full = freed(proposed, promised)
    room = room_after(node, preemptor, reservations, proposed)
    if room is None:
        return full
    together = resources.add(*(p.requests for p in nominees))
    if all(together.get(r, 0) <= room[r] for r in room):
        return full
    most = counted_at_most(room, nominees)
    if not any(most.values()):
        return None
    floor = {r: max(0, full.get(r, 0) - (room[r] - most[r])) for r in room}
    return floor if any(floor.values()) else None


def may_be_assumed(nominee: Pod, preemptor: Pod) -> bool:
    """A pod of the scheduler's own nominated with a lower priority than the preemptor: assumed
    on the node if its nomination is a binding cycle's, counted by nothing if a preemption's.
    (Another scheduler's pod is never in this scheduler's cache.)"""
    return (
        nominee.priority < preemptor.priority
        and known_to_scheduler(nominee, preemptor)
        and nominee.key != preemptor.key
    )


# Up to this many such pods on a node every set of them is tried (2**8 sums of a few resources).
_EVERY_SET = 8


def counted_at_most(room: Vector, nominees: Sequence[Pod]) -> dict[str, int]:
    """For each resource of ``room``, the most that any set of ``nominees`` fitting in ``room``
    (in every resource) requests of it: what the scheduler can be counting of them there.

    Every set is tried up to _EVERY_SET nominees; above that, the sum over those that fit
    alone, capped at ``room``: every set that fits is made of pods that fit alone, so that is
    never less than the most, and the floor it gives is never lower."""
    names = tuple(room)
    sizes = [tuple(p.requests.get(r, 0) for r in names) for p in nominees]
    limit = tuple(room[r] for r in names)
    alone = [s for s in sizes if all(v <= cap for v, cap in zip(s, limit))]
    if len(alone) > _EVERY_SET:
        return {r: min(cap, sum(s[i] for s in alone)) for i, (r, cap) in enumerate(zip(names, limit))}
    most = [0] * len(names)
    for count in range(1, len(alone) + 1):
        for chosen in itertools.combinations(alone, count):
            total = [sum(column) for column in zip(*chosen)]
            if all(v <= cap for v, cap in zip(total, limit)):
                most = [max(m, v) for m, v in zip(most, total)]
    return dict(zip(names, most))


def _outranking(in_flight: Sequence[InFlight], node: str, preemptor: Pod) -> list[InFlight]:
    """Answers in flight on ``node`` whose preemptors hold room against ``preemptor`` (priority
    >= its own, as nominated pods do). A lower-priority answer neither holds the room nor takes
    its victims from the preemptor: upstream would clear that nomination (X-2)."""
    return [f for f in in_flight if f.node == node and holds_against(f, preemptor)]


def holds_against(flight: InFlight, preemptor: Pod) -> bool:
    return flight.preemptor.priority >= preemptor.priority


def promised_on(in_flight: Sequence[InFlight], node: str, preemptor: Pod) -> set[str]:
    return {v.uid for f in _outranking(in_flight, node, preemptor) for v in f.victims}


def as_it_will_be(
    view: ClusterView,
    node: NodeInfo,
    reservations: tuple[Pod, ...],
    preemptor: Pod,
    in_flight: Sequence[InFlight],
) -> tuple[NodeInfo, tuple[Pod, ...]]:
    """The node once earlier answers take effect: their victims gone, their preemptors
    nominated here (holding room against pods of lower or equal priority). The scheduler's
    own proposals may not show them yet either (it deletes victims asynchronously)."""
    mine = _outranking(in_flight, node.name, preemptor)
    if not mine:
        return node, reservations
    leaving = {v.uid for f in mine for v in f.victims}
    pods = [p for p in node.pods if p.uid not in leaving or p.terminating]
    held = {p.uid for p in reservations}
    for flight in mine:
        seen = view.pods.get(flight.preemptor.uid) or flight.preemptor
        if seen.node_name is None and seen.nominated_node_name != node.name and flight.preemptor.uid not in held:
            reservations = (*reservations, flight.preemptor)
    if len(pods) != len(node.pods):
        node = NodeInfo.build(node.node, pods)
    return node, reservations

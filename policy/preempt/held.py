"""Room held against the preemptor on a node: nominated pods and reprieve's answers in flight
(their victims leaving, their preemptors holding room), as the scheduler's proposal shows it
holds them, and what the scheduler's victims free beside them."""

from __future__ import annotations

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


def maybe_assumed(view: ClusterView, name: str, preemptor: Pod) -> bool:
    """A pod of the scheduler's own is nominated here with a lower priority than the preemptor.

    Such a nomination holds no room against the preemptor if it is a preemption's, but it may
    be a binding cycle's (NominatedNodeNameForExpectation): then the scheduler has the pod
    assumed on the node, counted against every pod, or bound already where reprieve's view has
    not seen it yet. reprieve cannot tell the two apart (docs/upstream-semantics.md), and its
    victims could free too little in the scheduler's view, where the proposal's minimal victims
    need not show the difference: they free at least as much as the scheduler's instead."""
    return any(
        p.priority < preemptor.priority and known_to_scheduler(p, preemptor) and p.key != preemptor.key
        for p in view.nominated.get(name, ())
    )


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

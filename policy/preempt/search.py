"""The search across candidate nodes: solved best-first from their lower bounds (policy.bounds)
while they can still win, policy.exact's swap pass on the node to be offered, and the nodes left
unsolved marked with why they cannot win."""

from __future__ import annotations

import heapq
from collections.abc import Callable
from itertools import compress, count
from operator import ne

from policy import bounds, ranking
from policy.causes import Cause
from policy.preempt.candidate import evaluate
from policy.preempt.decision import NodeOutcome, Proposal, Verdict
from policy.preempt.held import holds_against, records_here
from policy.preempt.request import Request
from policy.preempt.unmodelled import screening


def outcomes_by_node(request: Request) -> dict[str, NodeOutcome]:
    """Every candidate's outcome, by name in sorted order: the nodes solved (_judge), the one
    to be offered with the swap pass (_swap_on_offered), and the nodes left unsolved outranked
    by the cheapest solved (_unsolved)."""
    outcomes, beaten = _judge(request)
    _swap_on_offered(request, outcomes)
    if beaten:
        winner = min((o for o in outcomes.values() if o.cost is not None), key=lambda o: (o.cost.key, o.node))
        unsolved = _unsolved(winner)
        outcomes.update((name, unsolved(name, floor)) for floor, name in beaten)
    return {name: outcomes[name] for name in sorted(request.proposals)}


def _judge(request: Request) -> tuple[dict[str, NodeOutcome], list[tuple[tuple, str]]]:
    """The outcomes of the candidates solved, by name, and (floor, name) of those left
    unsolved. Nodes with a cheap lower bound on their cost (policy.bounds) are solved
    best-first, and only while they can still win: a node is left unsolved when its bound is
    above the cheapest cost solved so far, or equal to it with a name that sorts after that
    node's (exact ties go to the first name), unless it needs no live victim. The node offered
    is always solved, so the answer is the one ``exhaustive`` (every node solved) gives; only
    exact ties of it may be left unsolved (on identical nodes, all of them)."""
    floors: list[tuple[tuple, str]] = []
    solved: dict[str, NodeOutcome] = {}
    floors_of = None if request.exhaustive else bounds.Floors(
        request.view, request.preemptor, request.order, request.homes, request.now, request.choosing.pending
    )
    # Nodes of the view whose floor still lacks its bound on the pending pods left without
    # room (policy.bounds: a few microseconds a node), added only once a node may still win.
    lazy: set[str] = set()
    floor_of = None if floors_of is None else _floors(request, floors_of, lazy)
    for name, proposal in request.proposals.items():
        floor = None if floor_of is None else floor_of(name, proposal)
        if floor is None or floor is bounds.NO_ROOM:
            solved[name] = evaluate(request, name)  # cheap or exceptional: solved at once
        else:
            floors.append((floor, name))
    best = min(((o.cost.key, n) for n, o in solved.items() if o.cost is not None), default=None)
    beaten: list[tuple[tuple, str]] = []
    # Taken lowest first from a heap: a few are solved, the hundreds left need no order.
    heapq.heapify(floors)
    while floors:
        floor, name = floors[0]
        # A node that needs no live victim may be one where the pod only waits for pods
        # already terminating (Cause.LEAVING), which overrides every cost: always solved.
        if best is not None and (floor, name) > best and floor is not floors_of.free:  # floors: not exhaustive
            return solved, [*floors, *beaten]
        heapq.heappop(floors)
        if name in lazy:
            floor = floors_of.with_pending(floor, request.view.nodes[name])
            if best is not None and (floor, name) > best and floor is not floors_of.free:
                beaten.append((floor, name))
                continue
        outcome = solved[name] = evaluate(request, name)
        if outcome.cost is not None and (best is None or (outcome.cost.key, name) < best):
            best = (outcome.cost.key, name)
    return solved, beaten


def _swap_on_offered(request: Request, outcomes: dict[str, NodeOutcome]) -> None:
    """Run policy.exact's swap pass on the node policy.preempt.answer will offer, and on no
    other. Its result is kept only if it costs no more (a swapped set the rules refuse falls
    back to a dearer one), so that node stays the cheapest; on a node with many
    lower-priority pods it costs more than the rest of the node's selection, and running it on
    every candidate made a 500-candidate preemption several times slower. The price: a node
    whose greedy victims cost more than the offered node's, but whose swapped victims would
    have cost less, is not found. (A node with many candidates whose greedy victims violate a
    strict budget gets the pass in policy.victims before it is dropped.) Every candidate still costs no more than stock's victims on
    it (upstream's order is one of the greedy orders)."""
    if any(o.verdict is Verdict.DROPPED and o.cause is Cause.LEAVING for o in outcomes.values()):
        return  # nothing is offered: the pod waits for pods already terminating
    ties = ranking.best({n: o.cost for n, o in outcomes.items() if o.cost is not None})
    if ties:
        before, after = outcomes[ties[0]], evaluate(request, ties[0], swap=True)
        if after.cost is not None and after.cost.key <= before.cost.key:  # never worse (the rules may refuse a swap)
            outcomes[ties[0]] = after


def _floors(request: Request, floor: bounds.Floors, lazy: set[str]) -> Callable[[str, Proposal], tuple | None]:
    """(node name, proposal) -> policy.bounds' floor for a node evaluate would run
    select_victims on, as the view shows it or as answers in flight will leave it
    (as_it_will_be), else None (unknown, or kept scheduler victims). Built once per request:
    500 candidates each ask. A node as the view shows it gets its floor without the bound on
    the pending pods left without room, and its name in ``lazy``."""
    view, preemptor, in_flight = request.view, request.preemptor, request.in_flight
    changed = {f.node for f in in_flight if holds_against(f, preemptor)}
    screened = view.summary(("screening",), screening)  # as unmodelled_here reads it
    nodes, pods, nominated = view.nodes, view.pods, view.nominated

    def floor_of(name: str, proposal: Proposal) -> tuple | None:
        node = nodes.get(name)
        if node is None:
            return None
        blockers, on_node = screened(name)
        if blockers:
            return None
        for uid in proposal.uids:
            if uid not in on_node:
                return None  # a victim unknown on this node: passed through
        if name not in nominated and name not in changed:
            lazy.add(name)
            return floor(node, (), pending=False)
        proposed = [pods[uid] for uid in proposal.uids]
        here = records_here(view, node, preemptor, in_flight, proposed)  # as evaluate holds them
        return floor(here.node, here.reservations, kept_with_view=here.node is node)

    return (lambda name, proposal: None) if preemptor.unmodelled else floor_of


def _unsolved(winner: NodeOutcome) -> Callable[[str, tuple], NodeOutcome]:
    """(name, floor) -> the outcome of a node not solved: even its lower bound costs more than
    ``winner``'s victims, or as much, and ``winner``'s name sorts first. Up to 500 per request,
    their bounds alike on this criterion: each reason is written once."""
    written: dict[tuple, tuple[str]] = {}
    victims = winner.cost.layout.position(ranking.VICTIMS)
    key = winner.cost.key

    def outcome(name: str, floor: tuple) -> NodeOutcome:
        step = next(compress(count(), map(ne, floor, key)), None)  # the first criterion they differ on
        # The text shows the floor on this criterion (and the number of victims, which the words
        # of the sum of priorities read: policy.criteria.priority_sum).
        here = None if step is None else (floor[step], floor[victims])
        reasons = written.get((step, here))
        if reasons is None:
            if step is None:
                why = f"at best ties with {winner.node}, which sorts first"
            else:
                layout = winner.cost.layout
                why = (
                    f"{layout.criteria[step].name} {ranking.Cost(floor, layout).at_least(step)} here vs "
                    f"{winner.cost.best(step)}"
                )
            reasons = written[(step, here)] = (f"not solved: cannot beat {winner.node}: {why}",)
        return NodeOutcome(name, Verdict.OUTRANKED, Cause.NOT_SOLVED, reasons=reasons)

    return outcome



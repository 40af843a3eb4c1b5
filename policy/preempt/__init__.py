"""The preempt verb's decision: which candidate nodes to offer, and which victims on each."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import NamedTuple

from policy import bounds, gangs, homes, ranking, resources, tenancy
from policy.causes import Cause, Refusal
from policy.model import POD_ANTI_AFFINITY, InFlight, Pod
from policy.resources import Vector
from policy.tenancy import Rules, Standing
from policy.pdb import NO_VIOLATIONS, BudgetsOf, Violations, count_violations, less_spent
from policy.victims import NodeRejected, VictimSelection, select_victims
from policy.view import ClusterView, NodeInfo, known_to_scheduler


class Proposal(NamedTuple):
    """A candidate node's victims as the scheduler proposes them (or as reprieve answers); a
    named tuple, as up to 500 are read per request."""

    uids: tuple[str, ...]
    num_pdb_violations: int


class Verdict(str, Enum):
    CHOSEN = "chosen"  # offered to the scheduler with reprieve's victims
    OUTRANKED = "outranked"  # feasible, but another node costs less
    DROPPED = "dropped"  # preemption cannot make room here
    # As the scheduler proposed it: unknown to reprieve, or its view of the node is older
    # (Cause.SCHEDULER_NEWER); offered only if no node reprieve could judge is.
    PASSED_THROUGH = "passed through"


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    node: str
    verdict: Verdict
    cause: Cause = Cause.NONE  # for DROPPED, PASSED_THROUGH and kept scheduler victims
    victims: tuple[Pod, ...] = ()
    violations: Violations = NO_VIOLATIONS
    cost: ranking.Cost | None = None
    kept_scheduler_victims: bool = False
    reasons: tuple[str, ...] = ()
    broken: gangs.Broken = gangs.NONE_BROKEN  # the gangs the victims break, as the cost counts them


@dataclass(frozen=True, slots=True)
class PreemptDecision:
    answer: Mapping[str, Proposal]
    outcomes: tuple[NodeOutcome, ...]
    reasons: tuple[str, ...]
    refusal: Refusal = Refusal.NONE  # why no node was even considered
    # No answer reprieve can give would be accepted, and answering none would leave the pod
    # pending: every candidate's victims span nodes (Cause.VICTIMS_ELSEWHERE). The scheduler's
    # own choice must stand (the verb answers with an error, which it skips for an ignorable
    # extender).
    defers: bool = False


# A pod that reprieve's view shows bound for less than this may not be in the scheduler's
# snapshot yet (taken at the start of its scheduling cycle): reprieve names it only if the
# scheduler proposed it, since the scheduler rejects a preemption that names a pod it cannot
# find on the node. Pods the scheduler binds itself are in its snapshot before reprieve sees
# them; this covers pods bound by others (another scheduler, a controller, a person).
SETTLE_SECONDS = 1.0


def decide(
    *,
    view: ClusterView,
    preemptor: Pod,
    proposals: Mapping[str, Proposal],
    rules: Rules | None = None,
    standing: Standing | None = None,
    in_flight: Sequence[InFlight] = (),
    now: float | None = None,
    exhaustive: bool = False,
    order: ranking.Order = ranking.DEFAULT,
) -> PreemptDecision:
    """Re-derive victims on each candidate node, drop hopeless nodes, offer the cheapest one.

    ``in_flight`` are earlier answers the view may not show yet: their victims count as gone
    and are never named again, their preemptors hold room on their nodes. Exactly one node is
    offered (the first of exact ties), so that the answer recorded in flight is the one the
    scheduler carries out.

    The scheduler's cache is at least as fresh as reprieve's view for everything it did
    itself, so its proposal sets the floor: a node or victim UID reprieve does not know is
    passed through untouched; where the proposal shows the scheduler sees less room than
    reprieve (one of its victims could stay in reprieve's view), reprieve's victims free at
    least as much as the scheduler's; and reprieve names only pods the scheduler can resolve
    (no terminating pod and no pod bound less than SETTLE_SECONDS before ``now`` unless the
    scheduler proposed it). If the preemptor has constraints reprieve does not model
    (policy.model), or a pod on the node has required anti-affinity that may be what blocks
    the preemptor, the scheduler's own victims are kept for that node and only their
    PodDisruptionBudget violations recounted (and the node dropped if the rules protect one).

    With ``rules`` (policy.tenancy), victims are chosen only among the pods the rules allow,
    and a preemptor still inside its preemption delay (measured against ``now``, seconds
    since the epoch) may not preempt yet. ``standing`` is ``tenancy.assess(rules, view)``,
    passed in when the caller keeps it for many decisions over the same view. ``order`` ranks
    victim sets and nodes (policy.ranking; a policy file may reorder it).
    """
    # Not its own earlier answer, nor one for an earlier pod of its name: the API server holds
    # one pod per name, so that one was deleted (policy.view.ClusterView.reservations).
    in_flight = [f for f in in_flight if f.preemptor.key != preemptor.key]
    refusal, why = _ineligible(view, preemptor, in_flight)
    screen = None
    if rules is not None and refusal is Refusal.NONE:
        if standing is None:
            standing = tenancy.assess(rules, view, pending=(preemptor,))
        elif preemptor.uid not in standing.membership:
            standing = tenancy.with_pending(standing, (preemptor,))
        standing = tenancy.with_in_flight(standing, view, in_flight)
        wait = tenancy.delay_left(rules=rules, standing=standing, preemptor=preemptor, now=now)
        if wait > 0:
            refusal, why = Refusal.DELAY, f"pending for less than its preemption delay: {wait:.0f}s to go"
        else:
            screen = tenancy.screen(standing=standing, view=view, preemptor=preemptor)
    if refusal is not Refusal.NONE:
        return PreemptDecision(answer={}, outcomes=(), reasons=(why,), refusal=refusal)

    # Victims of answers in flight still run in the view: their gangs can spare that many fewer,
    # and their budgets allow that many fewer disruptions (the status has not counted them yet).
    gang_of = gangs.less_taken(view.gang_of, (v for f in in_flight for v in f.victims))
    budgets = less_spent(view.budgets_covering, (v for f in in_flight for v in f.victims))

    def evaluate(name: str, swap: bool = False) -> NodeOutcome:
        outcome = _evaluate(
            view, preemptor, name, proposals[name], screen, in_flight, now, swap, order, gang_of, budgets
        )
        if screen is not None and outcome.verdict is Verdict.PASSED_THROUGH and not outcome.kept_scheduler_victims:
            # The rules cannot be checked on victims reprieve does not know: not offered.
            outcome = dataclasses.replace(
                outcome, verdict=Verdict.DROPPED, reasons=(*outcome.reasons, "with a policy, not offered unjudged")
            )
        return outcome

    outcomes, beaten = _judge(view, preemptor, proposals, in_flight, evaluate, exhaustive, order)
    _swap_on_offered(outcomes, evaluate)
    if beaten:
        winner = min((o for o in outcomes.values() if o.cost is not None), key=lambda o: (o.cost.key, o.node))
        unsolved = _unsolved(winner)
        outcomes.update((name, unsolved(name, floor)) for floor, name in beaten)
    outcomes = {name: outcomes[name] for name in sorted(proposals)}
    answer, reasons = _offer(proposals, outcomes)
    # Deferring hands every candidate back to the scheduler's own choice: only where that choice
    # can break nothing reprieve knows (no rules to check, no victim promised to another answer)
    # and every candidate is a unit reprieve cannot name.
    promised = {v.uid for f in in_flight for v in f.victims}
    defers = (
        not answer
        and screen is None
        and all(o.cause is Cause.VICTIMS_ELSEWHERE for o in outcomes.values())
        and not any(uid in promised for p in proposals.values() for uid in p.uids)
    )
    if defers:
        reasons = [
            "every node reprieve could offer needs victims on other nodes too (a victim unit spanning "
            "nodes), which an answer cannot name: the scheduler's own choice stands"
        ]
    return PreemptDecision(answer=answer, outcomes=tuple(outcomes.values()), reasons=tuple(reasons), defers=defers)


def _judge(
    view: ClusterView,
    preemptor: Pod,
    proposals: Mapping[str, Proposal],
    in_flight: Sequence[InFlight],
    evaluate: Callable[[str], NodeOutcome],
    exhaustive: bool,
    order: ranking.Order,
) -> tuple[dict[str, NodeOutcome], list[tuple[tuple, str]]]:
    """The outcomes of the candidates solved, by name, and (floor, name) of those left
    unsolved. Nodes with a cheap lower bound on their cost (policy.bounds) are solved
    best-first, and only while they can still win: a node is left unsolved when its bound is
    above the cheapest cost solved so far, or equal to it with a name that sorts after that
    node's (exact ties go to the first name), unless it needs no live victim. The node offered
    is always solved, so the answer is the one ``exhaustive`` (every node solved) gives; only
    exact ties of it may be left unsolved (on identical nodes, all of them)."""
    floors: list[tuple[tuple, str]] = []
    solved: dict[str, NodeOutcome] = {}
    floors_of = None if exhaustive else bounds.Floors(view, preemptor, order, homes.of(view))
    floor_of = None if floors_of is None else _floors(view, preemptor, in_flight, floors_of)
    for name in proposals:
        floor = None if floor_of is None else floor_of(name, proposals[name])
        if floor is None or floor is bounds.NO_ROOM:
            solved[name] = evaluate(name)  # cheap or exceptional: solved at once
        else:
            floors.append((floor, name))
    best = min(((o.cost.key, n) for n, o in solved.items() if o.cost is not None), default=None)
    floors.sort()
    for i, (floor, name) in enumerate(floors):
        # A node that needs no live victim may be one where the pod only waits for pods
        # already terminating (Cause.LEAVING), which overrides every cost: always solved.
        if best is not None and (floor, name) > best and floor is not floors_of.free:  # floors: not exhaustive
            return solved, floors[i:]
        outcome = solved[name] = evaluate(name)
        if outcome.cost is not None and (best is None or (outcome.cost.key, name) < best):
            best = (outcome.cost.key, name)
    return solved, []


def _swap_on_offered(outcomes: dict[str, NodeOutcome], evaluate: Callable[..., NodeOutcome]) -> None:
    """Run policy.exact's swap pass on the node _offer will offer, and on no other. Its result
    is kept only if it costs no more (a swapped set the rules refuse falls back to a dearer
    one), so that node stays the cheapest; on a node with many
    lower-priority pods it costs more than the rest of the node's selection, and running it on
    every candidate made a 500-candidate preemption several times slower. The price: a node
    whose greedy victims cost more than the offered node's, but whose swapped victims would
    have cost less, is not found. Every candidate still costs no more than stock's victims on
    it (upstream's order is one of the greedy orders)."""
    if any(o.verdict is Verdict.DROPPED and o.cause is Cause.LEAVING for o in outcomes.values()):
        return  # nothing is offered: the pod waits for pods already terminating
    ties = ranking.best({n: o.cost for n, o in outcomes.items() if o.cost is not None})
    if ties:
        before, after = outcomes[ties[0]], evaluate(ties[0], swap=True)
        if after.cost is not None and after.cost.key <= before.cost.key:  # never worse (the rules may refuse a swap)
            outcomes[ties[0]] = after


def _floors(
    view: ClusterView, preemptor: Pod, in_flight: Sequence[InFlight], floor: bounds.Floors
) -> Callable[[str, Proposal], tuple | None]:
    """(node name, proposal) -> policy.bounds' floor for a node _evaluate would run
    select_victims on, as the view shows it or as answers in flight will leave it
    (_as_it_will_be), else None (unknown, or kept scheduler victims). Built once per request:
    500 candidates each ask."""
    changed = {f.node for f in in_flight if _holds_against(f, preemptor)}
    blockers = view.summary(("anti-affinity",), _anti_affinity)  # _unmodelled
    nodes, pods, nominated = view.nodes, view.pods, view.nominated

    def floor_of(name: str, proposal: Proposal) -> tuple | None:
        node = nodes.get(name)
        if node is None or preemptor.unmodelled or blockers(name):
            return None
        proposed = []
        for uid in proposal.uids:
            pod = pods.get(uid)
            if pod is None or pod.node_name != name:
                return None  # a victim unknown on this node: passed through
            proposed.append(pod)
        if name not in nominated and name not in changed:
            return floor(node, ())
        here = _records_here(view, node, preemptor, in_flight, proposed)  # as _evaluate holds them
        return floor(here.node, here.reservations, kept_with_view=here.node is node)

    return floor_of


def _unsolved(winner: NodeOutcome) -> Callable[[str, tuple], NodeOutcome]:
    """(name, floor) -> the outcome of a node not solved: even its lower bound costs more than
    ``winner``'s victims, or as much, and ``winner``'s name sorts first. Up to 500 per request,
    their bounds alike on this criterion: each reason is written once."""
    written: dict[tuple, str] = {}
    victims = winner.cost.layout.position(ranking.VICTIMS)

    def outcome(name: str, floor: tuple) -> NodeOutcome:
        step = next((i for i, (a, b) in enumerate(zip(floor, winner.cost.key)) if a != b), None)
        # The text shows the floor on this criterion (and the number of victims with their sum).
        here = None if step is None else (floor[step], floor[victims])
        reason = written.get((step, here))
        if reason is None:
            if step is None:
                why = f"at best ties with {winner.node}, which sorts first"
            else:
                layout = winner.cost.layout
                why = (
                    f"{layout.criteria[step].name} {_bound_text(floor, step, layout)} here vs "
                    f"{_winner_text(winner.cost, step)}"
                )
            reason = written[(step, here)] = f"not solved: cannot beat {winner.node}: {why}"
        return NodeOutcome(name, Verdict.OUTRANKED, Cause.NOT_SOLVED, reasons=(reason,))

    return outcome


def _bound_text(floor: tuple, step: int, layout: ranking.Layout) -> str:
    """What a floor (policy.bounds) says of a node on one criterion, in words that stay true
    whatever the node's victims: a floor on the shifted sum of priorities is a number of
    victims and the lowest priority they can have (with negative priorities more victims make
    a smaller plain sum), and one on the start criterion bounds the start from above."""
    criterion = layout.criteria[step]
    if criterion is ranking.START:
        return f"no later than {-floor[step]:.0f}s since the epoch"
    if criterion is ranking.PRIORITY_SUM:
        count = floor[layout.position(ranking.VICTIMS)]
        lowest = floor[step] // count - ranking.SHIFT
        return f"from at least {count} victim(s), each of priority {lowest} or more,"
    return f"at least {ranking.Cost(floor, layout)._show(step)}"


def _winner_text(cost: ranking.Cost, step: int) -> str:
    if cost.layout.criteria[step] is ranking.PRIORITY_SUM:
        return f"{cost.value(ranking.VICTIMS)} victim(s) summing to {cost._show(step)}"
    return cost._show(step)


def _offer(proposals: Mapping[str, Proposal], outcomes: dict[str, NodeOutcome]) -> tuple[dict[str, Proposal], list[str]]:
    """One node: the cheapest reprieve judged (the first of exact ties), else the scheduler's
    own best among the nodes passed through (fewest PDB violations, then name). The others
    are marked outranked. None at all when the pod fits somewhere once pods already
    terminating there are gone: no eviction is cheaper than waiting for them."""
    waiting = sorted(n for n, o in outcomes.items() if o.verdict is Verdict.DROPPED and o.cause is Cause.LEAVING)
    if waiting:
        # Evicting anyone anywhere costs more than waiting: the scheduler retries the pod when
        # the terminating pods are deleted, and it fits then.
        why = f"the pod fits on {waiting[0]} once the pods terminating there are gone: it waits for them"
        for name, outcome in outcomes.items():
            if outcome.cost is not None or outcome.verdict is Verdict.PASSED_THROUGH:
                outcomes[name] = dataclasses.replace(
                    outcome, verdict=Verdict.OUTRANKED, reasons=(*outcome.reasons, f"not offered: {why}")
                )
        return {}, [f"evicts no one: {why}"]
    costs = {n: o.cost for n, o in outcomes.items() if o.cost is not None}
    answers = {n: _as_answered(proposals[n], o) for n, o in outcomes.items() if o.verdict is Verdict.PASSED_THROUGH}
    passed = sorted(answers, key=lambda n: (answers[n].num_pdb_violations, n))
    ties = ranking.best(costs)
    reasons: list[str] = []
    if ties:
        chosen = ties[0]
        winner = costs[chosen]
        reasons.append(f"chose {chosen}: {winner.describe()}")
        if len(ties) > 1:
            reasons.append(f"{', '.join(ties)} tie; only {chosen} is offered, so that the victims in flight stay known")
        for name, c in costs.items():
            if name != chosen:
                outcomes[name] = dataclasses.replace(
                    outcomes[name], verdict=Verdict.OUTRANKED, reasons=(*outcomes[name].reasons, _not_chosen(c, winner, chosen))
                )
        why_not = f"not offered: reprieve offers {chosen}, which it could judge"
    elif passed:
        chosen = passed[0]
        reasons.append(f"chose {chosen}, unjudged: the scheduler's own victims on the node it ranks first")
        why_not = f"not offered: the scheduler ranks {chosen} first"
    else:
        return {}, ["no candidate node can make room for the pod"]
    for name in passed:
        if name != chosen:
            outcomes[name] = dataclasses.replace(
                outcomes[name], verdict=Verdict.OUTRANKED, reasons=(*outcomes[name].reasons, why_not)
            )
    outcome = outcomes[chosen]
    if outcome.verdict is Verdict.PASSED_THROUGH:
        return {chosen: answers[chosen]}, reasons
    outcomes[chosen] = dataclasses.replace(outcome, verdict=Verdict.CHOSEN)
    return {chosen: Proposal(tuple(p.uid for p in outcome.victims), outcome.violations.count)}, reasons


def _as_answered(proposal: Proposal, outcome: NodeOutcome) -> Proposal:
    """A node passed through: as the scheduler proposed it, with reprieve's count of its
    violations where it knows the victims (the scheduler's view of the node newer)."""
    if outcome.kept_scheduler_victims:
        return Proposal(proposal.uids, outcome.violations.count)
    return proposal


def _not_chosen(cost: ranking.Cost, winner: ranking.Cost, chosen: str) -> str:
    if cost.key == winner.key:
        return f"not chosen: ties with {chosen}, which is offered alone"
    return f"not chosen: {cost.versus(winner)} on {chosen}"


def _ineligible(view: ClusterView, preemptor: Pod, in_flight: Sequence[InFlight]) -> tuple[Refusal, str]:
    """preemptionPolicy Never; or nominated to a node where lower-priority pods are leaving
    and their room, once free, is enough for the preemptor: it waits for them.

    Upstream waits whenever such a pod is terminating because of preemption, and checks that
    before it asks the extender: asked, the scheduler has judged that no pod it preempted is
    still terminating there (in its view, never behind reprieve's on its own deletions). So
    pods marked preempted (DisruptionTarget) are left to that judgement: waiting for them where
    the scheduler has already seen them go would leave the preemptor pending, with no deletion
    left to wake it. reprieve also waits for pods terminating for other reasons (deleted by a
    person or a controller), which upstream does not, if their room will be the preemptor's:
    pods nominated there that outrank it (or, at equal priority, were created first) and
    answers in flight hold it first. A preemptor whose room was taken by another may preempt
    again at once instead of waiting for nothing.
    """
    if preemptor.preemption_never:
        return Refusal.NEVER, "preemptionPolicy is Never"
    nominated = view.nodes.get(preemptor.nominated_node_name or "")
    if nominated is None:
        return Refusal.NONE, ""
    leaving = [p for p in nominated.pods if p.terminating and not p.preempted and p.priority < preemptor.priority]
    if not leaving:
        return Refusal.NONE, ""
    holders = [
        p for p in view.nominated.get(nominated.name, ())
        if p.uid != preemptor.uid and _claim(p) > _claim(preemptor)
    ]
    node, holders = _as_it_will_be(view, nominated, tuple(holders), preemptor, in_flight)
    # A pod the scheduler preempted frees no room the preemptor may count on: asked, the
    # scheduler has seen it go, and whatever it sees in its room instead, reprieve may not.
    staying = [p for p in node.pods if not p.terminating or p.preempted]
    used = resources.add(*(p.requests for p in staying), *(p.requests for p in holders))
    if resources.shortfalls(request=preemptor.requests, allocatable=node.node.allocatable, used=used):
        return Refusal.NONE, ""  # preempting again is the only way: see the node's reasons
    names = ", ".join(sorted(p.key for p in leaving))
    return Refusal.VICTIMS_TERMINATING, (
        f"already nominated to {nominated.name}, where lower-priority {names} are terminating; waiting for them"
    )


def _claim(pod: Pod) -> tuple:
    """Who gets room first among pods nominated to one node: the higher priority, then the
    earlier creation, then namespace/name (a total order, so two pods never both wait)."""
    return (pod.priority, -(pod.created or 0), pod.key)


def _evaluate(
    view: ClusterView,
    preemptor: Pod,
    name: str,
    proposal: Proposal,
    screen: tenancy.Screen | None,
    in_flight: Sequence[InFlight],
    now: float | None,
    swap: bool,
    order: ranking.Order,
    gang_of: gangs.GangOf,
    budgets: BudgetsOf,
) -> NodeOutcome:
    node = view.nodes.get(name)
    if node is None:
        return NodeOutcome(name, Verdict.PASSED_THROUGH, Cause.UNKNOWN_NODE, reasons=("node unknown to reprieve",))
    on_node = {p.uid: p for p in node.pods}
    elsewhere = [view.pods[uid] for uid in proposal.uids if uid not in on_node and _bound_elsewhere(view, uid, name)]
    if elsewhere:
        # kube-scheduler 1.37 lists every member of a PodGroup with disruptionMode all under the
        # node it dry-ran, members on other nodes included, yet resolves an answer's UIDs on
        # that node only: the node cannot be answered, and naming only its own members would
        # break the group.
        return NodeOutcome(
            name,
            Verdict.DROPPED,
            Cause.VICTIMS_ELSEWHERE,
            victims=tuple(elsewhere),
            reasons=(
                f"the scheduler's victims include {_keys(elsewhere)} on other nodes, one victim unit with those "
                "here: an answer names only this node's pods, and naming fewer would break the unit",
            ),
        )
    unknown = [uid for uid in proposal.uids if uid not in on_node]
    if unknown:
        # The scheduler sees pods here that reprieve does not: its view of the node is fresher.
        return NodeOutcome(
            name,
            Verdict.PASSED_THROUGH,
            Cause.UNKNOWN_VICTIM,
            reasons=(f"victim UID(s) {', '.join(unknown)} unknown to reprieve on this node",),
        )
    proposed = [on_node[uid] for uid in proposal.uids]
    promised = _promised(in_flight, name, preemptor)
    unmodelled = _unmodelled(view, preemptor, node)
    if unmodelled:
        if not proposed:
            return NodeOutcome(
                name, Verdict.DROPPED, Cause.UNMODELLED,
                reasons=(f"no victims proposed, and reprieve cannot choose them: {unmodelled}",),
            )
        # The scheduler's victims are kept; those promised to an earlier answer free nothing:
        # their room is already another preemptor's.
        taken = sorted(p.key for p in proposed if p.uid in promised)
        if taken:
            return _already_promised(name, taken)
        return _keep_scheduler_victims(
            name, proposed, view, screen, order, gang_of, budgets, Cause.UNMODELLED, unmodelled
        )

    here = _records_here(view, node, preemptor, in_flight, proposed)
    node, reservations, promised, set_aside = here
    on = {p.uid for p in node.pods}
    as_proposed, proposed = proposed, [p for p in proposed if p.uid in on]  # promised ones are gone, unless terminating
    at_least = _scheduler_sees_less(node, preemptor, reservations, proposed, promised)
    if at_least is None and (set_aside or _maybe_assumed(view, name, preemptor)):
        at_least = _freed(proposed, promised)
    nameable = _nameable({p.uid for p in proposed if p.uid not in promised}, now)

    def select(at_least: Vector | None) -> VictimSelection | NodeRejected:
        return select_victims(
            node=node, preemptor=preemptor, reservations=reservations, budgets_of=budgets, screen=screen,
            nameable=nameable, at_least=at_least, swap=swap, gang_of=gang_of, order=order, homes=homes.of(view),
        )

    selection = select(at_least)
    if (
        isinstance(selection, VictimSelection) and not selection.victims and as_proposed
        and any(p.terminating and p.preempted and p.priority < preemptor.priority for p in node.pods)
    ):
        # Waiting would count on room the scheduler's own preemptions free: it has seen those
        # pods (and may have seen them go, and something else take their room); its victims are
        # the floor, as where the proposal shows it sees less room.
        at_least = _freed(proposed, promised)
        selection = select(at_least)
    if isinstance(selection, NodeRejected):
        if selection.cause is Cause.DOES_NOT_FIT:
            return _no_room_here(
                name, selection, node, preemptor, reservations, as_proposed, proposed, promised, view, screen, order,
                gang_of, budgets,
            )
        return NodeOutcome(name, Verdict.DROPPED, selection.cause, reasons=(selection.reason,))
    if not selection.victims and not as_proposed:
        # kube-scheduler 1.38 proposes nodes its own filters pass, with no victims, when an
        # extender's filter rejected them: the pod fits there in the scheduler's view, and in
        # reprieve's too (or once pods the scheduler has already seen go are gone).
        return NodeOutcome(
            name, Verdict.DROPPED, Cause.NOTHING_TO_EVICT,
            reasons=("proposed with no victims, and the pod fits here in reprieve's view: "
                     "another extender's filter rejected the node, for a reason reprieve does not know",),
        )
    if not selection.victims:
        staying = [p for p in view.nodes[name].pods if p.uid in promised and not p.terminating]
        if staying and _room_after(_with(node, staying), preemptor, reservations, _leaving(node, preemptor)) is None:
            # The pod fits only once victims promised to an earlier answer go, and the view
            # does not show them going: that answer's preemptor may be gone, its victims never
            # deleted, and waiting would then be for nothing. The scheduler's victims are kept
            # (naming again one already going costs nothing).
            why = f"fits once {_keys(staying)} go for an earlier answer, which the view does not show yet"
            return _keep_scheduler_victims(
                name, as_proposed, view, screen, order, gang_of, budgets, Cause.IN_FLIGHT, why
            )
        return NodeOutcome(
            name, Verdict.DROPPED, Cause.LEAVING, reasons=("fits once the pods terminating here are gone",)
        )
    cause, reasons = Cause.NONE, selection.reasons
    if set_aside:
        cause = Cause.SCHEDULER_NEWER
        reasons = (
            f"room held for nominated {_keys(set_aside)} set aside: the scheduler's own victims make room "
            "here only without it, so the scheduler no longer holds it (reprieve's record is older)",
            *reasons,
        )
    elif at_least is not None:
        cause = Cause.SCHEDULER_SEES_LESS
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        cause,
        victims=selection.victims,
        violations=selection.violations,
        cost=order.cost(
            selection.victims, selection.violations, selection.opted_out, selection.broken.count,
            selection.homeless.count,
        ),
        reasons=reasons,
        broken=selection.broken,
    )


def _no_room_here(
    name: str,
    rejected: NodeRejected,
    node: NodeInfo,
    preemptor: Pod,
    reservations: Sequence[Pod],
    as_proposed: list[Pod],
    proposed: list[Pod],
    promised: set[str],
    view: ClusterView,
    screen: tenancy.Screen | None,
    order: ranking.Order,
    gang_of: gangs.GangOf,
    budgets: BudgetsOf,
) -> NodeOutcome:
    """A proposed node where reprieve finds no room even with every lower-priority pod gone.

    The scheduler found room here with its own victims. Where they would make room in
    reprieve's view too but for room held for nominations the scheduler cannot know (another
    scheduler's pods), those are what stand in the way: a reason of reprieve's own, and the
    node is dropped. Otherwise reprieve's view of the node is older than the scheduler's (a
    pod gone that it still shows, a nomination cleared): dropping the node would rest on that
    older record and could leave the preemptor pending where the scheduler would place it, so
    the scheduler's victims are kept as it proposed them (unless the rules protect one, or one
    already goes for another answer in flight)."""
    others = [h for h in reservations if not known_to_scheduler(h, preemptor)]
    if not as_proposed or (others and _room_after(node, preemptor, (), proposed) is not None):
        held = f"; room held for {_keys(others)}, nominated by another scheduler" if others else ""
        return NodeOutcome(name, Verdict.DROPPED, rejected.cause, reasons=(rejected.reason + held,))
    taken = sorted(p.key for p in as_proposed if p.uid in promised)
    if taken:
        return _already_promised(name, taken)
    why = f"the scheduler's view of the node is newer than reprieve's, whose own finding was: {rejected.reason}"
    kept = _keep_scheduler_victims(
        name, as_proposed, view, screen, order, gang_of, budgets, Cause.SCHEDULER_NEWER, why
    )
    if kept.verdict is Verdict.DROPPED:
        return kept
    # Not ranked with the nodes reprieve could judge: offered only if none of them can be.
    return dataclasses.replace(kept, verdict=Verdict.PASSED_THROUGH, cost=None)


class _Here(NamedTuple):
    """A candidate node as reprieve's records leave it (_records_here)."""

    node: NodeInfo  # without the victims of answers in flight held here (unless terminating)
    reservations: tuple[Pod, ...]  # nominated pods and preemptors of answers in flight holding room
    promised: set[str]  # UIDs of those answers' victims
    set_aside: tuple[Pod, ...]  # holders the asking scheduler's proposal shows it has moved past


def _records_here(
    view: ClusterView, node: NodeInfo, preemptor: Pod, in_flight: Sequence[InFlight], proposed: Sequence[Pod]
) -> _Here:
    """The node once the records that hold room against the preemptor take effect: nominations
    (view.reservations) and reprieve's answers in flight (_as_it_will_be: their victims gone,
    their preemptors holding room).

    The scheduler holds room for the pods it knows (its own nominations, and so the preemptors
    of the answers it took from reprieve: policy.view.known_to_scheduler), from its nominator,
    which is never behind reprieve's view, and its victims make room for the preemptor next to
    them. Where its victims make room here only once some of those holders are left out, the
    scheduler has moved past them (the nomination cleared, the pod bound or deleted, the answer
    not taken): reprieve's record is older, and their room is set aside, an answer's victims with
    it (they are not leaving for it). Holders the scheduler cannot know (another scheduler's)
    always hold, the victims of their answers staying promised. (The victims then free at least
    as much as the scheduler's: _evaluate.)"""
    holders = view.reservations(node.name, pod=preemptor)
    flights = _outranking(in_flight, node.name, preemptor)
    later, held = _as_it_will_be(view, node, holders, preemptor, flights)
    promised = {v.uid for f in flights for v in f.victims}
    if not any(known_to_scheduler(h, preemptor) for h in held) or _makes_room(later, preemptor, held, proposed):
        return _Here(later, held, promised, ())
    # Left out: the holders the scheduler knows, and with an answer's preemptor its victims,
    # which the proposal shows the scheduler has not taken (it proposes them live, or needs
    # them back to make room).
    kept = [f for f in flights if not known_to_scheduler(f.preemptor, preemptor)]
    alone, others = _as_it_will_be(
        view, node, tuple(h for h in holders if not known_to_scheduler(h, preemptor)), preemptor, kept
    )
    if not _makes_room(alone, preemptor, others, proposed):
        return _Here(later, held, promised, ())  # something else differs too: see _no_room_here
    return _Here(alone, others, {v.uid for f in kept for v in f.victims}, tuple(h for h in held if known_to_scheduler(h, preemptor)))


def _makes_room(node: NodeInfo, preemptor: Pod, held: Sequence[Pod], proposed: Sequence[Pod]) -> bool:
    """The scheduler's victims still on ``node`` (those of answers in flight are gone already)
    make room for the preemptor next to ``held``."""
    on = {p.uid for p in node.pods}
    return _room_after(node, preemptor, held, [p for p in proposed if p.uid in on]) is not None


def _room_after(node: NodeInfo, preemptor: Pod, held: Sequence[Pod], gone: Sequence[Pod]) -> Vector | None:
    """The room left on ``node`` for each resource the preemptor's fit checks once ``gone``
    leave and the preemptor and ``held`` are placed; None if it does not fit."""
    request = preemptor.requests
    freed = resources.add(*(p.requests for p in gone))
    used = resources.add(node.requested, *(p.requests for p in held))
    alloc = node.node.allocatable
    room = {r: alloc.get(r, 0) - used.get(r, 0) + freed.get(r, 0) - request[r] for r in resources.checked_resources(request)}
    return room if all(v >= 0 for v in room.values()) else None


def _freed(proposed: list[Pod], promised: set[str]) -> Vector:
    """What the scheduler's victims free that is not already another answer's."""
    return resources.add(*(p.requests for p in proposed if p.uid not in promised))


def _keys(pods: Sequence[Pod]) -> str:
    return ", ".join(sorted(p.key for p in pods))


def _scheduler_sees_less(
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
    room = _room_after(node, preemptor, reservations, proposed)
    if room is not None and any(all(p.requests.get(r, 0) <= room[r] for r in room) for p in live):
        return _freed(proposed, promised)
    return None


def _with(node: NodeInfo, pods: Sequence[Pod]) -> NodeInfo:
    return NodeInfo.build(node.node, (*node.pods, *pods))


def _leaving(node: NodeInfo, preemptor: Pod) -> list[Pod]:
    """The lower-priority pods already terminating on ``node``: their room comes free anyway."""
    return [p for p in node.pods if p.terminating and p.priority < preemptor.priority]


def _bound_elsewhere(view: ClusterView, uid: str, name: str) -> bool:
    pod = view.pods.get(uid)
    return pod is not None and pod.node_name is not None and pod.node_name != name


def _maybe_assumed(view: ClusterView, name: str, preemptor: Pod) -> bool:
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


def _nameable(proposed: set[str], now: float | None) -> Callable[[Pod], bool]:
    """Pods an answer may name: the scheduler must find each on the node in the snapshot of
    its current cycle, or it rejects the whole answer."""
    settled = None if now is None else now - SETTLE_SECONDS

    def nameable(pod: Pod) -> bool:
        if pod.uid in proposed:
            return True
        if pod.terminating:
            return False  # may be gone from the scheduler's snapshot; leaving anyway
        return settled is None or pod.bound_at is None or pod.bound_at <= settled

    return nameable


def _already_promised(name: str, promised: list[str]) -> NodeOutcome:
    return NodeOutcome(
        name,
        Verdict.DROPPED,
        Cause.IN_FLIGHT,
        reasons=(f"the scheduler's victims {', '.join(promised)} already go for another preemption",),
    )


def _outranking(in_flight: Sequence[InFlight], node: str, preemptor: Pod) -> list[InFlight]:
    """Answers in flight on ``node`` whose preemptors hold room against ``preemptor`` (priority
    >= its own, as nominated pods do). A lower-priority answer neither holds the room nor takes
    its victims from the preemptor: upstream would clear that nomination (X-2)."""
    return [f for f in in_flight if f.node == node and _holds_against(f, preemptor)]


def _holds_against(flight: InFlight, preemptor: Pod) -> bool:
    return flight.preemptor.priority >= preemptor.priority


def _promised(in_flight: Sequence[InFlight], node: str, preemptor: Pod) -> set[str]:
    return {v.uid for f in _outranking(in_flight, node, preemptor) for v in f.victims}


def _as_it_will_be(
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


def _unmodelled(view: ClusterView, preemptor: Pod, node: NodeInfo) -> str:
    if preemptor.unmodelled:
        return f"the pod uses {', '.join(preemptor.unmodelled)}, which reprieve does not model"
    blockers = view.summary(("anti-affinity",), _anti_affinity)(node.name)
    if blockers:
        return f"{', '.join(blockers)} on the node have required anti-affinity"
    return ""


def _anti_affinity(node: NodeInfo, _: tuple) -> tuple[str, ...]:
    """The pods on the node with required anti-affinity, sorted (kept with the view)."""
    return tuple(sorted(p.key for p in node.pods if POD_ANTI_AFFINITY in p.unmodelled))


def _keep_scheduler_victims(
    name: str,
    victims: list[Pod],
    view: ClusterView,
    screen: tenancy.Screen | None,
    order: ranking.Order,
    gang_of: gangs.GangOf,
    budgets: BudgetsOf,
    cause: Cause,
    why: str,
) -> NodeOutcome:
    """The scheduler's victims, unless the rules protect one of them: reprieve cannot choose
    others here, so the node is dropped."""
    opted_out = 0
    if screen is not None:
        for pod in victims:
            judgement, reason = screen.judge(pod)
            if judgement is tenancy.Judgement.PROTECTED:
                return NodeOutcome(
                    name, Verdict.DROPPED, Cause.PROTECTED, reasons=(f"{why}; but {pod.key} is protected: {reason}",)
                )
            opted_out += judgement is tenancy.Judgement.LAST_RESORT
        short = screen.over_share(victims)
        if short:
            return NodeOutcome(name, Verdict.DROPPED, Cause.QUEUE_SHARE, reasons=(f"{why}; but {short}",))
    violations = count_violations(victims, budgets)
    broken = gangs.count_broken(victims, gang_of)
    homeless = homes.homeless(victims, homes.of(view), node=name)
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        cause,
        victims=tuple(victims),
        violations=violations,
        cost=order.cost(victims, violations, opted_out, broken.count, homeless.count),
        kept_scheduler_victims=True,
        reasons=(
            f"kept the scheduler's victims: {why}", violations.describe(),
            *((broken.describe(),) if broken.count else ()),
            *((homeless.describe(),) if homeless.count else ()),
        ),
        broken=broken,
    )


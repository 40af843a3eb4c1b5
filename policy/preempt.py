"""The preempt verb's decision: which candidate nodes to offer, and which victims on each."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum

from policy import ranking
from policy.causes import Cause, Refusal
from policy.model import POD_ANTI_AFFINITY, Pod
from policy import tenancy
from policy.tenancy import Rules, Standing
from policy.pdb import NO_VIOLATIONS, BudgetsOf, Violations, count_violations
from policy.victims import NodeRejected, select_victims
from policy.view import ClusterView, NodeInfo


@dataclass(frozen=True, slots=True)
class Proposal:
    """A candidate node's victims as the scheduler proposes them (or as reprieve answers)."""

    uids: tuple[str, ...]
    num_pdb_violations: int


class Verdict(str, Enum):
    CHOSEN = "chosen"  # offered to the scheduler with reprieve's victims
    OUTRANKED = "outranked"  # feasible, but another node costs less
    DROPPED = "dropped"  # preemption cannot make room here
    PASSED_THROUGH = "passed through"  # unknown to reprieve: returned exactly as received


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


@dataclass(frozen=True, slots=True)
class PreemptDecision:
    answer: Mapping[str, Proposal]
    outcomes: tuple[NodeOutcome, ...]
    reasons: tuple[str, ...]
    refusal: Refusal = Refusal.NONE  # why no node was even considered


def decide(
    *,
    view: ClusterView,
    preemptor: Pod,
    proposals: Mapping[str, Proposal],
    rules: Rules | None = None,
    standing: Standing | None = None,
    in_flight: Sequence[tenancy.InFlight] = (),
    now: float | None = None,
) -> PreemptDecision:
    """Re-derive victims on each candidate node, drop hopeless nodes, offer the cheapest.

    Nodes or victim UIDs reprieve does not know are passed through untouched. If the
    preemptor has constraints reprieve does not model (policy.model), or a pod on the node
    has required anti-affinity that may be what blocks the preemptor, the scheduler's own
    victims are kept for that node and only their PodDisruptionBudget violations recounted
    (and the node dropped if the rules protect one of them).

    With ``rules`` (policy.tenancy), victims are chosen only among the pods the rules allow,
    and a preemptor still inside its preemption delay (measured against ``now``, seconds
    since the epoch) may not preempt yet. ``standing`` is ``tenancy.assess(rules, view)``,
    passed in when the caller keeps it for many decisions over the same view; ``in_flight``
    are earlier answers the view may not show yet (see tenancy.with_in_flight). With rules,
    only one node is offered even when several tie, so that the caller knows exactly which
    victims are in flight.
    """
    refusal, why = _ineligible(view, preemptor)
    screen = None
    if rules is not None and refusal is Refusal.NONE:
        if standing is None:
            standing = tenancy.assess(rules, view, pending=(preemptor,))
        elif preemptor.uid not in standing.membership:
            standing = tenancy.with_pending(standing, (preemptor,))
        in_flight = [f for f in in_flight if f.preemptor.uid != preemptor.uid]
        standing = tenancy.with_in_flight(standing, view, in_flight)
        wait = tenancy.delay_left(rules=rules, standing=standing, preemptor=preemptor, now=now)
        if wait > 0:
            refusal, why = Refusal.DELAY, f"pending for less than its preemption delay: {wait:.0f}s to go"
        else:
            screen = tenancy.screen(standing=standing, view=view, preemptor=preemptor)
    if refusal is not Refusal.NONE:
        return PreemptDecision(answer={}, outcomes=(), reasons=(why,), refusal=refusal)

    outcomes: dict[str, NodeOutcome] = {}
    for name in sorted(proposals):
        outcome = _evaluate(view, preemptor, name, proposals[name], screen, in_flight)
        if screen is not None and outcome.verdict is Verdict.PASSED_THROUGH:
            # The rules cannot be checked on victims reprieve does not know: not offered.
            outcome = dataclasses.replace(
                outcome, verdict=Verdict.DROPPED, reasons=(*outcome.reasons, "with a policy, not offered unjudged")
            )
        outcomes[name] = outcome

    costs = {n: o.cost for n, o in outcomes.items() if o.cost is not None}
    chosen = ranking.best(costs)
    reasons = []
    if rules is not None and len(chosen) > 1:
        reasons.append(f"{', '.join(chosen)} tie; with a policy only {chosen[0]} is offered (victims in flight stay known)")
        chosen = chosen[:1]
    if chosen:
        winner = costs[chosen[0]]
        reasons.append(f"chose {', '.join(chosen)}: {winner.describe()}")
        for name, c in costs.items():
            if name not in chosen:
                outcomes[name] = dataclasses.replace(
                    outcomes[name],
                    verdict=Verdict.OUTRANKED,
                    reasons=(*outcomes[name].reasons, _not_chosen(c, winner, chosen[0])),
                )
    answer: dict[str, Proposal] = {}
    for name, outcome in outcomes.items():
        if outcome.verdict is Verdict.PASSED_THROUGH:
            answer[name] = proposals[name]
        elif outcome.verdict is Verdict.CHOSEN:
            answer[name] = Proposal(tuple(p.uid for p in outcome.victims), outcome.violations.count)
    if not answer:
        reasons.append("no candidate node can make room for the pod")
    return PreemptDecision(answer=answer, outcomes=tuple(outcomes.values()), reasons=tuple(reasons))


def _not_chosen(cost: ranking.Cost, winner: ranking.Cost, chosen: str) -> str:
    if cost.key == winner.key:
        return f"not chosen: ties with {chosen}, which is offered alone"
    return f"not chosen: {cost.versus(winner)} on {chosen}"


def _ineligible(view: ClusterView, preemptor: Pod) -> tuple[Refusal, str]:
    if preemptor.preemption_never:
        return Refusal.NEVER, "preemptionPolicy is Never"
    nominated = view.nodes.get(preemptor.nominated_node_name or "")
    if nominated is not None:
        leaving = [p.key for p in nominated.pods if p.terminating and p.priority < preemptor.priority]
        if leaving:
            return Refusal.VICTIMS_TERMINATING, (
                f"already nominated to {nominated.name}, where lower-priority "
                f"{', '.join(sorted(leaving))} are terminating; waiting for them"
            )
    return Refusal.NONE, ""


def _evaluate(
    view: ClusterView,
    preemptor: Pod,
    name: str,
    proposal: Proposal,
    screen: tenancy.Screen | None,
    in_flight: Sequence[tenancy.InFlight] = (),
) -> NodeOutcome:
    node = view.nodes.get(name)
    if node is None:
        return NodeOutcome(name, Verdict.PASSED_THROUGH, Cause.UNKNOWN_NODE, reasons=("node unknown to reprieve",))
    on_node = {p.uid: p for p in node.pods}
    unknown = [uid for uid in proposal.uids if uid not in on_node]
    if unknown:
        # The scheduler sees pods here that reprieve does not: its view of the node is stale.
        return NodeOutcome(
            name,
            Verdict.PASSED_THROUGH,
            Cause.UNKNOWN_VICTIM,
            reasons=(f"victim UID(s) {', '.join(unknown)} unknown to reprieve on this node",),
        )
    budgets = view.budgets_covering
    proposed = [on_node[uid] for uid in proposal.uids]
    # Where reprieve keeps the scheduler's victims, those promised to an earlier answer free
    # nothing: their room is already another preemptor's.
    promised = sorted(p.key for p in proposed if p.uid in _promised(in_flight, name))
    unmodelled = _unmodelled(preemptor, node)
    if unmodelled and promised:
        return _already_promised(name, promised)
    if unmodelled:
        return _keep_scheduler_victims(name, proposed, budgets, screen, Cause.UNMODELLED, unmodelled)

    reservations = view.reservations(name, pod=preemptor)
    node, reservations = _as_it_will_be(view, node, reservations, preemptor, in_flight)
    selection = select_victims(
        node=node, preemptor=preemptor, reservations=reservations, budgets_of=budgets, screen=screen
    )
    if isinstance(selection, NodeRejected):
        return NodeOutcome(name, Verdict.DROPPED, selection.cause, reasons=(selection.reason,))
    if not selection.victims:
        # The scheduler sees a shortage that reprieve's view does not: trust the fresher one.
        if promised:
            return _already_promised(name, promised)
        return _keep_scheduler_victims(
            name, proposed, budgets, screen, Cause.VIEW_HAS_ROOM, "reprieve's view has room without evicting"
        )
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        victims=selection.victims,
        violations=selection.violations,
        cost=ranking.cost(selection.victims, selection.violations, selection.opted_out),
        reasons=selection.reasons,
    )


def _already_promised(name: str, promised: list[str]) -> NodeOutcome:
    return NodeOutcome(
        name,
        Verdict.DROPPED,
        Cause.IN_FLIGHT,
        reasons=(f"the scheduler's victims {', '.join(promised)} already go for another preemption",),
    )


def _promised(in_flight: Sequence[tenancy.InFlight], node: str) -> set[str]:
    return {v.uid for f in in_flight if f.node == node for v in f.victims}


def _as_it_will_be(
    view: ClusterView,
    node: NodeInfo,
    reservations: tuple[Pod, ...],
    preemptor: Pod,
    in_flight: Sequence[tenancy.InFlight],
) -> tuple[NodeInfo, tuple[Pod, ...]]:
    """The node once earlier answers take effect: their victims gone, their preemptors
    nominated here (holding room against pods of lower or equal priority). The scheduler's
    own proposals may not show them yet either (it deletes victims asynchronously)."""
    mine = [f for f in in_flight if f.node == node.name]
    if not mine:
        return node, reservations
    leaving = _promised(mine, node.name)
    pods = [p for p in node.pods if p.uid not in leaving or p.terminating]
    held = {p.uid for p in reservations}
    for flight in mine:
        seen = view.pods.get(flight.preemptor.uid) or flight.preemptor
        if seen.node_name is None and seen.nominated_node_name != node.name and flight.preemptor.uid not in held:
            if flight.preemptor.priority >= preemptor.priority:
                reservations = (*reservations, flight.preemptor)
    if len(pods) != len(node.pods):
        node = NodeInfo.build(node.node, pods)
    return node, reservations


def _unmodelled(preemptor: Pod, node: NodeInfo) -> str:
    if preemptor.unmodelled:
        return f"the pod uses {', '.join(preemptor.unmodelled)}, which reprieve does not model"
    blockers = [p.key for p in node.pods if POD_ANTI_AFFINITY in p.unmodelled]
    if blockers:
        return f"{', '.join(sorted(blockers))} on the node have required anti-affinity"
    return ""


def _keep_scheduler_victims(
    name: str, victims: list[Pod], budgets: BudgetsOf, screen: tenancy.Screen | None, cause: Cause, why: str
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
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        cause,
        victims=tuple(victims),
        violations=violations,
        cost=ranking.cost(victims, violations, opted_out),
        kept_scheduler_victims=True,
        reasons=(f"kept the scheduler's victims: {why}", violations.describe()),
    )


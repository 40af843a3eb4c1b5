"""The answer to the scheduler: one node offered (the cheapest reprieve judged, else the
scheduler's own best among those passed through), or none, and whether reprieve defers; and the
scheduler's own victims costed beside reprieve's, so that what decided between them can be said."""

from __future__ import annotations

import dataclasses

from policy import guards, ranking
from policy.causes import GUARDED, Cause
from policy.model import Pod
from policy.preempt.candidate import price
from policy.preempt.decision import NodeOutcome, Proposal, Verdict
from policy.preempt.request import Request


def offer(request: Request, outcomes: dict[str, NodeOutcome]) -> tuple[dict[str, Proposal], list[str]]:
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
    answers = {n: _as_answered(request.proposals[n], o) for n, o in outcomes.items() if o.verdict is Verdict.PASSED_THROUGH}
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
        return {}, [_none(outcomes)]
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


_NAMED = 3  # nodes named in a reason before "and N more"


def _none(outcomes: dict[str, NodeOutcome]) -> str:
    """Why no node is offered: where guards dropped nodes, which and why (the first few)."""
    held = [o for o in outcomes.values() if o.verdict is Verdict.DROPPED and o.cause in GUARDED]
    if not held:
        return "no candidate node can make room for the pod"
    shown = "; ".join(f"{o.node}: {o.reasons[0]}" for o in held[:_NAMED])
    more = f"; and {len(held) - _NAMED} more node(s)" if len(held) > _NAMED else ""
    causes = {o.cause for o in held}
    without = " or ".join(
        words for cause, words in (
            (Cause.STRICT_BUDGET, "violating a strict PodDisruptionBudget"),
            (Cause.MIN_RUNTIME, "evicting a pod inside its minimum runtime"),
        ) if cause in causes
    )
    return f"no candidate node can make room for the pod without {without}: {shown}{more}"


def defers(request: Request, answer: dict[str, Proposal], outcomes: dict[str, NodeOutcome]) -> bool:
    """No node is offered, and the scheduler's own choice should stand (PreemptDecision.defers).

    Deferring hands every candidate back to the scheduler's own choice: only where that choice
    can break nothing reprieve knows (no rules to check, no victim promised to another answer,
    and under the guards every proposed victim known to reprieve and keeping them) and every
    candidate is a unit reprieve cannot name."""
    promised = {v.uid for f in request.in_flight for v in f.victims}
    return (
        not answer
        and request.screen is None
        and all(o.cause is Cause.VICTIMS_ELSEWHERE for o in outcomes.values())
        and not any(uid in promised for p in request.proposals.values() for uid in p.uids)
        and (not request.guarded or all(_keeps_guards(request, p) for p in request.proposals.values()))
    )


def with_proposed_costs(request: Request, outcomes: dict[str, NodeOutcome], answer: dict[str, Proposal]) -> None:
    """Cost the scheduler's proposed victims as reprieve's own (NodeOutcome.proposed_cost), so
    that what decided between the two can be said: on every node when ``request.exhaustive``
    (explain), else only on the node offered, and there only where reprieve's victims differ
    (one cost more per request)."""
    for name in outcomes if request.exhaustive else answer:
        outcome = outcomes[name]
        if request.exhaustive or (
            outcome.cost is not None and set(answer[name].uids) != set(request.proposals[name].uids)
        ):
            victims = _proposed_here(request, name)
            if victims:
                outcomes[name] = dataclasses.replace(outcome, proposed_cost=price(request, name, victims))


def _proposed_here(request: Request, name: str) -> list[Pod] | None:
    """The scheduler's proposed victims on ``name`` as the view has them; None where it
    proposes none, or one the view does not show on the node."""
    node = request.view.nodes.get(name)
    uids = request.proposals[name].uids
    if node is None or not uids:
        return None
    on_node = {p.uid: p for p in node.pods}
    if any(uid not in on_node for uid in uids):
        return None
    return [on_node[uid] for uid in uids]


def _keeps_guards(request: Request, proposal: Proposal) -> bool:
    """The scheduler's victims for one node are all known and keep the guards (policy.guards)."""
    pods = request.view.pods
    if any(uid not in pods for uid in proposal.uids):
        return False
    choosing = request.choosing
    victims = [pods[uid] for uid in proposal.uids]
    return guards.check(victims, inside=choosing.inside, strict_of=choosing.strict_of)[0] is Cause.NONE


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

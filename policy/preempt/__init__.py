"""The preempt verb's decision: which candidate nodes to offer, and which victims on each.

decide() (here) runs the package's modules in order: eligibility (may the pod preempt at all),
request (what every later step reads, gathered once), search (the candidates, best-first),
candidate (one node's outcome), held (the room nominations and answers in flight hold there)
and answer (the node offered). decision holds the types decide() returns."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from policy import apps, gangs, homes, jobs, ranking, victims
from policy.causes import Refusal
from policy.criteria import pending_room
from policy.guards import Guards
from policy.model import InFlight, Pod
from policy.pdb import less_spent
from policy.preempt.answer import defers, offer, with_proposed_costs
from policy.preempt.decision import SETTLE_SECONDS, NodeOutcome, PreemptDecision, Proposal, Verdict
from policy.preempt.eligibility import ineligible, under_rules
from policy.preempt.request import Request
from policy.preempt.search import outcomes_by_node
from policy.tenancy import Rules, Standing
from policy.view import ClusterView

__all__ = ["SETTLE_SECONDS", "NodeOutcome", "PreemptDecision", "Proposal", "Verdict", "decide"]


def decide(
    *,
    view: ClusterView,
    preemptor: Pod,
    proposals: Mapping[str, Proposal],
    rules: Rules | Standing | None = None,
    in_flight: Sequence[InFlight] = (),
    named: frozenset[str] = frozenset(),
    now: float | None = None,
    exhaustive: bool = False,
    order: ranking.Order = ranking.DEFAULT,
    guards: Guards | None = None,
) -> PreemptDecision:
    """Re-derive victims on each candidate node, drop hopeless nodes, offer the cheapest one.

    ``in_flight`` are earlier answers the view may not show yet, oldest first (the ledger's
    order, extender.state.ledger; the preemptor's own latest among them even where the view
    shows it carried out, read only as its own): their victims count as gone
    and are never named again, their preemptors hold room on their nodes. Exactly one node is
    offered (the first of exact ties), so that the answer recorded in flight is the one the
    scheduler carries out.

    The scheduler's cache is at least as fresh as reprieve's view for everything it did
    itself, so its proposal sets the floor: a node or victim UID reprieve does not know is
    passed through untouched; where the proposal shows the scheduler sees less room than
    reprieve (one of its victims could stay in reprieve's view), reprieve's victims free at
    least as much as the scheduler's; and reprieve names only pods the scheduler can resolve
    (no terminating pod and no pod bound less than SETTLE_SECONDS before ``now`` unless the
    scheduler proposed it; nor, unless proposed, a victim of an answer in flight, the
    preemptor's own earlier one included, or one of ``named``: victims of reprieve's answers no
    longer in flight given lately, which the scheduler may have deleted). If the preemptor has constraints reprieve does not model
    (policy.model), or a pod on the node has required anti-affinity that may be what blocks
    the preemptor, the scheduler's own victims are kept for that node and only their
    PodDisruptionBudget violations recounted (and the node dropped if the rules protect one).

    With ``rules`` (policy.tenancy), victims are chosen only among the pods the rules allow,
    and a preemptor still inside its preemption delay (measured against ``now``, seconds
    since the epoch) may not preempt yet. ``rules`` may be their Standing in ``view``
    (``tenancy.assess(rules, view)``, which holds them), where the caller keeps it for many
    decisions over the same view. ``order`` ranks
    victim sets and nodes (policy.ranking; a policy file may reorder it).

    With ``guards`` (policy.guards: the policy's strictBudgets and minimumRuntime, which need
    no queue rule), pods inside their minimum runtime at ``now`` are never victims, and no node
    is offered whose victims violate a strict budget: each node's search looks first for a set
    that violates none (``order`` gains that criterion first), and the scheduler's own victims
    are kept only where they keep both. As with rules, a node or victim reprieve does not know
    is not offered (it cannot be checked). Where every node is dropped the answer is empty.
    """
    # Its own answers (the scheduler may have seen their victims go: eligibility reads those on
    # the node it is nominated to), and the preemptors answered after the latest of them
    # (in_flight is oldest first).
    mine = [i for i, f in enumerate(in_flight) if f.preemptor.uid == preemptor.uid]
    own = tuple(in_flight[i] for i in mine)
    answered_since = frozenset(f.preemptor.uid for f in in_flight[mine[-1] + 1 :]) if mine else frozenset()
    # Every victim reprieve has named lately: the scheduler may have deleted it while the view
    # shows it running (candidate._unnameable).
    answered = named.union(v.uid for f in in_flight for v in f.victims)
    # Not its own earlier answer, nor one for an earlier pod of its name: the API server holds
    # one pod per name, so that one was deleted (policy.view.ClusterView.reservations).
    in_flight = tuple(f for f in in_flight if f.preemptor.key != preemptor.key)
    on_nominated = proposals.get(preemptor.nominated_node_name or "")
    refusal, why = ineligible(
        view, preemptor, in_flight, on_nominated.uids if on_nominated is not None else None, own, answered_since
    )
    screen = None
    if rules is not None and refusal is Refusal.NONE:
        refusal, why, screen = under_rules(rules, view, preemptor, in_flight, now)
    if refusal is not Refusal.NONE:
        return PreemptDecision(answer={}, outcomes=(), reasons=(why,), refusal=refusal, order=order)

    # Victims of answers in flight still run in the view: their gangs can spare that many
    # fewer, their budgets allow that many fewer disruptions (the status has not counted
    # them yet), their applications run that many fewer pods (or already end), and their
    # Jobs have that many fewer retries (nor have the Jobs' statuses).
    gang_of = gangs.less_taken(view.gang_of, (v for f in in_flight for v in f.victims))
    budgets = less_spent(view.budgets_covering, (v for f in in_flight for v in f.victims))
    app_of = apps.less_taken(view.app_of, (v for f in in_flight for v in f.victims))
    stake_of = jobs.less_taken(view.stake_of, [v for f in in_flight for v in f.victims])
    where = homes.of(view)
    inside = strict_of = None
    if guards is not None:
        inside, strict_of = guards.inside(now), guards.strict_of(budgets, view)
        if strict_of is not None:
            order = order.with_strict()
    request = Request(
        view=view, preemptor=preemptor, proposals=proposals, in_flight=in_flight, screen=screen, now=now,
        order=order, exhaustive=exhaustive, gang_of=gang_of, budgets=budgets, app_of=app_of, stake_of=stake_of,
        homes=where,
        choosing=victims.Choosing(
            preemptor, budgets, screen, gang_of, order, where, inside=inside, strict_of=strict_of, app_of=app_of,
            stake_of=stake_of, now=now, pending=pending_room.queue(view, preemptor, (f.preemptor for f in in_flight)),
        ),
        guarded=guards is not None,
        answered=answered,
    )
    outcomes = outcomes_by_node(request)
    answer, reasons = offer(request, outcomes)
    with_proposed_costs(request, outcomes, answer)
    deferring = defers(request, answer, outcomes)
    if deferring:
        reasons = [
            "every node reprieve could offer needs victims on other nodes too (a victim unit spanning "
            "nodes), which an answer cannot name: the scheduler's own choice stands"
        ]
    return PreemptDecision(
        answer=answer, outcomes=tuple(outcomes.values()), reasons=tuple(reasons), defers=deferring, order=order,
        now=now,
    )

"""POST /preempt: re-derive kinder victims on each candidate node and offer only the cheapest node."""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Mapping

from extender.errors import Unanswerable
from extender import times, wire

from extender.state import translate
from extender.metrics import priority_band
from extender.serving.verbs import Context
from policy.causes import Cause, Refusal
from policy.model import Pod
from policy.preempt import NodeOutcome, PreemptDecision, Proposal, Verdict, decide
from policy.view import ClusterView

_log = logging.getLogger("reprieve")


def handle(body: bytes, ctx: Context) -> bytes:
    args = wire.parse(wire.ExtenderPreemptionArgs, body)
    proposals = {n: Proposal(uids, count) for n, (uids, count) in args.proposals().items()}
    if ctx.view is None:
        return ctx.not_ready("preempt", lambda: _answer(proposals))
    preemptor = translate.pod_record(args.pod, ctx.view.priority_classes, shared=False)
    del args  # its hundreds of proposal dicts: freed now, not carried through the decision
    policy = ctx.standings
    decision = decide(
        view=ctx.view,
        preemptor=preemptor,
        proposals=proposals,
        rules=policy.of(ctx.view) if policy else None,  # the rules' standing, kept per view
        in_flight=ctx.ledger.in_flight(ctx.view, asking=preemptor),
        named=ctx.ledger.named(),  # after in_flight, which may let answers go (keywords run in order)
        now=time.time(),
        order=ctx.order,
        guards=ctx.guards,
    )
    if ctx.stalled():  # stopped while deciding: the view may miss what the scheduler did meanwhile
        return ctx.not_ready("preempt", lambda: _answer(proposals))
    # In shadow mode the scheduler evicts its own victims: nothing is in flight, nothing to drop.
    gone = ctx.gone() if decision.answer and not ctx.shadow else None
    if not ctx.shadow:
        if decision.answer and not gone:
            (node,) = decision.answer
            chosen = next(o for o in decision.outcomes if o.node == node)
            shown_at = ctx.view.revision if preemptor.uid in ctx.view.pods else None
            ctx.ledger.record(preemptor, node, chosen.victims, decided_at=ctx.view.revision, shown_at=shown_at)
        elif not decision.waits:  # a pod told to wait keeps its answer: its victims stay its own
            # No node, or no caller: the scheduler asked again and got nothing from reprieve.
            ctx.ledger.forget(preemptor)

    if gone:
        _dropped(ctx, preemptor, decision, gone)
    elif ctx.events is not None:
        ctx.events.answered(ctx.view, preemptor, proposals, decision)
    _count(ctx, proposals, decision)
    ctx.decided(
        "preempt",
        pod=preemptor,
        outcome=_outcome(decision),
        refusal=decision.refusal,
        changed=_differs(proposals, decision.answer),
        notable=True,
        fallbacks=[o.cause.value for o in decision.outcomes if _fell_back(o)],
        details=lambda: _details(ctx.view, proposals, decision) | ({"dropped": gone} if gone else {}),
    )
    if ctx.shadow or gone:
        return _answer(proposals)
    if decision.defers:
        raise Unanswerable(times.readable(decision.reasons[0]))
    return _answer(decision.answer)


def _dropped(ctx: Context, preemptor: Pod, decision: PreemptDecision, why: str) -> None:
    """The answer's caller has gone: the scheduler went on without it (``ignorable``), so it
    is not held in flight (its victims were never promised, its room never taken), and the
    scheduler's own proposal is what goes back, should anyone still read it. Counted, logged,
    and said on the preemptor."""
    (node,) = decision.answer
    ctx.metrics.answers_dropped.labels("preempt", why).inc()
    _log.warning(
        "preempt answer for %s (node %s, %d victim(s)) not held in flight: its caller has gone (%s)",
        preemptor.key, node, len(decision.answer[node].uids), why,
    )
    if ctx.events is not None:
        ctx.events.dropped(preemptor, node, len(decision.answer[node].uids), why)


def _fell_back(outcome: NodeOutcome) -> bool:
    """reprieve left (part of) this node's answer to the scheduler's judgement."""
    return (
        outcome.verdict is Verdict.PASSED_THROUGH
        or outcome.kept_scheduler_victims
        or outcome.cause in (Cause.SCHEDULER_SEES_LESS, Cause.SCHEDULER_NEWER)
    )


def _answer(victims: Mapping[str, Proposal]) -> bytes:
    """reprieve's answer, or (shadow, not ready) the scheduler's proposal unchanged."""
    return wire.preemption_result({n: (p.uids, p.num_pdb_violations) for n, p in victims.items()})


def _outcome(decision: PreemptDecision) -> str:
    if decision.refusal is not Refusal.NONE:
        return "refused"
    if decision.defers:
        return "deferred"
    return "answered" if decision.answer else "no candidate"


def _differs(proposals: Mapping[str, Proposal], answer: Mapping[str, Proposal]) -> bool:
    """A node dropped, or other victims on one: the order of victims is not a different choice."""
    return answer.keys() != proposals.keys() or any(set(answer[n].uids) != set(proposals[n].uids) for n in answer)


def _count(ctx: Context, proposals: Mapping[str, Proposal], decision: PreemptDecision) -> None:
    m = ctx.metrics
    # Counted per label pair, not per node: up to 500 candidates per call (an enum's value is
    # read once per pair).
    for (verdict, cause), n in Counter([(o.verdict, o.cause) for o in decision.outcomes]).items():
        m.preempt_nodes.labels(verdict.value, cause.value).inc(n)
    # The victims that will go (reprieve offers one node).
    first = next((o for o in decision.outcomes if o.verdict is Verdict.CHOSEN), None)
    for victim in first.victims if first else ():
        m.victims.labels(victim.qos.wire, priority_band(victim.priority)).inc()
    # The scheduler picks the node with the fewest violations first, so a preemption costs the
    # fewest on offer: among its own proposals without reprieve, among reprieve's answer with it.
    # Counted only when both would evict, so that the difference is what reprieve's choice saved.
    if proposals and decision.answer:
        m.pdb_violations.labels("scheduler").inc(min(p.num_pdb_violations for p in proposals.values()))
        m.pdb_violations.labels("reprieve").inc(min(p.num_pdb_violations for p in decision.answer.values()))


# An enum's value, looked up: the log line reads two per node, up to 500 nodes.
_VALUE = {e: e.value for e in (*Verdict, *Cause)}


def _details(view: ClusterView, proposals: Mapping[str, Proposal], decision: PreemptDecision) -> dict:
    outcomes = {o.node: o for o in decision.outcomes}
    pods = view.pods
    shown: dict[tuple[str, ...], list[str]] = {}  # reasons as logged: the nodes left unsolved share a few

    def proposed(node: str) -> list[str]:
        return [pod.key if (pod := pods.get(uid)) is not None else uid for uid in proposals[node].uids]

    nodes = {}
    for name in sorted(proposals):
        o = outcomes.get(name)
        entry = {}
        if o is not None:  # None: the preemptor was refused before any node was judged
            entry = {"verdict": _VALUE[o.verdict], "cause": _VALUE[o.cause], "victims": [v.key for v in o.victims]}
            # None: not solved (policy.preempt), its violations were never counted.
            entry["pdb_violations"] = None if o.cause is Cause.NOT_SOLVED else o.violations.count
        entry["proposed"] = proposed(name)
        entry["proposed_pdb_violations"] = proposals[name].num_pdb_violations
        if o is not None and o.cost is not None and o.proposed_cost is not None:
            # policy.preempt costs the proposal on the node offered where reprieve's victims differ.
            entry["against_proposed"] = times.readable(o.cost.decided_by(o.proposed_cost))
        if o is not None:
            readable = shown.get(o.reasons)
            if readable is None:
                readable = shown[o.reasons] = [times.readable(r) for r in o.reasons]
            entry["reasons"] = list(readable)
        nodes[name] = entry
    return {
        "candidates": len(proposals),
        "chosen": sorted(decision.answer),
        "refusal": decision.refusal.value,
        "reasons": [times.readable(r) for r in decision.reasons],
        "nodes": nodes,
    }

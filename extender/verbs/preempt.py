"""POST /preempt: re-derive kinder victims on each candidate node and offer only the cheapest node."""

from __future__ import annotations

import time

from extender import translate, wire
from extender.logs import event
from extender.verbs import Context
from policy.preempt import Proposal, Verdict, decide


def handle(body: bytes, ctx: Context) -> bytes:
    started = time.perf_counter()
    args = wire.parse(wire.ExtenderPreemptionArgs, body)
    proposals = {n: Proposal(uids, count) for n, (uids, count) in args.proposals().items()}
    if ctx.view is None:
        ctx.metrics.not_ready.labels("preempt").inc()
        return wire.preemption_result({n: (p.uids, p.num_pdb_violations) for n, p in proposals.items()})
    preemptor = translate.pod_record(args.pod, ctx.view.priority_classes)
    policy = ctx.standings
    decision = decide(
        view=ctx.view,
        preemptor=preemptor,
        proposals=proposals,
        rules=policy.rules if policy else None,
        standing=policy.of(ctx.view) if policy else None,
        in_flight=policy.in_flight(ctx.view) if policy else (),
        now=time.time(),
    )
    if policy and decision.answer:
        chosen = next(o for o in decision.outcomes if o.verdict is Verdict.CHOSEN or o.node in decision.answer)
        policy.record(preemptor, chosen.node, chosen.victims)

    m = ctx.metrics
    for outcome in decision.outcomes:
        m.preempt_nodes.labels(outcome.verdict.value).inc()
        if outcome.verdict is Verdict.CHOSEN:
            for victim in outcome.victims:
                m.victims.labels(victim.qos.wire).inc()
    m.pdb_violations.labels("scheduler").inc(sum(p.num_pdb_violations for p in proposals.values()))
    m.pdb_violations.labels("reprieve").inc(sum(p.num_pdb_violations for p in decision.answer.values()))
    event(
        ctx.log,
        "preempt",
        pod=preemptor.key,
        priority=preemptor.priority,
        candidates=len(proposals),
        chosen=[o.node for o in decision.outcomes if o.verdict is Verdict.CHOSEN],
        reasons=list(decision.reasons),
        nodes={
            o.node: {
                "verdict": o.verdict.value,
                "victims": [v.key for v in o.victims],
                "pdb_violations": o.violations.count,
                "reasons": list(o.reasons),
            }
            for o in decision.outcomes
        },
        duration_ms=round((time.perf_counter() - started) * 1000, 3),
    )
    return wire.preemption_result({n: (p.uids, p.num_pdb_violations) for n, p in decision.answer.items()})

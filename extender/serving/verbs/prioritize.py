"""POST /prioritize: prefer roomy nodes that do not already run the pod's PDB siblings."""

from __future__ import annotations

from extender import wire

from extender.state import translate
from extender.serving.verbs import Context
from policy.causes import Cause
from policy.prioritize import score_nodes


def handle(body: bytes, ctx: Context) -> bytes:
    args = wire.parse(wire.ExtenderArgs, body)
    names = args.candidate_names()
    if ctx.view is None:
        return ctx.not_ready("prioritize", _stock)
    pod = translate.pod_record(args.pod, ctx.view.priority_classes, shared=False)
    scores = score_nodes(view=ctx.view, pod=pod, node_names=names)

    answer = [(s.node, s.score) for s in scores]
    distinct = {score for _, score in answer}
    ranked = len(distinct) > 1
    top = max(distinct, default=0)
    ctx.decided(
        "prioritize",
        pod=pod,
        outcome="ranked" if ranked else "all equal",
        changed=ranked,
        notable=False,  # once per scheduled pod: see docs/observability.md, "Log levels"
        fallbacks=[Cause.UNKNOWN_NODE.value] if any(s.room is None for s in scores) else (),
        details=lambda: {
            "candidates": len(names),
            "best": [s.node for s in scores if s.score == top] if ranked else [],
            "nodes": {s.node: {"score": s.score, "reason": s.reason} for s in scores},
        },
    )
    if ctx.shadow:
        return _stock()
    return wire.host_priorities(answer)


def _stock() -> bytes:
    """The scheduler's own ranking: no scores. Every node then gets 0 from reprieve, the same
    for all; explicit zeros would not do, as kube-scheduler breaks ties at random only between
    nodes an extender scored (prioritizeNodes, v1.36)."""
    return wire.host_priorities(())

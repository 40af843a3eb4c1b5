"""POST /prioritize: prefer roomy nodes that do not already run the pod's PDB siblings."""

from __future__ import annotations

from extender import translate, wire
from extender.verbs import Context
from policy.prioritize import score_nodes


def handle(body: bytes, ctx: Context) -> bytes:
    args = wire.parse(wire.ExtenderArgs, body)
    names = args.candidate_names()
    if ctx.view is None:
        ctx.metrics.not_ready.labels("prioritize").inc()
        return wire.host_priorities(())
    pod = translate.pod_record(args.pod, ctx.view.priority_classes)
    scores = score_nodes(view=ctx.view, pod=pod, node_names=names)
    return wire.host_priorities((s.node, s.score) for s in scores)

"""POST /filter: reject nodes whose free room is held for nominated pods of higher or equal priority."""

from __future__ import annotations

from extender import translate, wire
from extender.logs import event
from extender.verbs import Context
from policy.filter import filter_nodes


def handle(body: bytes, ctx: Context) -> bytes:
    args = wire.parse(wire.ExtenderArgs, body)
    names = args.candidate_names()
    if ctx.view is None:
        ctx.metrics.not_ready.labels("filter").inc()
        return wire.filter_result(args=args, passed=names, unresolvable={})
    pod = translate.pod_record(args.pod, ctx.view.priority_classes)
    decision = filter_nodes(view=ctx.view, pod=pod, node_names=names)
    m = ctx.metrics.filter_nodes
    m.labels("passed").inc(len(decision.passed))
    m.labels("rejected").inc(len(decision.rejected))
    if decision.rejected:
        event(ctx.log, "filter", pod=pod.key, priority=pod.priority, passed=len(decision.passed), rejected=decision.rejected)
    return wire.filter_result(args=args, passed=decision.passed, unresolvable=decision.rejected)

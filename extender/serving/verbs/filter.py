"""POST /filter: reject nodes whose free room is held for nominated pods of higher or equal priority."""

from __future__ import annotations

from extender import wire

from extender.state import translate
from extender.serving.verbs import Context
from policy.causes import Cause
from policy.filter import filter_nodes


def handle(body: bytes, ctx: Context) -> bytes:
    args = wire.parse(wire.ExtenderArgs, body)
    names = args.candidate_names()
    if ctx.view is None:
        return ctx.not_ready("filter", lambda: _stock(args, names))
    pod = translate.pod_record(args.pod, ctx.view.priority_classes, shared=False)
    decision = filter_nodes(view=ctx.view, pod=pod, node_names=names)

    ctx.metrics.filter_nodes.labels("passed").inc(len(decision.passed))
    ctx.metrics.filter_nodes.labels("rejected").inc(len(decision.rejected))
    unknown = [n for n in names if n not in ctx.view.nodes]
    ctx.decided(
        "filter",
        pod=pod,
        outcome="rejected" if decision.rejected else "passed",
        changed=bool(decision.rejected),
        notable=bool(decision.rejected),
        fallbacks=[Cause.UNKNOWN_NODE.value] if unknown else (),
        details=lambda: {
            "candidates": len(names),
            "passed": len(decision.passed),
            "rejected": dict(decision.rejected),
            "unknown": unknown,
        },
    )
    if ctx.shadow:
        return _stock(args, names)
    return wire.filter_result(args=args, passed=decision.passed, unresolvable=decision.rejected)


def _stock(args: wire.ExtenderArgs, names: list[str]) -> bytes:
    """The scheduler's own answer: every node passes."""
    return wire.filter_result(args=args, passed=names, unresolvable={})

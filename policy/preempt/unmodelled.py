"""What reprieve does not model about a preemptor on a node. Where there is some, only the
scheduler's own victims are known to make room: policy.preempt.candidate keeps them, and
policy.preempt.eligibility does not weigh other pods' requests against theirs."""

from __future__ import annotations

from policy.model import POD_ANTI_AFFINITY, Pod
from policy.view import ClusterView, NodeInfo


def unmodelled_here(view: ClusterView, preemptor: Pod, node: NodeInfo) -> str:
    """What may block the preemptor on ``node`` that reprieve does not model, or "": its own
    constraints (policy.model), or pods there with required anti-affinity."""
    if preemptor.unmodelled:
        return f"the pod uses {', '.join(preemptor.unmodelled)}, which reprieve does not model"
    blockers, _ = view.summary(("screening",), screening)(node.name)
    if blockers:
        return f"{', '.join(blockers)} on the node have required anti-affinity"
    return ""


def screening(node: NodeInfo, _: tuple) -> tuple[tuple[str, ...], dict[str, None]]:
    """The pods on the node with required anti-affinity, sorted (unmodelled_here), and the UIDs of
    every pod on it (policy.preempt.search checks up to 500 proposals a request against them: a
    small set per node is several times cheaper to ask than the view's every pod by UID), kept
    with the view and never changed. The UIDs are a dict's keys, not a frozenset: the garbage
    collector does not track a dict of strings, and walked each frozenset's every member in each
    full collection (half of one, 0.6 of 1.3 ms, at 500 candidates; docs/benchmarks.md)."""
    blockers = tuple(sorted(p.key for p in node.pods if POD_ANTI_AFFINITY in p.unmodelled))
    return blockers, dict.fromkeys(p.uid for p in node.pods)

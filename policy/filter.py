"""The filter verb's decision: which nodes can take the pod without using room held for others."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from policy import resources
from policy.model import Pod
from policy.view import ClusterView


@dataclass(frozen=True, slots=True)
class FilterDecision:
    passed: tuple[str, ...]
    failed: Mapping[str, str]  # preemption may help: FailedNodes
    unresolvable: Mapping[str, str]  # preemption cannot help: FailedAndUnresolvableNodes
    unknown: tuple[str, ...]  # passed because reprieve does not know them


def filter_nodes(*, view: ClusterView, pod: Pod, node_names: Iterable[str]) -> FilterDecision:
    """Keep the nodes where ``pod`` fits next to the bound pods and the room held for nominated pods.

    Room that an earlier preemption freed for a pod of higher or equal priority (a pod with
    ``status.nominatedNodeName`` and no node yet) counts as taken, as in upstream's
    ``addGENominatedPods``. A rejected node is unresolvable when the pod would not fit even
    if every lower-priority pod there were preempted; otherwise preemption may help.
    Nodes reprieve does not know pass: the scheduler's own filters already admitted them.
    """
    passed: list[str] = []
    failed: dict[str, str] = {}
    unresolvable: dict[str, str] = {}
    unknown: list[str] = []
    request = pod.requests
    for name in node_names:
        info = view.nodes.get(name)
        if info is None:
            passed.append(name)
            unknown.append(name)
            continue
        alloc = info.node.allocatable
        holders = view.reservations(name, pod=pod)
        held = resources.add(*(p.requests for p in holders)) if holders else resources.EMPTY
        if not resources.shortfalls(request=request, allocatable=alloc, used=resources.add(info.requested, held)):
            passed.append(name)
            continue
        by_holders = f" (room held for nominated {_describe(holders)})" if holders else ""
        kept = resources.add(info.requested_at_or_above(pod.priority), held)
        hopeless = resources.shortfalls(request=request, allocatable=alloc, used=kept)
        if hopeless:
            unresolvable[name] = (
                f"short of {resources.describe(hopeless)} even if every lower-priority pod "
                f"were preempted{by_holders}"
            )
            continue
        if holders and not resources.shortfalls(request=request, allocatable=alloc, used=info.requested):
            failed[name] = f"fits only in room held for nominated {_describe(holders)}"
        else:
            missing = resources.shortfalls(request=request, allocatable=alloc, used=resources.add(info.requested, held))
            failed[name] = f"short of {resources.describe(missing)}{by_holders}"
    return FilterDecision(tuple(passed), failed, unresolvable, tuple(unknown))


def _describe(pods: Iterable[Pod]) -> str:
    return ", ".join(f"{p.key} (priority {p.priority})" for p in sorted(pods, key=lambda p: p.key))

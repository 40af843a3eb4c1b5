"""The filter verb's decision: which nodes can take the pod without using room held for others."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from policy import resources
from policy.model import Pod
from policy.view import ClusterView, known_to_scheduler


@dataclass(frozen=True, slots=True)
class FilterDecision:
    passed: tuple[str, ...]
    rejected: Mapping[str, str]  # FailedAndUnresolvableNodes: the scheduler's preemption cannot help


def filter_nodes(*, view: ClusterView, pod: Pod, node_names: Iterable[str]) -> FilterDecision:
    """Reject the nodes where ``pod`` fits only by taking room held for nominated pods.

    Room that an earlier preemption freed for a pod of higher or equal priority (a pod with
    ``status.nominatedNodeName`` and no node yet) counts as taken, as in upstream's
    ``addGENominatedPods``.

    Only nominations the scheduler cannot know hold room here (another scheduler's pods,
    policy.view.known_to_scheduler): the scheduler's own filters count its own nominations,
    from its nominator, which is never behind reprieve's view. A node they admitted despite
    one of its own nominations is a node where that nomination no longer holds the room (it
    was cleared, the pod bound or deleted): reprieve's record of it is older, and rejecting
    for it would strand the pod where the scheduler could place it.

    Such a rejection is always unresolvable. The scheduler's own filters already admitted the
    node, so the hold is one it cannot see. Its preemption dry run would find
    room without evicting anyone and fail; marking the node unresolvable keeps it out of that
    dead end: upstream turns a dry run that evicts nobody into the error "expected at least one
    victim pod on node". The message still says whether evicting lower-priority pods would have
    helped.

    The scheduler sends only nodes its own resource filters admitted, from a view that is
    at least as fresh as reprieve's. So a node where reprieve sees too little room even
    without any reservation is passed: reprieve's view is behind (a deletion it has not
    seen yet), and rejecting would park the pod until the next cluster event. Nodes
    reprieve does not know pass too.

    The node a pod is itself nominated to always passes: it won room there by preemption,
    and the scheduler counts the other nominations to it. An unresolvable rejection there
    would make the scheduler clear the pod's nomination and hand its room to others (seen
    end to end: three pods nominated to one node while their victims still terminated).
    """
    passed: list[str] = []
    rejected: dict[str, str] = {}
    request = pod.requests
    nominated = view.nominated
    for name in node_names:
        if name not in nominated:  # no room held here (most nodes): the common case, first
            passed.append(name)
            continue
        info = view.nodes.get(name)
        if info is None or name == pod.nominated_node_name:
            passed.append(name)
            continue
        alloc = info.node.allocatable
        holders = [h for h in view.reservations(name, pod=pod) if not known_to_scheduler(h, pod)]
        if not holders:
            passed.append(name)
            continue
        held = resources.add(*(p.requests for p in holders))
        if not resources.shortfalls(request=request, allocatable=alloc, used=resources.add(info.requested, held)):
            passed.append(name)
            continue
        if resources.shortfalls(request=request, allocatable=alloc, used=info.requested):
            passed.append(name)
            continue
        kept = resources.add(info.requested_at_or_above(pod.priority), held)
        hopeless = resources.shortfalls(request=request, allocatable=alloc, used=kept)
        if hopeless:
            rejected[name] = (
                f"short of {resources.describe(hopeless)} even if every lower-priority pod were preempted: "
                f"room held for nominated {_describe(holders)}"
            )
        else:
            rejected[name] = f"fits only in room held for nominated {_describe(holders)}"
    return FilterDecision(tuple(passed), rejected)


def _describe(pods: Iterable[Pod]) -> str:
    return ", ".join(f"{p.key} (priority {p.priority})" for p in sorted(pods, key=lambda p: p.key))

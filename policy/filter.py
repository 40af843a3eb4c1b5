"""The filter verb's decision: which nodes can take the pod without using room held for others."""

from __future__ import annotations

import bisect
import itertools
import math
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

    Rejections are only for nominations the scheduler cannot know (another scheduler's pods,
    policy.view.known_to_scheduler). Its own it counts in its own filters, from its nominator,
    which is never behind reprieve's view: the node it sends is one where the pod fits beside
    the holds it still has. So where the pod fits beside the scheduler's own holds in reprieve's
    view too, they are counted, and another scheduler's holds come on top of them: passing the
    node because the pod fits beside either alone would give away another scheduler's room
    that the scheduler's own holds already leave no space for. Where the pod does not fit
    beside its own holds, the scheduler has moved past some of them (a nomination cleared, the
    pod bound or deleted) and reprieve cannot tell which: they are all set aside, since a
    rejection for them would rest on reprieve's older record and could strand the pod where the
    scheduler would place it. Either way an answer is never less safe than the scheduler's own
    (which counts no other scheduler's hold), and rejects only for another scheduler's holds.
    What this leaves: a hold of the scheduler's own that it has just dropped (the pod deleted,
    or bound on another node) and that reprieve's view still shows, where the pod also fits
    beside it, is counted, and may reject a node with room for the pod beside the other
    scheduler's holds; as with another scheduler's nomination cleared and not yet seen, the
    pod is retried on the next cluster event. (A nominee bound on this very node, the usual
    end of a nomination, takes the same room either way.)

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
    names = node_names if isinstance(node_names, (list, tuple)) else list(node_names)
    held = held_nodes(view, pod.priority, other_than=pod.scheduler_name)
    if not held or held.isdisjoint(names):
        # No hold on a node asked could reject one (the common case: most clusters have no
        # nomination, and the asking scheduler's own never reject): every node passes.
        return FilterDecision(tuple(names), {})
    # Only the nodes with such a hold are looked at (each node's answer is its own); the
    # others pass.
    rejected = filter_each(view=view, pod=pod, node_names=list(filter(held.__contains__, names))).rejected
    return FilterDecision(tuple(itertools.filterfalse(rejected.__contains__, names)) if rejected else tuple(names), rejected)


def filter_each(*, view: ClusterView, pod: Pod, node_names: Iterable[str]) -> FilterDecision:
    """filter_nodes, node by node (what it answers where some node asked holds room)."""
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
        reservations = view.reservations(name, pod=pod)
        holders = [h for h in reservations if not known_to_scheduler(h, pod)]
        if not holders:
            passed.append(name)
            continue
        own = _counted_own(info.requested, [h for h in reservations if known_to_scheduler(h, pod)], request, alloc)
        base = resources.add(info.requested, *(p.requests for p in own))
        held = resources.add(*(p.requests for p in holders))
        if not resources.shortfalls(request=request, allocatable=alloc, used=resources.add(base, held)):
            passed.append(name)
            continue
        if resources.shortfalls(request=request, allocatable=alloc, used=info.requested):
            passed.append(name)
            continue
        kept = resources.add(info.requested_at_or_above(pod.priority), *(p.requests for p in own), held)
        hopeless = resources.shortfalls(request=request, allocatable=alloc, used=kept)
        beside = f", next to the room the scheduler holds for its own nominated {_describe(own)}" if own else ""
        if hopeless:
            rejected[name] = (
                f"short of {resources.describe(hopeless)} even if every lower-priority pod were preempted: "
                f"room held for nominated {_describe(holders)}{beside}"
            )
        else:
            rejected[name] = f"fits only in room held for nominated {_describe(holders)}{beside}"
    return FilterDecision(tuple(passed), rejected)


# The memo entry (ClusterView.table) of a view's nominated pods' priorities: the node names of its
# tables are strings, so a tuple key stays out of their way.
_NOMINATED = ("nominated",)


def held_nodes(view: ClusterView, priority: int, *, other_than: str | None = None) -> set[str]:
    """The nodes where a pod nominated there has ``priority`` or more (and is not of scheduler
    ``other_than``): a superset of those where room is held against a pod of that priority
    (view.reservations also leaves out the pod itself).

    From a summary kept with the view, so that no nominated pod is walked per request: per
    nominated node, the highest priority nominated there, its scheduler, and the highest of
    the other schedulers' pods, ordered by the first. It holds the nominations it was made
    from: a view that shares them (the live store's, when none changed) shares it."""
    table = view.table(_NOMINATED)
    kept = table.get(_NOMINATED)
    if kept is None or kept[0] is not view.nominated:  # is: the summary holds the mapping it was made from
        kept = table[_NOMINATED] = (view.nominated, *_tops(view.nominated))
    _, tops, entries = kept
    return {
        name for _, name, scheduler, second in entries[bisect.bisect_left(tops, priority):]
        if scheduler != other_than or second >= priority
    }


def _tops(nominated) -> tuple[list[int], list[tuple[int, str, str, int | float]]]:
    """(the highest priorities, ascending; per node, that priority, the node, its scheduler and
    the highest priority of any other scheduler's pod there, in the same order)."""
    entries = []
    for name, pods in nominated.items():
        best = max(pods, key=lambda p: p.priority)
        others = [p.priority for p in pods if p.scheduler_name != best.scheduler_name]
        entries.append((best.priority, name, best.scheduler_name, max(others) if others else -math.inf))
    entries.sort(key=lambda e: e[0])
    return [e[0] for e in entries], entries


def _counted_own(
    used: resources.Vector, own: list[Pod], request: resources.Vector, alloc: resources.Vector
) -> list[Pod]:
    """The scheduler's own holds on the node, if the pod fits beside all of them in reprieve's
    view (the scheduler still holds them, as far as its answer shows); none if it does not
    (the scheduler has moved past some of them, and reprieve cannot tell which)."""
    beside = resources.add(used, *(p.requests for p in own))
    return own if own and not resources.shortfalls(request=request, allocatable=alloc, used=beside) else []


def _describe(pods: Iterable[Pod]) -> str:
    return ", ".join(f"{p.key} (priority {p.priority})" for p in sorted(pods, key=lambda p: p.key))

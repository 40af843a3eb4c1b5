"""Victims with somewhere to go: whether a victim's replacement fits on another node now.

A victim has a *home* when its controller re-creates it (a ReplicaSet, a StatefulSet, a
Job, ...) and the replacement, with the victim's requests, priority, node selector, required
node affinity and tolerations (policy.placement), fits on some node other than the one being
preempted without preempting anyone: its requests (the pod-count slot included) within what
the node's pods leave free, less the room held for nominated pods of the victim's priority or
more. A bare pod has no home; nor has a DaemonSet's or a static pod's, whose replacement
comes back on the same node. Inter-pod affinity, topology spread, volumes and host ports are
not modelled (docs/policy.md, "Victims with somewhere to go").

Victims are judged independently: one victim's home takes no room from another's, so adding a
victim never lowers the count of homeless ones (policy.ranking's exact search relies on it).
Terminating victims are leaving anyway and count neither way.

A view's Homes (``of(view)``) keeps, per replacement shape (requests, priority, placement),
the first two nodes where it fits, so that any exclusion leaves an answer: a shape is searched
once per view, then answered by a dict lookup. The search walks only the nodes with enough free
room of the requested resource fewest nodes have enough of (the nodes sorted by free room, per
resource, once per view; each node's figure is carried to the next view in the view's memo),
and, when those are many and the shape is not admitted everywhere, only the nodes that admit it.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from policy import resources
from policy.model import Pod
from policy.placement import Placement
from policy.view import ClusterView, NodeInfo

# Controllers that re-create a pod on the node it ran on, and how a reason says so.
SAME_NODE = {
    "DaemonSet": "its DaemonSet re-creates it on this node only",
    "Node": "a static pod: its kubelet re-creates it on this node only",
}
NO_CONTROLLER = "no controller re-creates it"
NO_ROOM = "its replacement fits on no other node without preemption"

# Shapes remembered per view (the oldest dropped first): a view's victims
# repeat a few shapes, and this bounds a view that lives long under varied questions.
SHAPES = 4096
# Sets of nodes kept per view (one per set of constraints or of tolerations asked): each may
# name every node, so fewer.
NODE_SETS = 64
# Nodes a shape's search tries first, in view order; candidates it examines before it looks
# only at the nodes that admit it (see Homes._search).
PROBE = 32
WALK = 256
# The memo's tables of free room, one per resource, carried from view to view: at most this many.
FREE_ROOM = "homes: free room"
RESOURCES = 16


def shape_of(pod: Pod) -> tuple:
    """What a pod's home depends on besides the view: pods of one shape have the same homes."""
    return (tuple(pod.requests.items()), pod.priority, pod.placement)


def of(view: ClusterView) -> "Homes":
    """``view``'s Homes, made on first use and kept with the view (never carried over)."""
    kept = view._homes.get("homes")
    if kept is None:
        kept = view._homes.setdefault("homes", Homes(view))
    return kept  # type: ignore[return-value]


class Homes:
    """Where the victims of one view could go (see the module docstring)."""

    def __init__(self, view: ClusterView) -> None:
        # The parts of the view it reads, not the view (which would then hold itself).
        self._nodes: Mapping[str, NodeInfo] = view.nodes
        self._nominated: Mapping[str, tuple[Pod, ...]] = view.nominated
        self._memo = view.memo
        # resource -> (minus each node's free room of it, ascending; the nodes in that order)
        self._by_free: dict[str, tuple[list[int], list[str]]] = {}
        # (node selector, affinity, tolerations) -> the nodes they admit, in view order, and as a set
        self._admitted: dict[tuple, tuple[tuple[str, ...], frozenset[str]]] = {}
        self._tainted: tuple[str, ...] | None = None  # the nodes with a taint or a cordon
        self._refused: dict[tuple, frozenset[str]] = {}  # tolerations -> tainted nodes they do not pass
        # (requests, priority, placement) -> the first (at most) two nodes where it fits
        self._found: dict[tuple, tuple[str, ...]] = {}

    def home(self, victim: Pod, *, excluding: str) -> str | None:
        """A node other than ``excluding`` (the node being preempted) where ``victim``'s
        replacement fits now, or None. ``victim`` is a pod of the view."""
        return self._home(victim, excluding)[0]

    def why_not(self, victim: Pod, *, excluding: str) -> str | None:
        """Why ``victim`` has no home (a reason for humans), or None if it has one."""
        return self._home(victim, excluding)[1]

    def _home(self, victim: Pod, excluding: str) -> tuple[str | None, str | None]:
        placement = victim.placement
        kind = placement.owner_kind
        if kind is None:
            return None, NO_CONTROLLER
        if kind in SAME_NODE:
            return None, SAME_NODE[kind]
        shape = shape_of(victim)
        found = self._found.get(shape)
        if found is None:
            if len(self._found) >= SHAPES:
                self._found.pop(next(iter(self._found)), None)
            found = self._found[shape] = self._search(victim.requests, victim.priority, placement)
        for name in found:
            if name != excluding:
                return name, None
        return None, NO_ROOM

    def _search(self, requests: Mapping[str, int], priority: int, placement: Placement) -> tuple[str, ...]:
        """The first two nodes where a pod of this shape fits (all of them if fewer).

        1. Probe the first PROBE nodes of the view: where most nodes have room (the common
           case) two of them fit, and nothing more is needed.
        2. Candidates: the nodes with enough free room of the requested resources, narrowed
           by one resource after another (the pod-count slot aside: nearly every node has
           one) until at most WALK are left or none narrows further.
        3. Walk them, checking everything, until two fit.
        4. A shape that has not found two among the first WALK candidates, and that some nodes
           do not admit (it names nodes by label or name, or some node has a taint or a cordon),
           looks only at the nodes it admits from then on: all of them, or the rest of the
           candidates, whichever is fewer. Finding those walks every node, once per view and
           set of constraints.
        """
        asked = [(r, requests[r]) for r in resources.checked_resources(requests)]
        nodes = self._nodes
        fits = self._fits
        found: list[str] = []
        for name in itertools.islice(nodes, PROBE):
            if fits(name, asked, priority, placement, True):
                found.append(name)
                if len(found) == 2:
                    return tuple(found)
        if len(nodes) <= PROBE:
            return tuple(found)
        candidates: list[str] | Mapping[str, NodeInfo] = nodes
        size = len(nodes)
        for r, amount in asked:
            if size <= WALK:
                break
            if r == resources.PODS:
                continue
            minus_free, names = self._index(r)
            enough = bisect.bisect_right(minus_free, -amount)
            if enough < size:
                candidates, size = names[:enough], enough
        walk = iter(candidates)
        narrows = size > WALK and (placement.constrained or bool(self._tainted_nodes()))
        for name in itertools.islice(walk, WALK) if narrows else walk:
            if name not in found and fits(name, asked, priority, placement, True):
                found.append(name)
                if len(found) == 2:
                    return tuple(found)
        if not narrows:
            return tuple(found)
        ordered, admitted = self._admitting(placement)
        if len(ordered) < size - WALK:
            rest = (n for n in ordered if n not in found)
        else:
            rest = (n for n in walk if n in admitted and n not in found)
        for name in rest:  # every one admits it: only room left to check
            if fits(name, asked, priority, placement, False):
                found.append(name)
                if len(found) == 2:
                    break
        return tuple(found)

    def _fits(self, name: str, asked: list[tuple[str, int]], priority: int, placement: Placement, admits: bool) -> bool:
        """Whether a pod of this shape fits on node ``name`` now (``admits``: checking its
        node selector, affinity and tolerations too)."""
        info = self._nodes[name]
        node = info.node
        allocatable, used = node.allocatable, info.requested
        holders = self._nominated.get(name)
        if holders:
            held = [p.requests for p in holders if p.priority >= priority]
            if held:
                used = resources.add(used, *held)
        for r, amount in asked:
            if amount > allocatable.get(r, 0) - used.get(r, 0):
                return False
        if not admits:
            return True
        if (node.taints or node.unschedulable) and not placement.tolerates(node):
            return False
        return not placement.constrained or placement.selects(node)

    def _index(self, resource: str) -> tuple[list[int], list[str]]:
        """Minus every node's free room of ``resource``, ascending, and the nodes in that order.

        Each node's figure is kept in the view's memo (a summary without REQUEST in its name:
        the live store carries it to the next view for the nodes that did not change), in this
        order, so that a later view only places the nodes that changed."""
        kept = self._by_free.get(resource)
        if kept is not None:
            return kept
        what = (FREE_ROOM, resource)
        table = self._memo.get(what, {})
        nodes = self._nodes
        missing = nodes.keys() - table.keys()
        if table and not (table.keys() - nodes.keys()) and len(missing) <= max(1, len(nodes) // 8):
            minus_free, names = list(table.values()), list(table)
            for name in sorted(missing):
                info = nodes[name]
                value = info.requested.get(resource, 0) - info.node.allocatable.get(resource, 0)
                at = bisect.bisect_right(minus_free, value)
                minus_free.insert(at, value)
                names.insert(at, name)
        else:
            free = {name: info.requested.get(resource, 0) - info.node.allocatable.get(resource, 0) for name, info in nodes.items()}
            names = sorted(free, key=free.__getitem__)
            minus_free = [free[name] for name in names]
        kept = self._by_free[resource] = (minus_free, names)
        if missing or not table:
            # Only so many resources carried (a made-up one would otherwise stay for good).
            # A copy of the keys: other requests' threads add and drop tables meanwhile.
            if what in self._memo or sum(w[0] == FREE_ROOM for w in list(self._memo)) < RESOURCES:
                self._memo[what] = dict(zip(names, minus_free))
        return kept

    def _admitting(self, placement: Placement) -> tuple[tuple[str, ...], frozenset[str]]:
        """The nodes that admit ``placement``, in view order, and as a set."""
        key = (placement.node_selector, placement.affinity, placement.tolerations)
        kept = self._admitted.get(key)
        if kept is None:
            if len(self._admitted) >= NODE_SETS:
                self._admitted.pop(next(iter(self._admitted)), None)
            nodes = self._nodes.items()
            selector = placement.node_selector
            if not placement.constrained:
                names = [name for name, _ in nodes]
            elif len(selector) == 1 and placement.affinity is None:  # the common case, written out
                ((label, value),) = selector
                names = [name for name, info in nodes if info.node.labels.get(label) == value]
            else:
                names = [name for name, info in nodes if placement.selects(info.node)]
            refused = self._refusing(placement)
            ordered = tuple(name for name in names if name not in refused) if refused else tuple(names)
            kept = self._admitted[key] = (ordered, frozenset(ordered))
        return kept

    def _refusing(self, placement: Placement) -> frozenset[str]:
        """The nodes whose taints or cordon ``placement``'s tolerations do not pass."""
        refused = self._refused.get(placement.tolerations)
        if refused is None:
            if len(self._refused) >= NODE_SETS:
                self._refused.pop(next(iter(self._refused)), None)
            nodes = self._nodes
            refused = frozenset(name for name in self._tainted_nodes() if not placement.tolerates(nodes[name].node))
            self._refused[placement.tolerations] = refused
        return refused

    def _tainted_nodes(self) -> tuple[str, ...]:
        if self._tainted is None:
            self._tainted = tuple(name for name, info in self._nodes.items() if info.node.taints or info.node.unschedulable)
        return self._tainted


@dataclass(frozen=True, slots=True)
class Homeless:
    """The victims of an answer that have nowhere else to go."""

    pods: tuple[str, ...]  # their keys (namespace/name), sorted
    reasons: tuple[str, ...]  # why, one per pod

    @property
    def count(self) -> int:
        return len(self.pods)

    def describe(self) -> str:
        if not self.pods:
            return "every victim has somewhere else to go"
        by_reason: dict[str, list[str]] = {}
        for key, why in zip(self.pods, self.reasons):
            by_reason.setdefault(why, []).append(key)
        return f"{self.count} victim(s) have nowhere else to go: " + "; ".join(
            f"{', '.join(keys)} ({why})" for why, keys in by_reason.items()
        )


NONE_HOMELESS = Homeless((), ())


def homeless(victims: Iterable[Pod], homes: Homes, *, node: str) -> Homeless:
    """The live ``victims`` of preempting ``node`` whose replacements fit on no other node
    (or that nothing replaces), each judged alone."""
    found = []
    for pod in victims:
        if pod.terminating:
            continue
        why = homes.why_not(pod, excluding=node)
        if why is not None:
            found.append((pod.key, why))
    if not found:
        return NONE_HOMELESS
    found.sort()
    return Homeless(tuple(k for k, _ in found), tuple(w for _, w in found))

"""The prioritize verb's scores.

For each node, with ``room`` the mean, over the resources the pod requests (cpu and memory
when it requests neither), of the fraction of allocatable still free after the bound pods,
the room held for nominated pods of higher or equal priority, and the pod itself:

    score = floor(9 * room) + (0 if the node runs a pod covered by one of the pod's own
                                 PodDisruptionBudgets, else 1)

so scores are integers in 0..10, emptier nodes score higher, and of two otherwise equal
nodes the one without the pod's PDB siblings wins (a later preemption there would not cost
the same budget twice). Nodes reprieve does not know score 0, the lowest: the same as leaving
them out of the answer, which the scheduler also reads as 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import NamedTuple

from policy import resources
from policy.model import Pod
from policy.filter import held_nodes
from policy.quantity import CPU
from policy.view import BUDGETS, REQUEST, ClusterView, NodeInfo

MAX_SCORE = 10


class NodeScore(NamedTuple):
    """One node's score (a named tuple: 5,000 are made per call, and a frozen dataclass costs
    several times as much to build)."""

    node: str
    score: int
    room: float | None = None  # None: a node unknown to reprieve
    holders: int = 0  # nominated pods whose room is kept free
    siblings: tuple[Pod, ...] = ()  # pods here under one of the pod's own budgets

    @property
    def reason(self) -> str:
        """Written only when asked (the decision log at debug level): 5,000 nodes per call."""
        if self.room is None:
            return "node unknown to reprieve"
        reason = f"{self.room:.0%} free after placing the pod"
        if self.holders:
            reason += f" and holding room for {self.holders} nominated pod(s)"
        if self.siblings:
            keys = sorted({p.key for p in self.siblings})
            reason += f"; runs {', '.join(keys)} under the pod's own PodDisruptionBudget"
        return reason


def score_nodes(*, view: ClusterView, pod: Pod, node_names: Iterable[str]) -> tuple[NodeScore, ...]:
    names = node_names if isinstance(node_names, (list, tuple)) else list(node_names)
    considered = _considered(pod)
    asked = tuple(pod.requests.get(r, 0) for r in considered)
    # Kept with the view for the next pod asking the same (a Deployment's replicas): the score
    # of each node without held room or siblings, filled by score_each (5,000 names per call).
    alone = view.table((REQUEST, "score", tuple(considered), asked))
    if alone:
        # Each node's score is its own: those kept for the shape stand wherever no room is held
        # and no sibling runs (the common case), and only the nodes asked where some is or does
        # are scored node by node. A node not scored yet (or unknown) sends all to score_each.
        touched = held_nodes(view, pod.priority) | _sibling_nodes(view, pod)
        hit = touched.intersection(names) if touched else None
        table = alone
        if hit:
            table = alone.copy()
            table.update((score.node, score) for score in score_each(view=view, pod=pod, node_names=list(hit), alone=alone))
        try:
            return tuple(map(table.__getitem__, names))
        except KeyError:
            pass
    return score_each(view=view, pod=pod, node_names=names, alone=alone)


def score_each(
    *, view: ClusterView, pod: Pod, node_names: Iterable[str], alone: dict[str, object] | None = None
) -> tuple[NodeScore, ...]:
    """score_nodes, node by node (what it answers where a node asked holds room or runs a
    sibling, or has no score kept yet). ``alone``: the view's table of scores for the pod's
    shape, if the caller has it (asking the view for it twice would count as two requests)."""
    considered = _considered(pod)
    siblings_on: dict[str, list[Pod]] = {}  # node -> pods there under one of the pod's own budgets
    for budget in view.budgets_covering(pod):
        for member in view.budget_members.get(budget.key, ()):
            if member.node_name and member.uid != pod.uid:
                siblings_on.setdefault(member.node_name, []).append(member)
    asked = tuple(pod.requests.get(r, 0) for r in considered)
    free = view.summary(("free", tuple(considered)), _free)
    if alone is None:
        alone = view.table((REQUEST, "score", tuple(considered), asked))
    plain: dict[tuple, tuple[int, float]] = {}  # free row -> (score, room): nodes alike score alike
    nodes, nominated = view.nodes, view.nominated
    scores = []
    add = scores.append
    for name in node_names:
        score = alone.get(name)
        if score is None:
            if name not in nodes:
                add(NodeScore(name, 0))
                continue
            row = free(name)
            known = plain.get(row)
            if known is None:
                room = _room(row, asked)
                known = plain[row] = (math.floor(9 * room) + 1, room)
            score = alone[name] = NodeScore(name, *known)
        holders = view.reservations(name, pod=pod) if name in nominated else ()
        if holders:
            held = resources.add(*(h.requests for h in holders))
            room = _room(free(name), tuple(a + held.get(r, 0) for r, a in zip(considered, asked)))
            score = NodeScore(name, math.floor(9 * room) + 1, room, len(holders))
        siblings = siblings_on.get(name) if siblings_on else None
        if siblings:
            score = score._replace(score=score.score - 1, siblings=tuple(siblings))
        add(score)
    return tuple(scores)


def _considered(pod: Pod) -> list[str]:
    return [r for r, v in pod.requests.items() if v > 0 and r != resources.PODS] or [CPU, resources.MEMORY]


# The memo entries (ClusterView.table) of the nodes each budget's members run on: the node names
# of its tables are strings, so tuple keys stay out of their way; dropped with the view's other
# summaries of the budgets when they change (BUDGETS), and so with those of deleted budgets.
_MEMBERS = (BUDGETS, "members' nodes")


def _sibling_nodes(view: ClusterView, pod: Pod) -> set[str]:
    """The nodes where a pod under one of ``pod``'s own budgets runs (the pod itself included:
    a superset of score_each's siblings), from a summary kept with the view per budget, so that
    no member is walked per request; it holds the members it was made from, and a view that
    shares them (the live store's, when no member changed) shares it."""
    budgets = view.budgets_covering(pod)
    if not budgets:
        return set()
    table = view.table(_MEMBERS)
    found: set[str] = set()
    for budget in budgets:
        members = view.budget_members.get(budget.key, ())
        kept = table.get(("budget", budget.key))
        if kept is None or kept[0] is not members:
            kept = table[("budget", budget.key)] = (members, frozenset(m.node_name for m in members if m.node_name))
        found |= kept[1]
    return found


def _free(info: NodeInfo, what: tuple) -> tuple[tuple[int, int], ...]:
    """(allocatable - requested, allocatable) per resource of ``what[1]``: what the node has
    left before any pod comes, kept with the view (it does not depend on the pod)."""
    alloc, requested = info.node.allocatable, info.requested
    return tuple((alloc.get(r, 0) - requested.get(r, 0), alloc.get(r, 0)) for r in what[1])


def _room(row: tuple[tuple[int, int], ...], asked: tuple[int, ...]) -> float:
    """The mean fraction of allocatable left once ``asked`` is placed too."""
    room = 0.0
    for (free, total), want in zip(row, asked):
        if total > 0:
            room += max(0, free - want) / total
    return room / len(row)

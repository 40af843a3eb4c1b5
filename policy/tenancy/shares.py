"""Share accounting over one cluster view: each queue's usage, demand, guarantee (its own, or
inherited down the tree: policy.tenancy.inheritance), deserved share and share.

``assess`` counts every pod of a view, ``reassess`` updates an assessment with the pods and
nodes that changed since, and ``with_pending`` adds pending pods the view does not hold yet.
Each keeps the tallies it counted (``Standing.tally``) and computes the shares from them.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from policy import resources
from policy.model import Pod
from policy.resources import Vector
from policy.tenancy.inheritance import Inherited, guarantee, inherited
from policy.tenancy.proportion import water_fill
from policy.tenancy.rules import Rules
from policy.tenancy.tally import Tally, accumulate, count
from policy.view import ClusterView


@dataclass(frozen=True, slots=True)
class QueueStanding:
    name: str
    usage: Vector  # bound (not terminating) and nominated pods, subtree included
    demand: Vector  # usage plus the pending pods' requests
    deserved: Vector  # the proportional split (empty without a weight)
    share: Vector  # max(guaranteed, deserved) per resource: what preemption defends
    guaranteed: Vector = field(default_factory=dict)  # its own guarantee, else the inherited one
    inherited: Mapping[str, Inherited] = field(default_factory=dict)  # resource -> where it came from


@dataclass(frozen=True, slots=True)
class Standing:
    """What the rules say about one cluster view: each queue's usage, demand and shares."""

    rules: Rules
    queues: Mapping[str, QueueStanding]
    membership: Mapping[str, str]  # pod UID -> queue, for every pod of the view
    # The tallies the shares were computed from, per queue (own pods only), and the capacity.
    tally: tuple[Mapping[str, Vector], Mapping[str, Vector], Vector] = field(repr=False, compare=False, default=({}, {}, {}))

    def queue_of(self, pod: Pod) -> str:
        """The queue ``pod`` was counted in; by the rules if it was not counted."""
        queue = self.membership.get(pod.uid)
        return queue if queue is not None else self.rules.queue_of(pod)


def assess(rules: Rules, view: ClusterView, *, pending: Iterable[Pod] = ()) -> Standing:
    """Usage, demand and shares of every queue. ``pending`` adds pods the view does not hold
    yet (a preemptor fresher than the view), so that their demand counts."""
    membership: dict[str, str] = {}
    usage: Tally = defaultdict(dict)
    waiting: Tally = defaultdict(dict)
    memo: dict[tuple, str] = {}
    by_labels = any(q.selector is not None for q in rules.queues)
    for pod in view.pods.values():
        # Label maps are shared between the view's pods (extender.state.translate), and the view
        # keeps them alive for this loop: their identity is a safe, cheap memo key.
        key = (pod.namespace, id(pod.labels)) if by_labels else (pod.namespace,)
        queue = memo.get(key)
        if queue is None:
            queue = memo[key] = rules.queue_of(pod)
        membership[pod.uid] = queue
        if not pod.terminating:  # a terminating pod is already leaving: its room is nobody's
            count(usage, waiting, queue, pod)
    capacity = resources.add(*(info.node.allocatable for info in view.nodes.values()))
    standing = _shares(rules, membership, usage, waiting, capacity)
    return with_pending(standing, [p for p in pending if p.uid not in view.pods])


def reassess(
    standing: Standing, before: ClusterView, after: ClusterView, pods: Iterable[str], nodes: Iterable[str]
) -> Standing:
    """``assess(rules, after)``, from ``standing`` = ``assess(rules, before)`` when only the pods
    with UIDs ``pods`` and the nodes named ``nodes`` differ between the views: each changed
    pod's old requests leave its queue's tally and its new ones join (the live store knows
    what changed, policy.view.Changes), so that a view costs what changed, not every pod."""
    rules = standing.rules
    usage, waiting, capacity = _copies(standing)
    membership = dict(standing.membership)
    for uid in pods:
        old, new = before.pods.get(uid), after.pods.get(uid)
        if old is not None:
            queue = membership.pop(uid, None) or rules.queue_of(old)
            if not old.terminating:
                count(usage, waiting, queue, old, -1)
        if new is not None:
            queue = membership[uid] = rules.queue_of(new)
            if not new.terminating:
                count(usage, waiting, queue, new)
    for name in nodes:
        old_info, new_info = before.nodes.get(name), after.nodes.get(name)
        if old_info is not None:
            accumulate(capacity, old_info.node.allocatable, -1)
        if new_info is not None:
            accumulate(capacity, new_info.node.allocatable)
    return _shares(rules, membership, _nonzero(usage), _nonzero(waiting), {r: v for r, v in capacity.items() if v})


def _nonzero(tally: Tally) -> dict[str, dict[str, int]]:
    """Tallies without the amounts that went back to zero (as assess never had them)."""
    kept = {q: {r: v for r, v in vector.items() if v} for q, vector in tally.items()}
    return {q: vector for q, vector in kept.items() if vector}


def with_pending(standing: Standing, pods: Iterable[Pod]) -> Standing:
    """The standing with ``pods`` (not in its view) added as pending demand."""
    pods = list(pods)
    if not pods:
        return standing
    rules = standing.rules
    usage, waiting, capacity = _copies(standing)
    membership = dict(standing.membership)
    for pod in pods:
        queue = membership[pod.uid] = rules.queue_of(pod)
        count(usage, waiting, queue, pod)
    return _shares(rules, membership, usage, waiting, capacity)


def _copies(standing: Standing) -> tuple[Tally, Tally, dict[str, int]]:
    """The standing's tallies, copied to be changed."""
    usage, waiting, capacity = standing.tally
    return (
        defaultdict(dict, {q: dict(v) for q, v in usage.items()}),
        defaultdict(dict, {q: dict(v) for q, v in waiting.items()}),
        dict(capacity),
    )


def _shares(
    rules: Rules,
    membership: Mapping[str, str],
    usage: Mapping[str, Vector],
    waiting: Mapping[str, Vector],
    capacity: Vector,
) -> Standing:
    names = rules.queue_names()

    def subtree_sum(table: Mapping[str, Vector], name: str) -> dict[str, int]:
        return resources.add(table.get(name, {}), *(subtree_sum(table, c) for c in rules.children(name)))

    used = {n: subtree_sum(usage, n) for n in names}
    demand = {n: resources.add(used[n], subtree_sum(waiting, n)) for n in names}
    got = inherited(rules, used)
    guaranteed = {n: guarantee(rules.queue(n).guaranteed, got.get(n, {})) for n in names}
    deserved: dict[str, Vector] = {}

    def split(parent: str | None, room: Vector) -> None:
        # Level by level: weighted children split their parent's deserved share, else its
        # guarantee (its own or inherited), else what the parent was given to split.
        weighted = [rules.queue(c) for c in rules.children(parent) if rules.queue(c).weight]
        shares = water_fill(room, [(q.name, q.weight or 0, demand[q.name]) for q in weighted])
        deserved.update(shares)
        for child in rules.children(parent):
            split(child, shares.get(child) or guaranteed[child] or room)

    split(None, capacity)
    queues = {}
    for name in names:
        share = resources.maximum(guaranteed[name], deserved.get(name, {}))
        queues[name] = QueueStanding(
            name, used[name], demand[name], deserved.get(name, {}), share, guaranteed[name], got.get(name, {})
        )
    return Standing(rules, queues, membership, (usage, waiting, capacity))

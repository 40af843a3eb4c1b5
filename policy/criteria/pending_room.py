"""Fewest pending pods left without room: where victim sets tie on everything before it, the one
whose node, once its victims are gone and the preemptor placed, still has room for more of the
pods waiting to be scheduled (issue 28: what the room left is good for).

The pods waiting are the view's pods the scheduler queues (no node, not terminating, not
scheduling-gated: policy.scheduling_queue) but the preemptor and those whose room is held already
(nominated to a node, or the preemptor of an answer in flight), that the node's filters admit
(policy.placement: cordon, taints, node selector and affinity); each is counted by its requests
alone, against the room the node has left: its allocatable, less what its pods request and what
the pods holding room there request (nominations, answers in flight: as policy.victims sees the
node), plus what the victims free, less the preemptor's requests. A set's value is how many of them would
not fit there, each alone; with no pending pod in the view every set's value is 0 and the
criterion decides nothing.

The preempt verb decides for one pod; the view holds the rest of the queue (the live watch sees
every pending pod; policy.replay puts the queue's pods in its view, as a dump holds them).

Not monotone in the victims: a victim more frees room, so the value may drop. Placed after the
number of victims it never makes reprieve evict a pod more for room (a set with a victim more
is worse on the number before this criterion is read); the exact search reads its least, 0,
which no set is below. Its node bound (policy.bounds) holds for the sets with the fewest victims
the node can need, the only ones that tie with the bound up to this criterion: they free at most
the largest candidates' requests, that many of them, and the terminating pods."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from policy.criteria.criterion import Criterion, Facts, Kind
from policy.model import Node, Pod
from policy.placement import Placement
from policy.resources import Vector, checked_resources
from policy.scheduling_queue import left_out

if TYPE_CHECKING:
    from policy.view import ClusterView

# What a pending pod needs of a node's room: the resources the scheduler checks (policy.resources)
# with their amounts, as (name, amount) pairs.
Need = tuple[tuple[str, int], ...]


@dataclass(frozen=True, slots=True)
class Queue:
    """The pending pods of one request's view: per node constraints (policy.placement), their
    needs with how many pods have each. ``admitted`` keeps, for the request, the needs a kind of
    node admits (nodes alike in what the placements read admit the same)."""

    by_placement: tuple[tuple[Placement, tuple[tuple[Need, int], ...]], ...]
    admitted: dict = field(default_factory=dict, compare=False, repr=False)
    labelled: bool = False  # some placement reads a node's labels or name (a selector or an affinity)

    @property
    def has_pods(self) -> bool:
        return bool(self.by_placement)


@dataclass(frozen=True, slots=True)
class Room:
    """One node's room for the pending pods, before any victim: ``base`` is its allocatable less
    its pods' requests and the preemptor's (may be negative); ``needs`` the needs of the pending
    pods its filters admit, with how many pods have each."""

    base: Vector
    needs: tuple[tuple[Need, int], ...]


def queue(view: ClusterView, preemptor: Pod, holding: Iterable[Pod] = ()) -> Queue:
    """The view's pods the scheduler queues (policy.scheduling_queue: no node, not terminating,
    not gated) and nominated nowhere (ClusterView.waiting), but ``preemptor`` and ``holding``
    (the preemptors of answers in flight: their room is held already, on their nodes, though the
    view may not show them nominated yet). They are grouped once per view (a queue may hold
    thousands of pods); a request only takes its own out. An earlier record of the preemptor's
    namespace and name (another UID: a pod deleted that the view still shows) is taken out too."""
    grouped, labelled, by_key = _grouped(view)
    out: Counter = Counter()
    for uid in {preemptor.uid, *(p.uid for p in holding)}:
        mine = view.waiting.get(uid)  # as the view counts it
        if mine is not None and _queued(mine):
            out[mine.placement, _need(mine)] += 1
    for stale in by_key.get(preemptor.key, ()):
        if stale.uid != preemptor.uid:
            out[stale.placement, _need(stale)] += 1
    if not out:
        return Queue(tuple((placement, tuple(needs.items())) for placement, needs in grouped.items()), labelled=labelled)
    by_placement = []
    for placement, needs in grouped.items():
        kept = tuple((need, left) for need, count in needs.items() if (left := count - out[placement, need]) > 0)
        if kept:
            by_placement.append((placement, kept))
    return Queue(tuple(by_placement), labelled=labelled)


def _grouped(view: ClusterView) -> tuple[dict[Placement, Counter], bool, dict[str, tuple[Pod, ...]]]:
    """``view``'s queue grouped by placement, then by need, whether a placement reads a node's
    labels, and the queued pods by namespace/name: made once per view and kept in its
    ``_pending`` (a view made with dataclasses.replace starts without it; the live store hands
    it on to its next view with ``carry``)."""
    kept = view._pending.get("grouped")
    if kept is None:
        counts: dict[Placement, Counter] = {}
        by_key: dict[str, tuple[Pod, ...]] = {}
        for pod in view.waiting.values():
            if _queued(pod):
                _add(counts, by_key, pod)
        kept = view._pending["grouped"] = (counts, _labelled(counts), by_key)
    return kept


def carry(prev: ClusterView, view: ClusterView, changed: Iterable[str]) -> None:
    """Give ``view`` the grouping of its queue from ``prev``'s, where that was made, updated for
    the pods ``changed`` (the UIDs of the pods added, changed or deleted between the two): the
    live store publishes a view per batch of events, and grouping a queue of thousands of pods
    afresh would cost the first request of each view several milliseconds. ``prev``'s own stays
    as it was (requests may still be reading it), so the index by namespace/name is copied
    whole: 0.05 ms at 5,000 pending pods, as ``waiting`` itself is."""
    kept = prev._pending.get("grouped")
    if kept is None:
        return
    if view.waiting is prev.waiting:
        view._pending["grouped"] = kept
        return
    counts: dict[Placement, Counter] = {placement: needs.copy() for placement, needs in kept[0].items()}
    by_key = dict(kept[2])
    before, after = prev.waiting, view.waiting
    for uid in changed:
        old, new = before.get(uid), after.get(uid)
        if old is new:
            continue
        if old is not None and _queued(old):
            _remove(counts, by_key, old)
        if new is not None and _queued(new):
            _add(counts, by_key, new)
    view._pending["grouped"] = (counts, _labelled(counts), by_key)


def _add(counts: dict[Placement, Counter], by_key: dict[str, tuple[Pod, ...]], pod: Pod) -> None:
    """``pod`` into a grouping (_grouped's parts)."""
    counts.setdefault(pod.placement, Counter())[_need(pod)] += 1
    by_key[pod.key] = (*by_key.get(pod.key, ()), pod)


def _remove(counts: dict[Placement, Counter], by_key: dict[str, tuple[Pod, ...]], pod: Pod) -> None:
    """``pod``, which _add put in, out of a grouping, empty entries with it."""
    needs, need = counts[pod.placement], _need(pod)
    needs[need] -= 1
    if needs[need] <= 0:
        del needs[need]
        if not needs:
            del counts[pod.placement]
    left = tuple(p for p in by_key[pod.key] if p.uid != pod.uid)
    if left:
        by_key[pod.key] = left
    else:
        del by_key[pod.key]


def _labelled(counts: dict[Placement, Counter]) -> bool:
    """Some placement reads a node's labels or name (Queue.labelled)."""
    return any(p.node_selector or p.affinity is not None for p in counts)


def _queued(pod: Pod) -> bool:
    return not left_out(pod)


def _need(pod: Pod) -> Need:
    wanted = pod.requests
    return tuple((name, wanted[name]) for name in checked_resources(wanted))


def reads(pending: Queue) -> tuple[str, ...]:
    """The resources the pending pods need."""
    return tuple({name: None for _, counted in pending.by_placement for need, _ in counted for name, _ in need})


def admitted(pending: Queue, node: Node) -> tuple[tuple[Need, int], ...]:
    """The needs of the pending pods ``node``'s filters admit, with their counts."""
    # What the placements read of a node: its cordon and taints, and its labels and name where
    # one has a node selector or affinity.
    key = (node.name, node.unschedulable, node.taints) if pending.labelled else (node.unschedulable, node.taints)
    found = pending.admitted.get(key)
    if found is None:
        needs: Counter = Counter()
        for placement, counted in pending.by_placement:
            if not placement.refusal(node):
                for need, count in counted:
                    needs[need] += count
        found = pending.admitted[key] = tuple(needs.items())
    return found


def room(
    pending: Queue | None, node: Node, requested: Vector, preemptor: Pod, held: Sequence[Pod] = ()
) -> Room | None:
    """``node``'s Room for ``pending`` (None where nothing is pending): ``requested`` is what its
    pods request, ``held`` the pods holding room there (nominations, answers in flight)."""
    if pending is None or not pending.has_pods:
        return None
    base = dict(node.allocatable)
    for pod_requests in (requested, preemptor.requests, *(p.requests for p in held)):
        for name, value in pod_requests.items():
            base[name] = base.get(name, 0) - value
    return Room(base, admitted(pending, node))


def unfit(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, int]:
    """How many pending pods would not fit in the room the node has left with ``victims`` gone."""
    here = facts.pending_room
    if here is None or not here.needs:
        return 0, 0
    free = dict(here.base)
    for victim in victims:
        for name, value in victim.requests.items():
            free[name] = free.get(name, 0) + value
    left = without_room(here.needs, free)
    return left, left


def without_room(needs: Sequence[tuple[Need, int]], free: Vector) -> int:
    """How many of the pending pods with ``needs`` would not fit, each alone, in ``free``."""
    return sum(count for need, count in needs if any(value > free.get(name, 0) for name, value in need))


def _show(value: float, _) -> str:
    return f"{int(value)} pending pod(s) without room"


CRITERION = Criterion(
    name="pending pods left without room", field="pending_without_room", kind=Kind.SET, of_set=unfit, show=_show,
)

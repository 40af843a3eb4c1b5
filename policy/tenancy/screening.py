"""What the rules allow one preemptor: when it may preempt, and which pods it may take.

``delay_left`` is the preemption delay it must still wait; ``screen`` builds the ``Screen`` that
judges each lower-priority pod (``judge``) and each victim set (``shortfalls``) by the laws in
policy.tenancy. Both take the standing with the answers in flight applied (``Projected``).

Shares are judged in the resources the preemption is for: those the preemptor is short of on
the victim's node (``contended``). The preemptor's queue claims only if it is below its share in
one of them; a victim's queue must stay at or above its share in each of them. A resource the
preemptor already finds free there protects no queue and entitles none (docs/policy.md, "Shares
are judged where the preemption is").
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum

from policy import resources
from policy.model import Pod
from policy.resources import Vector
from policy.tenancy.in_flight import Projected
from policy.tenancy.inheritance import Inherited, guarantee, inherited_along
from policy.tenancy.rules import OptOut, Preemption, Rules
from policy.tenancy.tally import Tally, accumulate
from policy.view import ClusterView


def delay_left(*, rules: Rules, standing: Projected, preemptor: Pod, now: float | None) -> float:
    """Seconds the preemptor must still wait before it may preempt (0: it may)."""
    delay = rules.delay_for(standing.base.queue_of(preemptor))
    if delay <= 0 or now is None or preemptor.created is None:
        return 0.0
    return max(0.0, preemptor.created + delay - now)


class Judgement(str, Enum):
    ELIGIBLE = "eligible"
    LAST_RESORT = "last resort"
    PROTECTED = "protected"


@dataclass(frozen=True, slots=True)
class Screen:
    """The rules as they apply to one preemptor: which pods it may take, and how many."""

    standing: Projected
    preemptor: Pod
    queue: str
    usage: Vector  # the preemptor's queue's usage, without the preemptor's own nomination
    fence: str | None  # the preemptor's fence root; None: no fence
    view: ClusterView
    # Derived once (__post_init__): the resources the preemptor's queue has a share of its own
    # in (a guarantee it sets, or a deserved share), the queues that inherit a guarantee, and
    # every queue's usage (the answers in flight applied).
    _own: frozenset[str] = field(init=False, repr=False, compare=False)
    _inheriting: frozenset[str] = field(init=False, repr=False, compare=False)
    _usage: Mapping[str, Vector] = field(init=False, repr=False, compare=False)
    # (queue, request vector identity, terminating, node) -> the cross-queue verdict: pods of
    # one workload share the first three, and a decision judges every lower-priority pod of up
    # to 100 nodes. And node -> the resources the preemptor is short of there.
    _memo: dict = field(init=False, repr=False, compare=False)
    _contended: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        base = self.standing.base
        own = set((base.rules.queue(self.queue).guaranteed or {}).keys())
        own.update(r for r, v in base.queues[self.queue].deserved.items() if v > 0)
        object.__setattr__(self, "_own", frozenset(own))
        object.__setattr__(self, "_inheriting", frozenset(n for n, s in base.queues.items() if s.inherited))
        object.__setattr__(self, "_usage", {n: s.usage for n, s in self.standing.queues.items()})
        object.__setattr__(self, "_memo", {})
        object.__setattr__(self, "_contended", {})

    def contended(self, node_name: str | None) -> tuple[str, ...]:
        """The resources the preemptor is short of on the node, sorted: what its preemption
        there is for. Every pod on the node counts (terminating ones still hold their room), and
        so do the pods nominated there that outrank it and the preemptors of answers in flight.
        Where reprieve sees no shortage (its view is older than the scheduler's, or the node is
        unknown), every resource the preemptor requests."""
        found = self._contended.get(node_name)
        if found is None:
            found = self._contended[node_name] = _contended(self.view, self.standing, self.preemptor, node_name)
        return found

    def judge(self, pod: Pod) -> tuple[Judgement, str]:
        """Whether ``pod`` (already of lower priority) may be a victim, and why not."""
        rules = self.standing.base.rules
        if pod.namespace in rules.protected_namespaces:
            return Judgement.PROTECTED, f"namespace {pod.namespace} is protected"
        if rules.same_application(self.preemptor, pod):
            return Judgement.PROTECTED, "same application as the preemptor"
        opted_out = rules.opted_out(pod, self.view)
        if opted_out and rules.opt_out is OptOut.HARD:
            return Judgement.PROTECTED, f"PriorityClass {pod.priority_class} opts out of preemption"
        queue = self.standing.base.queue_of(pod)
        if queue != self.queue:
            key = (queue, id(pod.requests), pod.terminating, pod.node_name)
            refusal = self._memo.get(key)
            if refusal is None:
                refusal = self._memo[key] = self._cross_queue(pod, queue)
            if refusal:
                return Judgement.PROTECTED, refusal
        if opted_out:
            return Judgement.LAST_RESORT, f"PriorityClass {pod.priority_class} opts out of preemption"
        return Judgement.ELIGIBLE, ""

    def _cross_queue(self, pod: Pod, queue: str) -> str:
        rules = self.standing.base.rules
        lineage = rules.lineage(queue)
        unclaimed = self._unclaimed(pod)
        if unclaimed:
            return f"{unclaimed}; pods of queue {queue} are out of reach"
        if self.fence is not None and self.fence not in lineage:
            return f"queue {queue} is outside the fence of queue {self.fence}"
        disabled = next((q for q in lineage if rules.queue(q).preemption is Preemption.DISABLED), None)
        if disabled is not None:
            return f"queue {disabled} has preemption disabled"
        return self.over_share([pod])

    def _unclaimed(self, pod: Pod) -> str:
        """Why the preemptor's queue may not claim ``pod``'s room ('' if it may): it is not
        below its share in any resource the preemptor is short of on ``pod``'s node. A guarantee
        it inherits counts with ``pod`` gone (what its siblings lose comes back to it, as in
        YuniKorn's checkPreemptionQueueGuarantees)."""
        contended = self.contended(pod.node_name)
        after = self._without([pod]) if self.queue in self._inheriting else None
        share, got = self._share(self.queue, after)
        if any(self.usage.get(r, 0) < share.get(r, 0) for r in contended):
            return ""
        standing = [
            _figures(r, self.usage.get(r, 0), share[r], got.get(r)) if r in share else f"no share of {r}" for r in contended
        ]
        return (
            f"queue {self.queue} is not below its share in {', '.join(contended)}, which the pod is short of "
            f"on {pod.node_name} ({'; '.join(standing)})"
        )

    def over_share(self, victims: Iterable[Pod]) -> str:
        """Why taking ``victims`` would leave some other queue below its share ('' if none)."""
        short = self.shortfalls(victims)
        return next(iter(short.values()), "")

    def shortfalls(self, victims: Iterable[Pod]) -> dict[str, str]:
        """Each queue that taking ``victims`` would leave below its share in a resource the
        preemptor is short of on their node, and why. A common ancestor of the preemptor's queue
        loses nothing: the room moves inside it."""
        victims = [p for p in victims if not p.terminating]  # terminating: in nobody's usage any more
        rules = self.standing.base.rules
        mine = set(rules.lineage(self.queue))
        taken: Tally = defaultdict(dict)
        for pod in victims:
            for queue in rules.lineage(self.standing.base.queue_of(pod)):
                if queue in mine:
                    break
                accumulate(taken[queue], pod.requests)
        if not taken:
            return {}
        nodes = sorted({p.node_name or "" for p in victims})
        contended = sorted({r for n in nodes for r in self.contended(n)})
        after = self._without(victims) if not self._inheriting.isdisjoint(taken) else None
        short = {}
        for queue in sorted(taken):
            state = self.standing.queues.get(queue)
            if state is None:
                continue
            share, got = self._share(queue, after)
            for resource in contended:
                lost = taken[queue].get(resource, 0)
                if not lost or resource not in share:
                    continue
                left = state.usage.get(resource, 0) - lost
                if left < share[resource]:
                    short[queue] = (
                        f"queue {queue} would fall below its share in {resource}, which the pod is short of on "
                        f"{', '.join(nodes)}: {_figures(resource, max(left, 0), share[resource], got.get(resource))}"
                    )
                    break
        return short

    def _share(self, name: str, usage: Mapping[str, Vector] | None) -> tuple[Vector, Mapping[str, Inherited]]:
        """``name``'s share, with the guarantee it inherits computed from ``usage`` (the
        standing's if None), and what it inherits. A guarantee a victim's queue inherits from an
        ancestor of the preemptor's queue does not hold, in a resource the preemptor's queue has
        a share of its own in, against it (YuniKorn's GetRemainingGuaranteedResource does not
        pass it down for such an ask queue): the room moves inside that ancestor."""
        state = self.standing.queues[name]
        if name not in self._inheriting:
            return state.share, {}
        rules = self.standing.base.rules
        got = inherited_along(rules, usage or self._usage, name)
        if name != self.queue:
            mine = set(rules.lineage(self.queue))
            got = {r: i for r, i in got.items() if not (i.origin in mine and r in self._own)}
        return resources.maximum(guarantee(rules.queue(name).guaranteed, got), state.deserved), got

    def _without(self, pods: Iterable[Pod]) -> dict[str, Vector]:
        """Every queue's usage once ``pods`` (those not terminating) are gone."""
        usage = dict(self._usage)
        rules = self.standing.base.rules
        for pod in pods:
            if pod.terminating:
                continue
            for queue in rules.lineage(self.standing.base.queue_of(pod)):
                usage[queue] = {r: v - pod.requests.get(r, 0) for r, v in usage.get(queue, {}).items()}
        return usage


def _figures(resource: str, usage: int, share: int, got: Inherited | None) -> str:
    """"cpu=2 of cpu=3", and where the share came from if it is an inherited guarantee."""
    text = f"{resources.describe({resource: usage})} of {resources.describe({resource: share})}"
    if got is not None and got.amount == share:
        text += f", inherited from queue {got.parent}"
    return text


def _contended(view: ClusterView, standing: Projected, preemptor: Pod, node_name: str | None) -> tuple[str, ...]:
    """Screen.contended, computed."""
    requested = tuple(sorted(r for r, v in preemptor.requests.items() if v > 0))
    info = view.nodes.get(node_name or "")
    if info is None:
        return requested
    held = [*view.reservations(info.name, pod=preemptor)]
    held += [p for p in standing.holding.get(info.name, ()) if p.priority >= preemptor.priority and p.uid != preemptor.uid]
    used = resources.add(info.requested, *(p.requests for p in held))
    short = resources.shortfalls(request=preemptor.requests, allocatable=info.node.allocatable, used=used)
    return tuple(sorted(short)) or requested


def screen(*, standing: Projected, view: ClusterView, preemptor: Pod) -> Screen:
    rules = standing.base.rules
    queue = standing.base.queue_of(preemptor)
    usage = standing.queues[queue].usage
    counted = view.pods.get(preemptor.uid) or preemptor  # with_pending counted the request's copy
    if preemptor.uid in standing.base.membership and counted.nominated_node_name and not counted.node_name:
        # Its own nomination is counted in the usage: judge the queue without it.
        usage = {name: value - preemptor.requests.get(name, 0) for name, value in usage.items()}
    fence = next((q for q in rules.lineage(queue) if rules.queue(q).preemption is Preemption.FENCE), None)
    return Screen(standing, preemptor, queue, usage, fence, view)

"""What the rules allow one preemptor: when it may preempt, and which pods it may take.

``delay_left`` is the preemption delay it must still wait; ``screen`` builds the ``Screen`` that
judges each lower-priority pod (``judge``) and each victim set (``shortfalls``) by the laws in
policy.tenancy. Both take the standing with the answers in flight applied (``Projected``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from enum import Enum

from policy import resources
from policy.model import Pod
from policy.tenancy.in_flight import Projected
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
    below_share: bool
    fence: str | None  # the preemptor's fence root; None: no fence
    view: ClusterView
    # (queue, request vector identity) -> the cross-queue verdict: pods of one workload share
    # both, and a decision judges every lower-priority pod of up to 100 nodes.
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

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
            key = (queue, id(pod.requests), pod.terminating)
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
        if not self.below_share:
            return f"queue {self.queue} is not below its share; pods of queue {queue} are out of reach"
        if self.fence is not None and self.fence not in lineage:
            return f"queue {queue} is outside the fence of queue {self.fence}"
        disabled = next((q for q in lineage if rules.queue(q).preemption is Preemption.DISABLED), None)
        if disabled is not None:
            return f"queue {disabled} has preemption disabled"
        return self.over_share([pod])

    def over_share(self, victims: Iterable[Pod]) -> str:
        """Why taking ``victims`` would leave some other queue below its share ('' if none)."""
        short = self.shortfalls(victims)
        return next(iter(short.values()), "")

    def shortfalls(self, victims: Iterable[Pod]) -> dict[str, str]:
        """Each queue that taking ``victims`` would leave below its share, and why."""
        rules = self.standing.base.rules
        mine = set(rules.lineage(self.queue))
        taken: Tally = defaultdict(dict)
        for pod in victims:
            if pod.terminating:
                continue  # not in any queue's usage any more
            for queue in rules.lineage(self.standing.base.queue_of(pod)):
                if queue in mine:
                    break  # a common ancestor gets the room back through the preemptor
                accumulate(taken[queue], pod.requests)
        short = {}
        for queue in sorted(taken):
            state = self.standing.queues.get(queue)
            if state is None:
                continue
            for resource, share in sorted(state.share.items()):
                left = state.usage.get(resource, 0) - taken[queue].get(resource, 0)
                if taken[queue].get(resource, 0) and left < share:
                    short[queue] = (
                        f"queue {queue} would fall below its share: "
                        f"{resources.describe({resource: max(left, 0)})} of {resources.describe({resource: share})}"
                    )
                    break
        return short


def screen(*, standing: Projected, view: ClusterView, preemptor: Pod) -> Screen:
    rules = standing.base.rules
    queue = standing.base.queue_of(preemptor)
    state = standing.queues[queue]
    counted = view.pods.get(preemptor.uid) or preemptor  # with_pending counted the request's copy
    if preemptor.uid in standing.base.membership and counted.nominated_node_name and not counted.node_name:
        # Its own nomination is counted in the usage: judge the queue without it.
        usage = {name: value - preemptor.requests.get(name, 0) for name, value in state.usage.items()}
        state = replace(state, usage=usage)
    fence = next((q for q in rules.lineage(queue) if rules.queue(q).preemption is Preemption.FENCE), None)
    return Screen(standing, preemptor, queue, state.below(preemptor.requests), fence, view)

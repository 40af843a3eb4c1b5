"""Multi-tenant preemption rules on top of Kubernetes priority.

Queues (kube-arbitrator's proportion policy and YuniKorn's hierarchy) with guaranteed and
deserved shares, preemption fences, opted-out priority classes, protected namespaces,
same-application protection and a preemption delay. ``Rules`` is the validated policy file
(extender.policy_file); ``Standing`` is what the rules say about one cluster view (who uses
what); ``Screen`` judges the pods one preemptor may take.

The laws, for a preemptor in queue Q and a potential victim in queue V (YuniKorn's laws 2-7,
with Kubernetes priority on top: victims always have a lower priority than the preemptor):

* pods in a protected namespace, of the preemptor's own application, or whose PriorityClass
  opts out (hard) are never victims; a soft opt-out makes them a last resort;
* V == Q: the Kubernetes rules only;
* V != Q: Q must be below its share, V must lie inside Q's fence and not be ``disabled``,
  and V (and each of its ancestors that is not also Q's) must stay at or above its share
  after losing every victim taken from it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from fractions import Fraction

from policy import resources
from policy.labels import Selector
from policy.model import InFlight, Pod
from policy.resources import Vector
from policy.view import ClusterView


class Preemption(str, Enum):
    DEFAULT = "default"
    FENCE = "fence"  # pods in or below this queue take victims only inside its subtree
    DISABLED = "disabled"  # pods in or below this queue are never taken by other queues


class OptOut(str, Enum):
    SOFT = "soft"  # opted-out pods are victims only when nothing else works
    HARD = "hard"  # never victims


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    parent: str | None = None
    namespaces: frozenset[str] = frozenset()
    selector: Selector | None = None
    guaranteed: Vector | None = None
    weight: int | None = None  # None: takes no part in the proportional split
    preemption: Preemption = Preemption.DEFAULT
    delay: float | None = None  # seconds; overrides Rules.delay for this queue's pods

    def matches(self, pod: Pod) -> bool:
        """A queue with neither namespaces nor a selector holds no pods directly."""
        if not self.namespaces and self.selector is None:
            return False
        if self.namespaces and pod.namespace not in self.namespaces:
            return False
        return self.selector is None or self.selector.matches(pod.labels)


# YuniKorn's annotation, so that PriorityClasses already marked for YuniKorn keep their meaning.
OPT_OUT_ANNOTATION = "yunikorn.apache.org/allow-preemption"


@dataclass(frozen=True, slots=True)
class Rules:
    """A validated policy. ``queues`` are in file order: a pod joins the first that matches."""

    queues: tuple[Queue, ...] = ()
    default_queue: str = "default"
    opt_out_annotation: str = OPT_OUT_ANNOTATION
    opt_out: OptOut = OptOut.SOFT
    protected_namespaces: frozenset[str] = frozenset({"kube-system"})
    application_label: str | None = None
    application_owner: bool = False
    delay: float = 0.0
    # Indexes, derived once: decisions ask for a queue's record and ancestors per victim.
    _by_name: Mapping[str, Queue] = field(init=False, repr=False, compare=False)
    _lineages: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {q.name: q for q in self.queues}
        by_name.setdefault(self.default_queue, Queue(self.default_queue))
        lineages = {}
        for name in by_name:
            chain = [name]
            while (up := by_name[chain[-1]].parent) is not None and up not in chain:
                chain.append(up)
            lineages[name] = tuple(chain)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_lineages", lineages)

    def queue_names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def parent(self, name: str) -> str | None:
        return self.queue(name).parent

    def lineage(self, name: str) -> tuple[str, ...]:
        """The queue and its ancestors, nearest first."""
        return self._lineages.get(name) or (name,)

    def queue(self, name: str) -> Queue:
        return self._by_name.get(name) or Queue(name)

    def queue_of(self, pod: Pod) -> str:
        return next((q.name for q in self.queues if q.matches(pod)), self.default_queue)

    def delay_for(self, queue: str) -> float:
        own = self.queue(queue).delay
        return self.delay if own is None else own

    def opted_out(self, pod: Pod, view: ClusterView) -> bool:
        pc = view.priority_classes.get(pod.priority_class)
        return pc is not None and pc.annotations.get(self.opt_out_annotation, "").strip().lower() == "false"

    def same_application(self, a: Pod, b: Pod) -> bool:
        if self.application_owner and a.owner is not None and a.owner == b.owner:
            return True
        label = self.application_label
        if label is None or a.namespace != b.namespace:
            return False
        value = a.labels.get(label)
        return value is not None and b.labels.get(label) == value


@dataclass(frozen=True, slots=True)
class QueueStanding:
    name: str
    usage: Vector  # bound (not terminating) and nominated pods, subtree included
    demand: Vector  # usage plus the pending pods' requests
    deserved: Vector  # the proportional split (empty without a weight)
    share: Vector  # max(guaranteed, deserved) per resource: what preemption defends

    def below(self, request: Vector) -> bool:
        """Below its share in some resource the request needs."""
        return any(request.get(r, 0) > 0 and self.usage.get(r, 0) < s for r, s in self.share.items())


@dataclass(frozen=True, slots=True)
class Standing:
    """What the rules say about one cluster view: each queue's usage, demand and shares."""

    rules: Rules
    queues: Mapping[str, QueueStanding]
    membership: Mapping[str, str]  # pod UID -> queue, for every pod of the view
    # The tallies the shares were computed from, per queue (own pods only), and the capacity.
    tally: tuple[Mapping[str, Vector], Mapping[str, Vector], Vector] = field(repr=False, compare=False, default=({}, {}, {}))


def assess(rules: Rules, view: ClusterView, *, pending: Iterable[Pod] = ()) -> Standing:
    """Usage, demand and shares of every queue. ``pending`` adds pods the view does not hold
    yet (a preemptor fresher than the view), so that their demand counts."""
    membership: dict[str, str] = {}
    usage: dict[str, dict[str, int]] = defaultdict(dict)
    waiting: dict[str, dict[str, int]] = defaultdict(dict)
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
        if pod.terminating:
            continue  # already leaving: its room is not the queue's any more
        _accumulate((usage if (pod.node_name or pod.nominated_node_name) else waiting)[queue], pod.requests)
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
    usage, waiting, capacity = standing.tally
    usage = {q: dict(v) for q, v in usage.items()}
    waiting = {q: dict(v) for q, v in waiting.items()}
    membership = dict(standing.membership)
    for uid in pods:
        old, new = before.pods.get(uid), after.pods.get(uid)
        if old is not None:
            queue = membership.pop(uid, None) or rules.queue_of(old)
            if not old.terminating:
                table = usage if (old.node_name or old.nominated_node_name) else waiting
                _accumulate(table.setdefault(queue, {}), {r: -v for r, v in old.requests.items()})
        if new is not None:
            queue = membership[uid] = rules.queue_of(new)
            if not new.terminating:
                _accumulate((usage if (new.node_name or new.nominated_node_name) else waiting).setdefault(queue, {}), new.requests)
    capacity = dict(capacity)
    for name in nodes:
        old_info, new_info = before.nodes.get(name), after.nodes.get(name)
        if old_info is not None:
            _accumulate(capacity, {r: -v for r, v in old_info.node.allocatable.items()})
        if new_info is not None:
            _accumulate(capacity, new_info.node.allocatable)
    return _shares(rules, membership, _nonzero(usage), _nonzero(waiting), {r: v for r, v in capacity.items() if v})


def _nonzero(tally: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Tallies without the amounts that went back to zero (as assess never had them)."""
    kept = {q: {r: v for r, v in vector.items() if v} for q, vector in tally.items()}
    return {q: vector for q, vector in kept.items() if vector}


def with_pending(standing: Standing, pods: Iterable[Pod]) -> Standing:
    """The standing with ``pods`` (not in its view) added as pending demand."""
    pods = list(pods)
    if not pods:
        return standing
    rules = standing.rules
    usage, waiting, capacity = standing.tally
    membership = dict(standing.membership)
    usage = {q: dict(v) for q, v in usage.items()}
    waiting = {q: dict(v) for q, v in waiting.items()}
    for pod in pods:
        queue = membership[pod.uid] = rules.queue_of(pod)
        table = usage if (pod.node_name or pod.nominated_node_name) else waiting
        _accumulate(table.setdefault(queue, {}), pod.requests)
    return _shares(rules, membership, usage, waiting, capacity)


def _shares(
    rules: Rules,
    membership: Mapping[str, str],
    usage: Mapping[str, Vector],
    waiting: Mapping[str, Vector],
    capacity: Vector,
) -> Standing:
    names = rules.queue_names()
    children: dict[str | None, list[str]] = defaultdict(list)
    for name in names:
        children[rules.parent(name)].append(name)

    def subtree_sum(table: Mapping[str, Vector], name: str) -> dict[str, int]:
        return resources.add(table.get(name, {}), *(subtree_sum(table, c) for c in children[name]))

    used = {n: subtree_sum(usage, n) for n in names}
    demand = {n: resources.add(used[n], subtree_sum(waiting, n)) for n in names}
    deserved: dict[str, Vector] = {}

    def split(parent: str | None, room: Vector) -> None:
        weighted = [rules.queue(c) for c in children[parent] if rules.queue(c).weight]
        shares = water_fill(room, [(q.name, q.weight or 0, demand[q.name]) for q in weighted])
        deserved.update(shares)
        for child in children[parent]:
            split(child, shares.get(child) or rules.queue(child).guaranteed or room)

    split(None, capacity)
    queues = {}
    for name in names:
        q = rules.queue(name)
        share = resources.maximum(q.guaranteed or {}, deserved.get(name, {}))
        queues[name] = QueueStanding(name, used[name], demand[name], deserved.get(name, {}), share)
    return Standing(rules, queues, membership, (usage, waiting, capacity))


def water_fill(capacity: Vector, claims: Sequence[tuple[str, int, Vector]]) -> dict[str, dict[str, int]]:
    """kube-arbitrator's proportion policy, per resource: split ``capacity`` by weight, cap
    each claimant at its demand, and split what the capped ones leave among the others until
    nothing is left or everyone is satisfied. Shares are exact fractions, floored at the end.

    The pod-count slot is not shared out: every pending pod would otherwise make its queue
    "below its share" of pods on any roomy cluster.

    Example (seed 001): 9 cpus, weights 2, 4, 3, every demand larger than its split: 2, 4, 3.
    """
    result: dict[str, dict[str, int]] = {name: {} for name, _, _ in claims}
    for resource, amount in capacity.items():
        if resource == resources.PODS:
            continue
        given = {name: Fraction(0) for name, _, _ in claims}
        active = {name: (weight, demand.get(resource, 0)) for name, weight, demand in claims if weight > 0}
        active = {n: wd for n, wd in active.items() if wd[1] > 0}
        left = Fraction(amount)
        while left > 0 and active:
            weights = sum(w for w, _ in active.values())
            for name, (weight, _) in active.items():
                given[name] += left * weight / weights
            left = Fraction(0)
            for name, (_, demand) in list(active.items()):
                if given[name] >= demand:
                    left += given[name] - demand
                    given[name] = Fraction(demand)
                    del active[name]
        for name, value in given.items():
            if value:
                result[name][resource] = int(value)  # floor: shares never exceed capacity
    return result


def with_in_flight(standing: Standing, view: ClusterView, in_flight: Iterable[InFlight]) -> Standing:
    """The standing as it will be once the view shows these preemptions: each preemptor counts
    in its queue's usage until the view has it nominated or bound, and each victim stops
    counting until the view has it terminating or gone."""
    rules = standing.rules
    delta: dict[str, dict[str, int]] = defaultdict(dict)
    gone: set[str] = set()
    for flight in in_flight:
        seen = view.pods.get(flight.preemptor.uid)
        if seen is None or not (seen.node_name or seen.nominated_node_name):  # usage counts any nomination
            for queue in rules.lineage(standing.membership.get(flight.preemptor.uid) or rules.queue_of(flight.preemptor)):
                _accumulate(delta[queue], flight.preemptor.requests)
        for victim in flight.victims:
            seen = view.pods.get(victim.uid)
            if seen is not None and not seen.terminating and victim.uid not in gone:
                gone.add(victim.uid)
                for queue in rules.lineage(standing.membership.get(victim.uid) or rules.queue_of(victim)):
                    _accumulate(delta[queue], {r: -v for r, v in victim.requests.items()})
    if not delta:
        return standing
    queues = dict(standing.queues)
    for name, change in delta.items():
        if name in queues:
            s = queues[name]
            queues[name] = QueueStanding(name, resources.add(s.usage, change), s.demand, s.deserved, s.share)
    # The tally stays the view's; call with_pending before this, never after (it recomputes
    # usage from the tally and would drop these changes).
    return Standing(rules, queues, standing.membership, standing.tally)


class Judgement(str, Enum):
    ELIGIBLE = "eligible"
    LAST_RESORT = "last resort"
    PROTECTED = "protected"


@dataclass(frozen=True, slots=True)
class Screen:
    """The rules as they apply to one preemptor: which pods it may take, and how many."""

    standing: Standing
    preemptor: Pod
    queue: str
    below_share: bool
    fence: str | None  # the preemptor's fence root; None: no fence
    view: ClusterView
    # (queue, request vector identity) -> the cross-queue verdict: pods of one workload share
    # both, and a decision judges every lower-priority pod of up to 100 nodes.
    _memo: dict = field(default_factory=dict, repr=False, compare=False)

    def queue_of(self, pod: Pod) -> str:
        queue = self.standing.membership.get(pod.uid)
        return queue if queue is not None else self.standing.rules.queue_of(pod)

    def judge(self, pod: Pod) -> tuple[Judgement, str]:
        """Whether ``pod`` (already of lower priority) may be a victim, and why not."""
        rules = self.standing.rules
        if pod.namespace in rules.protected_namespaces:
            return Judgement.PROTECTED, f"namespace {pod.namespace} is protected"
        if rules.same_application(self.preemptor, pod):
            return Judgement.PROTECTED, "same application as the preemptor"
        opted_out = rules.opted_out(pod, self.view)
        if opted_out and rules.opt_out is OptOut.HARD:
            return Judgement.PROTECTED, f"PriorityClass {pod.priority_class} opts out of preemption"
        queue = self.queue_of(pod)
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
        rules = self.standing.rules
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
        rules = self.standing.rules
        mine = set(rules.lineage(self.queue))
        taken: dict[str, dict[str, int]] = defaultdict(dict)
        for pod in victims:
            if pod.terminating:
                continue  # not in any queue's usage any more
            for queue in rules.lineage(self.queue_of(pod)):
                if queue in mine:
                    break  # a common ancestor gets the room back through the preemptor
                _accumulate(taken[queue], pod.requests)
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

    def within(self, pod: Pod, queues: set[str]) -> bool:
        """Whether ``pod``'s queue is one of ``queues`` or below one."""
        return any(q in queues for q in self.standing.rules.lineage(self.queue_of(pod)))


def screen(*, standing: Standing, view: ClusterView, preemptor: Pod) -> Screen:
    rules = standing.rules
    queue = standing.membership.get(preemptor.uid) or rules.queue_of(preemptor)
    state = standing.queues[queue]
    counted = view.pods.get(preemptor.uid) or preemptor  # with_pending counted the request's copy
    if preemptor.uid in standing.membership and counted.nominated_node_name and not counted.node_name:
        # Its own nomination is counted in the usage: judge the queue without it.
        state = QueueStanding(
            state.name, _minus(state.usage, preemptor.requests), state.demand, state.deserved, state.share
        )
    fence = next((q for q in rules.lineage(queue) if rules.queue(q).preemption is Preemption.FENCE), None)
    return Screen(standing, preemptor, queue, state.below(preemptor.requests), fence, view)


def delay_left(*, rules: Rules, standing: Standing, preemptor: Pod, now: float | None) -> float:
    """Seconds the preemptor must still wait before it may preempt (0: it may)."""
    queue = standing.membership.get(preemptor.uid) or rules.queue_of(preemptor)
    delay = rules.delay_for(queue)
    if delay <= 0 or now is None or preemptor.created is None:
        return 0.0
    return max(0.0, preemptor.created + delay - now)


def _accumulate(total: dict[str, int], vector: Vector) -> None:
    for name, value in vector.items():
        total[name] = total.get(name, 0) + value


def _minus(a: Vector, b: Vector) -> dict[str, int]:
    return {name: value - b.get(name, 0) for name, value in a.items()}

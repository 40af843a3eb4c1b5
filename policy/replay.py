"""A cluster-wide replay: pending pods placed one by one, stock preemption against reprieve.

Each side starts from the same cluster and applies its own decisions to its own copy of it:
the victims are removed and the preemptor is bound to the chosen node. A pod that fits
somewhere without preemption is bound on both sides alike to the node the scheduler's resource
scores prefer (policy.scoring: ``placement``, least-allocated by default; the scheduler would
bind it and preempt nothing). Only the nodes the pod's own constraints admit
(cordon, taints, node selector and affinity: policy.stock applies them first, as the
scheduler's filters do) are places to fit or to preempt. The two sides differ only in who picks
the victims:

- **stock**: policy.stock.decide, upstream DefaultPreemption's own dry run and pick;
- **reprieve**: the same dry run's proposals, fed to policy.preempt.decide exactly as the
  scheduler sends them to the preempt verb; the scheduler then picks among reprieve's answer
  with its own rules (policy.stock.pick), as ``reprieve explain`` shows it.

With ``replace``, a victim owned by a controller (``Pod.owner``) comes back as a pending
replacement appended to the queue (same namespace, labels, requests, priority and owner;
name and UID suffixed ``-r``), so that one preemption's cascade shows; but not a victim whose
Job (or index) the preemption failed: a failed Job makes no more pods. The queue is walked
once: a pod that can neither be placed nor preempt stays pending (the real scheduler retries
it later; the replay counts it as left pending). Each victim's priority is below its
preemptor's, so cascades end.

Both sides are judged at one time, ``now`` (seconds since the epoch): reprieve decides at it
(minimum runtimes, preemption delays and the work lost since the last checkpoint,
policy.criteria.work_lost), and the work each side's victims lose is measured at it. A pod the
replay binds keeps the start time it came with: a dump's pending pods have none and read as
just started (no work lost), where a generated GPU task keeps its arrival time.

PodDisruptionBudgets are kept current as the disruption controller keeps them: each budget's
desired healthy count is fixed at the start (covered bound pods minus ``disruptions_allowed``)
and after every step ``disruptions_allowed`` is the covered bound pods minus that, at least 0.
Jobs are kept current as the Job controller keeps them (policy.jobs.spend): each victim it
counts adds a failure, and a budget exhausted fails the index or the Job. A failed Job's other
pods keep running here (the controller would delete them, freeing room neither side chose).

The pods of the queue are in each side's view from the start, pending (as a dump shows the
pods waiting), until their turn binds them; a pod left pending stays in it.
policy.criteria.pending_room reads them, and policy.gangs counts a pending member of a gang
that needs every member (a JobSet's) in its size, as it does in a live view.

Everything is deterministic; the measures are documented on ``Totals`` (and in
docs/simulate.md).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from policy import apps, gangs, homes, jobs, ranking, scoring, stock
from policy.criteria import gang_work, work_lost
from policy.criteria.time_to_room import time_to_room
from policy.guards import Guards
from policy.model import DisruptionBudget, Pod
from policy.pdb import count_violations
from policy.preempt import PreemptDecision, decide
from policy.qos import QoS
from policy.scoring import Placement
from policy.tenancy import Rules
from policy.view import ClusterView

STOCK = "stock"
REPRIEVE = "reprieve"


@dataclass(frozen=True, slots=True)
class Choice:
    """What one side does with a pending pod: bind it (``victims`` empty: it fit), preempt
    (``victims`` go, the pod is bound to ``node``), or leave it pending (``node`` None)."""

    node: str | None
    victims: tuple[Pod, ...] = ()
    why: str = ""


# (view, pending pod, where a pod that fits goes) -> what the side does; the two below are the replay's sides.
Decider = Callable[[ClusterView, Pod, Placement], Choice]


def _first_fit(view: ClusterView, pod: Pod, dry: stock.Decision, placement: Placement) -> Choice | None:
    if dry.fits:
        return Choice(scoring.choose(view, pod, dry.fits, placement), why="fits without preemption")
    if dry.refusal:
        return Choice(None, why=dry.refusal)
    return None


def stock_side(view: ClusterView, pod: Pod, placement: Placement = scoring.DEFAULT) -> Choice:
    """Upstream DefaultPreemption (policy.stock): its own victims on the node it picks."""
    dry = stock.decide(view=view, preemptor=pod, node_names=sorted(view.nodes))
    done = _first_fit(view, pod, dry, placement)
    if done is not None:
        return done
    chosen = dry.pick.chosen
    if chosen is None:
        return Choice(None, why="no node can make room")
    return Choice(chosen, dry.nodes[chosen].victims, why=dry.pick.reasons[chosen])


def reprieve_side(
    view: ClusterView,
    pod: Pod,
    placement: Placement = scoring.DEFAULT,
    *,
    rules: Rules | None = None,
    order: ranking.Order = ranking.DEFAULT,
    guards: Guards | None = None,
    now: float | None = None,
) -> Choice:
    """The scheduler's proposals fed to reprieve (policy.preempt.decide), as the preempt verb
    receives them; the scheduler then picks among reprieve's answer with its own rules. With a
    policy file's ``rules``, ``order`` and ``guards`` (``reprieve_with``), judged at ``now``."""
    dry = stock.decide(view=view, preemptor=pod, node_names=sorted(view.nodes))
    done = _first_fit(view, pod, dry, placement)
    if done is not None:
        return done
    decision = decide(
        view=view, preemptor=pod, proposals=dry.proposals, rules=rules, order=order, guards=guards, now=now
    )
    costs = {
        name: stock.cost([view.pods[uid] for uid in answer.uids], answer.num_pdb_violations)
        for name, answer in decision.answer.items()
        if answer.uids
    }
    chosen = stock.pick(costs).chosen
    if chosen is None:
        return Choice(None, why="; ".join(decision.reasons) or "no candidate")
    victims = tuple(view.pods[uid] for uid in decision.answer[chosen].uids)
    return Choice(chosen, victims, why="; ".join((*decision.reasons, *_over(decision, chosen, dry.pick.chosen))))


def _over(decision: PreemptDecision, chosen: str, scheduler_pick: str | None) -> tuple[str, ...]:
    """Where reprieve chose another node than the scheduler's own pick, why: the criterion that
    ranks reprieve's victims on ``chosen`` first, or why that node was not offered. Empty where
    they agree (or the scheduler picked none)."""
    if scheduler_pick is None or scheduler_pick == chosen:
        return ()
    outcomes = {o.node: o for o in decision.outcomes}
    mine, theirs = outcomes.get(chosen), outcomes.get(scheduler_pick)
    if theirs is None:
        return ()
    if mine is not None and mine.cost is not None and theirs.cost is not None:
        why = mine.cost.decided_by(theirs.cost, f" on {chosen}", f" on {scheduler_pick}")
        if mine.cost.deciding(theirs.cost) is None:
            why += ", a tie broken differently"
        return (f"over {scheduler_pick}, the scheduler's pick: {why}",)
    return tuple(f"{scheduler_pick}, the scheduler's pick: {reason}" for reason in theirs.reasons[-1:])


SIDES: Mapping[str, Decider] = {STOCK: stock_side, REPRIEVE: reprieve_side}


def reprieve_with(
    *, rules: Rules | None = None, order: ranking.Order = ranking.DEFAULT, guards: Guards | None = None,
    now: float | None = None,
) -> Decider:
    """reprieve's side under a policy file (``reprieve simulate --policy``)."""
    return functools.partial(reprieve_side, rules=rules, order=order, guards=guards, now=now)


def dump_time(view: ClusterView) -> float | None:
    """The latest time the API server wrote in a dump (a pod's start or creation): the ``now`` a
    replay of it is judged at, so that the same dump replays alike whenever it is replayed. Not
    a checkpoint annotation: a workload writes it, and one in the future would age every pod
    (the criterion counts a future checkpoint as no work lost)."""
    times = [t for p in view.pods.values() for t in (p.start_time, p.created) if t is not None]
    return max(times, default=None)


@dataclass(frozen=True, slots=True)
class Step:
    """One pending pod's turn on one side."""

    pod: str  # namespace/name
    depth: int  # 0 for a pod of the input; n for the replacement of a victim of depth n-1's preemption
    node: str | None  # where it was bound; None: left pending
    victims: tuple[str, ...]  # namespace/name of the pods its preemption removed
    pdb_violations: int
    no_home: tuple[str, ...]  # its victims with no home (policy.homes), by name
    why: str
    broken_gangs: tuple[str, ...] = ()  # keys of the gangs its victims broke (policy.gangs)
    stranded: int = 0  # running members of those gangs left behind, their work lost (policy.criteria.gang_work)
    managed_lost: int = 0  # running pods left behind by the managers its victims include (policy.apps)
    # namespace/name of the running pods its victims strand: members of the gangs they break and
    # pods of the applications whose managers they evict, not evicted themselves, each once
    stranded_pods: tuple[str, ...] = ()
    jobs_failed: tuple[str, ...] = ()  # the Jobs and indexes its victims failed (policy.jobs.Budget keys)
    retries_burned: int = 0  # its victims whose Job counted their eviction (policy.jobs)
    room_wait: int = 0  # seconds until its last live victim is gone: their longest grace period
    cpu_seconds_lost: float = 0  # cores x seconds since each victim's start or last checkpoint (policy.criteria.work_lost)
    gpu_seconds_lost: float = 0  # GPUs x the same


@dataclass(frozen=True, slots=True)
class Totals:
    """The replay's measures for one side (docs/simulate.md documents each).

    Victims already terminating when named are not counted anywhere: they were leaving.
    """

    preemptions: int  # pods bound by preempting (each counted once)
    victims: int  # live pods removed by those preemptions
    pdb_violations: int  # victims that took a budget below zero (policy.pdb.count_violations, per preemption)
    jobs_failed: int  # distinct Jobs (or indexes, with backoffLimitPerIndex) whose retries the victims exhausted
    broken_gangs: int  # distinct gangs that lost more running members than they could spare
    members_stranded: int  # running members of the broken gangs not evicted: idle, their work lost
    managed_pods_lost: int  # running pods of the applications whose managers were evicted, not evicted themselves
    guaranteed_victims: int
    burstable_victims: int
    priority_loss: int  # sum over victims of (priority - floor + 1), floor: the lowest priority in the workload
    # the same over the victims and the running pods they strand (Step.stranded_pods), each pod
    # once (one stranded and evicted later, or stranded twice, counts once): every pod whose
    # work a preemption destroyed
    priority_loss_stranded: int
    # victims with no home (policy.homes, as reprieve's ranking counts them): nothing re-creates
    # them elsewhere (bare pods: gone for good; DaemonSet and static pods), or their replacement
    # fits on no node but the preempted one, as the cluster stood
    no_home: int
    retries_burned: int  # victims whose Job counted their eviction as a failure (not ignored, not unowned)
    room_wait_seconds: int  # per preemption, the longest grace period among its live victims, summed
    # cpu cores x seconds since each victim's start or its last checkpoint where later, at the
    # replay's ``now``, summed and rounded (policy.criteria.work_lost); GPUs x the same
    work_lost_cpu_seconds: int
    gpu_seconds_lost: int
    cascade: int  # the deepest replacement that preempted (0: no replacement preempted)
    pending: int  # pods (replacements included) left unbound

    FIELDS = (
        "preemptions",
        "victims",
        "pdb_violations",
        "jobs_failed",
        "broken_gangs",
        "members_stranded",
        "managed_pods_lost",
        "guaranteed_victims",
        "burstable_victims",
        "priority_loss",
        "priority_loss_stranded",
        "no_home",
        "retries_burned",
        "room_wait_seconds",
        "work_lost_cpu_seconds",
        "gpu_seconds_lost",
        "cascade",
        "pending",
    )

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.FIELDS}


@dataclass(frozen=True, slots=True)
class Run:
    """One side's replay: every step in queue order, and the totals."""

    side: str
    steps: tuple[Step, ...]
    totals: Totals
    final: ClusterView


def floor_priority(view: ClusterView, pending: Iterable[Pod]) -> int:
    """The lowest priority of any pod in the workload: a victim at it weighs 1 in ``priority_loss``."""
    return min((p.priority for p in (*view.pods.values(), *pending)), default=0)


def replay(
    view: ClusterView,
    pending: Sequence[Pod],
    *,
    side: str,
    replace: bool = False,
    floor: int | None = None,
    placement: Placement = scoring.DEFAULT,
    decider: Decider | None = None,
    now: float | None = None,
) -> Run:
    """Place ``pending`` one by one through ``side`` (STOCK or REPRIEVE) on a copy of ``view``,
    judged at ``now``; ``decider``: the side's own at ``now`` if None (reprieve_with: reprieve
    under a policy)."""
    decider = decider or (reprieve_with(now=now) if side == REPRIEVE else SIDES[side])
    floor = floor_priority(view, pending) if floor is None else floor
    cluster = _Cluster(view, pending)
    queue: list[tuple[Pod, int]] = [(p, 0) for p in pending]
    steps: list[Step] = []
    removed: list[Pod] = []
    stranded_at: dict[str, int] = {}  # every pod stranded so far: namespace/name -> priority
    i = 0
    while i < len(queue):
        pod, depth = queue[i]
        i += 1
        current = cluster.view
        choice = decider(current, pod, placement)
        if choice.node is None:
            steps.append(Step(pod.key, depth, None, (), 0, (), choice.why))
            continue
        live = tuple(v for v in choice.victims if not v.terminating)
        violations = count_violations(choice.victims, current.budgets_covering).count if live else 0
        broke = gangs.count_broken(live, current.gang_of)
        broken = tuple(g.key for g in broke.gangs)
        stranded = gang_work.lost(live, broke, current.gang_of) - len(live) if broke.count else 0
        ended = apps.ended(live, current.app_of)
        managed_lost = ended.stranded
        where = homes.of(current)
        no_home = tuple(v.key for v in live if where.home(v, excluding=choice.node) is None)
        failed = tuple(b.key for b in jobs.failing(live, current.stake_of))
        burned = sum(jobs.burns(v, current.stake_of) for v in live)
        left = _stranded(current, live, broke, ended)
        stranded_at.update((p.key, p.priority) for p in left)
        made = cluster.apply(pod, choice.node, choice.victims, replaced=live if replace else ())
        removed.extend(live)
        queue.extend((r, depth + 1) for r in made)
        steps.append(
            Step(pod.key, depth, choice.node, tuple(v.key for v in live), violations, no_home, choice.why, broken, stranded,
                 managed_lost=managed_lost, stranded_pods=tuple(p.key for p in left),
                 jobs_failed=failed, retries_burned=burned,
                 room_wait=time_to_room(live),
                 cpu_seconds_lost=work_lost.cpu_seconds(live, now), gpu_seconds_lost=work_lost.gpu_seconds(live, now))
        )
    return Run(side, tuple(steps), _totals(steps, removed, floor, stranded_at), cluster.view)


def compare(
    view: ClusterView,
    pending: Sequence[Pod],
    *,
    replace: bool = False,
    placement: Placement = scoring.DEFAULT,
    reprieve: Decider | None = None,
    now: float | None = None,
) -> dict[str, Run]:
    """Both sides over the same workload (and the same ``priority_loss`` floor, placement and
    ``now``); ``reprieve``: reprieve's decider if not the plain one at ``now`` (reprieve_with)."""
    floor = floor_priority(view, pending)
    deciders = {STOCK: None, REPRIEVE: reprieve}
    return {
        side: replay(
            view, pending, side=side, replace=replace, floor=floor, placement=placement, decider=deciders[side], now=now
        )
        for side in (STOCK, REPRIEVE)
    }


def _totals(steps: list[Step], victims: list[Pod], floor: int, stranded: Mapping[str, int]) -> Totals:
    """``stranded``: every pod the run's victims stranded, namespace/name -> priority."""
    preempting = [s for s in steps if s.victims]
    destroyed = {**stranded, **{v.key: v.priority for v in victims}}  # each pod once
    return Totals(
        preemptions=len(preempting),
        victims=len(victims),
        pdb_violations=sum(s.pdb_violations for s in steps),
        # A Job or index failed once stays failed: counted once.
        jobs_failed=len({key for s in steps for key in s.jobs_failed}),
        # A gang broken once stays broken (its running members below the minimum): counted once.
        broken_gangs=len({key for s in steps for key in s.broken_gangs}),
        members_stranded=sum(s.stranded for s in steps),
        managed_pods_lost=sum(s.managed_lost for s in steps),
        guaranteed_victims=sum(v.qos == QoS.GUARANTEED for v in victims),
        burstable_victims=sum(v.qos == QoS.BURSTABLE for v in victims),
        priority_loss=sum(v.priority - floor + 1 for v in victims),
        priority_loss_stranded=sum(priority - floor + 1 for priority in destroyed.values()),
        no_home=sum(len(s.no_home) for s in steps),
        retries_burned=sum(s.retries_burned for s in steps),
        room_wait_seconds=sum(s.room_wait for s in steps),
        work_lost_cpu_seconds=round(sum(s.cpu_seconds_lost for s in steps)),
        gpu_seconds_lost=round(sum(s.gpu_seconds_lost for s in steps)),
        cascade=max((s.depth for s in preempting), default=0),
        pending=sum(s.node is None for s in steps),
    )


def _stranded(view: ClusterView, live: Sequence[Pod], broke: gangs.Broken, ended: apps.Ended) -> tuple[Pod, ...]:
    """The running pods ``live`` victims strand on ``view``: the members of the gangs they
    ``broke`` and the pods of the applications ``ended`` (their managers evicted), not evicted
    themselves, each once (a pod in both counts once)."""
    gang_keys = {g.key for g in broke.gangs}
    app_keys = {a.key for a in ended.apps}
    if not gang_keys and not app_keys:
        return ()
    gone = {v.uid for v in live}
    return tuple(
        p
        for p in view.pods.values()
        if p.node_name is not None and not p.terminating and p.uid not in gone
        and ((p.app is not None and p.app.key in app_keys) or getattr(view.gang_of(p), "key", None) in gang_keys)
    )


def _replacement(victim: Pod, index: jobs.JobIndex | None) -> Pod:
    """What the victim's controller creates in its place: a new pending pod like it (with
    ``index``: its Job's index and failures)."""
    return dataclasses.replace(
        victim,
        uid=f"{victim.uid}-r",
        name=f"{victim.name}-r",
        node_name=None,
        nominated_node_name=None,
        start_time=None,
        created=None,
        terminating=False,
        bound_at=None,
        job_index=index,
        checkpoint=None,
    )


class _Cluster:
    """One side's copy of the cluster, rebuilt as a ClusterView after each step."""

    def __init__(self, view: ClusterView, pending: Sequence[Pod] = ()) -> None:
        self._nodes = [info.node for info in view.nodes.values()]
        self._pods = dict(view.pods)
        self._classes = tuple(view.priority_classes.values())
        self._groups = tuple(view.group_minimums.values())
        self._jobs = dict(view.jobs)
        budgets = [b for bs in view.budgets.values() for b in bs]
        # The disruption controller's desired healthy count, fixed at the start.
        self._desired = {b.key: self._healthy(b) - b.disruptions_allowed for b in budgets}
        self._budgets = budgets
        self.view = view
        if pending:
            # The queue joins the view unbound, as a dump shows the pods waiting to be scheduled
            # (policy.criteria.pending_room reads them); each is bound by ``apply`` or stays pending.
            self._pods.update((p.uid, p) for p in pending)
            self._rebuild()

    def _healthy(self, budget: DisruptionBudget) -> int:
        return sum(
            1 for p in self._pods.values() if p.node_name is not None and not p.terminating and budget.covers(p)
        )

    def apply(self, pod: Pod, node: str, victims: Sequence[Pod], replaced: Sequence[Pod] = ()) -> list[Pod]:
        """``pod`` bound to ``node`` and ``victims`` gone; the replacements the controllers of
        ``replaced`` (victims) create join the queue, pending, and are returned."""
        before = self.view
        self._jobs.update(jobs.spend(self._jobs, victims, before.stake_of))
        for victim in victims:
            self._pods.pop(victim.uid, None)
        self._pods[pod.uid] = dataclasses.replace(pod, node_name=node, nominated_node_name=None)
        made = [r for v in replaced if (r := self._replacement(v, before.stake_of(v))) is not None]
        self._pods.update((r.uid, r) for r in made)
        self._budgets = [
            dataclasses.replace(b, disruptions_allowed=max(0, self._healthy(b) - self._desired[b.key]))
            for b in self._budgets
        ]
        self._rebuild()
        return made

    def _rebuild(self) -> None:
        self.view = ClusterView.build(
            nodes=self._nodes, pods=self._pods.values(), budgets=self._budgets, priority_classes=self._classes,
            group_minimums=self._groups, jobs=self._jobs.values(),
        )

    def _replacement(self, victim: Pod, stake: jobs.Stake | None) -> Pod | None:
        """What the victim's controller creates in its place, if anything (once ``apply`` has
        spent the Jobs' retries; its ``stake`` as it was before): nothing for a bare pod, nor
        where its Job, or its index, has failed; a failure more on the index where its Job
        counted it."""
        if victim.owner is None:
            return None
        index = victim.job_index
        if stake is not None:
            job = self._jobs.get(stake.job.uid, stake.job)
            if job.finished or (stake.index is not None and job.index_failed(stake.index)):
                return None
            if index is not None and stake.counts:
                index = jobs.JobIndex(index.index, index.failures + 1)
        return _replacement(victim, index)

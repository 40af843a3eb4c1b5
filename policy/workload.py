"""A seeded synthetic workload for the replay (policy.replay, ``reprieve simulate --generate``).

Nodes of mixed size (4, 8, 16 or 32 cpu, 4 GiB of memory per cpu, 110 pods), each filled
to 85-100% of its cpu with low-priority pods (priorities 0-5) of all three QoS classes; about
two thirds of them belong to a controller (a ReplicaSet per app) and come back when evicted
with ``--replace``. Every app whose pods may be disrupted has a PodDisruptionBudget allowing
0, 1 or 2 disruptions, or none. About one app in three is a gang instead (a training job: its
running Guaranteed and Burstable pods, spread over the nodes, are a Kueue pod group that needs
every one of them, owned by a Job); they are drawn after the rest, so that the rest of a seed's
workload is what it was before gangs were generated. After them, about two apps in five of the
others become an application with a manager (policy.apps), by their labels only: a Spark
application (one of its running pods the driver, the rest executors) or a Ray cluster (a head
and workers), alternately. Last, about one other app in two that is not a gang is a Job's instead
of a ReplicaSet's; every Job (the gangs' too) has a ``backoffLimit`` of 0, 1, 2 or 6, some of
its retries already spent, and in two cases of five a podFailurePolicy that ignores
DisruptionTarget (policy.jobs). Each app's pods have one grace period (0, 5, 30, 60 or 120
seconds, drawn after everything else). Drawn after that: about
one app in two checkpoints every 10, 30 or 60 minutes (``reprieve.io/last-checkpoint``: its
running pods' last checkpoint is the latest such time since their start, before ``END``,
policy.criteria.work_lost), and about one ReplicaSet's app in three sets a
pod-deletion-cost on each of its pods (-100, 0, 100 or 1000). A few pending pods (priority 8) are nominated to a node and
hold room there. The pending pods are higher-priority preemptors (priorities 6-10, 1-6 cpu,
Guaranteed or Burstable), one per ``pending``; about one node per four of them at ``pressure``
1.0, fewer at a higher one.

Randomness only through the ``rng`` passed in (a ``random.Random``): the same seed gives the
same workload on every machine and Python version that keeps ``random.Random``'s sequence.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol

from policy import apps as managed
from policy import gangs
from policy.jobs import Job, OnDisruption
from policy.labels import Selector
from policy.model import DisruptionBudget, Node, Pod
from policy.placement import BARE, Placement
from policy.qos import QoS
from policy.resources import PODS
from policy.view import ClusterView

GI = 2**30
MILLI = 1000
EPOCH = 1_790_000_000.0  # start times are offsets from here (late 2026)
END = EPOCH + 86_400.0  # the end of the generated day: pods start before it, the replay is judged at it
CHECKPOINTS = (600, 1800, 3600)  # seconds between an app's checkpoints
DELETION_COSTS = (-100, 0, 100, 1000)
NAMESPACE = "sim"


class Random(Protocol):
    """What the generator uses of ``random.Random``."""

    def randrange(self, start: int, stop: int = ..., step: int = ...) -> int: ...

    def random(self) -> float: ...


@dataclass(frozen=True, slots=True)
class Workload:
    view: ClusterView
    pending: tuple[Pod, ...]


def _pick(rng: Random, options):
    return options[rng.randrange(len(options))]


def _pod(
    name: str, *, priority: int, cpu_m: int, qos: QoS, app: str, node: str | None, owner: str | None, start: float | None
) -> Pod:
    requests = {PODS: 1} if qos == QoS.BEST_EFFORT else {"cpu": cpu_m, "memory": cpu_m * GI // MILLI, PODS: 1}
    return Pod(
        uid=f"uid-{name}",
        name=name,
        namespace=NAMESPACE,
        priority=priority,
        requests=requests,
        qos=qos,
        labels={"app": app},
        node_name=node,
        start_time=start,
        created=start,
        owner=owner,
        placement=_OWNED_BY.get(owner[:3] if owner else None, BARE),
    )


# What re-creates a generated pod (policy.homes reads it): a ReplicaSet per app, a Job per gang.
_OWNED_BY = {"rs-": Placement("ReplicaSet"), "job": Placement("Job")}


def generate(rng: Random, pending: int, *, pressure: float = 1.0) -> Workload:
    """A cluster and ``pending`` preemptors (see the module docstring); ``pressure`` divides the
    number of nodes (1.5: two thirds of them for the same preemptors)."""
    if pending < 1:
        raise ValueError("pending must be at least 1")
    apps = [f"app-{i:02d}" for i in range(max(4, pending // 4))]
    nodes: list[Node] = []
    pods: list[Pod] = []
    count = 0
    for n in range(max(3, int(pending / 4 / pressure))):
        cpu = _pick(rng, (4, 8, 16, 32))
        node = Node(f"node-{n:02d}", {"cpu": cpu * MILLI, "memory": cpu * 4 * GI, "pods": 110})
        nodes.append(node)
        target = cpu * MILLI * (85 + rng.randrange(16)) // 100
        used = 0
        while True:
            qos = _pick(rng, (QoS.GUARANTEED, QoS.BURSTABLE, QoS.BURSTABLE, QoS.BEST_EFFORT))
            size = 500 * (1 + rng.randrange(6))
            if qos != QoS.BEST_EFFORT and used + size > target:
                break
            app = _pick(rng, apps)
            owned = rng.random() < 0.67
            pods.append(_pod(
                f"low-{count:03d}", priority=rng.randrange(6), cpu_m=size, qos=qos, app=app,
                node=node.name, owner=f"rs-{app}" if owned else None, start=EPOCH + rng.randrange(86_400),
            ))
            count += 1
            used += 0 if qos == QoS.BEST_EFFORT else size
    for k in range(max(1, pending // 20)):
        held = _pod(
            f"nominated-{k}", priority=8, cpu_m=500 * (1 + rng.randrange(4)), qos=QoS.BURSTABLE,
            app="nominated", node=None, owner=None, start=None,
        )
        pods.append(replace(held, nominated_node_name=_pick(rng, nodes).name))
    budgets = []
    for app in apps:
        allowed = _pick(rng, (0, 1, 2, None))
        if allowed is not None:
            budgets.append(DisruptionBudget(NAMESPACE, f"pdb-{app}", Selector((("app", app),)), allowed))
    preemptors = tuple(
        _pod(
            f"urgent-{k:03d}", priority=6 + rng.randrange(5), cpu_m=MILLI * (1 + rng.randrange(6)),
            qos=_pick(rng, (QoS.GUARANTEED, QoS.BURSTABLE)), app=f"urgent-{k % 5}", node=None, owner=None, start=None,
        )
        for k in range(pending)
    )
    pods, jobs = _jobs(rng, apps, _managed(rng, apps, _gangs(rng, apps, pods)))
    pods = deletion_costs(rng, checkpoints(rng, with_graces(rng, apps, pods)))
    return Workload(ClusterView.build(nodes=nodes, pods=pods, budgets=budgets, jobs=jobs), preemptors)


def _gangs(rng: Random, apps: list[str], pods: list[Pod]) -> list[Pod]:
    """``pods`` with about one app in three made a gang (see the module docstring)."""
    chosen = [app for app in apps if rng.random() < 0.35]
    members: dict[str, list[int]] = {app: [] for app in chosen}
    for i, pod in enumerate(pods):
        app = pod.labels["app"]
        if app in members and pod.node_name is not None and pod.qos != QoS.BEST_EFFORT:
            members[app].append(i)
    out = list(pods)
    for app, indexes in members.items():
        if len(indexes) < 2:
            continue
        labels = {"app": app, gangs.KUEUE_LABEL: app}
        mark = gangs.mark(
            namespace=NAMESPACE, labels=labels, annotations={gangs.KUEUE_COUNT: str(len(indexes))}, pod_group=None
        )
        for i in indexes:
            out[i] = replace(out[i], labels=labels, owner=f"job-{app}", gang=mark, placement=_OWNED_BY["job"])
    return out


def _managed(rng: Random, apps: list[str], pods: list[Pod]) -> list[Pod]:
    """``pods`` with about two in five of the apps that are not gangs made an application with a
    manager (see the module docstring): Spark and Ray alternately."""
    ganged = {p.labels["app"] for p in pods if p.gang is not None}
    chosen = [app for app in apps if app not in ganged and rng.random() < 0.4]
    out = list(pods)
    for n, app in enumerate(chosen):
        indexes = [i for i, p in enumerate(pods) if p.labels["app"] == app and p.node_name is not None]
        if len(indexes) < 2:
            continue
        manager = indexes[rng.randrange(len(indexes))]
        for i in indexes:
            if n % 2 == 0:
                roles = {managed.SPARK_APP: app, managed.SPARK_ROLE: "driver" if i == manager else "executor"}
            else:
                roles = {managed.RAY_CLUSTER: app, managed.RAY_NODE_TYPE: "head" if i == manager else "worker"}
            labels = {"app": app, **roles}
            out[i] = replace(out[i], labels=labels, app=managed.mark(namespace=NAMESPACE, labels=labels))
    return out


# The grace periods an app's pods get (terminationGracePeriodSeconds): 30, the API server's
# default, most often; 0 and 5 for pods that stop at once, 60 and 120 for those that drain.
GRACES = (0, 5, 30, 30, 60, 120)


def with_graces(rng: Random, apps: list[str], pods: list[Pod]) -> list[Pod]:
    """``pods`` with a grace period per app, drawn last (the rest of the workload is unchanged)."""
    grace = {app: _pick(rng, GRACES) for app in apps}
    return [replace(p, grace=grace[p.labels["app"]]) if p.labels.get("app") in grace else p for p in pods]


def _jobs(rng: Random, apps: list[str], pods: list[Pod]) -> tuple[list[Pod], list[Job]]:
    """``pods`` with about one app in two that is not a gang owned by a Job instead of its
    ReplicaSet, and a Job for each (the gangs' too; see the module docstring)."""
    ganged = {p.owner for p in pods if p.owner is not None and p.owner.startswith("job-")}
    made = [app for app in apps if f"job-{app}" not in ganged and rng.random() < 0.5]
    out = [
        replace(p, owner=f"job-{p.labels['app']}", placement=_OWNED_BY["job"]) if p.owner is not None and p.owner[3:] in made else p
        for p in pods
    ]
    jobs = []
    for uid in sorted(ganged | {f"job-{app}" for app in made}):
        backoff = _pick(rng, (0, 1, 2, 6))
        ignores = rng.random() < 0.4
        jobs.append(Job(
            uid, NAMESPACE, uid, backoff_limit=backoff, failed=rng.randrange(backoff + 1) if backoff else 0,
            on_disruption=OnDisruption.IGNORE if ignores else OnDisruption.COUNT, rule=0 if ignores else None,
        ))
    return out, jobs


def checkpoints(rng: Random, pods: list[Pod]) -> list[Pod]:
    """``pods`` with about one app in two checkpointing every 10, 30 or 60 minutes: each of its
    pods with a start has its last checkpoint at the latest such time since its start, before END
    (none if it started less than one period before)."""
    every = {app: _pick(rng, CHECKPOINTS) for app in sorted({p.labels["app"] for p in pods}) if rng.random() < 0.5}
    out = []
    for p in pods:
        period = every.get(p.labels["app"])
        if period is not None and p.start_time is not None and p.start_time + period < END:
            p = replace(p, checkpoint=p.start_time + (END - p.start_time) // period * period)
        out.append(p)
    return out


def deletion_costs(rng: Random, pods: list[Pod]) -> list[Pod]:
    """``pods`` with about one ReplicaSet's app in three setting a pod-deletion-cost (one of
    DELETION_COSTS, drawn per pod) on each of its pods."""
    owners = sorted({p.owner for p in pods if p.owner is not None and p.owner.startswith("rs-")})
    costed = {owner for owner in owners if rng.random() < 1 / 3}
    return [replace(p, deletion_cost=_pick(rng, DELETION_COSTS)) if p.owner in costed else p for p in pods]

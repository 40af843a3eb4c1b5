"""Keyword builders for policy records, so that test tables read like the scenario."""

from __future__ import annotations

import dataclasses

from policy import apps, resources
from policy.gangs import GangMark, GroupMinimum
from policy.jobs import Job, JobIndex, OnDisruption
from policy.labels import Selector
from policy.model import DisruptionBudget, Node, Pod
from policy.placement import BARE, Placement, Requirement, Taint, Term, Toleration
from policy.qos import QoS
from policy.view import ClusterView

GI = 2**30


def units(cpu: float = 0, mem_gi: float = 0, **extended: int) -> dict[str, int]:
    """cpu in cores and memory in GiB, as scheduler units (millicores, bytes)."""
    vector = {}
    if cpu:
        vector["cpu"] = round(cpu * 1000)
    if mem_gi:
        vector["memory"] = round(mem_gi * GI)
    vector.update(extended)
    return vector


def pod(
    name: str,
    *,
    node: str | None = None,
    priority: int = 0,
    cpu: float = 0,
    mem: float = 0,
    qos: QoS | None = None,
    start: float | None = None,
    ns: str = "default",
    labels: dict[str, str] | None = None,
    nominated: str | None = None,
    terminating: bool = False,
    preempted: bool = False,
    never: bool = False,
    unmodelled: tuple[str, ...] = (),
    pc: str = "",
    owner: str | None = None,
    created: float | None = None,
    uid: str | None = None,
    scheduler: str = "default-scheduler",
    gang: tuple[str, int | None] | None = None,
    kind: str | None = None,
    node_selector: dict[str, str] | None = None,
    affinity: tuple[Term, ...] | None = None,
    tolerations: tuple[Toleration, ...] = (),
    deletion_cost: int = 0,
    checkpoint: float | None = None,
    job: str | None = None,
    index: tuple[int, int] | None = None,
    grace: int = 30,
    gated: bool = False,
    **extended: int,
) -> Pod:
    """``gang=(name, minimum)``: a member of a Kueue-style gang ``name`` in ``ns`` needing
    ``minimum`` running members (None: the minimum of a group object, see ``group()``).
    ``kind``: its controller's kind ("ReplicaSet", "DaemonSet", ...; an owner UID is made up
    if ``owner`` is not given); ``affinity``: required nodeSelectorTerms (see ``term()``);
    ``job``: a pod of ``job(job, ns=ns)``; ``index``: (its completion index, the index's failures).
    ``grace``: its terminationGracePeriodSeconds.
    Its application with a manager (policy.apps) comes from ``labels``, as translate reads it."""
    requests = resources.effective_requests(containers=[units(cpu, mem, **extended)])
    if qos is None:
        qos = QoS.BURSTABLE if (cpu or mem) else QoS.BEST_EFFORT
    labels = labels if labels is not None else {"app": name}
    if job is not None:  # a pod of job(job, ns=ns)
        kind, owner = "Job", job_uid(job, ns)
    placement = BARE
    if kind is not None or node_selector or affinity is not None or tolerations:
        placement = Placement(kind, tuple(sorted((node_selector or {}).items())), affinity, tuple(tolerations))
        if kind is not None and owner is None:
            owner = f"uid-{kind}-of-{name}"
    return Pod(
        uid=uid or f"uid-{ns}-{name}",
        name=name,
        namespace=ns,
        priority=priority,
        requests=requests,
        qos=qos,
        labels=labels,
        node_name=node,
        nominated_node_name=nominated,
        start_time=start,
        terminating=terminating,
        preempted=preempted,
        preemption_never=never,
        unmodelled=unmodelled,
        priority_class=pc,
        owner=owner,
        created=created,
        scheduler_name=scheduler,
        gang=None if gang is None else GangMark(f"test {ns}/{gang[0]}", gang[1], "test gang"),
        app=apps.mark(namespace=ns, labels=labels),
        placement=placement,
        deletion_cost=deletion_cost,
        checkpoint=checkpoint,
        job_index=None if index is None else JobIndex(*index),
        grace=grace,
        gated=gated,
    )


def job_uid(name: str, ns: str = "default") -> str:
    return f"uid-job-{ns}-{name}"


def job(
    name: str,
    *,
    backoff: int = 6,
    failed: int = 0,
    on: OnDisruption = OnDisruption.COUNT,
    rule: int | None = None,
    per_index: int | None = None,
    failed_indexes: tuple[tuple[int, int], ...] = (),
    finished: bool = False,
    ns: str = "default",
) -> Job:
    """The Job of the pods built with ``job=name``; ``on``: what its podFailurePolicy does with
    DisruptionTarget (``rule`` 0 unless given, where it is not Count)."""
    if rule is None and on is not OnDisruption.COUNT:
        rule = 0
    return Job(job_uid(name, ns), ns, name, backoff, failed, on, rule, per_index, failed_indexes, finished)


def node(
    name: str,
    *,
    cpu: float = 10,
    mem: float = 64,
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: tuple[str, ...] = (),
    unschedulable: bool = False,
    **extended: int,
) -> Node:
    """``taints`` as kubectl writes them: ``key=value:Effect`` or ``key:Effect``."""
    return Node(
        name=name,
        allocatable={**units(cpu, mem, **extended), "pods": pods},
        labels=labels or {},
        taints=tuple(taint(t) for t in taints),
        unschedulable=unschedulable,
    )


def taint(text: str) -> Taint:
    """``key=value:Effect`` or ``key:Effect``."""
    pair, _, effect = text.rpartition(":")
    key, _, value = pair.partition("=")
    return Taint(key, value, effect)


def tolerate(key: str = "", value: str | None = None, effect: str = "", *, operator: str | None = None) -> Toleration:
    """Equal to ``value`` if one is given, else Exists (with an empty key: every taint)."""
    return Toleration(key, operator or ("Exists" if value is None else "Equal"), value or "", effect)


def term(*expressions: tuple[str, ...], fields: tuple[tuple[str, ...], ...] = ()) -> Term:
    """A nodeSelectorTerm from ``(key, operator, *values)`` tuples; ``fields`` for matchFields."""
    return Term(
        tuple(Requirement(k, op, tuple(vs)) for k, op, *vs in expressions),
        tuple(Requirement(k, op, tuple(vs)) for k, op, *vs in fields),
    )


def pdb(name: str, *, allowed: int, match: dict[str, str] | None = None, ns: str = "default", disrupted=()) -> DisruptionBudget:
    selector = Selector(tuple(sorted((match or {}).items())))
    return DisruptionBudget(ns, name, selector, allowed, frozenset(disrupted))


def view(nodes, pods, budgets=(), classes=(), groups=(), jobs=()) -> ClusterView:
    return ClusterView.build(nodes=nodes, pods=pods, budgets=budgets, priority_classes=classes, group_minimums=groups, jobs=jobs)


def keys(pods) -> list[str]:
    return [p.name for p in pods]


def cost_key(victims, v: ClusterView, order=None, node: str = "n1", now: float | None = None, preemptor: Pod | None = None) -> tuple:
    """reprieve's ranking key (``order``, the default if None) of evicting ``victims`` from
    ``node`` of ``v``: its budgets, gangs and homes as the view has them, the work lost at ``now``,
    and with ``preemptor`` the room left there for the view's pending pods."""
    from policy import homes, ranking
    from policy.criteria import Facts

    where = homes.of(v)
    no_home = frozenset(p.uid for p in victims if where.home(p, excluding=node) is None)
    facts = Facts(v.budgets_covering, v.gang_of, no_home=no_home, app_of=v.app_of, stake_of=v.stake_of,
                  now=now, allocatable=v.nodes[node].node.allocatable, pending_room=room_for_pending(v, node, preemptor))
    return (order or ranking.DEFAULT).cost(victims, facts).key


def room_for_pending(v: ClusterView, node: str, preemptor: Pod | None):
    """policy.criteria.pending_room's facts for ``preemptor`` on ``node`` of ``v`` (None without one)."""
    from policy.criteria import pending_room

    if preemptor is None:
        return None
    info = v.nodes[node]
    held = v.reservations(node, pod=preemptor)  # as policy.victims sees the node (no answer in flight)
    return pending_room.room(pending_room.queue(v, preemptor), info.node, info.requested, preemptor, held)


def reference_key(victims, facts, order=None) -> tuple:
    """policy.ranking's key of evicting ``victims``, measured criterion by criterion straight
    from each criterion's own definition (policy.criteria), without Order.cost's columns: an
    oracle for it and for the exact search."""
    from policy import ranking
    from policy.criteria import TIME_TO_ROOM, Kind

    live = [p for p in victims if not p.terminating]
    canonical = {}
    for c in ranking.CANONICAL:
        if c is ranking.MANAGERS:
            canonical[c] = _lost_with_managers(live, facts.app_of)
        elif c is TIME_TO_ROOM:
            canonical[c] = _time_to_room(victims)
        elif c.kind is Kind.SUM:
            canonical[c] = sum(c.of_pod(p, facts) for p in live)
        elif c.kind is Kind.MAX:
            canonical[c] = max((c.of_pod(p, facts) for p in live), default=c.least)
        else:
            canonical[c] = c.of_set(victims, live, facts)[0]
    return tuple(canonical[c] for c in (order or ranking.DEFAULT).criteria)


def _time_to_room(victims) -> int:
    """Straight from the definition (policy.criteria.time_to_room): the longest grace period
    among the live victims, 0 without one; terminating victims count nothing."""
    waits = [0]
    for p in victims:
        if not p.terminating:
            waits.append(p.grace)
    return max(waits)


def _lost_with_managers(live, app_of) -> int:
    """Straight from the definition (policy.criteria.managers): where the victims hold the manager
    of a running application, the pods lost are the union of the victims and the running pods of
    the applications ended, |A| + |B| - |A and B|; else 0."""
    if app_of is None:
        return 0
    ended = {a.key: a.running for p in live if p.app is not None and p.app.manager and (a := app_of(p)) is not None}
    if not ended:
        return 0
    both = sum(1 for p in live if p.app is not None and p.app.key in ended)
    return len(live) + sum(ended.values()) - both


def scheduler_proposals(v: ClusterView, preemptor: Pod, in_flight=(), nodes=None) -> dict:
    """What kube-scheduler proposes to the preempt verb on ``v`` (policy.stock's emulation) when
    it has taken the answers ``in_flight``: its nominator holds their preemptors on their nodes
    at once, while their victims still run until their deletions reach its cache."""
    from policy import stock

    if in_flight:
        taken = {f.preemptor.uid: f.node for f in in_flight}
        pods = [
            dataclasses.replace(p, nominated_node_name=taken[p.uid]) if p.uid in taken and p.node_name is None else p
            for p in v.pods.values()
        ]
        pods += [dataclasses.replace(f.preemptor, nominated_node_name=f.node) for f in in_flight if f.preemptor.uid not in v.pods]
        v = ClusterView.build(nodes=[n.node for n in v.nodes.values()], pods=pods, budgets=[b for bs in v.budgets.values() for b in bs],
                              priority_classes=v.priority_classes.values())
    return stock.decide(view=v, preemptor=preemptor, node_names=nodes or list(v.nodes)).proposals


def group(name: str, minimum: int, *, ns: str = "default") -> GroupMinimum:
    """The group object of the pods built with ``gang=(name, None)``."""
    return GroupMinimum(f"test {ns}/{name}", minimum, f"PodGroup {ns}/{name} spec.minMember")

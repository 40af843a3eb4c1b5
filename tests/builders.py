"""Keyword builders for policy records, so that test tables read like the scenario."""

from __future__ import annotations

import dataclasses

from policy import resources
from policy.gangs import GangMark, GroupMinimum
from policy.labels import Selector
from policy.model import DisruptionBudget, Node, Pod
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
    **extended: int,
) -> Pod:
    """``gang=(name, minimum)``: a member of a Kueue-style gang ``name`` in ``ns`` needing
    ``minimum`` running members (None: the minimum of a group object, see ``group()``)."""
    requests = resources.effective_requests(containers=[units(cpu, mem, **extended)])
    if qos is None:
        qos = QoS.BURSTABLE if (cpu or mem) else QoS.BEST_EFFORT
    return Pod(
        uid=uid or f"uid-{ns}-{name}",
        name=name,
        namespace=ns,
        priority=priority,
        requests=requests,
        qos=qos,
        labels=labels if labels is not None else {"app": name},
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
    )


def node(name: str, *, cpu: float = 10, mem: float = 64, pods: int = 110, **extended: int) -> Node:
    return Node(name=name, allocatable={**units(cpu, mem, **extended), "pods": pods})


def pdb(name: str, *, allowed: int, match: dict[str, str] | None = None, ns: str = "default", disrupted=()) -> DisruptionBudget:
    selector = Selector(tuple(sorted((match or {}).items())))
    return DisruptionBudget(ns, name, selector, allowed, frozenset(disrupted))


def view(nodes, pods, budgets=(), classes=(), groups=()) -> ClusterView:
    return ClusterView.build(nodes=nodes, pods=pods, budgets=budgets, priority_classes=classes, group_minimums=groups)


def keys(pods) -> list[str]:
    return [p.name for p in pods]


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

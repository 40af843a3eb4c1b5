"""Upstream's nominated-node integration tests (kubernetes v1.36.3,
test/integration/scheduler/preemption/nominatednodename/nominatednodename_test.go), each case
through the stock scheduler and through reprieve side by side.

Adaptations, for every case: priorities come from PriorityClasses (LOW/MEDIUM/HIGH = 100/200/300;
the Priority admission plugin is on here); each case has its own namespace and nodes and its pods
a nodeSelector for them (Scenario), where upstream has an apiserver of its own; pod shapes are
upstream's (cpu requests only, the API's default 30 s grace).

TestNominatedNode: "fake-node" keeps upstream's cpu capacity (memory, which no pod requests, is
Scenario's default); "taint-node" belongs to the case's nodes but carries upstream's taint, which
no pod tolerates; deleting "fake-node" leaves the medium pod no node at all, as upstream's
empty cluster does, since the case's pods select only the case's nodes.

TestPreferNominatedNode: upstream wraps the scheduler's NextPod so that every pod it pops carries
.status.nominatedNodeName "node-1" in memory. A real scheduler cannot be wrapped, so the
preemptor is created behind a scheduling gate, its nomination written through the status
subresource, and then the gate removed: the scheduler first meets the pod nominated to node-1.
The assertions are upstream's.

Upstream cases that cannot run here:
- TestNominatedNode "mid-priority pod preempts low-priority pod, but failed on PreBind": needs an
  in-process PreBind plugin (alwaysFailPlugin) failing the medium pod's binding; an extender
  cannot fail PreBind.

Feature gates not run (they are per process; only the v1.36.3 defaults run here):
- TestNominatedNode: SchedulerAsyncPreemption=false, SchedulerAsyncAPICalls=true and
  NominatedNodeNameForExpectation=false, in every combination but the defaults (7 of 8; the
  defaults are SchedulerAsyncPreemption=true, SchedulerAsyncAPICalls=false,
  NominatedNodeNameForExpectation=true).
- TestPreferNominatedNode: SchedulerAsyncPreemption=false (runs the defaults).
"""

from __future__ import annotations

import pytest

from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario

LOW, MEDIUM, HIGH = 100, 200, 300  # upstream's lowPriority, mediumPriority, highPriority

VIA = [pytest.param(STOCK, id="stock"), pytest.param(REPRIEVE, id="reprieve")]


def make_pod(
    scenario: Scenario,
    name: str,
    *,
    priority: int,
    scheduler: str,
    requests: dict,
    node: str | None = None,
    gates: list[str] = (),
) -> dict:
    """Upstream's st.MakePod().Req(...) / InitPausePod: requests only, the default 30 s grace,
    priority through a PriorityClass (the admission plugin may not have seen a new one yet)."""
    spec = scenario.pod_spec(priority=priority, scheduler=scheduler, node=node, grace=30, qos="besteffort")
    spec["containers"][0]["resources"] = {"requests": dict(requests)}
    if gates:
        spec["schedulingGates"] = [{"name": g} for g in gates]
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": scenario.ns}, "spec": spec}
    return scenario.create_pod(body)


def bound(scenario: Scenario, name: str, timeout: float = 30) -> str:
    """Upstream's WaitForPodToSchedule: spec.nodeName set (100 ms polls, 30 s)."""
    return wait_for(f"{name} to be bound", lambda: scenario.node_of(name), timeout, interval=0.1)


def nominated(scenario: Scenario, name: str, timeout: float = 30) -> str:
    """Upstream's WaitForNominatedNodeName: .status.nominatedNodeName set (100 ms polls, 30 s)."""

    def check():
        pod = scenario.get(name)
        return pod and (pod.get("status") or {}).get("nominatedNodeName") and pod

    pod = wait_for(f".status.nominatedNodeName of {name} to be set", check, timeout, interval=0.1)
    scenario.saw("pods", pod)  # for Scenario.synced: reprieve must see the nomination too
    return pod["status"]["nominatedNodeName"]


# --------------------------------------------------------------------------- TestNominatedNode


def cpu(n: str) -> dict:
    return {"cpu": n}


TAINT = [{"key": "taint-node", "value": "true", "effect": "NoSchedule"}]

# (init nodes: name -> cpu, with upstream's taint), fake-node cpu, batches of (name, priority,
# cpu) each with its post check ("bound" or "nominated"), delete fake-node, pods to force-delete.
NOMINATED_CASES = [
    pytest.param(
        {}, "5",
        [
            ([("low-1", LOW, "1"), ("low-2", LOW, "1"), ("low-3", LOW, "1"), ("low-4", LOW, "1")], "bound"),
            ([("medium", MEDIUM, "3")], "nominated"),
            ([("high", HIGH, "4")], "nominated"),
        ],
        False, ["low-1", "low-2", "low-3", "low-4"],
        id="mid-priority-pod-preempts-low-priority-pod-followed-by-a-high-priority-pod-with-another-preemption",
    ),
    pytest.param(
        {}, "2",
        [([("low", LOW, "1")], "bound"), ([("medium", MEDIUM, "2")], "nominated"), ([("high", HIGH, "1")], "bound")],
        False, ["low"],
        id="mid-priority-pod-preempts-low-priority-pod-followed-by-a-high-priority-pod-without-additional-preemption",
    ),
    pytest.param(
        {}, "1",
        [([("low", LOW, "1")], "bound"), ([("medium", MEDIUM, "1")], "nominated")],
        True, ["low"],
        id="mid-priority-pod-preempts-low-priority-pod-followed-by-a-node-deletion",
    ),
    pytest.param(
        {"taint-node": "1"}, "1",
        [([("low", LOW, "1")], "bound"), ([("medium", MEDIUM, "1")], "nominated")],
        True, ["low"],
        id="mid-priority-pod-preempts-low-priority-pod-at-the-beginning-but-could-not-find-candidates-after-the-nominated-node-is-deleted",
    ),
]


@pytest.mark.parametrize("scheduler", VIA)
@pytest.mark.parametrize("init_nodes, capacity, batches, delete_node, delete_pods", NOMINATED_CASES)
def test_nominated_node(scenario: Scenario, scheduler, init_nodes, capacity, batches, delete_node, delete_pods):
    for name, n in init_nodes.items():
        node = scenario.node(name, cpu=n, pods=32)
        scenario.saw("nodes", scenario.kube.patch("Node", node, None, {"spec": {"taints": TAINT}}))
    fake_node = scenario.node("fake-node", cpu=capacity, pods=32)
    for pods, check in batches:
        scenario.synced()
        for name, priority, n in pods:
            make_pod(scenario, name, priority=priority, scheduler=scheduler, requests=cpu(n))
        for name, _, _ in pods:
            if check == "bound":
                bound(scenario, name)
                scenario.running(name)  # and for Scenario.synced: reprieve must see it bound
            else:
                nominated(scenario, name)
    if delete_node:
        scenario.kube.delete("Node", fake_node, grace=0)
    for name in delete_pods:
        scenario.kube.delete("Pod", name, scenario.ns, grace=0)
    wait_for(".status.nominatedNodeName of the medium pod to be cleared", lambda: not scenario.nominated("medium"), 30, interval=0.1)


# --------------------------------------------------------------------------- TestPreferNominatedNode

NODE = {"cpu": "500m", "memory": "500", "pods": 32}  # upstream's defaultNodeRes
DEFAULT_POD_RES = {"cpu": "100m", "memory": "100"}  # upstream's defaultPodRes
HOLD = "reprieve.e2e/hold"


@pytest.mark.parametrize(
    "existing_on, preemptor, running_node",
    [
        pytest.param("node-2", "preemptor-pod", "node-1", id="nominated-node-released-all-resource-preemptor-is-scheduled-to-the-nominated-node"),
        pytest.param("node-1", "preemptor-pod1", "node-2", id="nominated-node-cannot-pass-all-the-filters-preemptor-should-find-a-different-node"),
    ],
)
@pytest.mark.parametrize("scheduler", VIA)
def test_prefer_nominated_node(scenario: Scenario, scheduler, existing_on, preemptor, running_node):
    nodes = {n: scenario.node(n, **NODE) for n in ("node-1", "node-2")}
    existing = "low-pod1" if existing_on == "node-2" else "low-pod"
    make_pod(scenario, existing, priority=LOW, scheduler=scheduler, requests=DEFAULT_POD_RES, node=nodes[existing_on])
    scenario.running(existing)
    make_pod(scenario, preemptor, priority=HIGH, scheduler=scheduler, requests={"cpu": "500m", "memory": "200"}, gates=[HOLD])
    # In place of upstream's NextPod wrapper: nominated to node-1 while gated, then released.
    scenario.nominate(preemptor, nodes["node-1"])
    scenario.synced()
    scenario.saw("pods", scenario.kube.patch("Pod", preemptor, scenario.ns, {"spec": {"schedulingGates": None}}))
    assert bound(scenario, preemptor) == nodes[running_node]

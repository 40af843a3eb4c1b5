"""Upstream's nominated-node integration tests (kubernetes v1.36.3,
test/integration/scheduler/preemption/nominatednodename/nominatednodename_test.go), each case
through the stock scheduler and through reprieve side by side.

Adaptations, for every case: priorities come from PriorityClasses (LOW/MEDIUM/HIGH = 100/200/300;
the Priority admission plugin is on here); each case has its own namespace and nodes and its pods
a nodeSelector for them (Scenario), where upstream has an apiserver of its own; pod shapes are
upstream's (cpu requests only, the API's default 30 s grace).

TestNominatedNode: upstream runs it only with NominatedNodeNameForExpectation off (its loop over
that gate is {false}); on, the v1.36.3 default, the scheduler no longer clears a nomination when
scheduling fails, which is what these cases check. So this module starts two more kube-schedulers
with --feature-gates=NominatedNodeNameForExpectation=false, for this module only: a stock one and
one with reprieve (the shared one) as its extender. "fake-node" keeps its cpu capacity (memory,
which no pod requests, is Scenario's default); "taint-node" belongs to the case's nodes but carries
upstream's taint, which no pod tolerates.

TestPreferNominatedNode: upstream wraps the scheduler's NextPod so that every pod it pops carries
.status.nominatedNodeName "node-1" in memory. A real scheduler cannot be wrapped, so the
preemptor is created behind a scheduling gate, its nomination written through the status
subresource, and then the gate removed: the scheduler first meets the pod nominated to node-1.
The assertions are upstream's.

Upstream cases that cannot run here:
- TestNominatedNode "mid-priority pod preempts low-priority pod, but failed the scheduling
  unexpectedly": needs an in-process PreBind plugin (alwaysFailPlugin) failing the medium pod's
  binding; an extender cannot fail PreBind.

Feature gates not run (per process; one setting each here):
- TestNominatedNode: SchedulerAsyncPreemption=false and SchedulerAsyncAPICalls=true (3 of
  upstream's 4 combinations; runs SchedulerAsyncPreemption=true, SchedulerAsyncAPICalls=false,
  NominatedNodeNameForExpectation=false); NominatedNodeNameForExpectation=true is not run
  upstream either.
- TestPreferNominatedNode: SchedulerAsyncPreemption=false (runs the defaults).
"""

from __future__ import annotations

import pytest
import yaml

from extender.live.apiserver import ApiError
from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario
from tests.ports import free_port

LOW, MEDIUM, HIGH = 100, 200, 300  # upstream's lowPriority, mediumPriority, highPriority

VIA = [pytest.param(STOCK, id="stock"), pytest.param(REPRIEVE, id="reprieve")]

GATES = "--feature-gates=NominatedNodeNameForExpectation=false"


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

    def attempt():
        try:
            return scenario.kube.create(body)
        except ApiError as exc:
            if exc.status == 403 and "no PriorityClass" in str(exc):
                return None
            raise

    return wait_for(f"pod {name} admitted", attempt, timeout=15, interval=0.1)


def bound(scenario: Scenario, name: str, timeout: float = 30) -> str:
    """Upstream's WaitForPodToSchedule: spec.nodeName set (100 ms polls, 30 s)."""
    return wait_for(f"{name} to be bound", lambda: scenario.node_of(name), timeout, interval=0.1)


def nominated(scenario: Scenario, name: str, timeout: float = 30) -> str:
    """Upstream's WaitForNominatedNodeName: .status.nominatedNodeName set (100 ms polls, 30 s)."""
    return wait_for(f".status.nominatedNodeName of {name} to be set", lambda: scenario.nominated(name), timeout, interval=0.1)


# --------------------------------------------------------------------------- TestNominatedNode


@pytest.fixture(scope="module")
def nnn_off(plane):
    """Two more kube-schedulers with NominatedNodeNameForExpectation off: stock, and one whose
    extender is the shared reprieve (extenders are per process, gates per process)."""
    names = {STOCK: "upstream-stock-nnn-off", REPRIEVE: "upstream-reprieve-nnn-off"}
    stock = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": plane.client_connection(),
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": names[STOCK]}],
    }
    configs = {STOCK: plane.work / f"{names[STOCK]}.yaml", REPRIEVE: plane.scheduler_config(names[REPRIEVE], plane.reprieve_port)}
    configs[STOCK].write_text(yaml.safe_dump(stock, sort_keys=False))
    try:
        for side, name in names.items():
            port = free_port()
            # ControlPlane.start_scheduler takes no extra flags; this is its command plus the gate.
            plane._spawn(
                name,
                [*plane._component("kube-scheduler", port), f"--config={configs[side]}", "-v=4", GATES],
                lambda port=port: plane._secure_healthz(port),
            )
        yield names
    finally:
        for name in names.values():
            plane.stop_process(name)


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
            ([("medium", MEDIUM, "4")], "nominated"),
            ([("high", HIGH, "3")], "nominated"),
        ],
        False, [],
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
def test_nominated_node(scenario: Scenario, nnn_off, scheduler, init_nodes, capacity, batches, delete_node, delete_pods):
    scheduler = nnn_off[scheduler]
    for name, n in init_nodes.items():
        node = scenario.node(name, cpu=n, pods=32)
        scenario._saw("nodes", scenario.kube.patch("Node", node, None, {"spec": {"taints": TAINT}}))
    fake_node = scenario.node("fake-node", cpu=capacity, pods=32)
    for pods, check in batches:
        scenario.synced()
        for name, priority, n in pods:
            make_pod(scenario, name, priority=priority, scheduler=scheduler, requests=cpu(n))
        for name, _, _ in pods:
            (bound if check == "bound" else nominated)(scenario, name)
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
    scenario._saw("pods", scenario.kube.patch("Pod", preemptor, scenario.ns, {"spec": {"schedulingGates": None}}))
    assert bound(scenario, preemptor) == nodes[running_node]

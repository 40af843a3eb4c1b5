"""Upstream's TestPreemptionRaces (kubernetes v1.36.3, test/integration/scheduler/preemption/misc,
issue #72124), and the name reuse it exercises, through reprieve, through reprieve with its watch
lagging on purpose (tests/e2e/lagged.py), and side by side through stock.

Upstream repeats one scenario in one namespace, re-creating pods under the same names: a node
(cpu 5000m, memory 5000, pods 100) runs two medium-priority pods (100m / 100); a high-priority
preemptor (4900m / 4900) is created with twenty medium pods right behind it. One medium pod must
go, the preemptor must be bound within 60 s, and no medium pod may take the room freed for it.
Before reprieve settled its records by UID, the second repetition's preemptor got no candidate:
room was held for the previous repetition's preemptor of the same name, bound and deleted since.

Upstream runs it under four feature-gate settings (SchedulerAsyncPreemption and
ClearingNominatedNodeNameAfterBinding, each on and off); gates are per process here, so only the
defaults (both on) run.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario

LOW, MEDIUM, HIGH = 100, 200, 300  # upstream's lowPriority, mediumPriority, highPriority

# (scheduler, watch lag of its reprieve, repetitions): upstream repeats 5 times; reprieve
# repeats 20 times, and 20 times with its watch 2 s late.
VIA = [
    pytest.param(STOCK, 0.0, 5, id="stock"),
    pytest.param(REPRIEVE, 0.0, 20, id="reprieve"),
    pytest.param(REPRIEVE, 0.5, 5, id="reprieve-watch-500ms-late"),
    pytest.param(REPRIEVE, 2.0, 20, id="reprieve-watch-2s-late"),
]


def scheduler_for(lagged, scheduler: str, lag: float) -> str:
    return lagged.scheduler(lag) if lag else scheduler


def medium(scenario: Scenario, name: str, scheduler: str) -> None:
    """Upstream's mkPriorityPodWithGrace(name, mediumPriority, 0): 100m cpu, 100 bytes, grace 0."""
    scenario.pod(name, cpu="100m", memory="100", priority=MEDIUM, grace=0, scheduler=scheduler, labels={"pod": name})


def bound(scenario: Scenario, name: str, timeout: float) -> str:
    return wait_for(f"{name} to be bound", lambda: scenario.node_of(name), timeout, interval=0.1)


def evicted(scenario: Scenario, names: list[str]) -> list[str]:
    return [n for n in names if scenario.terminating(n)]


def never_scheduled(scenario: Scenario, name: str) -> bool:
    pod = scenario.get(name)
    assert pod is not None, f"{name} is gone"
    condition = next((c for c in pod["status"].get("conditions") or () if c["type"] == "PodScheduled"), None)
    return not pod["spec"].get("nodeName") and (condition is None or condition["status"] == "False")


def delete_all_pods(scenario: Scenario) -> None:
    """Upstream's CleanupPods: delete with grace 0 and wait until every pod is gone."""
    for pod in scenario.kube.list("Pod", scenario.ns):
        scenario.kube.delete("Pod", pod["metadata"]["name"], scenario.ns, grace=0)
    wait_for("every pod to be gone", lambda: not scenario.kube.list("Pod", scenario.ns), 60)


def preempt_decisions(scenario: Scenario, lagged, scheduler: str, lag: float, pod: str) -> list[dict]:
    """The decision log lines of the reprieve behind ``scheduler`` for ``pod``'s preempt calls."""
    key = f"{scenario.ns}/{pod}"
    if lag:
        return lagged.decisions(lag, "preempt", key)
    lines = [json.loads(l) for l in scenario.plane.log("reprieve").splitlines() if l.startswith("{")]
    return [l for l in lines if l.get("logger") == "reprieve.decisions" and l["msg"] == "preempt" and l.get("pod") == key]


@pytest.mark.parametrize("scheduler, lag, repetitions", VIA)
def test_preemption_races(scenario: Scenario, lagged, request, scheduler, lag, repetitions):
    via = scheduler
    scheduler = scheduler_for(lagged, scheduler, lag)
    scenario.node("node1", cpu="5000m", memory="5000", pods=100)
    rpods, ppods = [f"rpod-{i}" for i in range(2)], [f"ppod-{i}" for i in range(20)]
    for repetition in range(repetitions):
        for name in rpods:
            medium(scenario, name, scheduler)
        for name in rpods:
            bound(scenario, name, 30)
        scenario.pod("preemptor-pod", cpu="4900m", memory="4900", priority=HIGH, grace=30, scheduler=scheduler)
        for name in ppods:
            medium(scenario, name, scheduler)
        bound(scenario, "preemptor-pod", 60)
        taken = [p for p in ppods if not never_scheduled(scenario, p)]
        assert not taken, f"repetition {repetition}: lower-priority pods given the preemptor's room: {taken}"
        if scheduler != STOCK:  # reprieve: the one medium pod needed, no more
            assert len(evicted(scenario, rpods)) == 1, f"repetition {repetition}: evicted {evicted(scenario, rpods)}"
        delete_all_pods(scenario)
    if via != STOCK:  # reprieve was asked, every repetition
        decisions = preempt_decisions(scenario, lagged, scheduler, lag, "preemptor-pod")
        outcomes = Counter(d["outcome"] for d in decisions)
        request.node.user_properties.append(("races", f"{scheduler}: preempt outcomes {dict(outcomes)}"))
        assert outcomes["answered"] >= repetitions, outcomes


@pytest.mark.parametrize("scheduler, lag, repetitions", [p for p in VIA])
def test_a_preemptor_recreated_under_its_name_while_its_answer_is_in_flight(scenario: Scenario, lagged, request, scheduler, lag, repetitions):
    # Not upstream's, but the name reuse its race turned on, made deliberate: n1 (4 cpu) is full
    # of four 1-cpu priority-1 pods that take 2 s to terminate. 'pre' (priority 100, 1 cpu) is
    # answered and nominated, and deleted and created again under its name while its victim is
    # still terminating; three more priority-1 pods arrive right behind it (they cannot preempt
    # the fillers, only take room). The new 'pre' must be bound, none of the three may take its
    # room, and at most one more pod may go for it.
    scheduler = scheduler_for(lagged, scheduler, lag)
    n1 = scenario.node("n1", cpu="4")
    fillers = [f"f{i}" for i in range(4)]
    for name in fillers:
        scenario.pod(name, cpu="1", priority=1, node=n1, grace=2, scheduler=scheduler)
    scenario.running_all(*fillers)
    for repetition in range(min(repetitions, 3)):
        scenario.pod("pre", cpu="1", priority=100, scheduler=scheduler, grace=0)
        wait_for("the first 'pre' to be nominated or bound", lambda: scenario.nominated("pre") or scenario.node_of("pre"), 30, 0.05)
        scenario.kube.delete("Pod", "pre", scenario.ns, grace=0)
        scenario.gone("pre")
        scenario.pod("pre", cpu="1", priority=100, scheduler=scheduler, grace=0)
        late = [f"late{i}" for i in range(3)]
        for name in late:
            scenario.pod(name, cpu="1", priority=1, scheduler=scheduler, grace=0)
        assert bound(scenario, "pre", 30) == n1
        gone = evicted(scenario, fillers)
        request.node.user_properties.append(("races", f"{scheduler} repetition {repetition}: evicted {gone}"))
        assert len(gone) <= 2, f"repetition {repetition}: evicted {gone}"
        for name in late:
            assert never_scheduled(scenario, name) and not scenario.terminating(name), f"{name} took the room"
        # Next repetition: the same, on a node full again.
        for name in [*late, "pre", *gone]:
            scenario.kube.delete("Pod", name, scenario.ns, grace=0)
        for name in [*late, "pre", *gone]:
            scenario.gone(name)
        for name in gone:
            scenario.pod(name, cpu="1", priority=1, node=n1, grace=2, scheduler=scheduler)
        scenario.running_all(*fillers)

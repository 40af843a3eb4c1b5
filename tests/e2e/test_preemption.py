"""Preemption through the real kube-scheduler with reprieve in its path (and, side by side, without)."""

from __future__ import annotations

import time

import pytest

from tests.e2e.scenario import REPRIEVE, STOCK


def test_minimal_victims_only_p2_goes(scenario):
    # The seed's example: capacity 10, running p0:3 p1:1 p2:5 p3:1 at priorities 0..3; a
    # priority-10 pod needing 5 evicts only p2.
    n1 = scenario.node("n1", cpu="10")
    for name, priority, cpu in (("p0", 0, "3"), ("p1", 1, "1"), ("p2", 2, "5"), ("p3", 3, "1")):
        scenario.pod(name, cpu=cpu, priority=priority, node=n1)
    scenario.running_all("p0", "p1", "p2", "p3")
    scenario.synced()
    scenario.pod("preemptor", cpu="5", priority=10)
    assert scenario.running("preemptor") == n1
    assert scenario.get("p2") is None
    assert all(scenario.get(p) and not scenario.terminating(p) for p in ("p0", "p1", "p3"))


@pytest.mark.parametrize(
    "scheduler, evicted, kept",
    [
        pytest.param(REPRIEVE, "burstable", "guaranteed", id="reprieve-evicts-the-burstable-pod"),
        pytest.param(STOCK, "guaranteed", "burstable", id="stock-evicts-the-younger-guaranteed-pod"),
    ],
)
def test_qos_tie_break_side_by_side(scenario, scheduler, evicted, kept):
    # Two equal-priority 2-cpu pods fill a 4-cpu node; the Guaranteed one started later. The
    # preemptor needs 2. Stock preemption keeps the older pod (start time is its only
    # tie-break) and evicts the Guaranteed one; reprieve evicts the Burstable one.
    n1 = scenario.node("n1", cpu="4")
    scenario.qos_tie(n1)
    scenario.synced()
    scenario.pod("preemptor", cpu="2", priority=10, scheduler=scheduler)
    assert scenario.running("preemptor") == n1
    assert scenario.get(evicted) is None
    assert scenario.get(kept) is not None and not scenario.terminating(kept)


def test_pdb_protected_victim_is_spared_for_a_node_that_violates_nothing(scenario):
    # n1's only pod is behind a budget that allows no disruption; n2's pod has a higher
    # priority (5 > 1) but no budget. Reprieve steers the preemptor to n2: no violation.
    n1, n2 = scenario.node("n1", cpu="4"), scenario.node("n2", cpu="4")
    scenario.pod("protected", cpu="4", priority=1, node=n1, labels={"app": "db"})
    scenario.pod("free", cpu="4", priority=5, node=n2, labels={"app": "cache"})
    scenario.running_all("protected", "free")
    scenario.pdb("db", match={"app": "db"}, min_available=1)
    scenario.pdb_ready("db", allowed=0, healthy=1)
    scenario.synced()
    scenario.pod("preemptor", cpu="4", priority=10)
    assert scenario.running("preemptor") == n2
    assert scenario.get("free") is None
    assert not scenario.terminating("protected")


def test_preemption_policy_never_evicts_nothing(scenario):
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("low", cpu="4", priority=1, node=n1)
    scenario.running("low")
    scenario.pod("polite", cpu="2", priority=10, never=True)
    scenario.pending_for("polite", 4)
    assert not scenario.terminating("low")


def test_best_effort_pods_are_never_evicted_for_cpu(scenario):
    # A BestEffort pod and a 3-cpu Burstable pod share a 4-cpu node at the same priority.
    # The preemptor needs 2: only evicting the Burstable pod frees cpu, so only it goes.
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("best-effort", priority=1, qos="besteffort", node=n1)
    scenario.pod("burstable", cpu="3", priority=1, node=n1)
    scenario.running_all("best-effort", "burstable")
    scenario.synced()
    scenario.pod("preemptor", cpu="2", priority=10)
    assert scenario.running("preemptor") == n1
    assert scenario.get("burstable") is None
    assert not scenario.terminating("best-effort")


@pytest.mark.parametrize("scheduler", [pytest.param(REPRIEVE, id="reprieve"), pytest.param(STOCK, id="stock")])
def test_a_pod_resized_down_holds_its_old_size_until_the_kubelet_has_actuated_it(scenario, scheduler):
    # The Guaranteed "resized" asks 1 cpu, but its kubelet still holds the 3 it had (allocated
    # and actuated): the scheduler counts 3 (InPlacePodVerticalScaling), so the 4-cpu node is
    # full beside the older Burstable "low". The preemptor needs 2: only "resized" going makes
    # room, one victim. A reprieve reading the spec alone saw 2 cpu free and the scheduler's
    # victim freeing 1, and named the Burstable "low" instead (QoS): the room did not come, and
    # the preemptor took "resized" too.
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("low", cpu="1", priority=1, node=n1)
    scenario.running("low")
    time.sleep(1.1)  # startTime has one-second resolution: "low" is the older, re-added first
    scenario.pod("resized", cpu="1", qos="guaranteed", priority=1, node=n1)
    scenario.running("resized")
    main = scenario.get("resized")["status"]["containerStatuses"][0]
    held = {"cpu": "3", "memory": "100Mi"}
    scenario.saw("pods", scenario.kube.patch_status("Pod", "resized", scenario.ns, {"containerStatuses": [
        {**main, "allocatedResources": held, "resources": {"requests": held, "limits": held}}]}))
    assert scenario.get("resized")["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] == "3"
    scenario.synced()
    scenario.pod("preemptor", cpu="2", priority=10, scheduler=scheduler)
    assert scenario.running("preemptor") == n1
    assert scenario.get("resized") is None
    assert not scenario.terminating("low")

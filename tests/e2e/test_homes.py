"""Victims with somewhere to go (issue 19), through the real kube-scheduler, side by side.

A ReplicaSet's pod whose replacement fits on another node restarts there; a bare pod evicted is
gone for good. Stock preemption cannot tell them apart; reprieve ranks the victims with no home
(policy/homes.py) and evicts the one that comes back.
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK


@pytest.mark.parametrize(
    "scheduler",
    [pytest.param(REPRIEVE, id="reprieve-evicts-the-pod-that-restarts"), pytest.param(STOCK, id="stock-evicts-the-bare-pod")],
)
def test_the_victim_whose_replacement_fits_elsewhere_goes_rather_than_a_bare_pod(scenario, scheduler):
    # n2 (4 cpu) runs a 1-cpu priority-100 pod and, placed by the scheduler, the one 2-cpu
    # priority-1 pod of ReplicaSet web. n1 (4 cpu) runs a 1-cpu priority-100 pod and, a second
    # later, a bare 2-cpu priority-1 pod. A spare node has 2 cpu: room for web's replacement,
    # not for the 3-cpu preemptor. Upstream evicts the younger, bare pod (gone for good);
    # reprieve evicts web's pod, whose replacement runs on the spare node.
    n2 = scenario.node("n2", cpu="4")
    scenario.pod("high-2", cpu="1", priority=100, node=n2)
    scenario.running("high-2")
    scenario.replicaset("web", replicas=1, labels={"app": "web"}, cpu="2", priority=1, scheduler=scheduler)
    web = wait_for("web's pod running on n2", lambda: next(
        (p["metadata"]["name"] for p in scenario.pods_with({"app": "web"}) if p["spec"].get("nodeName") == n2), None
    ), 30)
    scenario.running(web)
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("high-1", cpu="1", priority=100, node=n1)
    time.sleep(1.1)  # status.startTime has a resolution of one second: the bare pod is younger
    scenario.pod("bare", cpu="2", priority=1, node=n1)
    scenario.running_all("high-1", "bare")
    spare = scenario.node("spare", cpu="2")
    for name in ("high-2", "high-1", "bare", web):
        scenario.saw("pods", scenario.get(name))
    scenario.synced()
    scenario.pod("preemptor", cpu="3", priority=10, scheduler=scheduler)
    placed = scenario.running("preemptor")
    if scheduler == STOCK:
        assert placed == n1
        assert scenario.terminating("bare")  # or gone
        assert not scenario.terminating(web)
        return
    assert placed == n2
    assert not scenario.terminating("bare")  # nor gone
    # The ReplicaSet's replacement runs on the spare node: evicted, not displaced.
    wait_for("web's replacement running on the spare node", lambda: any(
        p["spec"].get("nodeName") == spare and p["metadata"]["name"] != web and p["status"].get("phase") == "Running"
        for p in scenario.pods_with({"app": "web"})
    ), 30)

"""Gangs through the real kube-scheduler (issue 19): a victim that breaks a gang, side by side.

The session's apiserver serves scheduler-plugins' coscheduling PodGroup (tests/e2e/crds/,
installed before reprieve starts); reprieve watches it like a cluster running coscheduling.
The gang's pods carry the label ``scheduling.x-k8s.io/pod-group`` and are bound directly (no
coscheduling plugin runs: what matters here is what preemption does to them once they run).
"""

from __future__ import annotations

import time

import pytest

from tests.e2e.client import wait_for
from tests.e2e.events import reprieve_events
from tests.e2e.scenario import REPRIEVE, STOCK

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
COSCHEDULING_GROUPS = "podgroups.scheduling.x-k8s.io"  # reprieve's name for the kind (its /readyz)


def pod_group(scenario, name: str, *, min_member: int) -> None:
    body = {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": scenario.ns},
        "spec": {"minMember": min_member},
    }
    made = scenario.kube.request("POST", f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{scenario.ns}/podgroups", body)
    scenario.saw(COSCHEDULING_GROUPS, made)


def lone_pods_then_a_gang(scenario, *, min_member: int) -> tuple[str, list[str], list[str]]:
    """An 8-cpu node running eight 1-cpu priority-1 pods: four lone ones, then (a second later,
    so that they are younger) four of gang train, whose PodGroup needs ``min_member``."""
    n1 = scenario.node("n1", cpu="8")
    lone = [f"lone-{i}" for i in range(4)]
    for name in lone:
        scenario.pod(name, cpu="1", priority=1, node=n1, labels={"app": "lone"})
    scenario.running_all(*lone)
    time.sleep(1.1)  # status.startTime has a resolution of one second
    pod_group(scenario, "train", min_member=min_member)
    gang = [f"train-{i}" for i in range(4)]
    for name in gang:
        scenario.pod(name, cpu="1", priority=1, node=n1, labels={"app": "train", POD_GROUP_LABEL: "train"})
    scenario.running_all(*gang)
    scenario.synced()
    return n1, lone, gang


@pytest.mark.parametrize(
    "scheduler",
    [pytest.param(REPRIEVE, id="reprieve-keeps-the-gang-whole"), pytest.param(STOCK, id="stock-breaks-the-gang")],
)
def test_a_lone_pod_goes_rather_than_a_member_of_a_gang_that_needs_every_one(scenario, scheduler):
    # An 8-cpu node runs eight 1-cpu priority-1 pods: four lone ones, then (a second later) a
    # 4-pod gang whose PodGroup needs all four. The preemptor needs 1 cpu. Upstream evicts the
    # youngest of equal priority, a member of the gang (whose other three then wait for it in
    # vain); reprieve evicts the youngest lone pod.
    n1, lone, gang = lone_pods_then_a_gang(scenario, min_member=4)
    scenario.pod("preemptor", cpu="1", priority=10, scheduler=scheduler)
    assert scenario.running("preemptor") == n1
    gone = [p for p in (*lone, *gang) if scenario.terminating(p)]
    assert len(gone) == 1, gone
    if scheduler == STOCK:
        assert gone[0] in gang
        return
    assert gone[0] in lone
    # The victim's Event says why the gang's members stay.
    note = wait_for(
        "reprieve's Event on the victim",
        lambda: next((e["note"] for e in reprieve_events(scenario.kube, scenario.ns) if e["reason"] == "ChosenForPreemption"), None),
        timeout=15,
    )
    assert (
        f"a member of gang coscheduling {scenario.ns}/train (4 running, at least 4 needed: label {POD_GROUP_LABEL}, "
        f"PodGroup {scenario.ns}/train spec.minMember=4)"
    ) in note, note


def test_a_gang_with_members_to_spare_is_no_reason_to_look_elsewhere(scenario):
    # The same node, but the PodGroup needs only 3 of its 4 members: one may go, and the
    # youngest pod (a gang member) is the cheapest victim, as upstream would choose.
    n1, lone, gang = lone_pods_then_a_gang(scenario, min_member=3)
    scenario.pod("preemptor", cpu="1", priority=10)
    assert scenario.running("preemptor") == n1
    gone = [p for p in (*lone, *gang) if scenario.terminating(p)]
    assert len(gone) == 1 and gone[0] in gang, gone

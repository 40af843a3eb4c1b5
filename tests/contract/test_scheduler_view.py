"""Issue 27's two readings of the scheduler's view, over the wire: filter counts another
scheduler's held room on top of the asking scheduler's own (read from the pod's
``spec.schedulerName``), and preempt frees no more than a proposal shows the scheduler needs
where its own lower-priority nominated pods cannot be assumed (docs/upstream-semantics.md)."""

from __future__ import annotations

import orjson
import pytest

from extender.config import Settings
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from policy.qos import QoS
from tests.builders import node, pod, view


def wire_pod(*, priority: int, cpu: str, scheduler: str | None = None) -> dict:
    spec = {"priority": priority, "containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    return {"metadata": {"name": "asked", "namespace": "default", "uid": "u-asked"}, "spec": spec}


def post(cluster, verb: str, request: dict) -> dict:
    client = create_app(Settings(), cluster=StaticCluster(cluster)).test_client()
    response = client.post(f"/{verb}", data=orjson.dumps(request), content_type="application/json")
    assert response.status_code == 200
    return response.get_json()


@pytest.mark.parametrize(
    ("scheduler", "held_for", "next_to"),
    [
        # The default scheduler asks: 'theirs' (volcano's, 2 cpu) is the hold it cannot see, on
        # top of its own 'mine' (1 cpu): 12 + 1 + 2 + 2 = 17 > 16.
        pytest.param(None, "default/theirs (priority 10)", "default/mine (priority 20)", id="default-scheduler-asks"),
        # Volcano asks: now 'mine' is the other scheduler's, 'theirs' its own: 12 + 2 + 2 + 1 = 17.
        pytest.param("volcano", "default/mine (priority 20)", "default/theirs (priority 10)", id="volcano-asks"),
    ],
)
def test_filter_adds_another_schedulers_hold_to_the_asking_schedulers_own(scheduler, held_for, next_to):
    cluster = view(
        [node("n1", cpu=16)],
        [
            pod("running", node="n1", cpu=12),
            pod("mine", cpu=1, priority=20, nominated="n1"),
            pod("theirs", cpu=2, priority=10, nominated="n1", scheduler="volcano"),
        ],
    )
    answer = post(cluster, "filter", {"Pod": wire_pod(priority=10, cpu="2", scheduler=scheduler), "NodeNames": ["n1"]})
    assert answer["NodeNames"] == []
    assert answer["FailedAndUnresolvableNodes"] == {
        "n1": f"fits only in room held for nominated {held_for}, next to the room the scheduler holds for its own nominated {next_to}"
    }


@pytest.mark.parametrize(
    ("nominee_cpu", "victim"),
    [
        # Two 2-cpu nominees: the 1.5 cpu the proposed g leaves holds neither, so the scheduler
        # counts neither, and b (0.5 cpu, Burstable) makes room: 8 - 2.5 + 0.5 = 6.
        pytest.param(2, "b", id="neither-nominee-can-be-assumed"),
        # Two 1-cpu nominees: one may be assumed, and b alone would leave it short (5 < 6).
        pytest.param(1, "g", id="a-nominee-may-be-assumed"),
    ],
)
def test_preempt_frees_no_more_than_the_proposal_shows_the_scheduler_counts(nominee_cpu, victim):
    on = {
        "b": pod("b", node="n0", cpu=0.5, qos=QoS.BURSTABLE, start=0),
        "g": pod("g", node="n0", cpu=2, qos=QoS.GUARANTEED, start=1),
    }
    nominees = [pod(f"w{i}", cpu=nominee_cpu, priority=1, nominated="n0") for i in range(2)]
    request = {
        "Pod": wire_pod(priority=5, cpu="6"),
        "NodeNameToVictims": None,
        "NodeNameToMetaVictims": {"n0": {"Pods": [{"UID": on["g"].uid}], "NumPDBViolations": 0}},
    }
    answer = post(view([node("n0", cpu=8)], [*on.values(), *nominees]), "preempt", request)
    assert answer["NodeNameToMetaVictims"] == {"n0": {"Pods": [{"UID": on[victim].uid}], "NumPDBViolations": 0}}

"""A reprieve started in the middle of a wave decides from the cluster alone (issue 27, point 1).

No ledger survives a restart. What kube-scheduler has begun is in the API: the preemptor's
``nominatedNodeName`` and its victim's ``DisruptionTarget`` condition (reason
``PreemptionByScheduler``) with a ``deletionTimestamp``. A live cache fed that list (a small
API server on loopback, tests/unit/test_cache.py's) must, from its first view and with an empty
ledger: hold the nominated preemptor's room, never count its terminating victim's room as free
for anyone else, answer the next preemptor exactly as the reprieve that recorded the first answer
itself would, and say that it started with preemptions under way (metric, log line).
"""

from __future__ import annotations

import logging

import kubernetes
import orjson
import pytest

from extender.apiserver import ApiServer
from extender.config import Settings
from extender.live.cache import LiveCluster
from extender.live.changes import KINDS
from extender.metrics import Metrics
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from tests.e2e.client import wait_for
from tests.unit.test_cache import FakeApiServer

STAMP = "2026-11-26T10:00:00Z"
PREEMPTION = {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler", "message": "preempted"}


def k8s_node(name: str) -> dict:
    allocatable = {"cpu": "32", "memory": "64Gi", "pods": "110"}
    return {"kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}"}, "status": {"allocatable": allocatable, "capacity": allocatable}}


def k8s_pod(name: str, *, priority: int, node: str | None = None, nominated: str | None = None, victim: bool = False) -> dict:
    pod = {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "wave", "uid": f"uid-{name}", "creationTimestamp": STAMP},
        "spec": {
            "priority": priority,
            "schedulerName": "default-scheduler",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": "8", "memory": "100Mi"}}}],
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": STAMP}
    if nominated:
        pod["status"]["nominatedNodeName"] = nominated
    if victim:  # what the scheduler's preemption executor writes before it deletes the pod
        pod["metadata"]["deletionTimestamp"] = STAMP
        pod["status"]["conditions"] = [PREEMPTION]
    return pod


def mid_wave() -> list[dict]:
    """n1 full of four 8-cpu fillers: p1 (priority 1000) is nominated there and f1-0 terminates
    for it. n2 is full of pods p2 may not take (priority 2000)."""
    pods = [k8s_pod("p1", priority=1000, nominated="n1"), k8s_pod("f1-0", priority=0, node="n1", victim=True)]
    pods += [k8s_pod(f"f1-{i}", priority=0, node="n1") for i in (1, 2, 3)]
    pods += [k8s_pod(f"high-{i}", priority=2000, node="n2") for i in range(4)]
    return pods


def request(*victims: str) -> bytes:
    """The scheduler's preempt call for p2 (priority 1000, 8 cpu): its dry run on n1 removes every
    lower-priority pod, counts nominated p1 beside p2 (16 of 32 cpu), and gives back pods until
    they no longer fit: ``victims`` stay evicted."""
    pod = {"metadata": {"name": "p2", "namespace": "wave", "uid": "uid-p2"},
           "spec": {"priority": 1000, "containers": [{"name": "c", "resources": {"requests": {"cpu": "8", "memory": "100Mi"}}}]}}
    return orjson.dumps({"Pod": pod, "NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": f"uid-{v}"} for v in victims], "NumPDBViolations": 0}}})


@pytest.fixture
def restarted(caplog):
    """A live cache whose first list is the cluster mid-wave; its app, with an empty ledger."""
    fake = FakeApiServer()
    for obj in [k8s_node("n1"), k8s_node("n2"), *mid_wave()]:
        kind = "nodes" if obj["kind"] == "Node" else "pods"
        key = obj["metadata"]["name"] if kind == "nodes" else f"wave/{obj['metadata']['name']}"
        fake.objects[KINDS[kind].path][key] = {**obj, "metadata": {**obj["metadata"], "resourceVersion": "100"}}
    config = kubernetes.client.Configuration()
    config.host = fake.host
    metrics = Metrics()
    caplog.set_level(logging.INFO, logger="extender.live.cache")
    cluster = LiveCluster(ApiServer(config), metrics=metrics, watch_seconds=1, discovery_interval=0.2).start()
    try:
        wait_for("the first view", cluster.view, timeout=15)
        yield cluster, metrics, create_app(Settings(), cluster=cluster, metrics=metrics)
    finally:
        cluster.stop()
        fake.close()


def answer(app, body: bytes) -> dict:
    response = app.test_client().post("/preempt", data=body, content_type="application/json")
    assert response.status_code == 200, response.data
    return response.get_json()["NodeNameToMetaVictims"]


def test_the_first_view_holds_the_nominated_room_and_offers_no_terminating_victim_as_room(restarted):
    cluster, _, app = restarted
    view = cluster.view()
    assert view.pods["uid-p1"].nominated_node_name == "n1"
    assert view.pods["uid-f1-0"].terminating and view.pods["uid-f1-0"].preempted
    # The scheduler proposes the terminating f1-0 and one live filler. f1-0's room is p1's:
    # evicting it frees nothing for p2, so reprieve's victims on n1 must free 8 cpu among the
    # live fillers, whatever it does with f1-0.
    [(node, victims)] = answer(app, request("f1-0", "f1-1")).items()
    uids = {p["UID"] for p in victims["Pods"]}
    assert node == "n1" and len(uids - {"uid-f1-0"}) == 1, victims


def test_the_answer_is_the_one_a_reprieve_that_recorded_the_first_preemption_gives(restarted):
    cluster, _, app = restarted
    view = cluster.view()
    restarted_answer = answer(app, request("f1-0", "f1-1"))
    # The predecessor: the same view, and its own answer to p1 in its ledger.
    before = create_app(Settings(), cluster=StaticCluster(view))
    p1, f10 = view.pods["uid-p1"], view.pods["uid-f1-0"]
    before.extensions["reprieve"]["ledger"].record(p1, "n1", (f10,), decided_at=view.revision, shown_at=view.revision)
    assert answer(before, request("f1-0", "f1-1")) == restarted_answer


def test_starting_mid_wave_is_counted_and_logged(restarted, caplog):
    cluster, metrics, _ = restarted
    assert cluster.under_way_at_start == (1, 1)
    assert metrics.restart_in_flight.labels("pods nominated")._value.get() == 1
    assert metrics.restart_in_flight.labels("victims terminating")._value.get() == 1
    assert metrics.restart_in_flight_timestamp._value.get() > 1.7e9
    assert any(
        r.getMessage().startswith("started with preemptions under way: 1 pod(s) nominated to a node and 1 victim(s) terminating")
        for r in caplog.get_records("setup")
    )

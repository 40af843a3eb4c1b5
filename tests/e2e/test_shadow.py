"""Shadow mode through the real kube-scheduler: it behaves exactly as stock, and reprieve counts
and logs what it would have done instead (and, with --events shadow, says so in an Event on the
preemptor).

Extenders are configured per scheduler process, not per profile, so this module runs one more
kube-scheduler (``shadow-scheduler``) whose extender is a second reprieve in ``--mode shadow``.
Both start for this module only and stop when it ends.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.burst import SHAPES, burst, expect_burst
from tests.e2e.client import wait_for
from tests.e2e.events import reprieve_events
from tests.ports import free_port
from tests.e2e.scenario import Scenario

SHADOW = "shadow-scheduler"


class Shadow:
    def __init__(self, plane, port: int) -> None:
        self.plane, self.port = plane, port

    def metric(self, name: str, **labels: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
            text = r.read().decode()
        for family in text_string_to_metric_families(text):
            for s in family.samples:
                if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
                    return s.value
        return 0.0

    def decisions(self, verb: str, pod: str) -> list[dict]:
        lines = [json.loads(l) for l in self.plane.log("reprieve-shadow").splitlines() if l.startswith("{")]
        return [l for l in lines if l.get("logger") == "reprieve.decisions" and l["msg"] == verb and l["pod"] == pod]

    def check_every_call_answered(self) -> None:
        """An ignorable extender that fails is skipped, which also looks stock: make sure
        reprieve answered every call and the scheduler used every answer."""
        for verb in ("filter", "prioritize", "preempt"):
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as r:
                text = r.read().decode()
            failed = [
                s for f in text_string_to_metric_families(text) for s in f.samples
                if s.name == "reprieve_requests_total" and s.labels["verb"] == verb and s.labels["code"] != "200"
            ]
            assert not failed, failed
        scheduler_log = self.plane.log(SHADOW)
        assert "Skipping extender" not in scheduler_log and "Skipped extender" not in scheduler_log


@pytest.fixture(scope="module")
def shadow(plane):
    port = free_port()
    try:
        plane.start_reprieve("reprieve-shadow", port, ("--mode", "shadow", "--events", "shadow"))
        plane.start_scheduler(SHADOW, plane.scheduler_config(SHADOW, port), free_port())
        yield Shadow(plane, port)
    finally:
        plane.stop_process(SHADOW)
        plane.stop_process("reprieve-shadow")


def test_shadow_preemption_is_stock_and_the_disagreement_is_counted(scenario: Scenario, shadow: Shadow):
    # test_preemption's QoS tie-break: two equal-priority 2-cpu pods fill a 4-cpu node, the
    # Guaranteed one younger. Stock evicts the Guaranteed pod; reprieve would evict the Burstable one.
    n1 = scenario.node("n1", cpu="4")
    scenario.qos_tie(n1)
    scenario.synced(port=shadow.port)
    before = shadow.metric("reprieve_disagreements_total", verb="preempt", mode="shadow")

    scenario.pod("preemptor", cpu="2", priority=10, scheduler=SHADOW)
    assert scenario.running("preemptor") == n1
    assert scenario.get("guaranteed") is None, "stock evicts the younger Guaranteed pod"
    assert scenario.get("burstable") is not None and not scenario.terminating("burstable")

    assert shadow.metric("reprieve_disagreements_total", verb="preempt", mode="shadow") >= before + 1
    [line, *_] = shadow.decisions("preempt", f"{scenario.ns}/preemptor")
    assert line["mode"] == "shadow" and line["changed"] is True and line["chosen"] == [n1]
    assert line["nodes"][n1]["proposed"] == [f"{scenario.ns}/guaranteed"]
    assert line["nodes"][n1]["victims"] == [f"{scenario.ns}/burstable"], "reprieve would have evicted the Burstable pod"
    assert line["nodes"][n1]["against_proposed"] == "decided by Guaranteed victims: 0 against 1"
    shadow.check_every_call_answered()

    # --events shadow: one "would have" Event, on the preemptor only (none on the pods).
    ns = scenario.ns
    [event] = wait_for("the shadow Event", lambda: reprieve_events(scenario.kube, ns), timeout=15)
    assert event["reason"] == "ShadowPreemption" and event["regarding"]["name"] == "preemptor"
    assert event["note"] == (
        f"reprieve would have preempted on {n1}: 0 PDB violations; evicts the Burstable {ns}/burstable, "
        f"not the Guaranteed {ns}/guaranteed the scheduler evicts (decided by Guaranteed victims: 0 against 1)."
    )
    time.sleep(1)
    assert len(reprieve_events(scenario.kube, ns)) == 1


def test_shadow_filter_hands_held_room_away_as_stock_and_counts_it(scenario: Scenario, shadow: Shadow):
    # test_nominated's held room: 3 of n1's 4 cpu are held for a nominated priority-100 pod
    # that no scheduler serves. reprieve would reject n1 for 'late' (priority 10, 2 cpu); stock,
    # which cannot see another scheduler's nomination, binds it there.
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("holder", cpu="3", priority=100, scheduler="nobody")
    scenario.nominate("holder", n1)
    scenario.synced(port=shadow.port)
    before = shadow.metric("reprieve_disagreements_total", verb="filter", mode="shadow")

    scenario.pod("late", cpu="2", priority=10, scheduler=SHADOW)
    assert scenario.running("late") == n1

    assert shadow.metric("reprieve_disagreements_total", verb="filter", mode="shadow") >= before + 1
    [line, *_] = shadow.decisions("filter", f"{scenario.ns}/late")
    assert line["mode"] == "shadow" and line["outcome"] == "rejected"
    assert f"room held for nominated {scenario.ns}/holder (priority 100)" in line["rejected"][n1]
    shadow.check_every_call_answered()


@pytest.mark.parametrize("shape", [pytest.param(s, id=s.id) for s in SHAPES.values()])
def test_shadow_burst_is_stock(scenario: Scenario, shadow: Shadow, shape, record_property):
    # test_bursts.py's bursts through the shadow scheduler: reprieve decides every call but
    # answers as stock, so the burst must end as stock's does (held to what stock is held to:
    # all bound, nothing rejected), with every call answered (a failing ignorable extender
    # would also look stock).
    result = burst(scenario, shape, SHADOW, log=SHADOW, reprieve_port=shadow.port)
    record_property("burst", result.summary())
    expect_burst(result, exact=False)
    shadow.check_every_call_answered()

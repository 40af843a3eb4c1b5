"""High availability: two kube-scheduler + reprieve pairs under one scheduler name, with the
shipped leader election (manifests/scheduler-config.yaml, rendered from the chart) and short
leases. SIGKILLing the leader's pair (scheduler and reprieve, as a node failure would) hands
scheduling, and reprieve's decisions, to the other pair within the lease time.

Both pairs start for this module only and stop when it ends.
"""

from __future__ import annotations

import json
import time
import urllib.request
from dataclasses import dataclass

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from extender.apiserver import ApiError
from tests.e2e.client import wait_for
from tests.e2e.controlplane import SCHEDULER_CONFIG
from tests.e2e.scenario import Scenario
from tests.ports import free_port

HA = "ha-scheduler"
LEASE_NS = "default"
# Short enough for a test; the chart's defaults are kube-scheduler's own (15s, 10s, 2s).
LEASE_SECONDS, RENEW_SECONDS, RETRY_SECONDS = 4, 3, 0.5


@dataclass
class Pair:
    name: str
    reprieve_port: int
    scheduler_port: int

    @property
    def reprieve(self) -> str:
        return f"reprieve-{self.name}"

    @property
    def scheduler(self) -> str:
        return f"{HA}-{self.name}"

    def decisions(self, plane, verb: str, pod: str) -> list[dict]:
        lines = [json.loads(l) for l in plane.log(self.reprieve).splitlines() if l.startswith("{")]
        return [l for l in lines if l.get("logger") == "reprieve.decisions" and l["msg"] == verb and l.get("pod") == pod]

    def answered(self, verb: str) -> float:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.reprieve_port}/metrics", timeout=5) as r:
            text = r.read().decode()
        return sum(
            s.value for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == "reprieve_requests_total" and s.labels.get("verb") == verb and s.labels.get("code") == "200"
        )


def leader_election() -> dict:
    """The shipped stanza, with this test's Lease and timings."""
    shipped = yaml.safe_load(SCHEDULER_CONFIG.read_text())["leaderElection"]
    assert shipped["leaderElect"] is True and shipped["resourceLock"] == "leases", shipped
    return {
        **shipped,
        "resourceName": HA,
        "resourceNamespace": LEASE_NS,
        "leaseDuration": f"{LEASE_SECONDS}s",
        "renewDeadline": f"{RENEW_SECONDS}s",
        "retryPeriod": f"{int(RETRY_SECONDS * 1000)}ms",
    }


def holder(kube) -> str | None:
    try:
        return kube.get_obj("Lease", HA, LEASE_NS)["spec"].get("holderIdentity") or None
    except ApiError as exc:
        if exc.status == 404:
            return None
        raise


@pytest.fixture(scope="module")
def pairs(plane):
    started = [Pair(name, free_port(), free_port()) for name in ("a", "b")]
    try:
        for pair in started:
            plane.start_reprieve(pair.reprieve, pair.reprieve_port)
            config = plane.scheduler_config(HA, pair.reprieve_port, leader_election=leader_election())
            plane.start_scheduler(pair.scheduler, config, pair.scheduler_port)
        yield started
    finally:
        for pair in started:
            plane.stop_process(pair.scheduler)
            plane.stop_process(pair.reprieve)
        plane.kube.delete("Lease", HA, LEASE_NS)


def leading(plane, pairs: list[Pair]) -> Pair:
    """The pair whose scheduler holds the Lease (its log says it acquired it)."""
    wait_for(f"a holder of Lease {LEASE_NS}/{HA}", lambda: holder(plane.kube), timeout=30)
    return wait_for("the leader's log", lambda: next((p for p in pairs if acquired(plane, p)), None), timeout=10)


def acquired(plane, pair: Pair) -> bool:
    """client-go's leader elector logs `"Successfully acquired lease" lock="NS/NAME"`."""
    return any("Successfully acquired lease" in l and f'"{LEASE_NS}/{HA}"' in l for l in plane.log(pair.scheduler).splitlines())


def qos_tie_break(scenario: Scenario, node: str, suffix: str) -> None:
    """test_preemption's scene: two equal-priority 2-cpu pods fill a 4-cpu node, the Guaranteed
    one younger. Stock would evict the Guaranteed pod; reprieve evicts the Burstable one."""
    scenario.pod(f"burstable-{suffix}", cpu="2", limit_cpu="3", priority=1, node=node)
    scenario.running(f"burstable-{suffix}")
    time.sleep(1.1)  # startTime has one-second resolution
    scenario.pod(f"guaranteed-{suffix}", cpu="2", qos="guaranteed", priority=1, node=node)
    scenario.running(f"guaranteed-{suffix}")


def assert_reprieve_chose(scenario: Scenario, plane, pair: Pair, node: str, suffix: str) -> None:
    assert scenario.running(f"preemptor-{suffix}") == node
    assert scenario.terminating(f"burstable-{suffix}"), "reprieve evicts the Burstable pod"
    assert not scenario.terminating(f"guaranteed-{suffix}"), "stock would have evicted the Guaranteed pod"
    [line, *_] = pair.decisions(plane, "preempt", f"{scenario.ns}/preemptor-{suffix}")
    assert line["chosen"] == [node] and line["nodes"][node]["victims"] == [f"{scenario.ns}/burstable-{suffix}"]


def test_the_standby_pair_takes_over_within_the_lease_when_the_leader_dies(scenario: Scenario, plane, pairs, record_property):
    leader = leading(plane, pairs)
    [standby] = [p for p in pairs if p is not leader]
    n1 = scenario.node("n1", cpu="4")

    # The leader's pair schedules, with its reprieve's decisions; the standby is asked nothing.
    qos_tie_break(scenario, n1, "before")
    scenario.synced(port=leader.reprieve_port)
    standby_preempts = standby.answered("preempt")
    scenario.pod("preemptor-before", cpu="2", priority=10, scheduler=HA)
    assert_reprieve_chose(scenario, plane, leader, n1, "before")
    assert standby.answered("preempt") == standby_preempts, "the standby's scheduler does not schedule"
    assert not standby.decisions(plane, "preempt", f"{scenario.ns}/preemptor-before")

    # The same scene on a new node n2, then the leader's node fails: its scheduler and reprieve
    # die at once. (n1 could also make room now, by evicting guaranteed-before: reprieve still
    # prefers n2, whose victim is Burstable.)
    n2 = scenario.node("n2", cpu="4")
    qos_tie_break(scenario, n2, "after")
    scenario.synced(port=standby.reprieve_port)
    old_holder = holder(plane.kube)
    killed = time.monotonic()
    plane.kill_process(leader.scheduler)
    plane.kill_process(leader.reprieve)
    scenario.pod("preemptor-after", cpu="2", priority=10, scheduler=HA)

    wait_for("the standby to take the Lease", lambda: holder(plane.kube) not in (None, old_holder), timeout=LEASE_SECONDS * 4)
    takeover = time.monotonic() - killed
    assert acquired(plane, standby)
    assert_reprieve_chose(scenario, plane, standby, n2, "after")
    scheduled = time.monotonic() - killed
    record_property("takeover", f"takeover {takeover:.1f}s after the kill (lease {LEASE_SECONDS}s, retry {RETRY_SECONDS}s); "
                             f"preemptor running {scheduled:.1f}s after the kill")
    # The standby acquires once the lease it last saw renewed has lapsed, trying every retry
    # period (with up to 20% jitter); one more second for a loaded machine.
    assert takeover <= LEASE_SECONDS + 2 * RETRY_SECONDS * 1.2 + 1, f"takeover took {takeover:.1f}s"

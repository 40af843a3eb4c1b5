"""Time to room through the real schedulers, side by side (policy.criteria.time_to_room;
docs/policy.md): two equal pods fill a node, alike but for their grace periods, 0 s and 60 s.
kube-scheduler deletes a victim with the pod's own grace period, and the fake kubelet lets a
deleted pod run until its deletionTimestamp, so the preemptor binds only once its victim is
gone: at once through reprieve, after about a minute through stock."""

from __future__ import annotations

import math
import time
from datetime import datetime, timezone

import pytest

from policy.criteria.work_lost import ANNOTATION as CHECKPOINT
from tests.e2e.client import wait_for
from tests.e2e.events import reprieve_events
from tests.e2e.scenario import REPRIEVE, STOCK

SLOW_GRACE = 60


@pytest.mark.parametrize(
    "scheduler, evicted, kept",
    [
        pytest.param(REPRIEVE, "quick", "slow", id="reprieve-evicts-the-pod-that-goes-at-once"),
        pytest.param(STOCK, "slow", "quick", id="stock-evicts-the-younger-pod-and-waits-its-grace"),
    ],
)
def test_time_to_room_side_by_side(scenario, scheduler, evicted, kept, record_property):
    # A 4-cpu node; two 2-cpu pods, priority 1, Burstable, alike but for their grace periods:
    # "quick" 0 s, "slow" 60 s and started a second later. Both then checkpoint at the same
    # second (reprieve.io/last-checkpoint), so that neither has more work to lose (the work
    # lost ranks before the time to room). The preemptor (priority 10) needs 2 cpu: one pod
    # goes. Stock keeps the older pod (start time is its only tie-break among equals) and
    # evicts slow, which runs on for its 60 s; reprieve evicts quick, gone at once.
    ns = scenario.ns
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("quick", cpu="2", priority=1, node=n1, grace=0)
    scenario.running("quick")
    time.sleep(1.1)  # startTime has one-second resolution
    scenario.pod("slow", cpu="2", priority=1, node=n1, grace=SLOW_GRACE)
    scenario.running("slow")
    # The next whole second: at or after both starts.
    checkpoint = datetime.fromtimestamp(math.ceil(time.time()), timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in ("quick", "slow"):
        scenario.saw("pods", scenario.kube.patch("Pod", name, ns, {"metadata": {"annotations": {CHECKPOINT: checkpoint}}}))
    scenario.synced()
    asked = time.monotonic()
    scenario.pod("preemptor", cpu="2", priority=10, scheduler=scheduler)
    wait_for(f"{evicted} to be deleted", lambda: scenario.terminating(evicted), timeout=30)
    assert not scenario.terminating(kept)
    assert scenario.running("preemptor", timeout=SLOW_GRACE + 60) == n1
    bound = time.monotonic() - asked
    record_property("seconds_to_bind", round(bound, 1))
    print(f"{scheduler}: evicted {evicted}, preemptor bound after {bound:.1f} s")
    if evicted == "quick":
        assert bound < SLOW_GRACE / 4, bound  # no grace to wait for: a scheduling cycle or two
    else:
        assert bound >= SLOW_GRACE - 2, bound  # the victim's grace (deletionTimestamp has one-second resolution)
    assert scenario.get(evicted) is None
    if scheduler == REPRIEVE:
        preempting = wait_for(
            "reprieve's Preempting Event",
            lambda: [e for e in reprieve_events(scenario.kube, ns) if e["reason"] == "Preempting"], timeout=15,
        )
        assert preempting[0]["note"] == (
            f"On {n1}: 0 PDB violations; evicts the Burstable {ns}/quick, not the Burstable {ns}/slow stock would have taken "
            f"(decided by longest time to room: 0 s against {SLOW_GRACE} s)."
        ), preempting[0]["note"]

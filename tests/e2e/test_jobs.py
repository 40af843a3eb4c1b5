"""Retry budgets through the real schedulers, side by side (policy.jobs; docs/policy.md): two
equal pods of two Jobs on a full node, one Job's podFailurePolicy ignoring DisruptionTarget, the
other's counting it against its backoffLimit. The kube-controller-manager runs the Job
controller, and the fake kubelet fails a deleted Job pod as a kubelet would, so the Jobs'
statuses say what each eviction cost."""

from __future__ import annotations

import time

import pytest

from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK


def job_pod(scenario, job: str) -> str:
    """The name of the Job's one pod, once it runs."""
    pods = wait_for(f"job {job}'s pod", lambda: scenario.pods_with({"job-name": job}), timeout=30)
    name = pods[0]["metadata"]["name"]
    scenario.running(name)
    return name


@pytest.mark.parametrize(
    "scheduler, evicted, kept",
    [
        pytest.param(REPRIEVE, "tolerant", "counting", id="reprieve-evicts-the-pod-whose-job-ignores-disruption"),
        pytest.param(STOCK, "counting", "tolerant", id="stock-evicts-the-younger-pod-and-burns-a-retry"),
    ],
)
def test_retry_budgets_side_by_side(scenario, scheduler, evicted, kept):
    # A 4-cpu node; two Jobs' 2-cpu pods, priority 1, alike but for their Jobs: "tolerant"
    # ignores DisruptionTarget, "counting" (backoffLimit 1) counts it, and its pod started a
    # second later. The preemptor (priority 10) needs 2 cpu: one pod goes. Stock keeps the older
    # pod (start time is its only tie-break among equals) and evicts counting's: a retry burned.
    # reprieve evicts tolerant's, whose Job replaces it without counting a failure.
    n1 = scenario.node("n1", cpu="4")
    scenario.job("tolerant", backoff_limit=1, ignore_disruption=True, cpu="2", priority=1)
    pods = {"tolerant": job_pod(scenario, "tolerant")}
    time.sleep(1.1)  # startTime has one-second resolution
    scenario.job("counting", backoff_limit=1, ignore_disruption=False, cpu="2", priority=1)
    pods["counting"] = job_pod(scenario, "counting")
    for name in pods:
        scenario.job_status(name)
    scenario.synced()
    scenario.pod("preemptor", cpu="2", priority=10, scheduler=scheduler)
    assert scenario.running("preemptor") == n1
    # The victim leaves once the Job controller has counted it (or not) and let it go.
    scenario.gone(pods[evicted])
    assert not scenario.terminating(pods[kept])
    # Its replacement is created, and waits: the node has no room for it.
    wait_for(f"{evicted}'s replacement", lambda: len(scenario.pods_with({"job-name": evicted})) == 1, timeout=30)
    burned = 1 if evicted == "counting" else 0
    def settled():
        status = scenario.job_status(evicted)
        uncounted = status.get("uncountedTerminatedPods") or {}
        return status.get("active") == 1 and not uncounted.get("failed") and not uncounted.get("succeeded") and status

    status = wait_for(f"job {evicted} to have counted its pod", settled, timeout=30)
    assert status.get("failed", 0) == burned, status
    assert not any(c["type"] == "Failed" and c["status"] == "True" for c in status.get("conditions") or ()), status
    assert scenario.job_status(kept).get("failed", 0) == 0

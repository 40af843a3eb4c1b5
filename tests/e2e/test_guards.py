"""The policy's guards through the real kube-scheduler, side by side with stock preemption: a
strict PodDisruptionBudget stock violates and reprieve keeps, leaving the preemptor pending
with an Event that says why; and a pod inside its minimum runtime, which stock evicts and
reprieve leaves alone.

reprieve runs this module under a policy naming the strict namespace (made up per run, so that
no other test's budget is strict) and a minimum runtime for the priority-2 PriorityClass of
the scenarios (tests/e2e/scenario.py names classes by value), then as it was.
"""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.client import wait_for
from tests.e2e.events import described, describe_events, reprieve_events
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario

# The strict namespaces, one per scheduler (a deleted namespace takes a while to go).
_RUN = uuid.uuid4().hex[:8]
KAFKA = {REPRIEVE: f"e2e-kafka-{_RUN}-r", STOCK: f"e2e-kafka-{_RUN}-s"}
YOUNG_CLASS = "e2e-priority-2"
PENDING_SECONDS = 8  # several of the scheduler's retries (its backoff starts at 1 s)


@pytest.fixture(scope="module", autouse=True)
def guard_policy(plane, tmp_path_factory):
    """reprieve restarted with strictBudgets and minimumRuntime for this module, then as it was."""
    path = tmp_path_factory.mktemp("guards") / "policy.yaml"
    path.write_text(
        f"strictBudgets:\n  namespaces: [{', '.join(KAFKA.values())}]\n"
        f"minimumRuntime:\n- priorityClasses: [{YOUNG_CLASS}]\n  duration: 10m\n"
    )
    original = plane.reprieve_args
    plane.stop_process("reprieve")
    plane.reprieve_args = (*original, "--policy", str(path))
    plane.start_reprieve()
    yield
    plane.stop_process("reprieve")
    plane.reprieve_args = original
    plane.start_reprieve()


@pytest.fixture
def kafka(plane, request):
    """A scenario in the strict namespace of the test's scheduler."""
    s = Scenario(plane, KAFKA[request.node.callspec.params["scheduler"]])
    try:
        yield s
    finally:
        s.cleanup()


@pytest.mark.parametrize("scheduler", [pytest.param(REPRIEVE, id="reprieve"), pytest.param(STOCK, id="stock")])
def test_a_strict_budget_stock_violates_and_reprieve_keeps(kafka, scheduler, record_property):
    # The broker fills n1 behind a budget that allows no disruption (minAvailable 1 of 1). The
    # preemptor needs the whole node: stock evicts the broker, violating the budget; reprieve
    # answers no node, the preemptor stays pending, and its Event says why.
    ns = kafka.ns
    n1 = kafka.node("n1", cpu="4")
    kafka.pod("broker", cpu="4", priority=1, node=n1, labels={"app": "broker"})
    kafka.running("broker")
    kafka.pdb("brokers", match={"app": "broker"}, min_available=1)
    kafka.pdb_ready("brokers", allowed=0, healthy=1)
    kafka.synced()
    kafka.pod("preemptor", cpu="4", priority=10, scheduler=scheduler)
    if scheduler == STOCK:
        assert kafka.running("preemptor") == n1
        assert kafka.get("broker") is None or kafka.terminating("broker")
        return
    kafka.pending_for("preemptor", PENDING_SECONDS)
    assert not kafka.terminating("broker")
    assert kafka.nominated("preemptor") is None  # the scheduler took the empty answer as no candidate
    events = wait_for(
        "reprieve's PreemptionBlocked Event",
        lambda: [e for e in reprieve_events(kafka.kube, ns) if e["reason"] == "PreemptionBlocked"],
        timeout=15,
    )
    [event] = events
    preemptor = kafka.get("preemptor")
    assert event["regarding"]["uid"] == preemptor["metadata"]["uid"]
    assert (event["type"], event["action"]) == ("Warning", "Preempt")
    assert event["note"] == (
        "Not preempting, the pod stays pending: no candidate node can make room for the pod without violating a "
        f"strict PodDisruptionBudget: {n1}: every victim set that makes room here violates strict "
        f"PodDisruptionBudget {ns}/brokers: the pods it may take within their allowance free too little "
        "(short of cpu=4)."
    ), event["note"]
    # Each retry of the scheduler asks again and gets the same answer: one Event, counted as a series.
    assert not any(e["reason"] in ("Preempting", "ChosenForPreemption") for e in reprieve_events(kafka.kube, ns))
    shown = described(kafka.kube, preemptor)
    assert any(e.get("reportingComponent") == "reprieve" and e["reason"] == "PreemptionBlocked" for e in shown)
    record_property("describe", describe_events(shown))


@pytest.mark.parametrize("scheduler", [pytest.param(REPRIEVE, id="reprieve"), pytest.param(STOCK, id="stock")])
def test_a_pod_inside_its_minimum_runtime_stock_evicts_and_reprieve_leaves(scenario, scheduler):
    # n1 runs one pod, just started, of the class the 10-minute minimum runtime names. The
    # preemptor needs the whole node: stock evicts the pod; reprieve leaves it alone, and the
    # preemptor pending with an Event that says why.
    n1 = scenario.node("n1", cpu="4")
    scenario.pod("young", cpu="4", priority=2, node=n1)
    scenario.running("young")
    scenario.synced()
    scenario.pod("preemptor", cpu="4", priority=10, scheduler=scheduler)
    if scheduler == STOCK:
        assert scenario.running("preemptor") == n1
        assert scenario.get("young") is None or scenario.terminating("young")
        return
    scenario.pending_for("preemptor", PENDING_SECONDS)
    assert not scenario.terminating("young")
    [event] = wait_for(
        "reprieve's PreemptionBlocked Event",
        lambda: [e for e in reprieve_events(scenario.kube, scenario.ns) if e["reason"] == "PreemptionBlocked"],
        timeout=15,
    )
    assert f"every lower-priority pod is protected: {scenario.ns}/young (has run " in event["note"], event["note"]
    assert "of its minimum runtime of 10m (minimumRuntime[0])" in event["note"]

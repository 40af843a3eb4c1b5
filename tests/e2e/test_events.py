"""reprieve's Events after a real preemption through kube-scheduler, read back from the API server."""

from __future__ import annotations


from tests.e2e.client import wait_for
from tests.e2e.events import described, describe_events, reprieve_events


def test_preemption_leaves_events_on_the_preemptor_and_its_victim(scenario, record_property):
    # test_preemption's QoS tie-break: two equal-priority 2-cpu pods fill a 4-cpu node, the
    # Guaranteed one younger. Stock would evict it; reprieve evicts the Burstable one, and says so.
    ns = scenario.ns
    n1 = scenario.node("n1", cpu="4")
    scenario.qos_tie(n1)
    scenario.synced()
    victim_uid = scenario.get("burstable")["metadata"]["uid"]
    scenario.pod("preemptor", cpu="2", priority=10)
    assert scenario.running("preemptor") == n1
    preemptor = scenario.get("preemptor")

    events = wait_for("reprieve's two Events", lambda: len(reprieve_events(scenario.kube, ns)) >= 2 and reprieve_events(scenario.kube, ns), timeout=15)
    by_reason = {e["reason"]: e for e in events}
    assert sorted(by_reason) == ["ChosenForPreemption", "Preempting"], events

    on_preemptor = by_reason["Preempting"]
    assert on_preemptor["regarding"] == {
        "kind": "Pod", "namespace": ns, "name": "preemptor", "uid": preemptor["metadata"]["uid"], "apiVersion": "v1"
    }
    assert on_preemptor["related"] == {"kind": "Node", "name": n1, "apiVersion": "v1"}
    assert on_preemptor["type"] == "Normal" and on_preemptor["action"] == "Preempt"
    assert on_preemptor["reportingInstance"].startswith("reprieve-")
    assert on_preemptor["note"] == (
        f"On {n1}: 0 PDB violations; evicts the Burstable {ns}/burstable, "
        f"not the Guaranteed {ns}/guaranteed stock would have taken (decided by Guaranteed victims: 0 against 1)."
    )

    on_victim = by_reason["ChosenForPreemption"]
    assert on_victim["regarding"]["uid"] == victim_uid and on_victim["regarding"]["name"] == "burstable"
    assert on_victim["related"]["uid"] == preemptor["metadata"]["uid"]
    assert on_victim["note"].startswith(
        f"For {ns}/preemptor (priority 10) on {n1}, chosen over the pods that stay: "
        f"{ns}/guaranteed (Guaranteed before Burstable at priority 1). 2 lower-priority pod(s), 1 reprieved;"
    ), on_victim["note"]
    assert not on_victim.get("series") and not on_preemptor.get("series")

    # What `kubectl describe pod preemptor` shows: kubectl reads core/v1 Events by involvedObject.
    shown = described(scenario.kube, preemptor)
    mine = [e for e in shown if e.get("reportingComponent") == "reprieve"]
    assert [e["message"] for e in mine] == [on_preemptor["note"]]
    record_property("describe", describe_events(shown))

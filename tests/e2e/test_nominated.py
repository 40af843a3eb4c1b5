"""Room freed for a nominated pod stays its own: the seed's starvation examples and reprieve's filter."""

from __future__ import annotations

import time

from tests.e2e.burst import DELETION_LINE, PREEMPTION_LINE, named_in
from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK


def evict_a_and_b_for_c(scenario, n1):
    """Seed example 1's start: A and B (priority 100, 5 each) fill n1 (10); C (priority 1000)
    needs 10 and preempts both; D (priority 50) needs 2. Grace periods scaled: A 6s, B 3s."""
    scenario.pod("a", cpu="5", priority=100, node=n1, grace=6)
    scenario.pod("b", cpu="5", priority=100, node=n1, grace=3)
    scenario.running_all("a", "b")
    scenario.synced()
    scenario.pod("c", cpu="10", priority=1000)
    wait_for("C nominated to n1", lambda: scenario.nominated("c") == n1)
    # The scheduler nominates first and deletes the victims asynchronously (async preemption).
    wait_for("A and B terminating", lambda: scenario.terminating("a") and scenario.terminating("b"))
    scenario.pod("d", cpu="2", priority=50)


def test_example_1_lower_priority_pod_does_not_take_the_freed_room(scenario):
    n1 = scenario.node("n1", cpu="10")
    evict_a_and_b_for_c(scenario, n1)
    scenario.gone("b", timeout=10)
    # B's 5 units are free, but they are C's: D (priority 50) must not take them.
    scenario.pending_for("d", 2)
    assert scenario.running("c", timeout=15) == n1
    scenario.pending_for("d", 2)


def test_example_2_nominated_pod_goes_elsewhere_when_room_appears(scenario):
    n1, n2 = scenario.node("n1", cpu="10"), scenario.node("n2", cpu="10")
    scenario.pod("e", cpu="10", priority=2000, node=n2)
    scenario.running("e")
    evict_a_and_b_for_c(scenario, n1)
    scenario.kube.delete("Pod", "e", scenario.ns, grace=0)
    # C takes n2 as soon as E is gone, ignoring its nomination; D then fits on n1.
    assert scenario.running("c", timeout=15) == n2
    assert scenario.running("d", timeout=15) == n1


def test_example_3_lower_priority_pod_fits_elsewhere_meanwhile(scenario):
    n1, n2 = scenario.node("n1", cpu="10"), scenario.node("n2", cpu="10")
    scenario.pod("e", cpu="8", priority=2000, node=n2)
    scenario.running("e")
    evict_a_and_b_for_c(scenario, n1)
    # While A and B terminate and C waits for n1, D fits in n2's free 2 units.
    assert scenario.running("d", timeout=10) == n2
    assert scenario.nominated("c") == n1
    assert scenario.running("c", timeout=15) == n1


def test_example_4_higher_priority_latecomer_displaces_the_nomination(scenario):
    n1 = scenario.node("n1", cpu="10")
    evict_a_and_b_for_c(scenario, n1)
    scenario.pod("f", cpu="10", priority=2000)
    wait_for("F nominated to n1", lambda: scenario.nominated("f") == n1 or scenario.node_of("f") == n1)
    wait_for("C's nomination cleared", lambda: scenario.nominated("c") != n1)
    assert scenario.running("f", timeout=15) == n1
    scenario.pending_for("c", 2)
    assert scenario.node_of("d") is None


def nominated_holder(scenario, n1):
    """A priority-100 pod no scheduler serves, nominated to n1 for 3 of its 4 cpu: the room an
    earlier preemption freed for it. Only reprieve, which watches every pod, knows."""
    scenario.pod("holder", cpu="3", priority=100, scheduler="nobody")
    scenario.nominate("holder", n1)
    scenario.synced()


def test_filter_rejects_room_held_for_a_nominated_pod(scenario):
    # n1 is empty but for the holder's 3 held cpu; 'late' needs 2. Nothing lower-priority
    # runs there, so preemption cannot help: FailedAndUnresolvableNodes, naming the holder.
    n1 = scenario.node("n1", cpu="4")
    nominated_holder(scenario, n1)
    scenario.pod("late", cpu="2", priority=10, scheduler=REPRIEVE)
    message = wait_for("late's FailedScheduling message", lambda: scenario.condition_message("late"), timeout=15)
    assert (
        f"short of cpu=1 even if every lower-priority pod were preempted: "
        f"room held for nominated {scenario.ns}/holder (priority 100)"
    ) in message
    scenario.pending_for("late", 2)


def test_held_room_never_becomes_a_pointless_preemption(scenario):
    # 'late' (3 cpu) fits next to 'low' (1) but not next to the held 3 on a 6-cpu node.
    # Evicting 'low' would make room, but the scheduler cannot see the hold: its dry run would
    # find no victim and fail. reprieve marks the node unresolvable, so nothing is evicted.
    n1 = scenario.node("n1", cpu="6")
    scenario.pod("low", cpu="1", priority=1, node=n1)
    scenario.running("low")
    nominated_holder(scenario, n1)
    scenario.pod("late", cpu="3", priority=10, scheduler=REPRIEVE)
    message = wait_for("late's FailedScheduling message", lambda: scenario.condition_message("late"), timeout=15)
    assert f"fits only in room held for nominated {scenario.ns}/holder (priority 100)" in message
    scenario.pending_for("late", 2)
    assert not scenario.terminating("low")


def test_stock_scheduler_hands_that_room_away(scenario):
    # Side by side: the stock scheduler does not know other schedulers' nominations.
    n1 = scenario.node("n1", cpu="4")
    nominated_holder(scenario, n1)
    scenario.pod("late", cpu="2", priority=10, scheduler=STOCK)
    assert scenario.running("late") == n1


def test_a_preemptor_waits_for_a_pod_a_controller_deleted_once_its_victim_is_gone(scenario, lagged):
    # Seen under churn (bench/churn.py): reprieve answers one victim on n1, counting the room
    # of t, which a controller deleted with a longer grace. The victim goes first; the
    # scheduler retries P (nothing it preempted is left on n1) and asks again, while reprieve's
    # view (2 s late on purpose, longer than the victim takes to go) still shows the victim. Its own victims there (one 1-cpu
    # pod) free no more than t: P waits for t rather than preempt again on n2.
    n1, n2 = scenario.node("n1", cpu="4"), scenario.node("n2", cpu="4")
    for i, name in enumerate(("a", "b", "t", "x")):  # x the youngest: reprieve's victim on n1
        scenario.pod(name, cpu="1", node=n1, grace=8 if name == "t" else 1)
        time.sleep(1.1 if i == 2 else 0)  # x starts a whole second after the rest
    for i in range(4):
        scenario.pod(f"g{i}", cpu="1", node=n2)
    scenario.running_all("a", "b", "t", "x", "g0", "g1", "g2", "g3")
    scheduler = lagged.scheduler(2.0)  # started (if need be) before t's grace runs
    scenario.kube.delete("Pod", "t", scenario.ns)  # its own grace: 8 s
    scenario.saw("pods", scenario.get("t"))
    scenario.synced(port=lagged.ports[2.0])  # the lagged reprieve shows t terminating
    mark = len(scenario.plane.log(scheduler))
    scenario.pod("p", cpu="2", priority=1000, scheduler=scheduler)
    assert scenario.running("p", timeout=20) == n1
    lines = scenario.plane.log(scheduler)[mark:].splitlines()
    assert named_in(lines, scenario.ns, "pod", PREEMPTION_LINE) == ["p"]
    assert named_in(lines, scenario.ns, "victim", DELETION_LINE) == ["x"]
    assert not any(scenario.terminating(f"g{i}") for i in range(4))
    refusals = [d for d in lagged.decisions(2.0, "preempt", f"{scenario.ns}/p") if d.get("refusal")]
    assert refusals and "free at least what the scheduler's own victims there would" in refusals[0]["reasons"][0], refusals

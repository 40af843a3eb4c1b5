"""Events once the view shows a preemption carried out (extender.events.witness, notes)."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from extender.config import Events, Mode, Settings
from extender.events import notes
from extender.events.witness import Witness
from extender.serving.app import create_app
from extender.state.ledger import IN_FLIGHT_SECONDS, Ledger
from extender import wire
from extender.state import translate
from extender.state.source import StaticCluster
from policy import ranking
from policy.causes import Refusal
from policy.model import InFlight
from policy.preempt import Proposal, decide
from policy.qos import QoS
from policy.jobs import OnDisruption
from tests.builders import job, node, pdb, pod, view
from tests.conftest import ROOT


class Recorded:
    """Stands in for the Recorder: keeps what the witness records."""

    def __init__(self) -> None:
        self.events = []

    def record(self, event) -> bool:
        self.events.append(event)
        return True


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def scene():
    # test_preemption's QoS tie-break: a 4-cpu node with two equal-priority 2-cpu pods, the
    # Guaranteed one younger, and a web pod behind a budget; the preemptor needs 2 cpu. Stock
    # (the scheduler's proposal) evicts the Guaranteed pod, reprieve the Burstable one.
    burstable = pod("burstable", ns="batch", node="n1", cpu=2, priority=1, start=100)
    guaranteed = pod("guaranteed", ns="batch", node="n1", cpu=2, priority=1, start=200, qos=QoS.GUARANTEED)
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=4), node("n2", cpu=4)], [burstable, guaranteed, preemptor])
    return v, preemptor, burstable, guaranteed


def witness(mode=Mode.ENFORCE, events=Events.ON):
    recorded, clock = Recorded(), Clock()
    return Witness(recorded, StaticCluster(None), Ledger(clock=clock), mode=mode, events=events), recorded, clock


def answer(w, v, preemptor, proposed):
    proposals = {"n1": Proposal(tuple(p.uid for p in proposed), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals)
    w.answered(v, preemptor, proposals, decision)
    return decision


def then(v, *changed):
    """``v`` with these pods changed (the next view)."""
    pods = {p.uid: p for p in v.pods.values()}
    pods.update({p.uid: p for p in changed})
    return view(list(n.node for n in v.nodes.values()), list(pods.values()), jobs=list(v.jobs.values()))


def carried_out(v, preemptor, *victims):
    """The view once kube-scheduler nominated the preemptor and marked and deleted its victims."""
    return then(
        v,
        dataclasses.replace(preemptor, nominated_node_name="n1"),
        *(dataclasses.replace(p, terminating=True, preempted=True) for p in victims),
    )


def test_events_on_the_preemptor_and_the_victim_once_the_view_shows_the_preemption():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    w.check(v)
    assert recorded.events == [] and len(w) == 1  # nothing visible yet
    w.check(then(v, dataclasses.replace(preemptor, nominated_node_name="n1")))
    assert recorded.events == [] and len(w) == 1  # nominated, but the victim is not leaving yet

    w.check(carried_out(v, preemptor, burstable))
    on_preemptor, on_victim = recorded.events
    assert (on_preemptor.reason, on_preemptor.regarding.name, on_preemptor.related.name) == ("Preempting", "checkout", "n1")
    assert on_preemptor.note == (
        "On n1: 0 PDB violations; evicts the Burstable batch/burstable, not the Guaranteed batch/guaranteed stock would have taken "
        "(decided by Guaranteed victims: 0 against 1)."
    )
    assert (on_victim.reason, on_victim.regarding.uid, on_victim.related.uid) == (
        "ChosenForPreemption", burstable.uid, preemptor.uid
    )
    assert on_victim.note == (
        "For shop/checkout (priority 10) on n1, chosen over the pods that stay: batch/guaranteed "
        "(Guaranteed before Burstable at priority 1). 2 lower-priority pod(s), 1 reprieved; "
        "evicting 1 frees cpu=2 pods=1; violates no PodDisruptionBudget; "
        "1 victim(s) have nowhere else to go: batch/burstable (no controller re-creates it)."
    )
    assert len(w) == 0
    w.check(carried_out(v, preemptor, burstable))
    assert len(recorded.events) == 2, "recorded once"


def test_a_victim_gone_from_the_view_counts_as_carried_out():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    gone = view(list(n.node for n in v.nodes.values()), [guaranteed, dataclasses.replace(preemptor, node_name="n1")])
    w.check(gone)
    assert [e.reason for e in recorded.events] == ["Preempting", "ChosenForPreemption"]


def test_a_victim_deleted_by_someone_else_gets_no_event():
    # Terminating without kube-scheduler's DisruptionTarget condition: not this preemption.
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    w.check(then(v, dataclasses.replace(preemptor, nominated_node_name="n1"), dataclasses.replace(burstable, terminating=True)))
    assert recorded.events == [] and len(w) == 0


def test_the_scheduler_going_elsewhere_or_never_acting_records_nothing():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, clock = witness()
    answer(w, v, preemptor, [guaranteed])
    w.check(then(v, dataclasses.replace(preemptor, nominated_node_name="n2")))
    assert recorded.events == [] and len(w) == 0
    answer(w, v, preemptor, [guaranteed])
    clock.now = IN_FLIGHT_SECONDS + 1
    w.check(v)
    assert recorded.events == [] and len(w) == 0


def test_an_empty_answer_forgets_the_earlier_one():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    w.answered(v, preemptor, {}, decide(view=v, preemptor=preemptor, proposals={}))
    w.check(carried_out(v, preemptor, burstable))
    assert recorded.events == [] and len(w) == 0


def test_a_pod_told_to_wait_keeps_its_earlier_answers_events():
    # Answered burstable on n1, the preemptor asks again while guaranteed, deleted by a
    # controller, is leaving there: it is told to wait (nothing offered), and its earlier
    # answer is still being carried out. Its Events are still recorded once the view shows it.
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    nominated = dataclasses.replace(preemptor, nominated_node_name="n1")
    waiting = then(v, nominated, dataclasses.replace(guaranteed, terminating=True))
    decision = decide(view=waiting, preemptor=nominated, proposals={})
    assert decision.refusal is Refusal.VICTIMS_TERMINATING
    w.answered(waiting, nominated, {}, decision)
    w.check(carried_out(waiting, preemptor, burstable))
    assert [(e.reason, e.regarding.name) for e in recorded.events] == [("Preempting", "checkout"), ("ChosenForPreemption", "burstable")]
    assert len(w) == 0


def test_the_victim_note_names_budgets_priorities_and_pods_too_small():
    # n1 (4 cpu) is full: db (1 cpu, behind a budget that allows nothing), high (1 cpu, priority
    # 5), low (2 cpu, priority 3) and a BestEffort pod. The preemptor needs 2 cpu: low goes,
    # and the note says why each of the others stays.
    protected = pod("db", ns="batch", node="n1", cpu=1, priority=3, labels={"app": "db"})
    high = pod("high", ns="batch", node="n1", cpu=1, priority=5)
    low = pod("low", ns="batch", node="n1", cpu=2, priority=3)
    empty = pod("empty", ns="batch", node="n1", priority=3)
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=4)], [protected, high, low, empty, preemptor], [pdb("db", ns="batch", allowed=0, match={"app": "db"})])
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [low])
    assert [p.name for p in decision.outcomes[0].victims] == ["low"]
    w.check(carried_out(v, preemptor, low))
    note = recorded.events[1].note
    assert "chosen over the pods that stay: batch/high (higher priority 5); batch/db (behind PodDisruptionBudget batch/db); batch/empty (BestEffort, but too small to make room)" in note, note


def test_the_notes_name_the_gangs_kept_whole_and_broken():
    # n1 (8 cpu): a 2-pod gang needing both (2 cpu each, the youngest) and a lone pod of the
    # same priority; the preemptor needs 2 cpu: the lone pod goes, the note says why the gang
    # members stay. On n2 a gang of two 4-cpu pods needing both must break: the note says so.
    members = [pod(f"w{i}", ns="ml", node="n1", cpu=2, priority=1, start=100 + i, gang=("train", 2)) for i in range(2)]
    lone = pod("lone", ns="ml", node="n1", cpu=4, priority=1, start=0)
    preemptor = pod("checkout", ns="shop", cpu=4, priority=10)
    v = view([node("n1", cpu=8)], [*members, lone, preemptor])
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [members[1], members[0]])
    assert [p.name for p in decision.outcomes[0].victims] == ["lone"]
    w.check(carried_out(v, preemptor, lone))
    note = recorded.events[1].note
    assert "ml/w0, ml/w1 (a member of gang test ml/train (2 running, at least 2 needed: test gang))" in note, note

    big = [pod(f"b{i}", ns="ml", node="n1", cpu=4, priority=1, gang=("big", 2)) for i in range(2)]
    v = view([node("n1", cpu=8)], [*big, preemptor])
    w, recorded, _ = witness()
    (victim,) = answer(w, v, preemptor, [big[0]]).outcomes[0].victims
    w.check(carried_out(v, preemptor, victim))
    assert recorded.events[0].note.startswith(
        "On n1: breaks gang test ml/big (2 running, at least 2 needed: test gang); 0 PDB violations; evicts"
    ), recorded.events[0].note


def test_the_notes_count_broken_gangs_as_the_decision_does_with_answers_in_flight():
    # A gang of three needing two: g0 and g1 on n1, g2 on n2, taken by an earlier answer still
    # in flight. The view shows three running (one to spare), but the decision counts g2 gone:
    # evicting one more on n1 breaks the gang, and the Event must say what the cost counted.
    g0, g1 = (pod(f"g{i}", ns="ml", node="n1", cpu=1, priority=1, start=i, gang=("g", 2)) for i in range(2))
    g2 = pod("g2", ns="ml", node="n2", cpu=1, priority=1, gang=("g", 2))
    earlier = pod("earlier", ns="shop", cpu=1, priority=10)
    preemptor = pod("checkout", ns="shop", cpu=3, priority=10)
    v = view([node("n1", cpu=4), node("n2", cpu=1)], [g0, g1, g2, earlier, preemptor])
    proposals = {"n1": Proposal((g1.uid,), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, in_flight=(InFlight(earlier, "n2", (g2,)),))
    (victim,) = decision.outcomes[0].victims
    assert decision.outcomes[0].broken.count == 1
    w, recorded, _ = witness()
    w.answered(v, preemptor, proposals, decision)
    w.check(carried_out(v, preemptor, victim))
    assert recorded.events[0].note.startswith(
        "On n1: breaks gang test ml/g (2 running, at least 2 needed: test gang); 0 PDB violations; evicts"
    ), recorded.events[0].note


def test_the_victim_note_says_which_pods_stay_for_having_no_home():
    # n1 (6 cpu): a priority-100 pod (1 cpu), a bare pod and an older ReplicaSet's pod (2 cpu,
    # priority 1, Burstable both). The preemptor needs 3: one of the two goes. The ReplicaSet's
    # replacement fits on the spare node; nothing re-creates the bare pod: it stays.
    high = pod("high", ns="batch", node="n1", cpu=1, priority=100)
    bare = pod("bare", ns="batch", node="n1", cpu=2, priority=1, start=200)
    owned = pod("owned", ns="batch", node="n1", cpu=2, priority=1, start=100, kind="ReplicaSet")
    preemptor = pod("checkout", ns="shop", cpu=3, priority=10)
    v = view([node("n1", cpu=6), node("spare", cpu=2)], [high, bare, owned, preemptor])
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [bare])
    assert [p.name for p in decision.outcomes[0].victims] == ["owned"]
    w.check(carried_out(v, preemptor, owned))
    note = recorded.events[1].note
    assert (
        "chosen over the pods that stay: batch/bare (no home elsewhere (no controller re-creates it), "
        "where batch/owned has one)"
    ) in note, note


def test_the_notes_say_which_pods_stay_for_their_jobs_and_which_jobs_fail():
    # n1 (6 cpu): three 2-cpu pods alike but for their Jobs: one with backoffLimit 0, one with
    # retries left, one whose Job ignores DisruptionTarget. The preemptor needs 2: the last goes.
    strict = pod("strict", ns="batch", node="n1", cpu=2, priority=1, start=100, job="strict")
    retrying = pod("retrying", ns="batch", node="n1", cpu=2, priority=1, start=100, job="retrying")
    tolerant = pod("tolerant", ns="batch", node="n1", cpu=2, priority=1, start=100, job="tolerant")
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    jobs = [job("strict", ns="batch", backoff=0), job("retrying", ns="batch", failed=2),
            job("tolerant", ns="batch", on=OnDisruption.IGNORE, rule=1)]
    v = view([node("n1", cpu=6)], [strict, retrying, tolerant, preemptor], jobs=jobs)
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [strict])
    assert [p.name for p in decision.outcomes[0].victims] == ["tolerant"]
    w.check(carried_out(v, preemptor, tolerant))
    assert recorded.events[0].note.startswith("On n1: 0 PDB violations; evicts the Burstable batch/tolerant"), recorded.events[0].note
    note = recorded.events[1].note
    assert (
        "chosen over the pods that stay: batch/retrying (its Job batch/retrying spends a retry if it is evicted "
        "(backoffLimit 6, 2 failed), where batch/tolerant's Job batch/tolerant ignores DisruptionTarget); "
        "batch/strict (its Job batch/strict fails if it is evicted (backoffLimit 0, 0 failed))"
    ) in note, note

    # Where only the strict Job's pod can go, the preemptor's note says its Job fails.
    v = view([node("n1", cpu=2)], [dataclasses.replace(strict, requests={"cpu": 2000, "pods": 1}), preemptor], jobs=jobs)
    w, recorded, _ = witness()
    (victim,) = answer(w, v, preemptor, [strict]).outcomes[0].victims
    w.check(carried_out(v, preemptor, victim))
    assert recorded.events[0].note.startswith(
        "On n1: fails Job batch/strict (backoffLimit 0, 0 failed); 0 PDB violations; evicts the Burstable batch/strict"
    ), recorded.events[0].note


def test_the_notes_name_the_manager_that_stays_and_the_application_a_victim_ends():
    # n1 (4 cpu): a Spark driver whose 3 executors run on n2, and a lone pod, 2 cpu each,
    # priority 1, the driver the younger (the scheduler's proposal takes it). The preemptor needs
    # 2 cpu: the lone pod goes, and the note says why the driver stays.
    spark = {"spark-app-selector": "etl-1"}
    driver = pod("driver", ns="etl", node="n1", cpu=2, priority=1, start=200, labels={**spark, "spark-role": "driver"})
    lone = pod("lone", ns="etl", node="n1", cpu=2, priority=1, start=100)
    executors = [pod(f"exec-{i}", ns="etl", node="n2", cpu=1, priority=1, labels={**spark, "spark-role": "executor"})
                 for i in range(3)]
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=4), node("n2", cpu=3)], [driver, lone, *executors, preemptor])
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [driver])
    assert [p.name for p in decision.outcomes[0].victims] == ["lone"]
    w.check(carried_out(v, preemptor, lone))
    note = recorded.events[1].note
    assert "chosen over the pods that stay: etl/driver (it manages 3 running pod(s) of Spark application etl/etl-1)" in note, note

    # Alone on a 2-cpu node, the driver must go: the preemptor's note says what it ends.
    v = view([node("n1", cpu=2), node("n2", cpu=3)], [driver, *executors, preemptor])
    w, recorded, _ = witness()
    answer(w, v, preemptor, [driver])
    w.check(carried_out(v, preemptor, driver))
    assert recorded.events[0].note.startswith(
        "On n1: ends Spark application etl/etl-1 (4 running pod(s)); 0 PDB violations; evicts the Burstable etl/driver"
    ), recorded.events[0].note


@pytest.mark.parametrize(
    "order, victim, why",
    [
        # The default order: the QoS classes before homes. The Burstable bare pod goes.
        pytest.param(ranking.DEFAULT, "bare", "batch/owned (Guaranteed before Burstable at priority 1)", id="qos-first"),
        # A policy's ranking with homes first: the Guaranteed ReplicaSet pod goes, and the Event
        # names the criterion that decided, not the one the default order would have.
        pytest.param(
            ranking.Order.named(["victims with no home"]), "owned",
            "batch/bare (no home elsewhere (no controller re-creates it), where batch/owned has one)", id="homes-first",
        ),
    ],
)
def test_the_victim_note_names_the_criterion_of_the_decisions_own_order(order, victim, why):
    # n1 (4 cpu): a bare Burstable pod and a Guaranteed ReplicaSet pod whose replacement fits on
    # the spare node, 2 cpu each, priority 1. The preemptor needs 2: one of them goes.
    bare = pod("bare", ns="batch", node="n1", cpu=2, priority=1, start=100)
    owned = pod("owned", ns="batch", node="n1", cpu=2, priority=1, start=100, qos=QoS.GUARANTEED, kind="ReplicaSet")
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=4), node("spare", cpu=2)], [bare, owned, preemptor])
    w, recorded, _ = witness()
    proposals = {"n1": Proposal((owned.uid,), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, order=order)
    w.answered(v, preemptor, proposals, decision)
    [gone] = decision.outcomes[0].victims
    assert gone.name == victim
    w.check(carried_out(v, preemptor, gone))
    note = recorded.events[1].note
    assert f"chosen over the pods that stay: {why}" in note, note


def test_shadow_mode_records_one_would_have_event_only_with_events_shadow():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness(Mode.SHADOW, Events.ON)
    assert not w.enabled
    answer(w, v, preemptor, [guaranteed])
    assert len(w) == 0

    w, recorded, _ = witness(Mode.SHADOW, Events.SHADOW)
    answer(w, v, preemptor, [guaranteed])
    w.check(carried_out(v, preemptor, burstable))
    assert recorded.events == [], "the scheduler's own victim is not the one that left"
    answer(w, v, preemptor, [guaranteed])
    w.check(carried_out(v, preemptor, guaranteed))  # stock's preemption, carried out
    [event] = recorded.events
    assert (event.reason, event.regarding.name) == ("ShadowPreemption", "checkout")
    assert event.note == (
        "reprieve would have preempted on n1: 0 PDB violations; evicts the Burstable batch/burstable, "
        "not the Guaranteed batch/guaranteed the scheduler evicts (decided by Guaranteed victims: 0 against 1)."
    )


def test_the_notes_do_not_say_reprieves_victims_won_where_the_schedulers_rank_first():
    # The scheduler proposes the Burstable pod; it is inside its minimum runtime, so reprieve
    # takes the Guaranteed one: dearer by the ranking, kept to the guard. The notes say so.
    from policy.guards import Guards, MinimumRuntime

    now = 10_000.0
    burstable = pod("burstable", ns="batch", node="n1", priority=1, cpu=4, start=now - 60)
    guaranteed = pod("guaranteed", ns="batch", node="n1", priority=1, cpu=4, qos=QoS.GUARANTEED, start=now - 3600)
    v = view([node("n1", cpu=8)], [burstable, guaranteed])
    preemptor = pod("checkout", ns="shop", priority=100, cpu=4)
    proposals = {"n1": Proposal((burstable.uid,), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, now=now, guards=Guards(runtime=(MinimumRuntime(600.0),)))
    assert [p.name for p in decision.outcomes[0].victims] == ["guaranteed"]
    a = notes.capture(v, preemptor, proposals, decision)
    for note in (notes.preemptor_note(a), notes.shadow_note(a, "n1")):
        assert "decided by" not in note, note
        assert "the Burstable batch/burstable" in note and "(though they rank first by Guaranteed victims: 0 against 1)" in note, note


def test_shadow_says_when_reprieve_would_have_done_the_same():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness(Mode.SHADOW, Events.SHADOW)
    answer(w, v, preemptor, [burstable])
    w.check(carried_out(v, preemptor, burstable))
    assert recorded.events[0].note == "reprieve would have done the same: on n1, 0 PDB violations, evicting the Burstable batch/burstable."


def test_events_false_records_nothing():
    v, preemptor, burstable, guaranteed = scene()
    for mode in Mode:
        w, recorded, _ = witness(mode, Events.OFF)
        assert not w.enabled
        answer(w, v, preemptor, [guaranteed])
        assert len(w) == 0


class Changing(StaticCluster):
    """A test's view, replaced between requests."""

    def show(self, view) -> None:
        self._view = view


def test_the_preempt_verb_keeps_the_answer_of_a_pod_told_to_wait(example_view):
    # Answered report-1 on node-a, checkout-0 asks again, nominated there, while report-2
    # (deleted by a controller) is leaving and reprieve's view does not show report-1 going
    # yet: told to wait, and its answer stays in flight (report-1 stays its own).
    body = (ROOT / "examples" / "requests" / "preempt.json").read_bytes()
    w, recorded, _ = witness()
    cluster = Changing(example_view)
    client = create_app(Settings(), cluster=cluster, events=w).test_client()
    assert client.post("/preempt", data=body).status_code == 200
    [flight] = w.ledger.in_flight(example_view)
    assert [v.key for v in flight.victims] == ["batch/report-1"]
    [report_2] = [p for p in example_view.pods.values() if p.key == "batch/report-2"]
    later = then(example_view, dataclasses.replace(report_2, terminating=True))
    cluster.show(later)
    again = orjson.loads(body)
    again["Pod"]["status"]["nominatedNodeName"] = "node-a"
    answered = client.post("/preempt", data=orjson.dumps(again))
    assert answered.status_code == 200 and not answered.get_json()["NodeNameToMetaVictims"]
    assert w.ledger.in_flight(later) == (flight,)


def test_the_preempt_verb_hands_its_answer_to_the_witness(example_view):
    # The README's preempt example: reprieve answers node-a, evicting batch/report-1.
    body = (ROOT / "examples" / "requests" / "preempt.json").read_bytes()
    w, recorded, _ = witness()
    client = create_app(Settings(), cluster=StaticCluster(example_view), events=w).test_client()
    assert client.post("/preempt", data=body).status_code == 200
    assert len(w) == 1
    preemptor = translate.pod_record(wire.parse(wire.ExtenderPreemptionArgs, body).pod, example_view.priority_classes)
    [report_1] = [p for p in example_view.pods.values() if p.key == "batch/report-1"]
    pods = [p for p in example_view.pods.values() if p.uid != report_1.uid]
    budgets = {b.key: b for bs in example_view.budgets.values() for b in bs}.values()
    w.check(
        view(
            [n.node for n in example_view.nodes.values()],
            [*pods, dataclasses.replace(preemptor, nominated_node_name="node-a"), dataclasses.replace(report_1, terminating=True, preempted=True)],
            budgets,
        )
    )
    assert [(e.reason, e.regarding.name) for e in recorded.events] == [
        ("Preempting", "checkout-0"), ("ChosenForPreemption", "report-1")
    ]
    assert recorded.events[0].note == (
        "On node-a: 0 PDB violations; evicts the Burstable batch/report-1, not the Guaranteed batch/report-2 "
        "stock would have taken (decided by Guaranteed victims: 0 against 1). Not node-b: not solved: cannot beat node-a: PDB violations at least 1 there vs 0."
    )


def test_the_verbs_and_the_witness_share_one_record_each_letting_go_by_its_own_rules():
    v, preemptor, burstable, guaranteed = scene()
    done = carried_out(v, preemptor, burstable)  # a snapshot view (revision 0): settled answers go at once

    def answered_as_the_verb_does(w):
        proposals = {"n1": Proposal((guaranteed.uid,), 0)}
        decision = decide(view=v, preemptor=preemptor, proposals=proposals)
        w.ledger.record(preemptor, "n1", decision.outcomes[0].victims)
        w.answered(v, preemptor, proposals, decision)

    w, recorded, _ = witness()
    answered_as_the_verb_does(w)
    assert len(w.ledger._answers) == 1 and len(w) == 1 and len(w.ledger) == 1
    assert w.ledger.in_flight(done) == () and len(w.ledger) == 0  # the verbs let go first...
    w.check(done)
    assert [e.reason for e in recorded.events] == ["Preempting", "ChosenForPreemption"]  # ...the Events still come
    assert len(w.ledger._answers) == 0

    w, recorded, _ = witness()
    answered_as_the_verb_does(w)
    w.check(done)  # the witness lets go first...
    assert len(recorded.events) == 2 and len(w) == 0
    assert [f.preemptor.uid for f in w.ledger.in_flight(v)] == [preemptor.uid]  # ...the answer is still in flight


def test_the_witness_counts_what_it_awaits_without_listing_it(monkeypatch):
    # The witness's thread asks every POLL_SECONDS how many answers await Events: a count the
    # ledger keeps, not a list built under the lock the preempt verb takes.
    v, preemptor, burstable, guaranteed = scene()
    w, _, _ = witness()
    other = pod("other", ns="shop", cpu=2, priority=10)
    w.ledger.record(other, "n1", ())  # an answer in flight, no Events awaited for it
    answer(w, v, preemptor, [guaranteed])
    answer(w, v, preemptor, [guaranteed])  # in place of the first
    assert w.ledger.awaiting_count() == len(w.ledger.awaiting_events()) == 1
    monkeypatch.setattr(w.ledger, "awaiting_events", lambda: pytest.fail("listed to count"))
    assert len(w) == 1
    w.ledger.drop_events(preemptor.uid)
    assert len(w) == 0 and w.ledger.awaiting_count() == 0 and len(w.ledger) == 1


def test_the_app_records_its_answers_in_the_witness_ledger(example_view):
    w, _, _ = witness()
    client = create_app(Settings(), cluster=StaticCluster(example_view), events=w).test_client()
    assert client.post("/preempt", data=(ROOT / "examples" / "requests" / "preempt.json").read_bytes()).status_code == 200
    assert len(w.ledger) == 1 and len(w.ledger._answers) == 1


def test_the_preemptor_note_names_three_other_candidates_and_counts_the_rest():
    # Six candidates, each with one 2-cpu victim; n0's is the youngest, so n0 is offered.
    names = [f"n{i}" for i in range(6)]
    victims = [pod(f"v{i}", node=n, cpu=2, priority=1, start=100 - i if i else 500) for i, n in enumerate(names)]
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node(n, cpu=2) for n in names], [*victims, preemptor])
    proposals = {n: Proposal((p.uid,), 0) for n, p in zip(names, victims)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True)
    assert list(decision.answer) == ["n0"]
    answer = notes.capture(v, preemptor, proposals, decision)
    assert answer.stock_node == "n0"  # the youngest victim: upstream's last criterion too
    text = notes.preemptor_note(answer)
    assert [n for n in names[1:] if f"Not {n}:" in text or f"not {n}:" in text] == ["n1", "n2", "n3"]
    assert text.endswith("and 2 more node(s).")


def test_a_gang_member_its_gang_can_spare_stays_for_its_own_reasons():
    # Found by review: g-a (priority 5) of a gang running 4 needing 2 stayed "a member of gang",
    # though its gang could spare it; it stays for its higher priority.
    members = [pod(f"g-{c}", ns="ml", node="n1", cpu=1, priority=5, gang=("g", 2)) for c in "abcd"]
    low = pod("low", ns="ml", node="n1", cpu=2, priority=1)
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=6)], [*members, low, preemptor])
    w, recorded, _ = witness()
    decision = answer(w, v, preemptor, [low])
    assert [p.name for p in decision.outcomes[0].victims] == ["low"]
    w.check(carried_out(v, preemptor, low))
    note = recorded.events[1].note
    assert "(higher priority 5)" in note and "a member of gang" not in note, note


def test_a_pod_the_guards_leave_pending_is_told_why_at_once():
    # Both nodes' only victims are Kafka brokers behind a budget allowing none, which the
    # policy makes strict: no node is offered, and the preemptor gets a Warning Event at once
    # (nothing will be carried out to wait for). Without the guards nothing is recorded.
    from extender.events.recorder import WARNING
    from policy.guards import Guards, StrictBudgets

    brokers = [pod(f"b{i}", ns="kafka", node=f"n{i}", cpu=4, priority=1, labels={"app": "b"}) for i in (1, 2)]
    preemptor = pod("urgent", ns="shop", cpu=4, priority=10)
    v = view([node("n1", cpu=4), node("n2", cpu=4)], [*brokers, preemptor], [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    proposals = {b.node_name: Proposal((b.uid,), 1) for b in brokers}
    guards = Guards(strict=StrictBudgets(namespaces=frozenset({"kafka"})))
    w, recorded, _ = witness()
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, guards=guards)
    assert decision.answer == {}
    w.answered(v, preemptor, proposals, decision)
    [event] = recorded.events
    assert (event.reason, event.type, event.regarding.uid, event.related) == ("PreemptionBlocked", WARNING, preemptor.uid, None)
    assert event.note == (
        "Not preempting, the pod stays pending: no candidate node can make room for the pod without violating a strict "
        "PodDisruptionBudget: n1: every victim set that makes room here violates strict PodDisruptionBudget kafka/b: "
        "the pods it may take within their allowance free too little (short of cpu=4); n2: every victim set that "
        "makes room here violates strict PodDisruptionBudget kafka/b: the pods it may take within their allowance "
        "free too little (short of cpu=4)."
    )
    assert len(w) == 0  # nothing awaited
    plain = decide(view=v, preemptor=preemptor, proposals=proposals)
    w2, recorded2, _ = witness()
    w2.answered(v, preemptor, proposals, plain)
    assert recorded2.events == [] and len(w2) == 1  # an answer, awaited as ever
    # No node for another reason (only a higher-priority pod there): no Event.
    full = view([node("n1", cpu=4)], [pod("x", node="n1", cpu=4, priority=20), preemptor])
    empty = {"n1": Proposal((), 0)}
    nothing = decide(view=full, preemptor=preemptor, proposals=empty, guards=guards)
    w3, recorded3, _ = witness()
    w3.answered(full, preemptor, empty, nothing)
    assert nothing.answer == {} and recorded3.events == []


def test_an_answer_whose_caller_has_gone_is_said_on_the_preemptor_and_its_earlier_events_dropped():
    v, preemptor, burstable, guaranteed = scene()
    w, recorded, _ = witness()
    answer(w, v, preemptor, [guaranteed])
    assert len(w) == 1
    w.dropped(preemptor, "n1", 1, "connection closed")
    [event] = recorded.events
    assert (event.reason, event.type, event.regarding.uid, event.related.name) == ("PreemptAnswerDropped", "Warning", preemptor.uid, "n1")
    assert event.note == (
        "reprieve's answer (on n1, 1 victim) came after the scheduler had stopped waiting (connection closed): "
        "not held for this pod. The scheduler went on without reprieve for this attempt."
    )
    assert len(w) == 0, "the earlier answer's Events are no longer awaited"
    w.check(carried_out(v, preemptor, burstable))
    assert len(recorded.events) == 1


def test_starting_mid_preemption_is_said_on_reprieves_own_pod():
    from extender.events.recorder import Ref
    from extender.state.preemptions import UnderWay

    w, recorded, _ = witness()
    own = Ref("Pod", "reprieve-scheduler-abc", "reprieve", "uid-own")
    w.started(UnderWay(0, 0), own)
    w.started(UnderWay(3, 2), None)  # outside a pod: nowhere to say it
    assert recorded.events == []
    w.started(UnderWay(3, 2), own)
    [event] = recorded.events
    assert (event.reason, event.regarding, event.type) == ("StartedMidPreemption", own, "Normal")
    assert event.note == (
        "Started with 3 pods nominated to a node and 2 victims terminating for a preemption: their room is held "
        "and their victims counted from the cluster; answers an earlier reprieve held in flight are gone."
    )


@pytest.mark.parametrize("mode, events", [(Mode.SHADOW, Events.SHADOW), (Mode.ENFORCE, Events.OFF)])
def test_neither_is_said_in_shadow_mode_or_with_events_off(mode, events):
    from extender.events.recorder import Ref
    from extender.state.preemptions import UnderWay

    v, preemptor, _, _ = scene()
    w, recorded, _ = witness(mode, events)
    w.dropped(preemptor, "n1", 1, "past httpTimeout")
    w.started(UnderWay(1, 1), Ref("Pod", "r", "ns", "u"))
    assert recorded.events == []


def test_the_victim_note_says_which_pod_stays_for_the_work_it_would_lose():
    # n1 (4 cpu): two alike Burstable bare pods of 2 cpu at priority 1; "saved" started an hour
    # before "long" but checkpointed at 2026-12-06T16:50:00Z, 10 min before the request at 17:00;
    # "long" started at 16:00 with none. The preemptor needs 2: "saved" goes (2 cores x 600 s
    # against 2 x 3,600 s), and the note says "long" stays for the work it would lose.
    at = 1_796_576_400.0  # 2026-12-06T17:00:00Z
    saved = pod("saved", ns="batch", node="n1", cpu=2, priority=1, start=at - 7200, checkpoint=at - 600)
    long = pod("long", ns="batch", node="n1", cpu=2, priority=1, start=at - 3600)
    preemptor = pod("checkout", ns="shop", cpu=2, priority=10)
    v = view([node("n1", cpu=4)], [saved, long, preemptor])
    w, recorded, _ = witness()
    proposals = {"n1": Proposal((long.uid,), 0)}  # stock's: the later start
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, now=at)
    w.answered(v, preemptor, proposals, decision)
    [gone] = decision.outcomes[0].victims
    assert gone.name == "saved"
    w.check(carried_out(v, preemptor, gone))
    note = recorded.events[1].note
    assert (
        "chosen over the pods that stay: batch/long (more work to lose (7200 core-seconds since it last started "
        "2026-12-06T16:00:00Z, batch/saved 1200 core-seconds))"
    ) in note, note


def test_the_work_lost_note_weighs_the_pods_not_only_their_starts():
    # n1 (4 cpu) is full: "big" (2 cpu) started 30 min before the request, "small" (0.5 cpu) an
    # hour before, both priority 1 and bare, and a priority-100 filler (1.5 cpu) no candidate.
    # The preemptor needs 0.5 cpu: either alone frees enough. "big" would lose 2 cores x 1,800 s
    # = 3,600 core-seconds, "small" 0.5 x 3,600 = 1,800: "small" goes, though it started
    # earlier (stock's latest start would take "big"), and the note says "big" stays for the
    # work it would lose, weights and all.
    at = 1_796_576_400.0  # 2026-12-06T17:00:00Z
    big = pod("big", ns="batch", node="n1", cpu=2, priority=1, start=at - 1800)
    small = pod("small", ns="batch", node="n1", cpu=0.5, priority=1, start=at - 3600)
    filler = pod("filler", ns="batch", node="n1", cpu=1.5, priority=100, start=at - 7200)
    preemptor = pod("checkout", ns="shop", cpu=0.5, priority=10)
    v = view([node("n1", cpu=4)], [big, small, filler, preemptor])
    w, recorded, _ = witness()
    proposals = {"n1": Proposal((big.uid,), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, now=at)
    w.answered(v, preemptor, proposals, decision)
    [gone] = decision.outcomes[0].victims
    assert gone.name == "small"  # 1,800 core-seconds lost against big's 3,600
    w.check(carried_out(v, preemptor, gone))
    note = recorded.events[1].note
    assert "batch/big (more work to lose (3600 core-seconds since it last started 2026-12-06T16:30:00Z, " \
        "batch/small 1800 core-seconds))" in note, note

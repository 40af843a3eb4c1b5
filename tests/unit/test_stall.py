"""After the process is stopped or starved, the verbs answer as while the view is not ready
(extender.stall): the scheduler's own answer, nothing recorded in flight."""

from __future__ import annotations

import json

from extender.config import Events, Mode, Settings
from extender.events.witness import Witness
from extender.serving.app import create_app
from extender.stall import Stall
from extender.state.ledger import Ledger
from extender.state.source import StaticCluster
from tests.conftest import ROOT


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_gap_between_ticks_is_a_stall_for_the_settle_window():
    clock = Clock()
    stall = Stall(tick=0.1, gap=1.0, settle=2.0, clock=clock)
    for _ in range(5):  # ticking on time: no stall
        clock.now += 0.1
        stall.note()
        assert not stall.recent()
    clock.now += 3.0  # stopped for 3 s: before the ticker runs again, the old tick says so
    assert stall.recent()
    stall.note()  # the ticker runs again: the window opens
    for _ in range(19):
        clock.now += 0.1
        stall.note()
        assert stall.recent()
    clock.now += 0.2  # 2.1 s after the stall ended
    stall.note()
    assert not stall.recent()


class Discard:
    def record(self, event) -> bool:
        return True


class Stalled(Stall):
    def __init__(self, stalled: bool) -> None:
        super().__init__()
        self.stalled = stalled

    def recent(self) -> bool:
        return self.stalled


def test_preempt_just_after_a_stall_gives_the_schedulers_own_answer_and_records_nothing(example_view):
    # The README's preempt example: reprieve answers node-a with batch/report-1; the scheduler
    # proposed node-a (batch/report-2) and node-b. Just after a stall, its own proposal stands.
    body = (ROOT / "examples" / "requests" / "preempt.json").read_bytes()
    proposed = json.loads(body)["NodeNameToMetaVictims"]
    for stalled in (False, True):
        ledger = Ledger()
        events = Witness(Discard(), StaticCluster(None), ledger, mode=Mode.ENFORCE, events=Events.ON)  # the app records in its ledger
        app = create_app(Settings(), cluster=StaticCluster(example_view), events=events, stall=Stalled(stalled))
        answer = app.test_client().post("/preempt", data=body).get_json()["NodeNameToMetaVictims"]
        uids = {n: [v["UID"] for v in m["Pods"]] for n, m in answer.items()}
        if stalled:
            assert uids == {n: [v["UID"] for v in m["Pods"]] for n, m in proposed.items()}
            assert not ledger.in_flight(example_view)
        else:
            assert list(uids) == ["node-a"]
            assert len(ledger.in_flight(example_view)) == 1


class StoppedWhileDeciding(Stall):
    """Not stalled when the request starts; stalled by the time the decision is made."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def recent(self) -> bool:
        self.asked += 1
        return self.asked > 1


def test_a_decision_made_across_a_stall_is_not_answered_or_recorded(example_view):
    body = (ROOT / "examples" / "requests" / "preempt.json").read_bytes()
    proposed = json.loads(body)["NodeNameToMetaVictims"]
    ledger = Ledger()
    events = Witness(Discard(), StaticCluster(None), ledger, mode=Mode.ENFORCE, events=Events.ON)
    app = create_app(Settings(), cluster=StaticCluster(example_view), events=events, stall=StoppedWhileDeciding())
    answer = app.test_client().post("/preempt", data=body).get_json()["NodeNameToMetaVictims"]
    assert {n: [v["UID"] for v in m["Pods"]] for n, m in answer.items()} == {
        n: [v["UID"] for v in m["Pods"]] for n, m in proposed.items()
    }
    assert not ledger.in_flight(example_view)

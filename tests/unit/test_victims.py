"""Victim selection on one node; each case carries its arithmetic in a comment."""

from __future__ import annotations

import pytest

from policy.qos import QoS
from policy.victims import Choosing, NodeRejected, VictimSelection, select_victims
from tests.builders import keys, node, pdb, pod, view

G, B, BE = QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT


def select(running, preemptor, budgets=(), capacity=10, **node_kw):
    v = view([node("n1", cpu=capacity, **node_kw)], running, budgets)
    return select_victims(node=v.nodes["n1"], choosing=Choosing(preemptor, v.budgets_covering), reservations=v.reservations("n1", pod=preemptor))


CASES = [
    pytest.param(
        # A budget allows 1 of a (2 cpu), b (1), c (1); 'keep' (priority 20) holds 6, so slack
        # = 10 - 6 - 2 = 2. Keeping the budget's pods most important first keeps a (slack 0)
        # and loses b and c: 2 taken, 1 violation. Trying upstream's violators first (a spends
        # the allowance, b and c are past it) keeps b and c and loses a: 0 violations. The
        # cheaper of the two is taken.
        [
            pod("keep", node="n1", priority=20, cpu=6),
            pod("a", node="n1", priority=1, cpu=2, labels={"app": "web"}, start=1),
            pod("b", node="n1", priority=1, cpu=1, labels={"app": "web"}, start=2),
            pod("c", node="n1", priority=1, cpu=1, labels={"app": "web"}, start=3),
        ],
        pod("pre", priority=10, cpu=2),
        (pdb("web", allowed=1, match={"app": "web"}),),
        ["a"],
        id="pdb-never-worse-than-upstreams-violators-first",
    ),
    pytest.param(
        # The seed's example: capacity 10, running p0:3 p1:1 p2:5 p3:1 (all 10 used), preemptor
        # (priority 10) needs 5. Reprieve most important first: p3 (1, slack 5-1=4), p2 (5 > 4:
        # victim), p1 (1, slack 3), p0 (3, slack 0). Only p2 goes; p0 and p1 stay.
        [
            pod("p0", node="n1", priority=0, cpu=3),
            pod("p1", node="n1", priority=1, cpu=1),
            pod("p2", node="n1", priority=2, cpu=5),
            pod("p3", node="n1", priority=3, cpu=1),
        ],
        pod("pre", priority=10, cpu=5),
        (),
        ["p2"],
        id="seed-minimal-victims-only-p2",
    ),
    pytest.param(
        # Equal priority, 8 of 10 used, preemptor needs 4: one of the two 4-cpu pods must go.
        # Reprieve Guaranteed before Burstable (slack 10-4=6: g 4 fits, slack 2; b 4 > 2): the
        # Burstable pod goes even though the Guaranteed one started later (stock would keep the
        # older pod and evict the Guaranteed one).
        [
            pod("burstable", node="n1", priority=5, cpu=4, qos=B, start=100),
            pod("guaranteed", node="n1", priority=5, cpu=4, qos=G, start=200),
        ],
        pod("pre", priority=10, cpu=4),
        (),
        ["burstable"],
        id="qos-tie-break-prefers-burstable-victim",
    ),
    pytest.param(
        # Same QoS and priority: the earlier start is more important and reprieved first.
        [
            pod("old", node="n1", priority=5, cpu=4, qos=B, start=100),
            pod("young", node="n1", priority=5, cpu=4, qos=B, start=200),
        ],
        pod("pre", priority=10, cpu=4),
        (),
        ["young"],
        id="equal-qos-evicts-the-younger",
    ),
    pytest.param(
        # Priority beats QoS: a Guaranteed pod of priority 1 goes before a BestEffort-sized
        # Burstable pod of priority 2. Slack 10-5=5: b2 (5) fits first, slack 0; g1 (5) victim.
        [
            pod("g1", node="n1", priority=1, cpu=5, qos=G),
            pod("b2", node="n1", priority=2, cpu=5, qos=B),
        ],
        pod("pre", priority=10, cpu=5),
        (),
        ["g1"],
        id="priority-before-qos",
    ),
    pytest.param(
        # PDB-first: 'covered' (priority 3) is behind a budget with no allowance; 'free'
        # (priority 4) is not. Slack 10-5=5 after removing both 5-cpu pods. Protected pods are
        # reprieved first, so 'covered' stays and the more important but unprotected 'free' goes:
        # 0 violations instead of 1.
        [
            pod("covered", node="n1", priority=3, cpu=5, labels={"app": "db"}),
            pod("free", node="n1", priority=4, cpu=5, labels={"app": "cache"}),
        ],
        pod("pre", priority=10, cpu=5),
        [pdb("db", allowed=0, match={"app": "db"})],
        ["free"],
        id="pdb-protected-reprieved-first",
    ),
    pytest.param(
        # BestEffort pods free no cpu: 9 cpu used by 'big' plus two BestEffort pods, preemptor
        # needs 2. Slack 10-2=8 after removing all: be-1 (0) and be-2 (0) fit, big (9) does not.
        [
            pod("be-1", node="n1", priority=1, qos=BE),
            pod("big", node="n1", priority=1, cpu=9, qos=G),
            pod("be-2", node="n1", priority=1, qos=BE),
        ],
        pod("pre", priority=10, cpu=2),
        (),
        ["big"],
        id="best-effort-never-a-victim-for-cpu",
    ),
    pytest.param(
        # Terminating pods are leaving anyway: always named, never reprieved, and the live pod
        # stays. 6 used by 'leaving' + 3 by 'live', need 5: slack 10-5=5, live (3) fits.
        [
            pod("leaving", node="n1", priority=1, cpu=6, terminating=True),
            pod("live", node="n1", priority=1, cpu=3),
        ],
        pod("pre", priority=10, cpu=5),
        (),
        ["leaving"],
        id="terminating-pods-are-free-victims",
    ),
    pytest.param(
        # Equal priority is never a victim: 'peer' (priority 10) keeps its 6 cpu; 'low' (4) goes.
        [pod("peer", node="n1", priority=10, cpu=6), pod("low", node="n1", priority=9, cpu=4)],
        pod("pre", priority=10, cpu=4),
        (),
        ["low"],
        id="equal-priority-is-not-a-candidate",
    ),
]


@pytest.mark.parametrize("pods, preemptor, budgets, expected", CASES)
def test_victims(pods, preemptor, budgets, expected):
    result = select(pods, preemptor, budgets)
    assert isinstance(result, VictimSelection), result
    assert keys(result.victims) == expected


def test_victims_are_most_important_first_and_counted_exactly():
    # Need 9 of 10 with 10 used: every candidate must go. Order: priority 5 first, then the
    # two priority-1 pods Guaranteed before Burstable. The budget allows 1 of its 2 pods.
    pods = [
        pod("b1", node="n1", priority=1, cpu=3, qos=B, labels={"app": "web"}),
        pod("g1", node="n1", priority=1, cpu=3, qos=G, labels={"app": "web"}),
        pod("p5", node="n1", priority=5, cpu=4, qos=B),
    ]
    result = select(pods, pod("pre", priority=10, cpu=9), [pdb("web", allowed=1, match={"app": "web"})])
    assert keys(result.victims) == ["p5", "g1", "b1"]
    assert result.violations.count == 1
    assert result.violations.budgets == ("default/web",)


def test_best_effort_victim_only_for_a_pod_slot():
    # The node allows 3 pods, all 3 slots used, cpu is plentiful. One slot is needed.
    # Reprieve g (1 slot left), then be-1 (older, 0 left); be-2 finds no slot and goes.
    pods = [
        pod("be-1", node="n1", priority=1, qos=BE, start=1),
        pod("g", node="n1", priority=1, cpu=1, qos=G),
        pod("be-2", node="n1", priority=1, qos=BE, start=2),
    ]
    result = select(pods, pod("pre", priority=10, cpu=1), pods=3)
    assert keys(result.victims) == ["be-2"]


def test_nominated_room_is_kept_free():
    # 4 used by 'low', a nominated pod of priority 20 holds 4 more; preemptor (10) needs 4.
    # Without the reservation: slack 10-4=6 and 'low' could stay. With it: 10-4-4=2, 'low' goes.
    pods = [pod("low", node="n1", priority=1, cpu=4), pod("holder", priority=20, cpu=4, nominated="n1")]
    result = select(pods, pod("pre", priority=10, cpu=4))
    assert keys(result.victims) == ["low"]
    assert any("default/holder" in r for r in result.reasons)


def test_lower_priority_nomination_holds_nothing():
    # The nominated pod (priority 5) is below the preemptor (10): its room may be taken.
    # 8 used by 'low' (1), need 2: slack 10-2=8 and 'low' (8) fits, so nothing is evicted.
    pods = [pod("low", node="n1", priority=1, cpu=8), pod("holder", priority=5, cpu=4, nominated="n1")]
    result = select(pods, pod("pre", priority=10, cpu=2))
    assert keys(result.victims) == []


@pytest.mark.parametrize(
    "pods, preemptor, why",
    [
        pytest.param([pod("high", node="n1", priority=50, cpu=8)], pod("pre", priority=10, cpu=4), "no pod", id="nothing-lower"),
        pytest.param(
            # 'high' keeps 8; even with 'low' gone, 10-8=2 < 4.
            [pod("high", node="n1", priority=50, cpu=8), pod("low", node="n1", priority=1, cpu=2)],
            pod("pre", priority=10, cpu=4),
            "short of cpu=2",
            id="does-not-fit-even-when-emptied",
        ),
        pytest.param(
            # A nominated pod of priority 20 holds 7; removing 'low' leaves 10-7=3 < 4.
            [pod("low", node="n1", priority=1, cpu=2), pod("holder", priority=20, cpu=7, nominated="n1")],
            pod("pre", priority=10, cpu=4),
            "room held for default/holder",
            id="nominated-room-makes-it-hopeless",
        ),
    ],
)
def test_rejected(pods, preemptor, why):
    result = select(pods, preemptor)
    assert isinstance(result, NodeRejected)
    assert why in result.reason

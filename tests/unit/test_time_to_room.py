"""The time to room (policy.criteria.time_to_room): the longest grace period among a set's live
victims, shorter first; its words, its lower bound, and simulate's room wait."""

from __future__ import annotations

from policy import bounds, ranking, replay, stock
from policy.criteria import TIME_TO_ROOM, Facts, Stay
from policy.criteria.time_to_room import time_to_room
from policy.preempt import Verdict, decide
from tests.builders import node, pod, scheduler_proposals, view


def test_a_sets_time_to_room_is_its_longest_live_grace():
    quick, drain, slow = pod("quick", grace=0), pod("drain", grace=5), pod("slow", grace=60)
    assert time_to_room([quick, drain]) == 5  # max(0, 5)
    assert time_to_room([quick, drain, slow]) == 60  # max(0, 5, 60)
    assert time_to_room([quick]) == 0
    assert time_to_room([]) == 0
    # A terminating victim counts nothing, whatever its grace: it leaves anyway (see the
    # module's docstring), so max(5) = 5.
    assert time_to_room([drain, pod("leaving", grace=600, terminating=True)]) == 5
    assert time_to_room([pod("default")]) == 30  # the API server's default grace


def quick_and_slow():
    # A 4-cpu node with two 2-cpu priority-1 pods alike but for their grace periods: quick (0 s)
    # started at 100, slow (60 s) at 200. Stock evicts the younger, slow.
    return view([node("n1", cpu=4)], [pod("quick", node="n1", priority=1, cpu=2, start=100, grace=0),
                                      pod("slow", node="n1", priority=1, cpu=2, start=200, grace=60)])


def test_of_two_alike_victims_the_one_that_goes_at_once_goes():
    v, preemptor = quick_and_slow(), pod("pre", priority=10, cpu=2)
    theirs = stock.decide(view=v, preemptor=preemptor, node_names=["n1"]).nodes["n1"].victims
    assert [p.name for p in theirs] == ["slow"]
    decision = decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor))
    [n1] = decision.outcomes
    assert n1.verdict is Verdict.CHOSEN
    assert [p.name for p in n1.victims] == ["quick"]
    # Its cost against the scheduler's own victims: everything equal up to the time to room,
    # 0 s against 60 s, which explain, the decision log and the Event name.
    assert n1.cost.decided_by(n1.proposed_cost) == "decided by longest time to room: 0 s against 60 s"
    assert n1.cost.value(TIME_TO_ROOM) == 0 and n1.proposed_cost.value(TIME_TO_ROOM) == 60


def test_why_a_pod_stays_in_an_event():
    stay = Stay(budgets={}, in_gangs={}, no_home={})
    quick, drain, slow = pod("quick", grace=0), pod("drain", grace=5), pod("slow", grace=60)
    assert TIME_TO_ROOM.stays(slow, quick, stay) == "goes in 60 s (terminationGracePeriodSeconds), default/quick at once"
    assert TIME_TO_ROOM.stays(slow, drain, stay) == "goes in 60 s (terminationGracePeriodSeconds), default/drain in 5 s"
    assert TIME_TO_ROOM.stays(quick, slow, stay) is None  # the victim takes longer: not why quick stays
    assert TIME_TO_ROOM.stays(drain, pod("twin", grace=5), stay) is None


def test_the_bound_is_the_shortest_grace_among_the_candidates():
    # Three 2-cpu priority-1 candidates with grace 60, 5 and 120 on a full 6-cpu node; the
    # preemptor needs 2 cpu, so one goes: no set waits less than min(60, 5, 120) = 5 s.
    v = view([node("n1", cpu=6)], [pod(f"p{g}", node="n1", priority=1, cpu=2, grace=g) for g in (60, 5, 120)])
    at = ranking.DEFAULT.position(TIME_TO_ROOM)
    floor = bounds.floor(v, v.nodes["n1"], pod("pre", priority=10, cpu=2), ())
    assert floor[at] == 5
    # A preemptor that fits needs no victim: nothing to wait for.
    roomy = view([node("n1", cpu=8)], [pod(f"p{g}", node="n1", priority=1, cpu=2, grace=g) for g in (60, 5, 120)])
    assert bounds.floor(roomy, roomy.nodes["n1"], pod("pre", priority=10, cpu=2), ())[at] == 0


def test_the_cost_counts_live_victims_only():
    facts = Facts(lambda p: ())
    key = ranking.DEFAULT.cost([pod("a", grace=5), pod("t", grace=300, terminating=True)], facts)
    assert key.value(TIME_TO_ROOM) == 5
    assert ranking.DEFAULT.cost([pod("t", grace=300, terminating=True)], facts).value(TIME_TO_ROOM) == 0


def test_simulate_sums_each_preemptions_longest_grace():
    # Two nodes of quick_and_slow's shape. The first preemptor needs a whole node (4 cpu): both
    # its pods go, 60 s on either side; the second needs 2 cpu on the other node: stock evicts
    # slow2 (60 s), reprieve quick2 (0 s). Summed: 60 + 60 = 120 against 60 + 0 = 60.
    v = view([node("n1", cpu=4), node("n2", cpu=4)],
             [pod("quick", node="n1", priority=1, cpu=2, start=100, grace=0),
              pod("slow", node="n1", priority=1, cpu=2, start=200, grace=60),
              pod("quick2", node="n2", priority=1, cpu=2, start=100, grace=0),
              pod("slow2", node="n2", priority=1, cpu=2, start=200, grace=60)])
    runs = replay.compare(v, [pod("pre", priority=10, cpu=4), pod("pre2", priority=10, cpu=2)])
    assert [s.room_wait for s in runs[replay.STOCK].steps] == [60, 60]
    assert runs[replay.STOCK].totals.room_wait_seconds == 120
    assert [s.room_wait for s in runs[replay.REPRIEVE].steps] == [60, 0]
    assert runs[replay.REPRIEVE].totals.room_wait_seconds == 60

"""filter: nominated-pod accounting and the FailedNodes / FailedAndUnresolvableNodes split."""

from __future__ import annotations

from policy.filter import filter_nodes
from tests.builders import node, pod, view

# A scheduler other than the one asking (every pod here is the default scheduler's): its
# nominations are the ones kube-scheduler cannot see, and the only ones filter holds room for.
OTHER = "volcano"


def run(running, preemptor, names=("n1",)):
    return filter_nodes(view=view([node("n1")], running), pod=preemptor, node_names=names)


def test_fits():
    # 6 of 10 used, needs 4: 6+4 = 10 <= 10.
    decision = run([pod("a", node="n1", cpu=6)], pod("p", priority=5, cpu=4))
    assert decision.passed == ("n1",) and not decision.rejected


def test_room_held_by_higher_priority_nomination_is_rejected_with_its_name():
    # 4 used + 4 held for 'holder' (priority 100 >= 5) + 4 needed = 12 > 10; without the
    # hold it would fit (8 <= 10). Evicting the priority-0 pod would make room, but the
    # scheduler cannot see this hold, so its dry run would find no victim: unresolvable.
    decision = run(
        [pod("a", node="n1", priority=0, cpu=4), pod("holder", priority=100, cpu=4, nominated="n1", scheduler=OTHER)],
        pod("p", priority=5, cpu=4),
    )
    assert decision.passed == ()
    assert decision.rejected == {"n1": "fits only in room held for nominated default/holder (priority 100)"}


def test_equal_priority_nomination_also_holds_room():
    decision = run(
        [pod("a", node="n1", cpu=4), pod("holder", priority=5, cpu=4, nominated="n1", scheduler=OTHER)],
        pod("p", priority=5, cpu=4),
    )
    assert "n1" in decision.rejected


def test_the_asking_schedulers_own_nomination_is_left_to_it():
    # As above, but 'holder' is the asking scheduler's own pod: its filters counted the hold
    # from its nominator, which is never behind reprieve's view, and admitted n1 anyway, so the
    # nomination no longer holds the room there (cleared, or the pod bound or deleted), and a
    # rejection would rest on reprieve's older record.
    decision = run(
        [pod("a", node="n1", priority=0, cpu=4), pod("holder", priority=100, cpu=4, nominated="n1")],
        pod("p", priority=5, cpu=4),
    )
    assert decision.passed == ("n1",) and not decision.rejected


def test_an_earlier_pod_of_the_same_name_holds_no_room():
    # 'p' was deleted and created again under its name (a new UID); reprieve's view still shows
    # the old one nominated to n1. One pod per name: the old one is gone and holds nothing.
    old = pod("p", priority=100, cpu=4, nominated="n1", scheduler=OTHER, uid="uid-old-p")
    decision = run([pod("a", node="n1", cpu=4), old], pod("p", priority=100, cpu=4, scheduler=OTHER))
    assert decision.passed == ("n1",)


def test_lower_priority_nomination_does_not_hold_room():
    # 'holder' has priority 1 < 5: its room may be taken. 4 + 4 = 8 <= 10.
    decision = run(
        [pod("a", node="n1", cpu=4), pod("holder", priority=1, cpu=4, nominated="n1", scheduler=OTHER)],
        pod("p", priority=5, cpu=4),
    )
    assert decision.passed == ("n1",)


def test_the_pod_does_not_hold_room_against_itself():
    # The pod being placed is itself nominated to n1: its own reservation is not counted.
    me = pod("p", priority=5, cpu=4, nominated="n1")
    decision = filter_nodes(view=view([node("n1")], [pod("a", node="n1", cpu=6), me]), pod=me, node_names=["n1"])
    assert decision.passed == ("n1",)


def test_unresolvable_when_even_preemption_cannot_make_room():
    # Without the hold the pod fits: 3+2+4 = 9 <= 10. With it, and with every lower-priority
    # pod gone, 'peer' (priority 5, 3 cpu) + 'holder' (priority 100, 5) + 4 = 12 > 10: preemption
    # cannot help.
    decision = run(
        [pod("peer", node="n1", priority=5, cpu=3), pod("low", node="n1", priority=0, cpu=2), pod("holder", priority=100, cpu=5, nominated="n1", scheduler=OTHER)],
        pod("p", priority=5, cpu=4),
    )
    assert list(decision.rejected) == ["n1"]
    assert "short of cpu=2 even if every lower-priority pod were preempted" in decision.rejected["n1"]
    assert "default/holder" in decision.rejected["n1"]


def test_shortage_without_reservations_is_left_to_the_scheduler():
    # 8 + 4 = 12 > 10 in reprieve's view, but the scheduler's own resource filter admitted
    # the node from a fresher view (reprieve has not seen a deletion yet): pass it.
    decision = run(
        [pod("low", node="n1", priority=0, cpu=8), pod("holder", priority=100, cpu=1, nominated="n1", scheduler=OTHER)],
        pod("p", priority=5, cpu=4),
    )
    assert decision.passed == ("n1",) and not decision.rejected


def test_unknown_node_passes_and_order_is_kept():
    decision = filter_nodes(view=view([node("n1")], []), pod=pod("p", cpu=1), node_names=["zz", "n1"])
    assert decision.passed == ("zz", "n1")


def test_the_pods_own_nominated_node_always_passes():
    # p1 and p2 (priority 5) are both nominated to n1 (4 cpu, 2 used); p2 asks. p1 holds the 2
    # free cpus, so p2 would be rejected for held room; but rejecting p2 on its own nominated
    # node would make the scheduler clear its nomination.
    v = view(
        [node("n1", cpu=4)],
        [
            pod("bound", node="n1", cpu=2, priority=9),
            pod("p1", cpu=2, priority=5, nominated="n1", scheduler=OTHER),
            pod("p2", cpu=2, priority=5, nominated="n1", scheduler=OTHER),
        ],
    )
    asking = v.pods["uid-default-p2"]
    assert filter_nodes(view=v, pod=asking, node_names=["n1"]).passed == ("n1",)
    # Not nominated there, the same pod is rejected for p1's held room.
    fresh = pod("p3", cpu=2, priority=5)
    assert "n1" in filter_nodes(view=v, pod=fresh, node_names=["n1"]).rejected


def sixteen(*nominated, needs=2, priority=10):
    """Issue 27's node: 16 cpu with 12 running (priority 0), the given pods nominated to it, and
    the pod asked about (``needs`` cpu at ``priority``)."""
    v = view([node("n1", cpu=16)], [pod("running", node="n1", cpu=12), *nominated])
    return filter_nodes(view=v, pod=pod("p", priority=priority, cpu=needs), node_names=["n1"])


MINE = dict(priority=20, nominated="n1")  # the asking scheduler's own hold (priority >= 10)
THEIRS = dict(priority=10, nominated="n1", scheduler=OTHER)


def test_another_schedulers_hold_comes_on_top_of_the_schedulers_own_that_the_pod_fits_beside():
    # Issue 27: the scheduler admits n1 counting its own 'mine' (12 + 1 + 2 <= 16); 'theirs' (2
    # cpu) it cannot see. With both holds the pod does not fit: 12 + 1 + 2 + 2 = 17 > 16. Leaving
    # 'mine' out (12 + 2 + 2 = 16) would hand 'theirs' room to the pod.
    decision = sixteen(pod("mine", cpu=1, **MINE), pod("theirs", cpu=2, **THEIRS))
    assert decision.passed == ()
    assert decision.rejected == {
        "n1": "fits only in room held for nominated default/theirs (priority 10), "
        "next to the room the scheduler holds for its own nominated default/mine (priority 20)"
    }
    # With room for all three it passes: 12 + 1 + 1 + 2 = 16.
    assert sixteen(pod("mine", cpu=1, **MINE), pod("theirs", cpu=1, **THEIRS)).passed == ("n1",)


def test_the_schedulers_own_hold_the_pod_does_not_fit_beside_is_set_aside_before_anothers_is_added():
    # 'mine' (3 cpu): 12 + 3 + 2 = 17 > 16, yet the scheduler admitted n1, so it no longer holds
    # that room (reprieve's record is older). Set aside: 12 + 2 ('theirs') + 2 = 16 fits.
    assert sixteen(pod("mine", cpu=3, **MINE), pod("theirs", cpu=2, **THEIRS)).passed == ("n1",)
    # 'theirs' alone still holds: 12 + 3 + 2 = 17 > 16, rejected for it only.
    decision = sixteen(pod("mine", cpu=3, **MINE), pod("theirs", cpu=3, **THEIRS))
    assert decision.rejected == {"n1": "fits only in room held for nominated default/theirs (priority 10)"}


def test_several_own_holds_count_together_or_not_at_all():
    # Beside both of its own (1 + 1) the pod fits: 12 + 2 + 2 = 16, so both count, and 'theirs'
    # (1) on top does not fit: 17 > 16.
    decision = sixteen(pod("mine-a", cpu=1, **MINE), pod("mine-b", cpu=1, **MINE), pod("theirs", cpu=1, **THEIRS))
    assert "default/mine-a (priority 20), default/mine-b (priority 20)" in decision.rejected["n1"]
    # Beside 1 + 3 it does not (18 > 16): the scheduler has moved past one of them, reprieve
    # cannot tell which, and sets both aside: 12 + 2 + 2 = 16 fits (keeping 'mine-a', 17, not).
    assert sixteen(pod("mine-a", cpu=1, **MINE), pod("mine-b", cpu=3, **MINE), pod("theirs", cpu=2, **THEIRS)).passed == ("n1",)


def test_an_own_nominee_of_lower_priority_is_no_hold():
    # 'mine' (priority 5 < 10) holds nothing against the pod (a preemption's nomination: the
    # pod may take its room); 12 + 2 + 2 = 16 fits beside 'theirs'.
    assert sixteen(pod("mine", cpu=1, priority=5, nominated="n1"), pod("theirs", cpu=2, **THEIRS)).passed == ("n1",)


def test_with_every_lower_priority_pod_preempted_the_own_hold_still_counts():
    # 'running' is priority 15 here, above the pod: kept. 12 + 1 + 2 + 2 = 17 > 16 whatever is
    # preempted, so the message says preemption cannot help.
    v = view(
        [node("n1", cpu=16)],
        [pod("running", node="n1", cpu=12, priority=15), pod("mine", cpu=1, **MINE), pod("theirs", cpu=2, **THEIRS)],
    )
    decision = filter_nodes(view=v, pod=pod("p", priority=10, cpu=2), node_names=["n1"])
    assert decision.rejected["n1"].startswith("short of cpu=1 even if every lower-priority pod were preempted")

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

"""Upstream v1.35 to v1.37 semantics reprieve relies on (docs/upstream-semantics.md), one test each.

1. A pod can carry ``status.nominatedNodeName`` because it is in its binding cycle (PreBind or
   Permit, feature NominatedNodeNameForExpectation, beta and on since v1.35), not because it
   preempted. The scheduler has it *assumed* on the node: it takes room from every pod there.
2. Async preemption (on since v1.33): the preemptor is nominated first, its victims are
   deleted afterwards, so a view can show the nomination with every victim still running.
"""

from __future__ import annotations

import dataclasses

from extender.state.ledger import Ledger
from policy.causes import Cause
from policy.filter import filter_nodes
from policy.preempt import Proposal, Verdict, decide
from policy.qos import QoS
from tests.builders import node, pod, view

G = QoS.GUARANTEED


def binding_scene(*extra, scheduler="default-scheduler"):
    """n1 (8 cpu) runs f0 and f1 (2 cpu each, priority 0); ``bind`` (priority 100, 4 cpu) is in
    its binding cycle there: pending, nominated to n1, no victim anywhere."""
    fillers = [pod(f"f{i}", node="n1", cpu=2, start=i) for i in range(2)]
    binding = pod("bind", cpu=4, priority=100, nominated="n1", scheduler=scheduler)
    return view([node("n1", cpu=8), node("n2", cpu=8)], [*fillers, binding, *extra]), fillers, binding


def test_a_pod_nominated_in_its_binding_cycle_holds_its_room_against_equal_and_lower_priority():
    # Like a preemption nomination: the 4 free cpu are the binding pod's; a pod of equal or
    # lower priority that needs them is rejected where the asking scheduler cannot see the
    # binding (another scheduler's pod). The asking scheduler's own binding pod is assumed in
    # its cache, counted by its own filters: not reprieve's to hold.
    v, _, _ = binding_scene(scheduler="volcano")
    for priority in (100, 5):
        decision = filter_nodes(view=v, pod=pod("late", cpu=4, priority=priority), node_names=["n1", "n2"])
        assert decision.passed == ("n2",)
        assert "bind" in decision.rejected["n1"]
    own, _, _ = binding_scene()
    assert filter_nodes(view=own, pod=pod("late", cpu=4, priority=5), node_names=["n1", "n2"]).passed == ("n1", "n2")


def test_a_higher_priority_preemptor_is_never_promised_the_room_of_a_pod_being_bound():
    # The scheduler counts the assumed pod as running on n1 and, for a preemptor of priority
    # 1000 needing 6 cpu, proposes f0 and f1. In reprieve's view 4 cpu are free, so f1 alone
    # would do: reprieve sees the scheduler counts room it cannot see and frees as much.
    v, fillers, _ = binding_scene()
    proposal = Proposal((fillers[0].uid, fillers[1].uid), 0)
    decision = decide(view=v, preemptor=pod("big", cpu=6, priority=1000), proposals={"n1": proposal})
    (outcome,) = decision.outcomes
    assert outcome.cause is Cause.SCHEDULER_SEES_LESS
    assert set(decision.answer["n1"].uids) == set(proposal.uids)


def test_a_proposal_naming_the_pod_being_bound_is_passed_through_unchanged():
    # The assumed pod is on n1 in the scheduler's snapshot, so its preemption may propose it;
    # reprieve's view has it pending, not on n1: the node is returned exactly as proposed.
    v, fillers, binding = binding_scene()
    proposal = Proposal((binding.uid,), 0)
    decision = decide(view=v, preemptor=pod("big", cpu=6, priority=1000), proposals={"n1": proposal})
    (outcome,) = decision.outcomes
    assert outcome.verdict is Verdict.PASSED_THROUGH
    assert decision.answer == {"n1": proposal}


def test_async_preemption_the_answer_stays_in_flight_until_its_victims_leave():
    # The preemptor is nominated to n1 while f1, its victim, still runs: the record stays (f1
    # is not promised to anyone else); once f1 terminates, the view shows it all.
    fillers = [pod(f"f{i}", node="n1", cpu=4, start=i) for i in range(2)]
    pre = pod("pre", cpu=4, priority=100)
    v = view([node("n1", cpu=8)], [*fillers, pre])
    ledger = Ledger()
    ledger.record(pre, "n1", (fillers[1],))
    nominated = view([node("n1", cpu=8)], [*fillers, pod("pre", cpu=4, priority=100, nominated="n1")])
    assert [f.victims for f in ledger.in_flight(nominated)] == [(fillers[1],)]
    leaving = view(
        [node("n1", cpu=8)],
        [fillers[0], pod("f1", node="n1", cpu=4, start=1, terminating=True), pod("pre", cpu=4, priority=100, nominated="n1")],
    )
    assert ledger.in_flight(leaving) == ()
    assert len(ledger.in_flight(v)) == 0  # settled records are dropped for good


def test_a_preemptor_bound_elsewhere_in_its_binding_cycle_releases_its_victims():
    # Answered n1, the pod then found room on n2 and is nominated there by its binding cycle:
    # the scheduler went another way, and n1's victims are no longer promised.
    fillers = [pod(f"f{i}", node="n1", cpu=4, start=i) for i in range(2)]
    pre = pod("pre", cpu=4, priority=100)
    ledger = Ledger()
    ledger.record(pre, "n1", (fillers[1],))
    moved = view([node("n1", cpu=8), node("n2", cpu=8)], [*fillers, pod("pre", cpu=4, priority=100, nominated="n2")])
    assert ledger.in_flight(moved) == ()


def test_a_bound_pod_with_a_stale_nomination_counts_once_as_bound():
    # Without ClearingNominatedNodeNameAfterBinding a bound pod may still show its nomination:
    # it is counted on its node, not again as held room.
    v = view([node("n1", cpu=8)], [pod("done", node="n1", nominated="n1", cpu=4, priority=100)])
    assert v.nominated == {}
    assert [p.name for p in v.nodes["n1"].pods] == ["done"]
    assert filter_nodes(view=v, pod=pod("next", cpu=4, priority=100), node_names=["n1"]).passed == ("n1",)


def test_a_lower_priority_pod_nominated_here_may_be_assumed_so_victims_free_as_much_as_the_proposals():
    # n0 (8 cpu) runs b0, b1 (1 cpu, priority 0) and b2 (4, priority 0); w (priority 1, 1 cpu) is
    # nominated to n0 in reprieve's view. The scheduler has it assumed there (its binding cycle)
    # or bound already, so for 'pre' (3 cpu) its minimal victim is b2 (4 cpu). In reprieve's view
    # w holds nothing against 'pre' and b1 alone would do: 6 - 1 + 3 = 8. In the scheduler's view
    # b1 alone leaves 7 - 1 + 3 = 9 > 8. reprieve cannot tell a binding cycle's nomination from a
    # preemption's, so its victims free at least the scheduler's 4 cpu.
    bound = [pod("b0", node="n0", cpu=1, start=0), pod("b1", node="n0", cpu=1, start=2), pod("b2", node="n0", cpu=4, start=1)]
    w = pod("w", cpu=1, priority=1, nominated="n0")
    v = view([node("n0", cpu=8)], [*bound, w])
    decision = decide(view=v, preemptor=pod("pre", cpu=3, priority=5), proposals={"n0": Proposal((bound[2].uid,), 0)})
    assert decision.answer == {"n0": Proposal((bound[2].uid,), 0)}
    # Another scheduler's pod is never in this scheduler's cache: b1 alone.
    theirs = view([node("n0", cpu=8)], [*bound, dataclasses.replace(w, scheduler_name="volcano")])
    decision = decide(view=theirs, preemptor=pod("pre", cpu=3, priority=5), proposals={"n0": Proposal((bound[2].uid,), 0)})
    assert decision.answer == {"n0": Proposal((bound[1].uid,), 0)}

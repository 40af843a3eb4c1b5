"""Pods of the scheduler's own, nominated with a lower priority than the preemptor, that it may
have assumed on the node (their binding cycle, NominatedNodeNameForExpectation): reprieve's
victims make room in the scheduler's view whichever of them it counts, and where the proposal
shows it can count none (or only some), reprieve may free less than the proposal does
(policy.preempt.held.assumed_floor, docs/upstream-semantics.md).

The property: the scheduler's view (the truth) has a random subset of those pods assumed
(bound) on their nodes; reprieve's view shows every one of them pending and nominated, and is
otherwise the same. Stock preemption (policy/stock.py) proposes on the truth; reprieve's answer
always names a node, and its victims there make room for the preemptor in the truth.
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from policy import resources, stock
from policy.causes import Cause
from policy.preempt import Proposal, decide
from policy.preempt.held import counted_at_most
from policy.qos import QoS
from tests.builders import node, pod, view

G, B = QoS.GUARANTEED, QoS.BURSTABLE
OTHER = "volcano"
NODES = ("n0", "n1")

half_cpus = st.integers(1, 8)  # in half cpus: 0.5 to 4
bound_pods = st.lists(st.tuples(st.integers(0, 4), half_cpus, st.sampled_from([G, B])), min_size=1, max_size=5)
# (priority below every preemptor's, half cpus, node, assumed in the scheduler's view)
own_nominees = st.lists(st.tuples(st.integers(0, 4), half_cpus, st.sampled_from(NODES), st.booleans()), max_size=3)
# (priority, half cpus, node): another scheduler's, or the scheduler's own of any priority; pending in both views
other_nominees = st.lists(st.tuples(st.integers(0, 9), half_cpus, st.sampled_from(NODES), st.booleans()), max_size=2)


def build(bound, own, others):
    """(the scheduler's view, reprieve's view) of two 8-cpu nodes."""
    pods, used = [], dict.fromkeys(NODES, 0)
    for k, (name, running) in enumerate(zip(NODES, bound)):
        for i, (priority, half, qos) in enumerate(running):
            if used[name] + half > 16:  # the scheduler never overcommits a node
                break
            used[name] += half
            pods.append(pod(f"{name}-b{i}", node=name, priority=priority, cpu=half / 2, qos=qos, start=10 * k + i))
    for i, (priority, half, where, theirs) in enumerate(others):
        pods.append(pod(f"h{i}", priority=priority, cpu=half / 2, nominated=where, scheduler=OTHER if theirs else "default-scheduler"))
    truth, older = list(pods), list(pods)
    for i, (priority, half, where, assumed) in enumerate(own):
        pending = pod(f"w{i}", priority=priority, cpu=half / 2, nominated=where, start=100 + i)
        older.append(pending)
        if assumed and used[where] + half <= 16:
            used[where] += half
            truth.append(dataclasses.replace(pending, node_name=where, nominated_node_name=None))
        else:
            truth.append(pending)
    nodes = [node(n, cpu=8) for n in NODES]
    return view(nodes, truth), view(nodes, older)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    bound=st.lists(bound_pods, min_size=2, max_size=2),
    own=own_nominees,
    others=other_nominees,
    priority=st.integers(5, 9),
    half=st.integers(2, 12),
)
# Issue 27's node twice over: neither 2-cpu nominee assumed, and one of them assumed.
@example(bound=[[(0, 1, B), (0, 4, G)], [(0, 16, G)]], own=[(1, 4, "n0", False), (1, 4, "n0", False)], others=[],
         priority=5, half=12)
@example(bound=[[(0, 1, B), (0, 4, G)], [(0, 16, G)]], own=[(1, 4, "n0", True), (1, 4, "n0", False)], others=[],
         priority=5, half=12)
# Two 1-cpu nominees assumed, a 3-cpu one not: g's 3 cpu leave 2.5, which holds both small ones
# (2 cpu), so the floor is 3 - 0.5; b (2 cpu) would leave the scheduler 0.5 short.
@example(bound=[[(0, 4, B), (0, 6, G)], [(9, 16, G)]], own=[(1, 2, "n0", True), (1, 2, "n0", True), (1, 6, "n0", False)],
         others=[], priority=5, half=7)
def test_the_answer_makes_room_in_the_schedulers_view_whichever_nominees_it_has_assumed(bound, own, others, priority, half):
    preemptor = pod("pre", priority=priority, cpu=half / 2)
    truth, older = build(bound, own, others)
    scheduler = stock.decide(view=truth, preemptor=preemptor, node_names=NODES)
    assume(not scheduler.refusal and not scheduler.fits and scheduler.proposals)
    decision = decide(view=older, preemptor=preemptor, proposals=scheduler.proposals)
    assert decision.answer, [(o.node, o.cause, o.reasons) for o in decision.outcomes]
    (chosen,) = decision.answer
    info = truth.nodes[chosen]
    named = set(decision.answer[chosen].uids)
    assert named <= {p.uid for p in info.pods}
    used = resources.add(
        *(p.requests for p in info.pods if p.uid not in named),
        *(p.requests for p in truth.reservations(chosen, pod=preemptor)),
    )
    assert not resources.shortfalls(request=preemptor.requests, allocatable=info.node.allocatable, used=used), (
        decision.answer, [(o.node, o.cause, o.reasons) for o in decision.outcomes]
    )


def eight(*nominees, proposed="g"):
    """Issue 27's node: 8 cpu running g (2 cpu, Guaranteed) and b (0.5 cpu, Burstable, started
    first), both priority 0; ``nominees`` nominated to it; the scheduler proposes ``proposed``
    for 'pre' (6 cpu, priority 5)."""
    b, g = pod("b", node="n0", cpu=0.5, qos=B, start=0), pod("g", node="n0", cpu=2, qos=G, start=1)
    on = {"b": b, "g": g}
    v = view([node("n0", cpu=8)], [b, g, *nominees])
    sent = Proposal(tuple(on[k].uid for k in proposed.split()), 0)
    return decide(view=v, preemptor=pod("pre", cpu=6, priority=5), proposals={"n0": sent}), b, g


def test_a_proposal_no_assumed_nominee_fits_beside_frees_no_more_than_reprieve_needs():
    # Issue 27: w0 and w1 (2 cpu each, priority 1) are nominated to n0. Stock, counting neither,
    # proposes g: 8 - 2.5 + 2 - 6 = 1.5 cpu left, too little for either nominee, so the
    # scheduler counts neither. b alone makes room in its view (8 - 2.5 + 0.5 = 6) and is the
    # cheaper victim (Burstable before Guaranteed at equal priority).
    w = [pod(f"w{i}", cpu=2, priority=1, nominated="n0") for i in range(2)]
    truth = view([node("n0", cpu=8)], [pod("b", node="n0", cpu=0.5, qos=B, start=0), pod("g", node="n0", cpu=2, qos=G, start=1), *w])
    assert stock.decide(view=truth, preemptor=pod("pre", cpu=6, priority=5), node_names=["n0"]).proposals["n0"].uids == (
        "uid-default-g",
    )
    decision, b, _ = eight(*w)
    assert decision.answer == {"n0": Proposal((b.uid,), 0)}
    assert decision.outcomes[0].cause is Cause.NONE


def test_a_proposal_consistent_with_an_assumed_nominee_is_the_floor():
    # w0 of 1 cpu would fit in the 1.5 cpu g's eviction leaves: the scheduler may count it
    # (assumed), and b alone would then leave it short (8 - 2.5 - 1 + 0.5 = 5 < 6). reprieve
    # frees at least the 2 cpu g frees, as before.
    decision, _, g = eight(pod("w0", cpu=1, priority=1, nominated="n0"))
    assert decision.answer == {"n0": Proposal((g.uid,), 0)}
    assert decision.outcomes[0].cause is Cause.SCHEDULER_SEES_LESS


def test_several_nominees_of_which_only_some_fit_bound_what_the_scheduler_counts():
    # w0 (1 cpu) and w1 (1 cpu): 1.5 cpu left holds one of them, not both, so the scheduler
    # counts at most 1 cpu of them: the floor is 2 - (1.5 - 1) = 1.5 cpu. b (0.5) is not
    # enough; g is the only victim set that frees 1.5.
    nominees = [pod(f"w{i}", cpu=1, priority=1, nominated="n0") for i in range(2)]
    decision, _, g = eight(*nominees)
    assert decision.answer == {"n0": Proposal((g.uid,), 0)}
    assert decision.outcomes[0].cause is Cause.SCHEDULER_SEES_LESS
    assert any("that floor (cpu=1500m" in r for r in decision.outcomes[0].reasons)
    # Same shape with 1.5-cpu and 2-cpu nominees: only the first fits, the floor is 2 - 0 = 2.
    decision, _, g = eight(pod("w0", cpu=1.5, priority=1, nominated="n0"), pod("w1", cpu=2, priority=1, nominated="n0"))
    assert decision.answer == {"n0": Proposal((g.uid,), 0)}


def test_another_schedulers_nominee_is_never_assumed_by_this_one():
    # A 1-cpu pod of another scheduler with priority 1: not in this scheduler's cache, holds
    # nothing against 'pre': b alone, as with no nominee at all.
    decision, b, _ = eight(pod("w0", cpu=1, priority=1, nominated="n0", scheduler=OTHER))
    assert decision.answer == {"n0": Proposal((b.uid,), 0)}


def test_nominees_of_equal_or_higher_priority_hold_room_and_are_no_assumed_nominees():
    # w0 (priority 5, 1 cpu) holds its room against 'pre' in both views: 8 - 2.5 - 1 + 2 = 6.5
    # >= 6 with g gone, 5 < 6 with b gone: g.
    decision, _, g = eight(pod("w0", cpu=1, priority=5, nominated="n0"))
    assert decision.answer == {"n0": Proposal((g.uid,), 0)}


def test_counted_at_most_tries_every_set_and_bounds_it_above_that():
    w = [pod(f"w{i}", cpu=c, priority=1) for i, c in enumerate((1, 2, 2.5))]
    # 3 cpu of room: {1, 2} fits (3), {2.5} alone (2.5), {1, 2.5} does not (3.5).
    assert counted_at_most({"cpu": 3000, "pods": 10}, w) == {"cpu": 3000, "pods": 2}
    # 2.4 cpu: {1}, {2} fit, nothing bigger: at most 2 cpu and 1 pod.
    assert counted_at_most({"cpu": 2400, "pods": 10}, w) == {"cpu": 2000, "pods": 1}
    # Ten 1-cpu nominees (above the sets tried): those that fit alone, capped at the room.
    many = [pod(f"m{i}", cpu=1, priority=1) for i in range(10)]
    assert counted_at_most({"cpu": 3500, "pods": 10}, many) == {"cpu": 3500, "pods": 10}

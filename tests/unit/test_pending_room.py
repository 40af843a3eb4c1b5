"""policy.criteria.pending_room: how many pending pods the room a victim set leaves would not fit."""

from __future__ import annotations

import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from policy import ranking, replay, resources, workload_gpu
from policy.criteria import Facts, pending_room
from policy.model import InFlight
from policy.preempt import Proposal, decide
from tests.builders import node, pod, room_for_pending, scheduler_proposals, view


def unfit_by_definition(v, name, victims, preemptor) -> int:
    """Straight from the definition: each pending pod (no node, none nominated, not the
    preemptor, not terminating) the node's filters admit that does not fit, alone, next to the
    node's pods but the victims, the pods nominated there that the preemptor may not take room
    from (priority at least its own), and the preemptor."""
    info = v.nodes[name]
    gone = {p.uid for p in victims}
    holding = [
        p for p in v.pods.values()
        if p.nominated_node_name == name and p.node_name is None and p.priority >= preemptor.priority and p.uid != preemptor.uid
    ]
    used = resources.add(
        *(p.requests for p in info.pods if p.uid not in gone), *(p.requests for p in holding), preemptor.requests
    )
    waiting = [
        p for p in v.pods.values()
        if p.node_name is None and p.nominated_node_name is None and not p.terminating and not p.gated and p.uid != preemptor.uid
        and not p.placement.refusal(info.node)
    ]
    return sum(1 for p in waiting if resources.shortfalls(request=p.requests, allocatable=info.node.allocatable, used=used))


@settings(max_examples=300, deadline=None)
@given(
    running=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8)), max_size=6),  # cpu, memory
    waiting=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8), st.integers(0, 4)), max_size=6),
    need=st.tuples(st.integers(0, 6), st.integers(0, 8)),
    taken=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_a_sets_value_is_the_pending_pods_that_would_not_fit(running, waiting, need, taken):
    # Pending pods of every kind: plain, nominated (their room is held: not counted), kept off
    # the node by a node selector, terminating, scheduling-gated (not queued).
    on = [pod(f"p{i}", node="n1", cpu=cpu, mem=mem) for i, (cpu, mem) in enumerate(running)]
    kinds = ({}, {"nominated": "n1"}, {"node_selector": {"zone": "b"}}, {"terminating": True}, {"gated": True})
    pending = [pod(f"w{i}", cpu=cpu, mem=mem, **kinds[k]) for i, (cpu, mem, k) in enumerate(waiting)]
    preemptor = pod("pre", cpu=need[0], mem=need[1])
    v = view([node("n1", cpu=12, mem=16, labels={"zone": "a"})], [*on, *pending, preemptor])
    victims = [p for p, t in zip(on, taken) if t]
    facts = Facts(v.budgets_covering, pending_room=room_for_pending(v, "n1", preemptor))
    value, _ = pending_room.unfit(victims, victims, facts)
    assert value == unfit_by_definition(v, "n1", victims, preemptor)


def test_the_view_groups_its_queue_once_and_each_request_takes_only_its_own_preemptor_out():
    # Three pending pods of one shape, two of them asking in turn: each request counts the
    # other two, never itself, though the view groups its queue once for both.
    pending = [pod(f"w{i}", cpu=4) for i in range(3)]
    v = view([node("n1", cpu=8)], [pod("a", node="n1", cpu=4), *pending])
    for preemptor in pending[:2]:
        facts = Facts(v.budgets_covering, pending_room=room_for_pending(v, "n1", preemptor))
        grouped = v._pending["grouped"]
        # a's 4 cpu stay and the preemptor's 4 are placed: no room for either other pod
        assert pending_room.unfit([], [], facts) == (2, 2)
        assert unfit_by_definition(v, "n1", [], preemptor) == 2
    assert pending_room.queue(v, pending[0]) is not None and v._pending["grouped"] is grouped  # made once
    # A preemptor the view does not show pending (a pod it has not seen yet) takes nothing out.
    stranger = pod("x", cpu=4)
    assert pending_room.unfit([], [], Facts(v.budgets_covering, pending_room=room_for_pending(v, "n1", stranger))) == (3, 3)
    # One the view shows under an earlier UID (deleted and made again under its name, the view
    # behind) is not counted as a pod waiting besides it.
    again = dataclasses.replace(pending[0], uid="w0-again")
    assert pending_room.unfit([], [], Facts(v.budgets_covering, pending_room=room_for_pending(v, "n1", again))) == (2, 2)


def test_an_answer_in_flight_holds_its_preemptors_room_whether_or_not_the_view_shows_it_nominated():
    # x, answered to n3 (victim c), still shows pending until the scheduler's nomination
    # reaches the view: it needs no room of n1's or n2's either way, so the answer is the same.
    # Counting it would send the preemptor to n2, whose 2 spare cpu fit it.
    a = pod("a", node="n1", priority=1, cpu=10, start=500)
    b = pod("b", node="n2", priority=1, cpu=10, start=100)
    c = pod("c", node="n3", priority=1, cpu=8)
    x = pod("x", priority=20, cpu=2)
    preemptor = pod("pre", priority=10, cpu=10)
    nodes = [node("n1"), node("n2", cpu=12), node("n3")]
    flight = [InFlight(x, "n3", (c,))]
    answers = []
    for shown in (x, dataclasses.replace(x, nominated_node_name="n3")):
        v = view(nodes, [a, b, c, shown])
        decision = decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor, nodes=["n1", "n2"]), in_flight=flight)
        answers.append(list(decision.answer))
    assert answers == [["n1"], ["n1"]]


def test_the_schedulers_victims_are_costed_on_the_node_as_reprieves_own_are():
    # An answer in flight takes c from n1 for e; the scheduler proposes d, as reprieve chooses.
    # Both sets are the same, so their costs are too: the room left for w counts e's hold and
    # c's going on both sides (on the node as the view shows it, 4 cpu would be left: w fits).
    c = pod("c", node="n1", priority=1, cpu=2)
    d = pod("d", node="n1", priority=1, cpu=6)
    e = pod("e", priority=20, cpu=4)
    w = pod("w", cpu=3)
    preemptor = pod("pre", priority=10, cpu=6)
    v = view([node("n1", cpu=12)], [c, d, e, w])
    decision = decide(
        view=v, preemptor=preemptor, proposals={"n1": Proposal((d.uid,), 0)}, in_flight=[InFlight(e, "n1", (c,))],
        exhaustive=True,
    )
    outcome = decision.outcomes[0]
    assert [p.name for p in outcome.victims] == ["d"]
    assert outcome.cost.value(ranking.PENDING_ROOM) == 1  # 12 - (d gone, c gone) - e 4 - pre 6 = 2 left: w does not fit
    assert outcome.proposed_cost is not None and outcome.proposed_cost.key == outcome.cost.key


def test_a_kept_victim_promised_to_an_answer_in_flight_frees_its_room_once():
    # On n1, c is promised to e's answer in flight: with c gone and e's 2 cpu held, the
    # preemptor fits with nothing evicted, but the view still shows c, so the scheduler's
    # victims ({c}) are kept. Left on n1: 13 - g 1 - e 2 - pre 8 = 2, too little for w (3 cpu);
    # n2 keeps 4 once f goes. Counting c's room twice made n1 look as good and win by name.
    c = pod("c", node="n1", priority=1, cpu=4)
    g = pod("g", node="n1", priority=1, cpu=1)
    f = pod("f", node="n2", priority=1, cpu=8)
    e = pod("e", priority=20, cpu=2)
    w = pod("w", cpu=3)
    preemptor = pod("pre", priority=10, cpu=8)
    v = view([node("n1", cpu=13), node("n2", cpu=12)], [c, g, f, e, w])
    for exhaustive in (False, True):
        decision = decide(
            view=v, preemptor=preemptor, proposals={"n1": Proposal((c.uid,), 0), "n2": Proposal((f.uid,), 0)},
            in_flight=[InFlight(e, "n1", (c,))], exhaustive=exhaustive,
        )
        costs = {o.node: o.cost.value(ranking.PENDING_ROOM) for o in decision.outcomes if o.cost is not None}
        assert costs == {"n1": 1, "n2": 0}
        assert list(decision.answer) == ["n2"]


def test_nothing_pending_decides_nothing():
    v = view([node("n1")], [pod("a", node="n1", cpu=4)])
    preemptor = pod("pre", cpu=8)
    assert room_for_pending(v, "n1", preemptor) is None
    assert pending_room.unfit([], [], Facts(v.budgets_covering, pending_room=None)) == (0, 0)


def test_explain_names_it_where_it_decided():
    # Two nodes alike but for n2's 2 spare cpu, which the pending pod w fits once the preemptor
    # is placed; n1's victim started later, so the start alone would pick n1.
    v = view([node("n1"), node("n2", cpu=12)], [pod("a", node="n1", priority=1, cpu=10, start=500),
                                                 pod("b", node="n2", priority=1, cpu=10, start=100), pod("w", cpu=2)])
    preemptor = pod("pre", priority=10, cpu=10)
    decision = decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor, nodes=["n1", "n2"]))
    assert list(decision.answer) == ["n2"]
    loser = next(o for o in decision.outcomes if o.node == "n1")
    assert "pending pods left without room" in loser.reasons[-1], loser.reasons
    assert "1 pending pod(s) without room" in loser.reasons[-1], loser.reasons
    # Without w the start decides, and n1 goes.
    alone = view([node("n1"), node("n2", cpu=12)], [p for p in v.pods.values() if p.name != "w"])
    assert list(decide(view=alone, preemptor=preemptor, proposals=scheduler_proposals(alone, preemptor, nodes=["n1", "n2"])).answer) == ["n1"]


def test_the_replay_shows_the_queue_pending_until_each_is_bound():
    made = workload_gpu.generate(random.Random(3), 24, pressure=1.3)
    seen = []

    def side(current, p, placement):
        waiting = {q.uid for q in current.pods.values() if q.node_name is None}
        seen.append((p.uid in waiting, len(waiting)))
        return replay.stock_side(current, p, placement)

    run = replay.replay(made.view, made.pending, side="stock", decider=side)
    # Every pod is pending in the view on its turn, and each pod bound leaves the queue.
    assert all(present for present, _ in seen)
    first = len(made.pending) + sum(1 for q in made.view.pods.values() if q.node_name is None)
    bound = 0
    for (_, waiting), step in zip(seen, run.steps):
        assert waiting == first - bound
        bound += step.node is not None
    assert any(step.node is None for step in run.steps) and bound  # some pods stay pending, some are bound

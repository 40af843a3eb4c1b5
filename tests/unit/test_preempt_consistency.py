"""Staying consistent with the scheduler in a burst: every answer remembered, never
less safe than the scheduler's own proposal, only victims the scheduler can resolve, and no
preemptor left waiting for room another one took."""

from __future__ import annotations

import dataclasses

import pytest

from extender.state.ledger import Ledger
from policy.causes import Cause, Refusal
from policy.model import POD_ANTI_AFFINITY, InFlight
from policy.preempt import SETTLE_SECONDS, Proposal, Verdict, decide
from policy.qos import QoS
from policy.tenancy import Rules
from tests.builders import node, pod, scheduler_proposals, view

G, B = QoS.GUARANTEED, QoS.BURSTABLE
NOW = 1_000_000.0


def uids(*pods):
    return tuple(p.uid for p in pods)


def burst_node(*, terminating=()):
    """Issue 9's shape: a 32-cpu node full of four 8-cpu priority-0 pods (f3 the youngest)."""
    fillers = [pod(f"f{i}", node="n1", cpu=8, start=i, terminating=f"f{i}" in terminating) for i in range(4)]
    return fillers


def after_a(proposed, *, a_priority=1000, a_scheduler="default-scheduler"):
    """A (``a_priority``, of ``a_scheduler``) was answered f3 on the full n1 and the view shows
    nothing yet; B (priority 1000, of the default scheduler) asks next with the scheduler
    proposing ``proposed`` (filler indexes)."""
    fillers = burst_node()
    a, b = pod("a", cpu=8, priority=a_priority, scheduler=a_scheduler), pod("b", cpu=8, priority=1000)
    v = view([node("n1", cpu=32)], [*fillers, a, b])
    in_flight = [InFlight(a, "n1", (fillers[3],))]
    sent = Proposal(uids(*(fillers[i] for i in proposed)), 0)
    return decide(view=v, preemptor=b, proposals={"n1": sent}, in_flight=in_flight), fillers


def test_the_next_preemptor_never_gets_a_victim_already_promised():
    # The scheduler, which already counts A's nomination, proposes B two victims (f3 again,
    # it is not deleted yet, and f2).
    decision, fillers = after_a((3, 2))
    assert decision.answer == {"n1": Proposal(uids(fillers[2]), 0)}


def test_a_proposal_blind_to_another_schedulers_answer_gets_another_victim():
    # Two schedulers share reprieve. B's scheduler cannot know A's nomination (A is another
    # scheduler's pod) and proposes B only f3, promised to A: reprieve knows A holds that room,
    # so B needs f2.
    decision, fillers = after_a((3,), a_scheduler="second-scheduler")
    assert decision.answer == {"n1": Proposal(uids(fillers[2]), 0)}


def test_a_proposal_that_shows_the_scheduler_moved_past_its_own_answer_sets_its_room_aside():
    # The same proposal from A's own scheduler, which holds A's room from the moment it took the
    # answer (its nominator, before the next cycle): proposing f3 alone, it shows it no longer
    # holds A's room on n1 (A went elsewhere or was deleted). reprieve's record of A is older:
    # A's room is set aside, and its victim with it: the answer was not taken (or the scheduler
    # moved past it), so f3 is not leaving for A, and B may have it.
    decision, fillers = after_a((3,))
    assert decision.answer == {"n1": Proposal(uids(fillers[3]), 0)}
    assert decision.outcomes[0].cause is Cause.SCHEDULER_NEWER


def test_an_answer_never_names_its_own_earlier_victim_the_scheduler_does_not_propose():
    # B was answered f3 on n1. The scheduler deleted f3 and dropped it from its snapshot, then
    # another pod took the room before B's turn: B asks again, proposing f2. reprieve's view,
    # behind, still shows f3 running; naming it (the youngest) would have the scheduler reject
    # the whole answer ("claims to preempt"), as the lagged bursts of tests/e2e showed.
    fillers = burst_node()
    b = pod("b", cpu=8, priority=1000)
    v = view([node("n1", cpu=32)], [*fillers, b])
    decision = decide(
        view=v, preemptor=b, proposals={"n1": Proposal(uids(fillers[2]), 0)}, in_flight=[InFlight(b, "n1", (fillers[3],))]
    )
    assert decision.answer == {"n1": Proposal(uids(fillers[2]), 0)}
    assert any("f3 (named in an earlier answer" in r for r in decision.outcomes[0].reasons)


def set_aside_with_its_victim_unproposed():
    """n1 (32 cpu, 4 free) runs f0 and f1 (8 cpu each), f2, g and f3 (4 each, f3 the youngest).
    A (8 cpu) was answered f3 and the view shows nothing yet. In the scheduler's view A has
    gone elsewhere, f3 is deleted, and a 4-cpu pod reprieve has not seen is bound here: it
    proposes B (8 cpu) f2, which makes room only without A's hold."""
    pods = [
        pod("f0", node="n1", cpu=8, start=0), pod("f1", node="n1", cpu=8, start=1),
        pod("f2", node="n1", cpu=4, start=2), pod("g", node="n1", cpu=4, start=2), pod("f3", node="n1", cpu=4, start=3),
    ]
    a, b = pod("a", cpu=8, priority=1000), pod("b", cpu=8, priority=1000)
    v = view([node("n1", cpu=32)], [*pods, a, b])
    named = {p.name: p for p in pods}
    return v, b, [InFlight(a, "n1", (named["f3"],))], named


def test_a_set_aside_answers_victim_is_named_again_only_where_proposed():
    v, b, in_flight, p = set_aside_with_its_victim_unproposed()
    decision = decide(view=v, preemptor=b, proposals={"n1": Proposal(uids(p["f2"]), 0)}, in_flight=in_flight)
    outcome = decision.outcomes[0]
    assert outcome.cause is Cause.SCHEDULER_NEWER  # A's room set aside, and f3 with it
    assert p["f3"].uid not in decision.answer["n1"].uids
    assert decision.answer["n1"].uids in (uids(p["f2"]), uids(p["g"]))
    # Proposed, it is in the scheduler's snapshot: named (the youngest) as before.
    proposed = decide(view=v, preemptor=b, proposals={"n1": Proposal(uids(p["f3"]), 0)}, in_flight=in_flight)
    assert proposed.answer == {"n1": Proposal(uids(p["f3"]), 0)}


def test_where_only_an_answered_victim_would_make_room_the_schedulers_own_are_kept():
    # n1 (8 cpu) runs v and w (4 each). L (priority 10) was answered v, which the scheduler may
    # have deleted; P (priority 1000, 8 cpu) gets the proposal w alone. In reprieve's view only
    # v and w together make room, and v may not be named: the scheduler's view is newer, and
    # its victims are kept (before, the node was dropped as protected and P left pending).
    v_, w = pod("v", node="n1", cpu=4, start=0), pod("w", node="n1", cpu=4, start=1)
    low, p = pod("low", cpu=4, priority=10), pod("p", cpu=8, priority=1000)
    decision = decide(
        view=view([node("n1", cpu=8)], [v_, w, low, p]), preemptor=p, proposals={"n1": Proposal(uids(w), 0)},
        in_flight=[InFlight(low, "n1", (v_,))],
    )
    assert decision.answer == {"n1": Proposal(uids(w), 0)}
    assert decision.outcomes[0].cause is Cause.SCHEDULER_NEWER


def test_a_victim_named_lately_is_named_again_only_where_proposed():
    # f3 was named in an answer no longer in flight (void, or replaced): ledger.named.
    fillers = burst_node()
    b = pod("b", cpu=8, priority=1000)
    v = view([node("n1", cpu=32)], [*fillers, b])
    ask = {"view": v, "preemptor": b, "named": frozenset(uids(fillers[3]))}
    assert decide(**ask, proposals={"n1": Proposal(uids(fillers[0]), 0)}).answer == {"n1": Proposal(uids(fillers[2]), 0)}
    assert decide(**ask, proposals={"n1": Proposal(uids(fillers[3]), 0)}).answer == {"n1": Proposal(uids(fillers[3]), 0)}


def test_without_the_record_the_victim_would_be_promised_twice():
    fillers = burst_node()
    a, b = pod("a", cpu=8, priority=1000), pod("b", cpu=8, priority=1000)
    v = view([node("n1", cpu=32)], [*fillers, a, b])
    ledger = Ledger()
    first = decide(view=v, preemptor=a, proposals={"n1": Proposal(uids(fillers[3]), 0)}, in_flight=ledger.in_flight(v))
    ledger.record(a, "n1", first.outcomes[0].victims)
    # The scheduler holds A's room and proposes f3 again (not deleted yet) and f2.
    proposed = scheduler_proposals(v, b, ledger.in_flight(v))
    assert set(proposed["n1"].uids) == set(uids(fillers[2], fillers[3]))
    second = decide(view=v, preemptor=b, proposals=proposed, in_flight=ledger.in_flight(v))
    forgetful = decide(view=v, preemptor=b, proposals={"n1": Proposal(uids(fillers[3]), 0)})
    assert set(first.answer["n1"].uids).isdisjoint(second.answer["n1"].uids)
    assert forgetful.answer["n1"].uids == first.answer["n1"].uids  # the defect the record closes


# ---------------------------------------------------------------- the scheduler sees less room


def scheduler_sees_less():
    # n1: 16 cpu; a priority-50 pod holds 4; four priority-1 pods: g (4, Guaranteed, oldest),
    # b (4, Burstable), c and d (2 each, Burstable). The preemptor (priority 10) needs 4.
    # In reprieve's view evicting 4 cpu is enough. The scheduler proposes g and c (6 cpu):
    # in reprieve's view c could stay, so the scheduler counts 2 cpu reprieve cannot see.
    pods = [
        pod("high", node="n1", cpu=4, priority=50),
        pod("g", node="n1", cpu=4, priority=1, qos=G, start=0),
        pod("b", node="n1", cpu=4, priority=1, start=1),
        pod("c", node="n1", cpu=2, priority=1, start=2),
        pod("d", node="n1", cpu=2, priority=1, start=3),
    ]
    return view([node("n1", cpu=16)], pods), {p.name: p for p in pods}


def test_when_the_scheduler_sees_less_room_the_victims_free_at_least_as_much():
    v, p = scheduler_sees_less()
    decision = decide(view=v, preemptor=pod("pre", cpu=4, priority=10), proposals={"n1": Proposal(uids(p["g"], p["c"]), 0)})
    # Cheapest set freeing >= 6 cpu and >= 2 pod slots: b and d (no Guaranteed victim), not
    # b alone (4 cpu, what reprieve's view needs) and not the scheduler's g and c.
    assert decision.answer == {"n1": Proposal(uids(p["b"], p["d"]), 0)}
    assert decision.outcomes[0].cause is Cause.SCHEDULER_SEES_LESS
    assert any("frees at least what the scheduler's victims free" in r for r in decision.outcomes[0].reasons)


def test_when_the_views_agree_reprieve_may_free_less_than_the_scheduler():
    # n1: 4 cpu; g (3 cpu, Guaranteed, younger) and b (1 cpu, Burstable), priority 1. The
    # preemptor needs 1. Upstream keeps the older b and evicts g; g is needed in reprieve's
    # view too (the views agree), so reprieve's QoS tie-break may evict b, freeing less.
    g = pod("g", node="n1", cpu=3, priority=1, qos=G, start=5)
    b = pod("b", node="n1", cpu=1, priority=1, start=0)
    v = view([node("n1", cpu=4)], [g, b])
    decision = decide(view=v, preemptor=pod("pre", cpu=1, priority=10), proposals={"n1": Proposal(uids(g), 0)})
    assert decision.answer == {"n1": Proposal(uids(b), 0)}
    assert decision.outcomes[0].cause is Cause.NONE


def test_a_victim_uid_reprieve_does_not_know_keeps_the_scheduler_proposal():
    v, p = scheduler_sees_less()
    sent = Proposal(("uid-just-bound-by-the-scheduler", p["c"].uid), 0)
    decision = decide(view=v, preemptor=pod("pre", cpu=4, priority=10), proposals={"n1": sent})
    assert decision.answer == {"n1": sent}


# ---------------------------------------------------------------- victims the scheduler can resolve


def two_equals(*, fresh_bound_at):
    # n1: 4 cpu; old (Guaranteed) and new (Burstable), 2 cpu each at priority 1. The
    # preemptor needs 2: reprieve prefers new (QoS), but new may not be in the scheduler's
    # snapshot yet if reprieve saw it bound moments ago.
    old = pod("old", node="n1", cpu=2, priority=1, qos=G, start=0)
    new = pod("new", node="n1", cpu=2, priority=1, start=1)
    new = type(new)(**{**{f: getattr(new, f) for f in new.__slots__}, "bound_at": fresh_bound_at})
    return view([node("n1", cpu=4)], [old, new]), old, new


@pytest.mark.parametrize(
    "bound_at, named",
    [
        pytest.param(NOW - SETTLE_SECONDS / 4, "old", id="bound-moments-ago-is-not-named"),
        pytest.param(NOW - SETTLE_SECONDS * 2, "new", id="settled-pod-is-named"),
        pytest.param(None, "new", id="pod-as-old-as-the-view-is-named"),
    ],
)
def test_a_pod_the_scheduler_may_not_know_is_named_only_if_it_proposed_it(bound_at, named):
    v, old, new = two_equals(fresh_bound_at=bound_at)
    decision = decide(view=v, preemptor=pod("pre", cpu=2, priority=10), proposals={"n1": Proposal(uids(old), 0)}, now=NOW)
    assert [x.name for x in decision.outcomes[0].victims] == [named]


def test_a_fresh_pod_the_scheduler_proposed_may_be_named():
    v, old, new = two_equals(fresh_bound_at=NOW)
    decision = decide(view=v, preemptor=pod("pre", cpu=2, priority=10), proposals={"n1": Proposal(uids(new), 0)}, now=NOW)
    assert decision.answer == {"n1": Proposal(uids(new), 0)}


def test_a_terminating_pod_is_named_only_if_the_scheduler_proposed_it():
    # n1: 4 cpu; t (terminating) and x, 2 cpu each. The preemptor needs 2 and fits once t is
    # gone: if the scheduler named t, reprieve names t (nothing live goes); if it named x
    # (t may already be gone from its snapshot), nobody needs to go: reprieve answers nothing,
    # and the pod waits for t.
    t = pod("t", node="n1", cpu=2, priority=1, terminating=True)
    x = pod("x", node="n1", cpu=2, priority=1, start=5)
    v = view([node("n1", cpu=4)], [t, x])
    named = decide(view=v, preemptor=pod("pre", cpu=2, priority=10), proposals={"n1": Proposal(uids(t), 0)})
    assert named.answer == {"n1": Proposal(uids(t), 0)}
    waits = decide(view=v, preemptor=pod("pre", cpu=2, priority=10), proposals={"n1": Proposal(uids(x), 0)})
    assert waits.answer == {} and waits.outcomes[0].cause is Cause.LEAVING
    assert "once the pods terminating here are gone" in waits.outcomes[0].reasons[0]


def test_a_pod_that_fits_once_terminating_pods_are_gone_waits_rather_than_evict_elsewhere():
    # As above on n1; n2 would need a real victim. No eviction is cheaper than waiting for t:
    # nothing is offered, and the scheduler retries the pod when t is deleted. (If the
    # scheduler proposed x because it sees something reprieve does not, the retry resolves it:
    # with t gone, reprieve frees at least what the scheduler's victims free.) Offering n2
    # instead could cost more than stock's own choice (tests/unit/test_preempt_vs_stock.py found one:
    # a Guaranteed victim elsewhere where stock evicted a BestEffort pod beside terminating ones).
    t = pod("t", node="n1", cpu=2, priority=1, terminating=True)
    x = pod("x", node="n1", cpu=2, priority=1, start=5)
    y = pod("y", node="n2", cpu=4, priority=1)
    v = view([node("n1", cpu=4), node("n2", cpu=4)], [t, x, y])
    decision = decide(view=v, preemptor=pod("pre", cpu=2, priority=10), proposals={"n1": Proposal(uids(x), 0), "n2": Proposal(uids(y), 0)})
    assert decision.answer == {}
    assert decision.reasons == ("evicts no one: the pod fits on n1 once the pods terminating there are gone: it waits for them",)
    by_node = {o.node: o for o in decision.outcomes}
    assert by_node["n1"].cause is Cause.LEAVING and by_node["n2"].verdict is Verdict.OUTRANKED


def test_a_lower_priority_answer_in_flight_neither_holds_room_nor_takes_victims():
    # A (priority 100) outranks nothing here: A's room is not held against B (upstream clears
    # A's nomination), and f3, going anyway, may be B's.
    decision, fillers = after_a((3,), a_priority=100)
    assert decision.answer == {"n1": Proposal(uids(fillers[3]), 0)}


# ---------------------------------------------------------------- no stranded preemptor


def test_a_preemptor_whose_room_another_took_preempts_again():
    # A and B (priority 1000, 8 cpu) were both nominated to n1, where only f3 (terminating)
    # frees room: enough for one. A was created first and keeps it; B preempts again (n2).
    fillers = burst_node(terminating=("f3",))
    a = pod("a", cpu=8, priority=1000, nominated="n1", created=1)
    b = pod("b", cpu=8, priority=1000, nominated="n1", created=2)
    n2 = [pod(f"g{i}", node="n2", cpu=8, start=i) for i in range(4)]
    v = view([node("n1", cpu=32), node("n2", cpu=32)], [*fillers, *n2, a, b])
    proposals = {"n2": Proposal(uids(n2[3]), 0)}
    waiting = decide(view=v, preemptor=a, proposals=proposals)
    assert waiting.refusal is Refusal.VICTIMS_TERMINATING
    again = decide(view=v, preemptor=b, proposals=proposals)
    assert again.refusal is Refusal.NONE and again.answer == {"n2": Proposal(uids(n2[3]), 0)}


def test_a_preemptor_whose_room_an_answer_in_flight_took_preempts_again():
    fillers = burst_node(terminating=("f3",))
    a = pod("a", cpu=8, priority=1000, created=1)
    b = pod("b", cpu=8, priority=1000, nominated="n1", created=2)
    n2 = [pod(f"g{i}", node="n2", cpu=8, start=i) for i in range(4)]
    v = view([node("n1", cpu=32), node("n2", cpu=32)], [*fillers, *n2, a, b])
    proposals = {"n2": Proposal(uids(n2[3]), 0)}
    assert decide(view=v, preemptor=b, proposals=proposals).refusal is Refusal.VICTIMS_TERMINATING
    in_flight = [InFlight(a, "n1", (fillers[3],))]  # A holds n1's room in reprieve's record
    assert decide(view=v, preemptor=b, proposals=proposals, in_flight=in_flight).answer


def test_a_preemptor_never_waits_for_its_own_victims_when_the_scheduler_asks():
    # A (nominated to n1) preempted f3, which reprieve's view still shows terminating with the
    # scheduler's DisruptionTarget mark. The scheduler checks exactly that before it asks the
    # extender: asked, it has seen f3 go. Waiting would strand A (no deletion left to wake it).
    fillers = [dataclasses.replace(f, preempted=True) if f.name == "f3" else f for f in burst_node(terminating=("f3",))]
    a = pod("a", cpu=8, priority=1000, nominated="n1", created=1)
    n2 = [pod(f"g{i}", node="n2", cpu=8, start=i) for i in range(4)]
    v = view([node("n1", cpu=32), node("n2", cpu=32)], [*fillers, *n2, a])
    decision = decide(view=v, preemptor=a, proposals={"n2": Proposal(uids(n2[3]), 0)})
    assert decision.refusal is Refusal.NONE and decision.answer == {"n2": Proposal(uids(n2[3]), 0)}


def lagged_wave(*, youngest=2, before="", c_priority=1000, a=None, c_first=False, c_cpu=8, c_shown=False, on_n1=None):
    """tests/e2e's burst with reprieve's watch 2 s late. A, B and C (priority 1000, 8 cpu) were
    answered f0, f1 and f2 on the full 32-cpu n1 (A nominated ``before`` when answered). In the
    scheduler's view f0 and f1 are gone and B and C nominated, while C's victim is still
    running: it retries A, nominated to n1, and its nominator gives A's freed room to C until
    that victim goes. reprieve's view shows none of it. The proposals are the scheduler's
    (policy.stock on its view; ``youngest``: the filler started last, the one its dry run
    evicts; ``c_first``: C was answered before A; ``c_cpu``: C's request; ``c_shown``: reprieve's
    view shows C nominated already; ``on_n1``: the fillers proposed on n1 instead). Returns the
    decision for A and the proposals."""
    starts = [0, 1, 2, 3]
    starts[youngest], starts[3] = starts[3], starts[youngest]
    fillers = [pod(f"f{i}", node="n1", cpu=8, start=starts[i]) for i in range(4)]
    a = a or pod("a", cpu=8, priority=1000, nominated="n1", created=1)
    b = pod("b", cpu=8, priority=1000, created=2)
    c = pod("c", cpu=c_cpu, priority=c_priority, created=3, nominated="n1" if c_shown else None)
    n2 = [pod(f"g{i}", node="n2", cpu=8, start=i) for i in range(4)]
    nodes = [node("n1", cpu=32), node("n2", cpu=32)]
    answered = dataclasses.replace(a, nominated_node_name=before or None)
    in_flight = [InFlight(answered, "n1", (fillers[0],)), InFlight(b, "n1", (fillers[1],)), InFlight(c, "n1", (fillers[2],))]
    proposals = scheduler_proposals(view(nodes, [*fillers[2:], *n2, a, b, c]), a, in_flight[1:])
    if on_n1 is not None:
        proposals["n1"] = Proposal(uids(*(fillers[i] for i in on_n1)), 0)
    if c_first:  # oldest first, as the ledger hands them over
        in_flight = [in_flight[2], in_flight[0], in_flight[1]]
    decision = decide(view=view(nodes, [*fillers, *n2, a, b, c]), preemptor=a, proposals=proposals, in_flight=in_flight)
    return decision, proposals


def test_a_retried_preemptor_waits_where_its_room_is_another_answers_victim_already_leaving():
    # The scheduler proposes f2, C's victim: once it goes A fits. Before, A preempted again,
    # naming f2 a second time (52 preemptions for 50 preemptors in a lagged burst in CI).
    decision, proposals = lagged_wave()
    assert proposals["n1"].uids == uids(pod("f2", node="n1"))
    assert decision.refusal is Refusal.VICTIMS_LEAVING and decision.answer == {}
    assert decision.reasons == (
        "already nominated to n1, where the scheduler's own victims (default/f2) are already leaving for answers "
        "in flight; waiting for them",
    )
    assert decision.waits  # its own answer stays in flight: f0 stays its own
    # The same where reprieve's view shows C nominated already (held once, not twice).
    assert lagged_wave(c_shown=True)[0].refusal is Refusal.VICTIMS_LEAVING


def carried_out_wave():
    """lagged_wave with reprieve's watch only 500 ms late (CI, 2026-12-07): by A's retry its view
    shows A's answer and B's carried out (A and B nominated to n1, f0 and f1 terminating), not
    C's. Returns that view, the scheduler's proposals, and A's, B's and C's answers in the
    order given (A's as recorded, before its nomination)."""
    _, proposals = lagged_wave()
    fillers = [pod(f"f{i}", node="n1", cpu=8, start=i, terminating=i < 2, preempted=i < 2) for i in range(4)]
    a = pod("a", cpu=8, priority=1000, nominated="n1", created=1)
    b = pod("b", cpu=8, priority=1000, nominated="n1", created=2)
    c = pod("c", cpu=8, priority=1000, created=3)
    n2 = [pod(f"g{i}", node="n2", cpu=8, start=i) for i in range(4)]
    v = view([node("n1", cpu=32), node("n2", cpu=32)], [*fillers, *n2, a, b, c])
    answered = (dataclasses.replace(a, nominated_node_name=None), dataclasses.replace(b, nominated_node_name=None), c)
    return v, proposals, [InFlight(p, "n1", (f,)) for p, f in zip(answered, fillers)]


def test_a_retried_preemptor_waits_the_same_where_reprieves_view_shows_its_own_answer_carried_out():
    # The ledger hands A's own answer over settled, in its place (extender.state.ledger), so C's
    # still shows as answered after it; before, A preempted again, naming f2.
    v, proposals, (own, _, c) = carried_out_wave()
    a = v.pods[own.preemptor.uid]
    decision = decide(view=v, preemptor=a, proposals=proposals, in_flight=[own, c])
    assert decision.refusal is Refusal.VICTIMS_LEAVING and decision.waits
    # Without its own answer (what the ledger handed over before) nothing shows the scheduler
    # took it, nor that C's came after: it preempts again.
    decision = decide(view=v, preemptor=a, proposals=proposals, in_flight=[c])
    assert decision.refusal is Refusal.NONE and decision.answer


@pytest.mark.parametrize(
    "case",
    [
        dict(youngest=3),  # the scheduler proposes f3, which no answer names: only a preemption frees it
        dict(before="n1"),  # A was nominated to n1 already: nothing shows the scheduler took its answer
        dict(c_priority=500, on_n1=(2,)),  # C's answer holds no room against A: nothing shows it was taken
        dict(on_n1=(2, 3)),  # f3 too, which no answer names
        dict(c_cpu=16, on_n1=(2,)),  # C needs more than its victim frees: with its answer taken, A would not fit
        # C's answer, older than A's, was counted when the scheduler chose A's victims, if taken
        dict(c_first=True),
        dict(a=pod("a", cpu=8, priority=1000, nominated="n1", created=1, unmodelled=("host ports",))),
    ],
    ids=[
        "a victim no answer names", "its own answer not shown taken", "a lower-priority answer", "another victim besides",
        "a larger preemptor", "an older answer", "unmodelled",
    ],
)
def test_a_retried_preemptor_preempts_where_nothing_shows_its_room_coming(case):
    decision, proposals = lagged_wave(**case)
    assert decision.refusal is Refusal.NONE and decision.answer
    (chosen,) = decision.answer
    assert decision.answer[chosen] == proposals[chosen]


def test_a_preemptor_waits_only_where_it_fits_whether_or_not_the_other_answers_were_taken():
    # n1 (24 cpu) runs f0 (A's victim, its answer taken), f3 and f2 (8 each). C (4 cpu) was
    # answered f2. A (12 cpu) fits once f2 goes if C's answer was taken (f3 + C + A = 24), not
    # if it never was (f3 + f2 + A = 28): then f2 is never deleted and waiting would strand A.
    f0, f3, f2 = (pod(n, node="n1", cpu=8, start=i) for i, n in enumerate(("f0", "f3", "f2")))
    a = pod("a", cpu=12, priority=1000, nominated="n1", created=1)
    c = pod("c", cpu=4, priority=1000, created=2)
    in_flight = [InFlight(dataclasses.replace(a, nominated_node_name=None), "n1", (f0,)), InFlight(c, "n1", (f2,))]
    v = view([node("n1", cpu=24)], [f0, f3, f2, a, c])
    decision = decide(view=v, preemptor=a, proposals={"n1": Proposal(uids(f2), 0)}, in_flight=in_flight)
    assert decision.refusal is Refusal.NONE and decision.answer
    # With C as large as its victim, A fits either way: it waits.
    c8 = dataclasses.replace(c, requests={**c.requests, "cpu": 8000})
    in_flight[1] = InFlight(c8, "n1", (f2,))
    v = view([node("n1", cpu=24)], [f0, f3, f2, dataclasses.replace(a, requests={**a.requests, "cpu": 8000}), c8])
    a8 = v.pods[a.uid]
    in_flight[0] = InFlight(dataclasses.replace(a8, nominated_node_name=None), "n1", (f0,))
    decision = decide(view=v, preemptor=a8, proposals={"n1": Proposal(uids(f2), 0)}, in_flight=in_flight)
    assert decision.refusal is Refusal.VICTIMS_LEAVING


def churned(proposed_on_n1=("a",), *, preempted=True, answered=False, extra=(), in_flight=(), preemptor=None):
    """bench/churn.py's case: P (2 cpu) was answered v on the 4-cpu n1 beside t, which a
    controller deleted (terminating, not preempted), and v is gone in the scheduler's view
    before t, while reprieve's view still shows v terminating, preempted (``preempted``: or v
    is a live pod, and reprieve's view is not behind, unless ``answered``: reprieve's own answer
    for P, in flight, named v; a UID: its answer for an earlier pod of P's name). The scheduler retries P and asks,
    proposing ``proposed_on_n1`` there (names of n1's pods, "?" one reprieve does not know, None
    n1 not a candidate) and g0, g1 on the full n2. ``extra``: more pods."""
    a, b = pod("a", node="n1", cpu=1, start=1), pod("b", node="n1", cpu=1, start=2)
    t = pod("t", node="n1", cpu=1, terminating=True)
    v = pod("v", node="n1", cpu=1, start=3, terminating=preempted, preempted=preempted)
    n2 = [pod(f"g{i}", node="n2", cpu=1, start=i) for i in range(4)]
    p = preemptor or pod("p", cpu=2, priority=1000, nominated="n1", created=2)
    on_n1 = {x.name: x.uid for x in (a, b, t, v)} | {"?": "not-a-known-uid"}
    proposals = {"n2": Proposal(uids(*n2[:2]), 0)}
    if proposed_on_n1 is not None:
        proposals["n1"] = Proposal(tuple(on_n1[n] for n in proposed_on_n1), 0)
    v_ = view([node("n1", cpu=4), node("n2", cpu=4)], [a, b, t, v, *n2, p, *extra])
    answerer = dataclasses.replace(p, uid=answered) if isinstance(answered, str) else p
    own = [InFlight(answerer, "n1", (v,))] if answered else []
    return decide(view=v_, preemptor=p, proposals=proposals, in_flight=[*in_flight, *own])


@pytest.mark.parametrize(
    "proposed, answered", [(("a",), False), (("t",), False), (("a",), True)],
    ids=["a live victim", "t itself", "v not yet seen going"],
)
def test_a_preemptor_waits_for_a_pod_leaving_that_frees_what_the_schedulers_victims_would(proposed, answered):
    # The scheduler proposes one 1-cpu pod on n1: in its view, whatever it counts there, t's
    # room is enough. Before, P preempted again (b, on n1), and t's room was wasted. (Seen in
    # the end-to-end test with reprieve's watch 0.5 s late: v, reprieve's own answer, still
    # running in its view.)
    decision = churned(proposed, preempted=not answered, answered=answered)
    assert decision.refusal is Refusal.VICTIMS_TERMINATING and decision.answer == {}
    assert "free at least what the scheduler's own victims there would" in decision.reasons[0]


def test_a_preemptor_preempts_again_where_the_schedulers_victims_free_more_than_the_pods_leaving():
    # The scheduler proposes a and b on n1: it counts something there reprieve does not see (a
    # pod bound into v's room), and t's room alone would not make room in its view.
    decision = churned(("a", "b"))
    assert decision.refusal is Refusal.NONE and decision.answer


@pytest.mark.parametrize(
    "case",
    [
        dict(proposed_on_n1=None),  # n1 is no candidate: nothing shows what the scheduler counts there
        dict(proposed_on_n1=("a", "?")),  # a victim reprieve does not know
        dict(preempted=False),  # nothing the scheduler preempted is left: reprieve's view is not behind
        dict(extra=(pod("h", cpu=2, priority=1000, nominated="n1", created=1),)),  # h holds n1's room first
        dict(in_flight=(InFlight(pod("q", cpu=1, priority=500), "n1", ()),)),  # an answer in flight there
        dict(preemptor=pod("p", cpu=2, priority=1000, nominated="n1", unmodelled=("host ports",))),
        dict(extra=(pod("aa", node="n1", cpu=0, priority=1000, unmodelled=(POD_ANTI_AFFINITY,)),)),  # required anti-affinity there
        dict(proposed_on_n1=()),  # proposed with no victims (another extender's filter rejected it)
        # reprieve's answer named v, but the scheduler proposes v again: it did not carry that answer out
        dict(proposed_on_n1=("v",), preempted=False, answered=True),
        dict(preempted=False, answered="old-p"),  # an answer for an earlier pod of P's name named v
    ],
    ids=[
        "not a candidate", "unknown victim", "nothing preempted", "a holder", "an answer in flight", "unmodelled",
        "anti-affinity on the node", "no victims proposed", "its answer not carried out", "an earlier pod of its name",
    ],
)
def test_a_preemptor_waits_on_the_schedulers_victims_only_where_they_show_its_view(case):
    assert churned(**case).refusal is Refusal.NONE


# ---------------------------------------------------------------- found in review (scheduler ahead)


def test_an_answer_the_scheduler_did_not_take_gives_back_its_victims_with_its_room():
    # reprieve answered PA on n1 with v1; the scheduler did not take it and proposes v1 and v2
    # for P2 (8 cpu): its room set aside, PA's victim is not leaving either, so both must go.
    v1, v2 = pod("v1", node="n1", priority=1, cpu=4), pod("v2", node="n1", priority=1, cpu=4)
    pa, p2 = pod("pa", priority=10, cpu=4), pod("p2", priority=10, cpu=8)
    v = view([node("n1", cpu=8)], [v1, v2, pa])
    decision = decide(view=v, preemptor=p2, proposals={"n1": Proposal(uids(v1, v2), 0)}, in_flight=[InFlight(pa, "n1", (v1,))])
    assert set(decision.answer["n1"].uids) == set(uids(v1, v2))
    assert decision.outcomes[0].cause is Cause.SCHEDULER_NEWER


def test_deferring_never_hands_the_scheduler_a_choice_reprieve_refused():
    # A victim unit spans n1 and n2 (cannot be answered); n3's victim is protected by the rules,
    # or promised to another answer in flight: deferring would let the scheduler take it.
    m1, m2 = pod("m1", ns="kube-system", node="n1", priority=1, cpu=4), pod("m2", ns="kube-system", node="n2", priority=1, cpu=4)
    lone = pod("lone", ns="kube-system", node="n3", priority=1, cpu=4)
    v = view([node(n, cpu=4) for n in ("n1", "n2", "n3")], [m1, m2, lone])
    proposals = {"n1": Proposal(uids(m1, m2), 0), "n2": Proposal(uids(m2, m1), 0), "n3": Proposal(uids(lone), 0)}
    pre = pod("pre", priority=10, cpu=4)
    with_rules = decide(view=v, preemptor=pre, proposals=proposals, rules=Rules())  # kube-system protected
    assert with_rules.answer == {} and not with_rules.defers
    other = pod("other", priority=20, cpu=4, scheduler="volcano")
    promised = decide(view=v, preemptor=pre, proposals=proposals, in_flight=[InFlight(other, "n3", (lone,))])
    assert not promised.defers


def test_a_preemptor_never_waits_for_room_the_schedulers_own_preemptions_free():
    # reprieve's view still shows t (preempted by the scheduler, terminating) and not y, bound
    # into its room since: waiting for t would strand the pod. The scheduler's victim v is the floor.
    hi, v_ = pod("hi", node="n1", priority=100, cpu=2), pod("v", node="n1", priority=1, cpu=4, start=5)
    y = pod("y", node="n1", priority=50, cpu=4)
    t = pod("t", node="n1", priority=1, cpu=4, terminating=True, preempted=True)
    older = view([node("n1", cpu=10)], [hi, v_, t])
    truth = view([node("n1", cpu=10)], [hi, v_, y])
    p = pod("p", priority=10, cpu=4)
    decision = decide(view=older, preemptor=p, proposals=scheduler_proposals(truth, p))
    assert decision.answer == {"n1": Proposal(uids(v_), 0)}
    # Nor on its nominated node: x (preempted for it) and t (deleted by a controller) are gone in
    # the scheduler's view, q took x's room; x's room does not make the pod fit there.
    base, q = pod("base", node="n1", priority=1, cpu=3.9), pod("q", node="n1", priority=50, cpu=4)
    x = pod("x", node="n1", priority=1, cpu=4, terminating=True, preempted=True)
    small = pod("t", node="n1", priority=1, cpu=0.1, terminating=True)
    w = pod("w", node="n2", priority=1, cpu=4)
    nominated = pod("p", priority=10, cpu=4, nominated="n1")
    truth = view([node("n1", cpu=8), node("n2", cpu=4)], [base, q, w, nominated])
    older = view([node("n1", cpu=8), node("n2", cpu=4)], [base, x, small, w, nominated])
    decision = decide(view=older, preemptor=nominated, proposals=scheduler_proposals(truth, nominated))
    assert decision.refusal is Refusal.NONE and decision.answer


def test_a_node_proposed_with_no_victims_never_makes_the_pod_wait():
    # kube-scheduler 1.38: n1 passed its own filters (so the pod fits there in its view) but
    # another extender's filter rejected it; reprieve's view still shows t terminating there.
    t = pod("t", node="n1", priority=1, cpu=4, terminating=True)
    busy, v_ = pod("busy", node="n1", priority=1, cpu=2), pod("v", node="n2", priority=1, cpu=4)
    v = view([node("n1", cpu=6), node("n2", cpu=4)], [t, busy, v_])
    decision = decide(view=v, preemptor=pod("p", priority=10, cpu=4), proposals={"n1": Proposal((), 0), "n2": Proposal(uids(v_), 0)})
    assert decision.answer == {"n2": Proposal(uids(v_), 0)}

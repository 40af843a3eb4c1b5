"""What decided each difference from stock preemption, in the same words everywhere: explain's
Differences lines and its JSON (extender.commands.explain_report), and the Events (extender.events.notes).

Each scenario has stock (policy.stock, the scheduler's proposals) and reprieve disagree for one
reason: the first criterion, in the decision's own order, on which the two costs differ, both
costed by reprieve's order and facts (budgets, gangs, homes). The expected values are worked out
by hand in each scenario's comment.
"""

from __future__ import annotations

import pytest

from extender.commands.explain_report import preemption_report
from extender.events import notes
from policy import preempt, ranking
from policy.qos import QoS
from tests.builders import cost_key, group, node, pdb, pod, scheduler_proposals, view

G, B = QoS.GUARANTEED, QoS.BURSTABLE
HOMES_FIRST = ranking.Order.named(["victims with no home"])


def qos():
    # Two equal-priority 1-cpu pods fill n1, the Guaranteed one younger; the preemptor needs
    # 1 cpu. Stock keeps the older (Burstable) pod; reprieve evicts it: 0 Guaranteed victims, not 1.
    return view([node("n1", cpu=2)], [
        pod("g", node="n1", priority=1, cpu=1, qos=G, start=20),
        pod("b", node="n1", priority=1, cpu=1, qos=B, start=10),
    ]), pod("pre", priority=10, cpu=1)


def broken_gangs():
    # A gang of four needing all four (the youngest) and four lone pods, all 2 cpu, priority 1,
    # on a full 16-cpu node; the preemptor needs 2. Stock evicts the youngest, a member: the
    # gang breaks. reprieve evicts a lone pod.
    members = [pod(f"gang-{i}", node="n1", priority=1, cpu=2, start=100 + i, gang=("train", 4)) for i in range(4)]
    lone = [pod(f"lone-{i}", node="n1", priority=1, cpu=2, start=i) for i in range(4)]
    return view([node("n1", cpu=16)], [*members, *lone]), pod("pre", priority=10, cpu=2)


def gang_work():
    # Issue 29's LeaderWorkerSet case: a group of 2 needing both (the older) and 2 lone pods, all
    # 1 cpu; the preemptor needs 3, so the group breaks either way. Stock keeps the oldest, the
    # leader, and strands it: 4 pods lost (3 victims and the leader). reprieve evicts the group
    # and one lone pod: 3.
    members = [pod(f"lws-{i}", node="n1", priority=1, cpu=1, start=i, gang=("lws", 2)) for i in range(2)]
    lone = [pod(f"lone-{i}", node="n1", priority=1, cpu=1, start=100 + i) for i in range(2)]
    return view([node("n1", cpu=4)], [*members, *lone]), pod("pre", priority=10, cpu=3)


def homes():
    # A ReplicaSet's pod and a bare pod (2 cpu, priority 1, Burstable, the bare one younger) on
    # n1; the preemptor needs 3 cpu and n1 has 1 free. n2 (2.5 cpu, empty) fits the ReplicaSet's
    # replacement but not the preemptor. Stock evicts the younger bare pod; reprieve the one
    # with a home.
    return view([node("n1", cpu=5), node("n2", cpu=2.5)], [
        pod("rs", node="n1", priority=1, cpu=2, start=10, kind="ReplicaSet"),
        pod("bare", node="n1", priority=1, cpu=2, start=20),
    ]), pod("pre", priority=10, cpu=3)


def qos_against_homes():
    # As homes(), the ReplicaSet's pod Guaranteed: by default QoS comes first and reprieve
    # evicts the bare pod, as stock does; with homes first it evicts the ReplicaSet's.
    return view([node("n1", cpu=5), node("n2", cpu=2.5)], [
        pod("rs", node="n1", priority=1, cpu=2, start=10, qos=G, kind="ReplicaSet"),
        pod("bare", node="n1", priority=1, cpu=2, start=20),
    ]), pod("pre", priority=10, cpu=3)


def deletion_cost():
    # Two alike pods; the younger, which stock evicts, is worth more to its owner
    # (pod-deletion-cost 5). reprieve evicts the older one (cost 0): the start comes after.
    return view([node("n1", cpu=2)], [
        pod("old", node="n1", priority=1, cpu=1, start=10),
        pod("dear", node="n1", priority=1, cpu=1, start=20, deletion_cost=5),
    ]), pod("pre", priority=10, cpu=1)


def victims_tie():
    # Two alike 2-cpu pods behind a budget allowing 1, and a priority-2 pod: the preemptor needs
    # 2 cpu, so one of the two goes. Each side takes a different one: equal on every criterion.
    labels = {"app": "a"}
    return view([node("n1", cpu=5)], [
        pod("p0", node="n1", priority=2, cpu=1, start=20),
        pod("p1", node="n1", priority=0, cpu=2, start=10, labels=labels),
        pod("p2", node="n1", priority=0, cpu=2, start=10, labels=labels),
    ], [pdb("a", allowed=1, match=labels)]), pod("pre", priority=10, cpu=2)


def node_by_gangs():
    # n1 holds a gang of four needing all four, younger than n2's four lone pods (all 4 cpu,
    # priority 1). Stock picks n1 (the later start); reprieve n2, where no gang breaks.
    members = [pod(f"gang-{i}", node="n1", priority=1, cpu=4, start=100 + i, gang=("train", 4)) for i in range(4)]
    lone = [pod(f"lone-{i}", node="n2", priority=1, cpu=4, start=i) for i in range(4)]
    return view([node("n1", cpu=16), node("n2", cpu=16)], [*members, *lone]), pod("pre", priority=10, cpu=4)


def node_tie():
    # n1: a terminating pod and v; n2: w beside a priority-100 pod. Stock counts the terminating
    # victim (two victims on n1 against one on n2) and picks n2; reprieve counts live victims
    # only, v and w alike: a tie, and it offers the first by name.
    return view([node("n1", cpu=2), node("n2", cpu=3)], [
        pod("t", node="n1", priority=1, cpu=1, start=5, terminating=True),
        pod("v", node="n1", priority=1, cpu=1, start=10),
        pod("w", node="n2", priority=1, cpu=1, start=10),
        pod("x", node="n2", priority=100, cpu=1, start=1),
    ]), pod("pre", priority=10, cpu=2)


# (id, scenario, order, the line's text after "n1: reprieve evicts ...", the JSON: criterion,
# reprieve's value, stock's)
ON_A_NODE = [
    pytest.param(qos, ranking.DEFAULT, "default/b instead of default/g, decided by Guaranteed victims: 0 against 1",
                 ("Guaranteed victims", 0, 1), id="qos"),
    pytest.param(broken_gangs, ranking.DEFAULT, "default/lone-3 instead of default/gang-3, decided by broken gangs: 0 against 1",
                 ("broken gangs", 0, 1), id="broken-gangs"),
    pytest.param(gang_work, ranking.DEFAULT,
                 "default/lws-0 instead of default/lone-0, decided by pods lost with broken gangs: 3 against 4",
                 ("pods lost with broken gangs", 3, 4), id="pods-lost-with-gangs"),
    pytest.param(homes, ranking.DEFAULT, "default/rs instead of default/bare, decided by victims with no home: 0 against 1",
                 ("victims with no home", 0, 1), id="homes"),
    pytest.param(qos_against_homes, HOMES_FIRST,
                 "default/rs instead of default/bare, decided by victims with no home: 0 against 1",
                 ("victims with no home", 0, 1), id="the-decisions-own-order"),
    pytest.param(deletion_cost, ranking.DEFAULT,
                 "default/old instead of default/dear, decided by highest pod-deletion-cost: 0 against 5",
                 ("highest pod-deletion-cost", 0, 5), id="deletion-cost"),
    pytest.param(victims_tie, ranking.DEFAULT,
                 "default/p2 instead of default/p1: equal on every criterion, a tie broken differently",
                 (None, None, None), id="a-tie"),
]


def report(scenario, order=ranking.DEFAULT) -> dict:
    v, preemptor = scenario()
    return preemption_report(view=v, preemptor=preemptor, node_names=sorted(v.nodes), order=order)


def row(result: dict, name: str) -> dict:
    return next(r for r in result["nodes"] if r["name"] == name)


@pytest.mark.parametrize(("scenario", "order", "line", "decided"), ON_A_NODE)
def test_a_victims_difference_names_the_criterion_that_decided_it(scenario, order, line, decided):
    result = report(scenario, order)
    assert result["differences"] == [f"n1: reprieve evicts {line}"]
    criterion, ours, theirs = decided
    assert row(result, "n1")["decided_by"] == {
        "criterion": criterion,
        "field": ranking.BY_NAME[criterion].field if criterion else None,
        "reprieve": ours,
        "stock": theirs,
    }
    assert result["preemption"]["decided_by"] is None  # the same node


def test_the_default_order_agrees_with_stock_where_a_policys_order_does_not():
    # qos_against_homes: the Guaranteed pod stays by default, as stock keeps it.
    assert report(qos_against_homes)["differences"] == []


@pytest.mark.parametrize(("scenario", "order"), [pytest.param(p.values[0], p.values[1], id=p.id) for p in ON_A_NODE])
def test_stocks_cost_has_every_criterion_costed_as_reprieves_own(scenario, order):
    # Every criterion of the order on both sides, stock's costed from the same facts: the
    # independent key of tests/builders (budgets, gangs and homes as the view has them).
    result = report(scenario, order)
    v, _ = scenario()
    fields = [c.field for c in order.criteria]
    n1 = row(result, "n1")
    for side in ("stock", "reprieve"):
        assert list(n1[side]["cost"]) == fields
    stock_victims = [v.pods[x["uid"]] for x in n1["stock"]["victims"]]
    key = dict(zip(order.criteria, cost_key(stock_victims, v, order)))
    counts = [c for c in order.criteria if c.plain is None and c.unit is ranking.Unit.NUMBER]
    assert {c.field: n1["stock"]["cost"][c.field] for c in counts} == {
        c.field: None if key[c] == float("-inf") else key[c] for c in counts
    }
    # Upstream's own key, which stock ranked by, is kept beside it.
    assert list(n1["stock"]["upstream_cost"]) == ["pdb_violations", "highest_priority", "priority_sum", "victims", "top_victims_start"]
    assert n1["stock"]["summary"] and n1["reprieve"]["summary"]


def test_a_broken_gang_shows_on_stocks_side_too():
    # Before, stock's cost had upstream's five criteria only: no broken gangs.
    n1 = row(report(broken_gangs), "n1")
    assert (n1["stock"]["cost"]["broken_gangs"], n1["reprieve"]["cost"]["broken_gangs"]) == (1, 0)
    assert "1 broken gang(s)" in n1["stock"]["summary"] and "broken gang" not in n1["reprieve"]["summary"]
    lost = row(report(gang_work), "n1")
    assert (lost["stock"]["cost"]["pods_lost_with_gangs"], lost["reprieve"]["cost"]["pods_lost_with_gangs"]) == (4, 3)


def test_a_node_choice_names_the_criterion_between_reprieves_victims_on_each_node():
    result = report(node_by_gangs)
    assert result["preemption"]["stock"]["chosen"] == "n1" and result["preemption"]["reprieve"]["chosen"] == "n2"
    assert result["differences"][0] == (
        "reprieve preempts on n2, stock on n1; reprieve ranks its victims on n2 first, "
        "decided by broken gangs: 0 on n2 against 1 on n1"
    )
    assert result["preemption"]["decided_by"] == {
        "criterion": "broken gangs", "field": "broken_gangs", "reprieve": 0, "stock": 1,
    }


def test_a_node_choice_on_equal_costs_says_it_is_a_tie():
    result = report(node_tie)
    assert result["differences"] == [
        "reprieve preempts on n1, stock on n2; reprieve's victims on n1 and on n2 are equal on every "
        "criterion: a tie, broken differently (reprieve offers the first by name)"
    ]
    assert result["preemption"]["decided_by"] == {"criterion": None, "field": None, "reprieve": None, "stock": None}


# ------------------------------------------------------------------ the Events say the same


@pytest.mark.parametrize(("scenario", "order", "line", "decided"), ON_A_NODE)
def test_the_preemptor_event_gives_the_same_words(scenario, order, line, decided):
    v, preemptor = scenario()
    proposals = scheduler_proposals(v, preemptor)
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=proposals, order=order)
    note = notes.preemptor_note(notes.capture(v, preemptor, proposals, decision))
    words = line.split(", ", 1)[1] if ", decided by " in line else "equal on every criterion: a tie, broken differently"
    assert f"stock would have taken ({words})." in note, note


def test_the_preemptor_event_on_another_node_compares_reprieves_victims_on_both():
    v, preemptor = node_by_gangs()
    proposals = scheduler_proposals(v, preemptor)
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=proposals)
    note = notes.preemptor_note(notes.capture(v, preemptor, proposals, decision))
    assert "stock would have taken on n1 (decided by broken gangs: 0 on n2 against 1 on n1)." in note, note


def test_the_shadow_event_gives_the_same_words():
    v, preemptor = gang_work()
    proposals = scheduler_proposals(v, preemptor)
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=proposals)
    note = notes.shadow_note(notes.capture(v, preemptor, proposals, decision), "n1")
    assert note.endswith("the scheduler evicts (decided by pods lost with broken gangs: 3 against 4)."), note


def test_the_verb_costs_the_proposal_only_on_the_node_it_offers_and_only_where_it_differs():
    # One cost more per request at most (the verb's budget): none where the victims agree.
    v, preemptor = node_by_gangs()
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor))
    assert [(o.node, o.proposed_cost is not None) for o in decision.outcomes] == [("n1", False), ("n2", False)]
    v, preemptor = qos()
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor))
    assert [(o.node, o.proposed_cost is not None) for o in decision.outcomes] == [("n1", True)]


def test_costs_in_different_orders_are_not_compared():
    v, _ = qos()
    victims = [v.pods["uid-default-g"]]
    from policy.criteria import Facts

    a = ranking.DEFAULT.cost(victims, Facts(v.budgets_covering))
    b = HOMES_FIRST.cost(victims, Facts(v.budgets_covering))
    with pytest.raises(ValueError, match="different orders"):
        a.decided_by(b)
    assert a.decided_by(a) == "equal on every criterion"


def test_broken_gangs_are_counted_alike_with_group_objects():
    # The gang's minimum from its group object (PodGroup): the same words as a marked minimum.
    members = [pod(f"gang-{i}", node="n1", priority=1, cpu=2, start=100 + i, gang=("train", None)) for i in range(4)]
    lone = [pod(f"lone-{i}", node="n1", priority=1, cpu=2, start=i) for i in range(4)]
    v = view([node("n1", cpu=16)], [*members, *lone], groups=[group("train", 4)])
    result = preemption_report(view=v, preemptor=pod("pre", priority=10, cpu=2), node_names=["n1"])
    assert result["differences"] == [
        "n1: reprieve evicts default/lone-3 instead of default/gang-3, decided by broken gangs: 0 against 1"
    ]

"""policy.guards: strict budgets preemption never violates, and pods it leaves alone until they
have run their minimum runtime (the policy file's strictBudgets and minimumRuntime)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from policy import exact, ranking
from policy.causes import Cause
from policy.criteria import Facts
from policy.guards import Guards, MinimumRuntime, StrictBudgets, span
from policy.importance import most_important_first
from policy.model import InFlight
from policy.pdb import count_violations
from policy.preempt import Proposal, Verdict, decide
from policy.qos import QoS
from tests.builders import node, pdb, pod, reference_key, scheduler_proposals, view

KAFKA = Guards(strict=StrictBudgets(namespaces=frozenset({"kafka"})))
EVERY = Guards(strict=StrictBudgets())
NOW = 10_000.0


def young(duration=600.0, *, classes=(), namespaces=()) -> Guards:
    return Guards(runtime=(MinimumRuntime(duration, frozenset(namespaces), frozenset(classes)),))


def outcome(decision, name):
    return next(o for o in decision.outcomes if o.node == name)


def decided(v, preemptor, guards, nodes=None, **kw):
    proposals = scheduler_proposals(v, preemptor, nodes=nodes)
    return proposals, decide(view=v, preemptor=preemptor, proposals=proposals, guards=guards, now=NOW, **kw)


# Which budgets are strict.


def test_a_budget_is_strict_by_namespace_or_by_a_pod_of_a_listed_class_it_covers():
    rule = StrictBudgets(namespaces=frozenset({"kafka"}), priority_classes=frozenset({"critical-data"}))
    brokers = pdb("brokers", allowed=0, match={"app": "b"}, ns="kafka")
    data = pdb("data", allowed=0, match={"app": "d"}, ns="store")
    other = pdb("other", allowed=0, match={"app": "o"}, ns="store")
    d1, d2 = pod("d1", ns="store", labels={"app": "d"}), pod("d2", ns="store", labels={"app": "d"}, pc="critical-data")
    o1 = pod("o1", ns="store", labels={"app": "o"}, pc="batch")
    assert rule.strict(brokers, ())  # its namespace, whatever it covers
    assert rule.strict(data, (d1, d2))  # one pod it covers names critical-data
    assert not rule.strict(data, (d1,)) and not rule.strict(other, (o1,))
    # A rule that names neither list makes every budget strict; an empty list names nothing.
    assert StrictBudgets().strict(other, (o1,)) and StrictBudgets().every
    assert not StrictBudgets(namespaces=frozenset({"kafka"})).strict(other, (o1,))


def test_strict_of_narrows_a_pods_budgets_to_the_strict_ones():
    strict = pdb("brokers", allowed=0, match={"app": "b"}, ns="kafka")
    lax = pdb("all", allowed=5, match={"tier": "x"}, ns="kafka")
    b = pod("b", ns="kafka", labels={"app": "b", "tier": "x"})
    v = view([node("n1")], [b], [strict, lax])
    rule = Guards(strict=StrictBudgets(priority_classes=frozenset({"nothing"})))
    assert rule.strict_of(v.budgets_covering, v)(b) == ()
    assert KAFKA.strict_of(v.budgets_covering, v)(b) == v.budgets_covering(b)
    assert Guards(runtime=young().runtime).strict_of(v.budgets_covering, v) is None  # no strictBudgets: no rule


# Strict budgets in the decision.


def test_a_node_whose_only_victims_violate_a_strict_budget_is_dropped_and_another_chosen():
    # n1: the Kafka broker (priority 1, behind a budget allowing none), n2: a priority-5 pod.
    # A ranking that puts priority first takes the broker (1 violation); the rule drops n1
    # whatever the ranking.
    v = view([node("n1"), node("n2")],
             [pod("b", ns="kafka", node="n1", priority=1, cpu=10), pod("w", node="n2", priority=5, cpu=10)],
             [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    preemptor = pod("pre", priority=10, cpu=10)
    order = ranking.Order.named(["highest victim priority"])
    _, plain = decided(v, preemptor, None, order=order)
    assert list(plain.answer) == ["n1"]  # priority first: the broker goes
    _, guarded = decided(v, preemptor, KAFKA, order=order)
    assert list(guarded.answer) == ["n2"]
    n1 = outcome(guarded, "n1")
    assert (n1.verdict, n1.cause) == (Verdict.DROPPED, Cause.STRICT_BUDGET)
    # Found before any search: the pods the node may lose within the budget free nothing.
    assert n1.reasons[0] == (
        "every victim set that makes room here violates strict PodDisruptionBudget kafka/b: the pods it may take "
        "within their allowance free too little (short of cpu=10)"
    )
    assert guarded.order.names[0] == "strict budget violations"  # first, where the rule is on


def test_where_every_node_would_violate_one_the_answer_is_empty_not_an_error():
    v = view([node("n1"), node("n2")],
             [pod("b1", ns="kafka", node="n1", priority=1, cpu=10, labels={"app": "b"}),
              pod("b2", ns="kafka", node="n2", priority=1, cpu=10, labels={"app": "b"})],
             [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    _, decision = decided(v, pod("pre", priority=10, cpu=10), KAFKA)
    assert decision.answer == {} and not decision.defers and not decision.refusal.value
    assert {o.cause for o in decision.outcomes} == {Cause.STRICT_BUDGET}
    assert decision.reasons[0].startswith(
        "no candidate node can make room for the pod without violating a strict PodDisruptionBudget: "
        "n1: every victim set that makes room here violates strict PodDisruptionBudget kafka/b"
    ), decision.reasons


def test_the_search_violates_a_budget_that_is_not_strict_rather_than_one_that_is():
    # One node, 1 cpu short: the Kafka broker and the web pod each free it, each behind a
    # budget allowing none. Alike but the start: the broker started later, so without the rule
    # it goes (the younger work); with the rule the web pod goes and its budget is violated.
    b = pod("b", ns="kafka", node="n1", priority=1, cpu=5, start=200)
    w = pod("w", node="n1", priority=1, cpu=5, start=100)
    v = view([node("n1")], [b, w],
             [pdb("b", allowed=0, match={"app": "b"}, ns="kafka"), pdb("w", allowed=0, match={"app": "w"})])
    preemptor = pod("pre", priority=10, cpu=5)
    _, plain = decided(v, preemptor, None)
    assert [p.name for p in outcome(plain, "n1").victims] == ["b"]
    _, guarded = decided(v, preemptor, KAFKA)
    chosen = outcome(guarded, "n1")
    assert [p.name for p in chosen.victims] == ["w"] and chosen.violations.count == 1


def test_overlapping_strict_budgets_are_found_violated_by_the_search():
    # a and b are each under both budgets, which allow 1 each; the pod needs both. The quick
    # check counts each pod once per budget (a and b seem spared), so the search decides: its
    # cheapest set takes 1 victim past each budget's allowance.
    pods = [pod(n, ns="kafka", node="n1", priority=1, cpu=5, labels={"x": "1", "y": "1", "id": n}) for n in ("a", "b")]
    budgets = [pdb("x", allowed=1, match={"x": "1"}, ns="kafka"), pdb("y", allowed=1, match={"y": "1"}, ns="kafka")]
    v = view([node("n1")], pods, budgets)
    _, decision = decided(v, pod("pre", priority=10, cpu=10), KAFKA)
    n1 = outcome(decision, "n1")
    assert decision.answer == {} and n1.cause is Cause.STRICT_BUDGET
    assert n1.reasons[0] == (
        "every victim set that makes room here violates strict PodDisruptionBudget kafka/x, kafka/y: the cheapest "
        "(kafka/a, kafka/b) takes 1 victim(s) past its allowance"
    )


def test_a_strict_budget_with_allowance_left_may_lose_that_many():
    # Two brokers behind a budget allowing 1: the pod needs one broker's room. Allowed: no
    # violation, so the node is offered.
    v = view([node("n1")],
             [pod(f"b{i}", ns="kafka", node="n1", priority=1, cpu=5, labels={"app": "b"}) for i in range(2)],
             [pdb("b", allowed=1, match={"app": "b"}, ns="kafka")])
    _, decision = decided(v, pod("pre", priority=10, cpu=5), KAFKA)
    assert list(decision.answer) == ["n1"] and outcome(decision, "n1").violations.count == 0
    # Needing both: the second is a violation, and the node is dropped.
    _, both = decided(v, pod("pre", priority=10, cpu=10), KAFKA)
    assert both.answer == {} and outcome(both, "n1").cause is Cause.STRICT_BUDGET


def test_a_strict_budget_spent_by_an_answer_in_flight_allows_no_more():
    # The budget allows 1; an earlier answer already takes b0 (the view still shows it running).
    b0, b1 = (pod(f"b{i}", ns="kafka", node=f"n{i}", priority=1, cpu=10, labels={"app": "b"}) for i in range(2))
    v = view([node("n0"), node("n1")], [b0, b1], [pdb("b", allowed=1, match={"app": "b"}, ns="kafka")])
    earlier = pod("first", priority=10, cpu=10)
    flight = InFlight(earlier, "n0", (b0,))
    preemptor = pod("pre", priority=10, cpu=10)
    proposals = {"n1": Proposal((b1.uid,), 0)}
    alone = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW)
    assert list(alone.answer) == ["n1"]
    after = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW, in_flight=(flight,))
    assert after.answer == {} and outcome(after, "n1").cause is Cause.STRICT_BUDGET


def test_the_schedulers_victims_kept_as_proposed_must_keep_a_strict_budget():
    # A preemptor with host ports: reprieve keeps the scheduler's victims, and drops the node
    # where they violate a strict budget.
    b = pod("b", ns="kafka", node="n1", priority=1, cpu=10)
    v = view([node("n1")], [b], [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    preemptor = pod("pre", priority=10, cpu=10, unmodelled=("host ports",))
    proposals = {"n1": Proposal((b.uid,), 1)}
    plain = decide(view=v, preemptor=preemptor, proposals=proposals, now=NOW)
    assert outcome(plain, "n1").kept_scheduler_victims and list(plain.answer) == ["n1"]
    guarded = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW)
    n1 = outcome(guarded, "n1")
    assert guarded.answer == {} and (n1.verdict, n1.cause) == (Verdict.DROPPED, Cause.STRICT_BUDGET)
    assert "but 1 victim(s) violate strict PodDisruptionBudget kafka/b" in n1.reasons[0]


@pytest.mark.parametrize("guards", [KAFKA, young()], ids=["strict-budgets", "minimum-runtime"])
def test_a_node_or_victim_reprieve_does_not_know_is_not_offered_under_the_guards(guards):
    # Without guards the scheduler's own victims pass through (its view is fresher); with them
    # they cannot be checked: not offered (the scheduler retries the pod).
    v = view([node("n1")], [pod("a", node="n1", priority=1, cpu=10, start=0)])
    preemptor = pod("pre", priority=10, cpu=10)
    for proposals in ({"n9": Proposal(("uid-x",), 0)}, {"n1": Proposal(("uid-unknown",), 0)}):
        plain = decide(view=v, preemptor=preemptor, proposals=proposals, now=NOW)
        assert plain.answer == proposals
        guarded = decide(view=v, preemptor=preemptor, proposals=proposals, guards=guards, now=NOW)
        assert guarded.answer == {}
        assert guarded.outcomes[0].reasons[-1] == "with a policy, not offered unjudged"


def test_victims_on_other_nodes_defer_to_the_scheduler_only_if_they_keep_the_guards():
    # The scheduler's victims for n1 include a pod on n2 (one victim unit spanning nodes), which
    # no answer can name: without rules reprieve defers to the scheduler's own choice; under
    # the guards only if those victims keep them, else the answer is empty.
    a = pod("a", node="n1", priority=1, cpu=10)
    b = pod("b", ns="kafka", node="n2", priority=1, cpu=10)
    v = view([node("n1"), node("n2")], [a, b], [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    preemptor = pod("pre", priority=10, cpu=10)
    proposals = {"n1": Proposal((a.uid, b.uid), 0)}
    assert decide(view=v, preemptor=preemptor, proposals=proposals, now=NOW).defers
    assert decide(view=v, preemptor=preemptor, proposals=proposals, now=NOW, guards=young(namespaces=["x"])).defers
    held = decide(view=v, preemptor=preemptor, proposals=proposals, now=NOW, guards=KAFKA)
    assert not held.defers and held.answer == {}


def test_a_large_node_keeps_the_strict_budgets_pods_first():
    # 20 candidates (more than the exact search takes): 10 brokers and 10 other pods, each
    # group behind a budget allowing none, all alike but the brokers started later (without the
    # rule the younger work goes: brokers). The pod needs 3 pods' room: three others go.
    pods = [pod(f"b{i:02}", ns="kafka", node="n1", priority=1, cpu=1, start=500, labels={"app": "b"}) for i in range(10)]
    pods += [pod(f"o{i:02}", node="n1", priority=1, cpu=1, start=100, labels={"app": "o"}) for i in range(10)]
    assert len(pods) > exact.EXACT_LIMIT
    budgets = [pdb("b", allowed=0, match={"app": "b"}, ns="kafka"), pdb("o", allowed=0, match={"app": "o"})]
    v = view([node("n1", cpu=20)], pods, budgets)
    preemptor = pod("pre", priority=10, cpu=3)
    _, plain = decided(v, preemptor, None)
    assert all(p.namespace == "kafka" for p in outcome(plain, "n1").victims)
    _, guarded = decided(v, preemptor, KAFKA)
    victims = outcome(guarded, "n1").victims
    assert len(victims) == 3 and all(p.namespace == "default" for p in victims), [p.key for p in victims]


def large_node(strict, fillers):
    """``strict`` (name, priority, cpu, mem) in namespace kafka behind a budget allowing one
    disruption, pod p (3 cpu) behind a budget allowing none, and 1-cpu fillers: over
    EXACT_LIMIT candidates with 4 fillers or more."""
    pods = [pod(n, ns="kafka", node="n1", priority=prio, cpu=cpu, mem=mem, start=100, labels={"app": "b"})
            for n, prio, cpu, mem in strict]
    pods.append(pod("p", node="n1", priority=1, cpu=3, start=100, labels={"app": "p"}))
    pods += [pod(f"f{i:02}", node="n1", priority=0, cpu=1, start=100) for i in range(fillers)]
    budgets = [pdb("b", allowed=1, match={"app": "b"}, ns="kafka"), pdb("p", allowed=0, match={"app": "p"})]
    cpu = sum(p.requests["cpu"] for p in pods) // 1000
    return view([node("n1", cpu=cpu)], pods, budgets), cpu


@pytest.mark.parametrize("fillers", [10, 14])
def test_on_a_large_node_the_strict_allowance_goes_on_the_largest_strict_pod(fillers):
    # s1 (4 cpu, the most important) and s2, s3 (3 each) behind a budget allowing 1, and p
    # behind one allowing none; the kept pods may use 6 cpu. Keeping s1 first leaves room for
    # neither s2 nor s3 (2 strict violations); keeping the smallest first keeps s2 and s3 and
    # loses s1 (within its allowance), as the exact search does with few candidates.
    v, cpu = large_node([("s1", 2, 4, 0), ("s2", 0, 3, 0), ("s3", 0, 3, 0)], fillers)
    assert (len(v.nodes["n1"].pods) > exact.EXACT_LIMIT) is (fillers == 14)
    _, decision = decided(v, pod("pre", priority=10, cpu=cpu - 6), KAFKA)
    victims = {p.name for p in outcome(decision, "n1").victims}
    assert victims == {"s1", "p", *(f"f{i:02}" for i in range(fillers))}, outcome(decision, "n1").reasons
    assert decision.answer["n1"].num_pdb_violations == 1


def test_a_large_node_is_swapped_before_it_is_dropped_for_a_strict_budget():
    # Four strict pods behind a budget allowing 1, a (1 cpu) > b (3) > c (1) > d (1) in
    # importance, alike by their largest share (6 GiB of memory each); the kept may use 4 cpu.
    # Only {a, c, d} fits of three: importance first keeps a and b (2 violations); the
    # violators first (b, c, d) keep b and one more. The node is not offered, so it had no swap
    # pass; one swap (keep c, evict b, give d back) keeps the budget, tried before dropping it.
    pods = [pod(n, ns="kafka", node="n1", priority=prio, cpu=cpu, mem=6, start=100, labels={"app": "b"})
            for n, prio, cpu in [("a", 3, 1), ("b", 2, 3), ("c", 1, 1), ("d", 1, 1)]]
    pods += [pod(f"f{i:02}", node="n1", priority=0, cpu=1, start=100) for i in range(14)]
    assert len(pods) > exact.EXACT_LIMIT
    v = view([node("n1", cpu=20)], pods, [pdb("b", allowed=1, match={"app": "b"}, ns="kafka")])
    _, decision = decided(v, pod("pre", priority=10, cpu=16, mem=1), KAFKA)
    chosen = outcome(decision, "n1")
    assert chosen.verdict is Verdict.CHOSEN, chosen.reasons
    names = {p.name for p in chosen.victims}
    assert {n for n in names if not n.startswith("f")} == {"b"} and len(names) == 14  # a filler fits back
    assert "swapping victims beat every greedy order" in chosen.reasons[0]


# Minimum runtime.


def test_a_pod_inside_its_minimum_runtime_is_never_a_victim():
    # Two alike batch-low pods, 1 cpu short: the younger (started 100 s before now) would go;
    # inside its 10 minutes it stays, and the older goes. A pod of another class is not matched.
    older = pod("older", node="n1", priority=1, cpu=5, start=NOW - 3600, pc="batch-low")
    newer = pod("newer", node="n1", priority=1, cpu=5, start=NOW - 100, pc="batch-low")
    v = view([node("n1")], [older, newer])
    preemptor = pod("pre", priority=10, cpu=5)
    _, plain = decided(v, preemptor, None)
    assert [p.name for p in outcome(plain, "n1").victims] == ["newer"]
    _, guarded = decided(v, preemptor, young(classes=["batch-low"]))
    chosen = outcome(guarded, "n1")
    assert [p.name for p in chosen.victims] == ["older"]
    assert "1 protected: default/newer (has run 1m40s of its minimum runtime of 10m (minimumRuntime[0]))" in chosen.reasons
    _, other = decided(v, preemptor, young(classes=["batch-high"]))
    assert [p.name for p in outcome(other, "n1").victims] == ["newer"]


@pytest.mark.parametrize(
    "rule, protected",
    [
        pytest.param(MinimumRuntime(600), True, id="no-list-matches-every-pod"),
        pytest.param(MinimumRuntime(600, namespaces=frozenset({"batch"})), True, id="its-namespace"),
        pytest.param(MinimumRuntime(600, namespaces=frozenset({"other"})), False, id="another-namespace"),
        pytest.param(MinimumRuntime(600, frozenset({"batch"}), frozenset({"low"})), True, id="namespace-and-class"),
        pytest.param(MinimumRuntime(600, frozenset({"batch"}), frozenset({"high"})), False, id="both-lists-must-match"),
        pytest.param(MinimumRuntime(60), False, id="run-long-enough"),
    ],
)
def test_which_pods_a_rule_matches(rule, protected):
    p = pod("p", ns="batch", node="n1", pc="low", start=NOW - 100)
    assert bool(Guards(runtime=(rule,)).inside(NOW)(p)) is protected


def test_a_start_unknown_counts_as_just_started_and_a_terminating_pod_as_leaving():
    inside = young().inside(NOW)
    assert inside(pod("p", node="n1")) == "start unknown, so inside its minimum runtime of 10m (minimumRuntime[0])"
    assert young().inside(None)(pod("p", node="n1", start=0)).startswith("start unknown")  # no clock to measure by
    assert inside(pod("p", node="n1", start=NOW - 10, terminating=True)) == ""
    # Of two matching rules, the longer holds the pod.
    two = Guards(runtime=(MinimumRuntime(60, index=0), MinimumRuntime(3600, index=1)))
    assert two.inside(NOW)(pod("p", node="n1", start=NOW - 120)) == (
        "has run 2m of its minimum runtime of 1h (minimumRuntime[1])"
    )


def test_a_node_whose_only_victims_are_inside_their_minimum_runtime_is_dropped():
    v = view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, start=NOW - 60), pod("b", node="n2", priority=1, cpu=10, start=NOW - 60)])
    _, decision = decided(v, pod("pre", priority=10, cpu=10), young())
    assert decision.answer == {}
    assert {(o.verdict, o.cause) for o in decision.outcomes} == {(Verdict.DROPPED, Cause.MIN_RUNTIME)}
    assert decision.reasons[0].startswith(
        "no candidate node can make room for the pod without evicting a pod inside its minimum runtime: n1: "
        "every lower-priority pod is protected: default/a (has run 1m of its minimum runtime of 10m"
    ), decision.reasons


def test_a_proposal_naming_a_young_pod_gets_another_set_or_its_node_dropped():
    # The scheduler proposes the young pod (the younger work goes first in its order); reprieve
    # takes the old one on n1 instead. With host ports reprieve cannot choose: the node is dropped.
    older = pod("older", node="n1", priority=1, cpu=5, start=NOW - 3600)
    newer = pod("newer", node="n1", priority=1, cpu=5, start=NOW - 100)
    v = view([node("n1")], [older, newer])
    proposals = {"n1": Proposal((newer.uid,), 0)}
    decision = decide(view=v, preemptor=pod("pre", priority=10, cpu=5), proposals=proposals, guards=young(), now=NOW)
    assert [p.name for p in outcome(decision, "n1").victims] == ["older"]
    fixed = pod("pre", priority=10, cpu=5, unmodelled=("host ports",))
    kept = decide(view=v, preemptor=fixed, proposals=proposals, guards=young(), now=NOW)
    n1 = outcome(kept, "n1")
    assert kept.answer == {} and n1.cause is Cause.MIN_RUNTIME
    assert "but default/newer has run 1m40s of its minimum runtime of 10m (minimumRuntime[0])" in n1.reasons[0]


def test_a_young_pod_does_not_hide_the_schedulers_own_victims_behind_a_pod_it_may_not_know():
    # n1 (10 cpu): fresh (4 cpu) bound moments ago, which the scheduler may not know yet and an
    # answer may not name; young (3) inside its minimum runtime; old (3). The preemptor (6 cpu)
    # fits only if fresh or young goes too. The scheduler proposes old alone: its view (fresh not
    # there yet) is newer, not the young pod's doing, so its victims are kept as proposed (they
    # keep the guards); a young pod alone in the way still drops the node (MIN_RUNTIME).
    fresh = dataclasses.replace(pod("fresh", node="n1", priority=1, cpu=4, start=NOW - 1), bound_at=NOW - 0.2)
    young_pod = pod("young", node="n1", priority=1, cpu=3, start=NOW - 60, pc="batch")
    old = pod("old", node="n1", priority=1, cpu=3, start=NOW - 3600)
    v = view([node("n1")], [fresh, young_pod, old])
    guards = young(classes=["batch"])
    preemptor = pod("pre", priority=10, cpu=6)
    decision = decide(view=v, preemptor=preemptor, proposals={"n1": Proposal((old.uid,), 0)}, guards=guards, now=NOW)
    n1 = outcome(decision, "n1")
    assert n1.verdict is Verdict.PASSED_THROUGH and n1.cause is Cause.SCHEDULER_NEWER, (n1.cause, n1.reasons)
    assert decision.answer == {"n1": Proposal((old.uid,), 0)}
    settled = view([node("n1")], [dataclasses.replace(fresh, bound_at=NOW - 60), young_pod, old])
    both = decide(view=settled, preemptor=preemptor, proposals={"n1": Proposal((old.uid,), 0)}, guards=guards, now=NOW)
    assert {p.name for p in outcome(both, "n1").victims} == {"fresh", "old"}  # settled: reprieve names it
    alone = view([node("n1")], [young_pod, old, pod("big", node="n1", priority=20, cpu=4)])
    dropped = outcome(decide(view=alone, preemptor=preemptor, proposals={"n1": Proposal((old.uid,), 0)},
                             guards=guards, now=NOW), "n1")
    assert (dropped.verdict, dropped.cause) == (Verdict.DROPPED, Cause.MIN_RUNTIME), dropped.reasons


def test_without_guards_nothing_changes():
    # No guards: the order, the answer and every reason are what they were.
    v = view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, start=5), pod("b", ns="kafka", node="n2", priority=2, cpu=10)],
             [pdb("b", allowed=0, match={"app": "b"}, ns="kafka")])
    preemptor = pod("pre", priority=10, cpu=10)
    proposals = scheduler_proposals(v, preemptor)
    plain = decide(view=v, preemptor=preemptor, proposals=proposals)
    assert plain.order == ranking.DEFAULT and "strict budget violations" not in plain.order.names
    none = decide(view=v, preemptor=preemptor, proposals=proposals, guards=None)
    assert (plain.answer, plain.reasons, plain.outcomes) == (none.answer, none.reasons, none.outcomes)


def test_span_writes_durations_as_the_policy_file_does():
    assert [span(s) for s in (0.5, 1, 90, 600, 3600, 5400, 3723)] == ["500ms", "1s", "1m30s", "10m", "1h", "1h30m", "1h2m3s"]


# The exact search under the strict order: the cheapest of every set, by the oracle key.


def brute(live, room, facts, order):
    """The cheapest key of every set of ``live`` whose remainder fits in ``room`` (cpu)."""
    best = None
    for mask in range(1 << len(live)):
        victims = [p for i, p in enumerate(live) if mask >> i & 1]
        kept = [p for i, p in enumerate(live) if not mask >> i & 1]
        if sum(p.requests.get("cpu", 0) for p in kept) > room:
            continue
        key = reference_key(most_important_first(victims), facts, order)
        best = key if best is None or key < best else best
    return best


@settings(max_examples=300, deadline=None)
@given(
    running=st.lists(
        st.tuples(st.integers(0, 2), st.integers(1, 3), st.sampled_from(["kafka", "default"]), st.sampled_from(["a", "b", ""])),
        min_size=1, max_size=7,
    ),
    allowed=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    room=st.integers(0, 10),
    movable=st.permutations(ranking.MOVABLE),
)
def test_the_exact_search_finds_the_cheapest_set_with_strict_budgets_first(running, allowed, room, movable):
    pods = [
        pod(f"p{i}", ns=ns, node="n1", priority=prio, cpu=cpu, start=i, qos=QoS.BURSTABLE,
            labels={"id": str(i), **({"grp": budget} if budget else {})})
        for i, (prio, cpu, ns, budget) in enumerate(running)
    ]
    budgets = [pdb(f"{b}-{ns}", allowed=allowed[j], match={"grp": b}, ns=ns)
               for j, b in enumerate("ab") for ns in ("kafka", "default")]
    v = view([node("n1", cpu=20)], pods, budgets)
    order = ranking.Order(movable, strict=True)
    facts = Facts(v.budgets_covering, v.gang_of, strict_of=KAFKA.strict_of(v.budgets_covering, v))
    live = most_important_first(pods)
    search = exact.Search({"cpu": room * 1000}, ("cpu",), live, (), facts, order)
    expected = brute(live, room * 1000, facts, order)
    found = exact.cheapest(search, beat=(float("inf"),))
    if expected is None:
        assert found is None
        return
    assert found is not None and found.key == expected
    strict = found.cost.detail(ranking.STRICT_BUDGETS)
    assert strict == count_violations(found.victims, facts.strict_of)
    assert found.key[0] == strict.count  # first in the order


def test_the_order_with_strict_budgets_only_adds_them_first():
    plain = ranking.Order.named(["victims"])
    strict = plain.with_strict()
    assert strict.names == ("strict budget violations", *plain.names) and strict.with_strict() is strict
    assert ranking.DEFAULT.names == tuple(c.name for c in ranking.CANONICAL[1:])
    canonical = tuple(range(len(ranking.CANONICAL)))
    assert ranking.DEFAULT.arrange(canonical) == canonical[1:] and ranking.FULL.arrange(canonical) == canonical


def broker_beside(x_cpu, node_cpu, *others):
    """n1 (``node_cpu``) runs x (``x_cpu``), the Kafka broker s behind a budget allowing none,
    and w (4 cpu each), and ``others`` (pending pods); the view, x and w."""
    x, w = pod("x", node="n1", cpu=x_cpu, priority=1), pod("w", node="n1", cpu=4, priority=1)
    s = pod("s", ns="kafka", node="n1", cpu=4, priority=1, labels={"app": "s"})
    return view([node("n1", cpu=node_cpu)], [x, s, w, *others], [pdb("s", allowed=0, match={"app": "s"}, ns="kafka")]), x, w


def test_a_strict_budget_met_only_because_a_pod_may_not_be_named_keeps_the_schedulers_victims():
    # n1 (12 cpu) runs x (named in an earlier answer: the scheduler may have deleted it), the
    # Kafka broker s behind a budget allowing none, and w, 4 cpu each. The preemptor needs 8 and
    # the scheduler proposes w alone: x is gone in its view. Without x, reprieve finds only sets
    # that take s; the scheduler's w keeps the budget, and is kept (before: the node dropped for
    # the strict budget, the preemptor left pending).
    v, x, w = broker_beside(4, 12)
    preemptor = pod("pre", priority=10, cpu=8)
    proposals = {"n1": Proposal((w.uid,), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW, named=frozenset({x.uid}))
    assert decision.answer == {"n1": Proposal((w.uid,), 0)}
    assert outcome(decision, "n1").kept_scheduler_victims
    # Named freely, x and w make room: reprieve's own choice, the budget kept.
    free = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW)
    assert set(free.answer["n1"].uids) == {x.uid, w.uid}


def test_a_pod_that_may_not_be_named_but_would_not_make_room_changes_nothing():
    # As above, but x is 1 cpu and the node 9: without x the scheduler's w still makes no room
    # in reprieve's view, so x staying is not why every set takes s. The node is dropped for
    # the strict budget, as without x named.
    v, x, w = broker_beside(1, 9)
    preemptor = pod("pre", priority=10, cpu=6)
    proposals = {"n1": Proposal((w.uid,), 0)}
    for named in (frozenset(), frozenset({x.uid})):
        decision = decide(view=v, preemptor=preemptor, proposals=proposals, guards=KAFKA, now=NOW, named=named)
        assert decision.answer == {} and outcome(decision, "n1").cause is Cause.STRICT_BUDGET


def test_another_schedulers_hold_is_blamed_only_if_it_is_what_stands_in_the_way():
    # n1 (16 cpu): x (2, named in an earlier answer), the broker s and w (4 each), and room for
    # h, another scheduler's pod nominated here (4). The preemptor needs 8 and the scheduler
    # proposes w. With x gone, w makes room beside h: h is not in the way, and the scheduler's
    # w is kept; the reason says x stayed.
    v, x, w = broker_beside(2, 16, pod("h", cpu=4, priority=50, nominated="n1", scheduler="second-scheduler"))
    preemptor = pod("pre", priority=10, cpu=8)
    decision = decide(
        view=v, preemptor=preemptor, proposals={"n1": Proposal((w.uid,), 0)}, guards=KAFKA, now=NOW,
        named=frozenset({x.uid}),
    )
    assert decision.answer == {"n1": Proposal((w.uid,), 0)}
    assert any("with default/x staying: the answer may not name them" in r for r in outcome(decision, "n1").reasons)

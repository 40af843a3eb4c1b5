"""PDB accounting, after upstream's filterPodsWithPDBViolation."""

from __future__ import annotations

from policy.labels import Requirement, Selector
from policy.model import DisruptionBudget
from policy.pdb import count_violations, protected
from tests.builders import pdb, pod


def by_ns(*budgets):
    """budgets_of over a plain list, as ClusterView.budgets_covering answers it."""
    return lambda pod: [b for b in budgets if b.covers(pod)]


def web(name, **kw):
    return pod(name, labels={"app": "web"}, **kw)


def test_allowance_is_spent_in_order():
    # allowed 1, three victims: the first spends it, the next two take it to -1 and -2.
    result = count_violations([web("a"), web("b"), web("c")], by_ns(pdb("web", allowed=1, match={"app": "web"})))
    assert result.count == 2 and result.budgets == ("default/web",)


def test_disrupted_pods_do_not_spend_allowance():
    # 'a' is already in status.disruptedPods: only 'b' spends the single allowance.
    budget = pdb("web", allowed=1, match={"app": "web"}, disrupted=["a"])
    assert count_violations([web("a"), web("b")], by_ns(budget)).count == 0


def test_terminating_pods_do_not_spend_allowance():
    assert count_violations([web("a", terminating=True)], by_ns(pdb("web", allowed=0, match={"app": "web"}))).count == 0


def test_empty_selector_matches_nothing():
    empty = DisruptionBudget("default", "all", Selector(), 0)
    assert count_violations([web("a")], by_ns(empty)).count == 0


def test_unlabelled_pod_never_matches():
    # NotIn matches a pod without the label, but upstream skips pods with no labels at all.
    budget = DisruptionBudget("default", "x", Selector((), (Requirement("app", "NotIn", frozenset({"db"})),)), 0)
    assert count_violations([pod("bare", labels={})], by_ns(budget)).count == 0
    assert count_violations([pod("labelled", labels={"k": "v"})], by_ns(budget)).count == 1


def test_other_namespace_does_not_match():
    assert count_violations([web("a", ns="other")], by_ns(pdb("web", allowed=0, match={"app": "web"}))).count == 0


def test_match_expressions():
    budget = DisruptionBudget(
        "default",
        "x",
        Selector((("app", "web"),), (Requirement("tier", "In", frozenset({"fe", "be"})), Requirement("canary", "DoesNotExist"))),
        0,
    )
    assert count_violations([pod("a", labels={"app": "web", "tier": "fe"})], by_ns(budget)).count == 1
    assert count_violations([pod("b", labels={"app": "web", "tier": "fe", "canary": "y"})], by_ns(budget)).count == 0
    assert count_violations([pod("c", labels={"app": "web", "tier": "db"})], by_ns(budget)).count == 0


def test_protected_only_where_the_budget_cannot_lose_them_all():
    # 'web' allows 1 of its 2 candidates: both protected. 'cache' allows 2 of 2: neither.
    budgets = by_ns(pdb("web", allowed=1, match={"app": "web"}), pdb("cache", allowed=2, match={"app": "cache"}))
    candidates = [web("w1"), web("w2"), pod("c1", labels={"app": "cache"}), pod("c2", labels={"app": "cache"})]
    assert protected(candidates, budgets) == {"uid-default-w1", "uid-default-w2"}

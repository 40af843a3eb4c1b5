"""PodDisruptionBudget accounting for a set of victims, after upstream's ``filterPodsWithPDBViolation``.

A budget covers a pod when they share a namespace, the pod has labels and the budget's
selector is non-empty and matches them. A pod listed in the budget's ``status.disruptedPods``
is already counted by the disruption controller and does not spend allowance again, and
neither does a terminating pod (the controller no longer counts it as healthy).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from policy.model import DisruptionBudget, Pod

# pod -> the budgets that cover it (ClusterView.budgets_covering)
BudgetsOf = Callable[[Pod], Sequence[DisruptionBudget]]


def spent_on(pod: Pod, budgets_of: BudgetsOf, *, terminating_spends: bool = False) -> Sequence[DisruptionBudget]:
    """The budgets whose allowance evicting ``pod`` would spend."""
    budgets = budgets_of(pod)
    if not budgets or (pod.terminating and not terminating_spends):
        return ()
    return [b for b in budgets if pod.name not in b.disrupted_pods]


def less_spent(budgets_of: BudgetsOf, taken: Iterable[Pod]) -> BudgetsOf:
    """``budgets_of`` with each budget's allowance less what ``taken`` spends of it: victims of
    answers in flight, which the view still shows running and the budget's status has not
    counted yet. Without it, two preemptors in a row could each spend a budget's last allowance."""
    spent: dict[str, int] = {}
    for pod in taken:
        for budget in spent_on(pod, budgets_of):
            spent[budget.key] = spent.get(budget.key, 0) + 1
    if not spent:
        return budgets_of
    lowered: dict[str, DisruptionBudget] = {}

    def lower(budget: DisruptionBudget) -> DisruptionBudget:
        if budget.key not in spent:
            return budget
        found = lowered.get(budget.key)
        if found is None:
            allowed = budget.disruptions_allowed - spent[budget.key]
            found = lowered[budget.key] = dataclasses.replace(budget, disruptions_allowed=allowed)
        return found

    def after(pod: Pod) -> Sequence[DisruptionBudget]:
        budgets = budgets_of(pod)
        return tuple(lower(b) for b in budgets) if any(b.key in spent for b in budgets) else budgets

    return after


@dataclass(frozen=True, slots=True)
class Violations:
    count: int  # victims whose eviction takes some budget below zero (the wire NumPDBViolations)
    budgets: tuple[str, ...]  # keys of the budgets that would be violated, sorted

    def describe(self) -> str:
        if not self.count:
            return "violates no PodDisruptionBudget"
        return f"{self.count} victim(s) violate PodDisruptionBudget {', '.join(self.budgets)}"


NO_VIOLATIONS = Violations(count=0, budgets=())


def count_violations(victims: Sequence[Pod], budgets_of: BudgetsOf) -> Violations:
    """Exactly how many of ``victims`` (evicted together) go past a budget's allowance.

    Stable like upstream: victims are walked in the order given and each decrements the
    allowance of every budget that covers it; a victim that takes any allowance below zero
    is violating. Without overlapping budgets the count is max(0, covered - allowed) per
    budget, whatever the order.
    """
    allowed: dict[str, int] = {}
    violated: set[str] = set()
    count = 0
    for pod in victims:
        violating = False
        for budget in spent_on(pod, budgets_of):
            left = allowed.get(budget.key, budget.disruptions_allowed) - 1
            allowed[budget.key] = left
            if left < 0:
                violating = True
                violated.add(budget.key)
        count += violating
    return Violations(count=count, budgets=tuple(sorted(violated)))


def protected(candidates: Iterable[Pod], budgets_of: BudgetsOf) -> frozenset[str]:
    """UIDs of the candidates that a budget cannot afford to lose all together.

    A budget that covers more of the candidates than its allowance protects every candidate
    it covers: reprieve tries to keep those pods first, most important first, so the budget
    is spent on the least important of them. Candidates covered only by budgets with enough
    allowance for all of them are not protected.
    """
    covered: dict[str, list[str]] = {}
    allowance: dict[str, int] = {}
    for pod in candidates:
        for budget in spent_on(pod, budgets_of):
            covered.setdefault(budget.key, []).append(pod.uid)
            allowance[budget.key] = budget.disruptions_allowed
    return frozenset(
        uid for key, uids in covered.items() if len(uids) > allowance[key] for uid in uids
    )


def violating(pods: Sequence[Pod], budgets_of: BudgetsOf, *, terminating_spends: bool = False) -> frozenset[str]:
    """UIDs of the pods that would violate a budget if all of ``pods`` were evicted, walking
    them in the order given (upstream's ``filterPodsWithPDBViolation``): the earlier pods
    spend the allowance, the later ones are violating. Upstream lets terminating pods spend
    allowance too (``terminating_spends``); reprieve's own accounting does not."""
    allowed: dict[str, int] = {}
    found = set()
    for pod in pods:
        for budget in spent_on(pod, budgets_of, terminating_spends=terminating_spends):
            allowed[budget.key] = allowed.get(budget.key, budget.disruptions_allowed) - 1
            if allowed[budget.key] < 0:
                found.add(pod.uid)
    return frozenset(found)

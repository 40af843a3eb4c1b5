"""Fewest PodDisruptionBudget violations: victims whose eviction takes a budget's allowance below
zero, counted exactly as the scheduler counts them (policy.pdb.count_violations)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from policy.criteria.criterion import Criterion, Facts, Kind, Running, Stay
from policy.importance import importance
from policy.model import Pod
from policy.pdb import BudgetsOf, Violations, count_violations, spent_on


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, Violations]:
    violations = count_violations(victims, facts.budgets_of)
    return violations.count, violations


class Counting(Running):
    """Per budget, the victims it covers so far: while no pod is covered by two budgets a
    budget's violations are max(0, covered - allowed), whatever the order; otherwise the whole
    set is counted again, in upstream's order (and no two pods are alike). ``budgets`` picks the
    budgets counted from the facts (None: none)."""

    def __init__(self, name: str, budgets: Callable[[Facts], BudgetsOf | None]) -> None:
        self._name, self._budgets = name, budgets

    def _spent(self, pod: Pod, facts: Facts) -> tuple:
        """The budgets whose allowance evicting ``pod`` spends, looked up once per request."""
        key = (self._name, pod.uid)
        found = facts.memo.get(key)
        if found is None:
            budgets_of = self._budgets(facts)
            found = facts.memo[key] = tuple(spent_on(pod, budgets_of)) if budgets_of is not None else ()
        return found

    def start(self, live: Sequence[Pod], facts: Facts) -> tuple:
        overlapping = any(len(self._spent(p, facts)) > 1 for p in live)
        return (True, 0) if overlapping else (False, ())

    def alike(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return pod.uid if state[0] else tuple(b.key for b in self._spent(pod, facts))

    def of_class(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return tuple((b.key, b.disruptions_allowed) for b in self._spent(pod, facts))

    def add(self, state, of_class, pods, before, facts) -> tuple[tuple, int]:
        overlapping, covered = state
        if overlapping:  # ``covered``: the count so far
            count = count_violations(sorted((*before, *pods), key=importance), self._budgets(facts)).count
            return (True, count), count - covered
        counts = dict(covered)
        added = 0
        for budget, allowed in of_class:
            was = counts.get(budget, 0)
            counts[budget] = was + len(pods)
            added += max(0, was + len(pods) - allowed) - max(0, was - allowed)
        return (False, tuple(counts.items())), added


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if stay.budgets.get(pod.uid) and not stay.budgets.get(victim.uid):
        return f"behind PodDisruptionBudget {', '.join(stay.budgets[pod.uid])}"
    return None


def _brief(value: float, _) -> str:
    return f"{value} PDB violation(s)"


CRITERION = Criterion(
    name="PDB violations", field="pdb_violations", kind=Kind.SET, of_set=_of_set,
    running=Counting("pdb", lambda facts: facts.budgets_of),
    floor="violations", brief=_brief, stays=_stays,
)

"""Fewest strict PodDisruptionBudget violations (policy.guards, the policy's ``strictBudgets``):
counted as PDB violations are (policy.pdb.count_violations), over the strict budgets only.

Not a criterion a policy may order: where the rule is on it comes first of all (Order(strict=
True)), so that each node's search first looks for a set that violates none; a node whose
cheapest set still violates one is dropped (policy.victims), so an offered node's value is
always 0. Without the rule every set's value is 0 and the order leaves it out.
"""

from __future__ import annotations

from collections.abc import Sequence

from policy.criteria.criterion import Criterion, Facts, Kind
from policy.criteria.pdb_violations import Counting
from policy.model import Pod
from policy.pdb import NO_VIOLATIONS, Violations, count_violations


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, Violations]:
    if facts.strict_of is None:
        return 0, NO_VIOLATIONS
    violations = count_violations(victims, facts.strict_of)
    return violations.count, violations


def _brief(value: float, _) -> str | None:
    return f"{value} strict PDB violation(s)" if value else None


CRITERION = Criterion(
    name="strict budget violations", field="strict_budget_violations", kind=Kind.SET, of_set=_of_set,
    running=Counting("strict", lambda facts: facts.strict_of), brief=_brief,
)

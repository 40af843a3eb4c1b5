"""The ranking's criteria, one module each, and their registry.

``CANONICAL`` is the default order: each criterion only breaks the ties left by the ones
before it (policy.ranking composes an order from it; a policy file may reorder ``MOVABLE``).
Adding a criterion: its module (policy.criteria.criterion says what it declares), one line
here, and a row in tests/unit/test_ranking.py. docs/policy.md says why each sits where it does.
"""

from __future__ import annotations

from policy.criteria import (
    broken_gangs,
    burstable,
    deletion_cost,
    gang_work,
    guaranteed,
    homeless,
    jobs_failed,
    managers,
    opted_out,
    pdb_violations,
    pending_room,
    priority_sum,
    retries_burned,
    start,
    strict_budgets,
    time_to_room,
    top_priority,
    victims,
    work_lost,
)
from policy.criteria.criterion import Criterion, Facts, Kind, Reach, Stay, Unit
from policy.model import Pod

STRICT_BUDGETS = strict_budgets.CRITERION
OPTED_OUT = opted_out.CRITERION
PDB_VIOLATIONS = pdb_violations.CRITERION
JOBS_FAILED = jobs_failed.CRITERION
BROKEN_GANGS = broken_gangs.CRITERION
GANG_WORK = gang_work.CRITERION
MANAGERS = managers.CRITERION
TOP_PRIORITY = top_priority.CRITERION
RETRIES_BURNED = retries_burned.CRITERION
GUARANTEED = guaranteed.CRITERION
BURSTABLE = burstable.CRITERION
HOMELESS = homeless.CRITERION
PRIORITY_SUM = priority_sum.CRITERION
VICTIMS = victims.CRITERION
DELETION_COST = deletion_cost.CRITERION
WORK_LOST = work_lost.CRITERION
START = start.CRITERION
TIME_TO_ROOM = time_to_room.CRITERION
PENDING_ROOM = pending_room.CRITERION

# The registry, in the default order.
CANONICAL: tuple[Criterion, ...] = (
    STRICT_BUDGETS,  # a policy's strictBudgets: first where the rule is on, left out of the order otherwise
    OPTED_OUT,  # a last resort is last whatever else: first in every order
    PDB_VIOLATIONS,
    JOBS_FAILED,
    BROKEN_GANGS,
    GANG_WORK,
    TOP_PRIORITY,
    MANAGERS,  # after the priority: docs/policy.md measures the places tried
    RETRIES_BURNED,
    GUARANTEED,
    BURSTABLE,
    HOMELESS,
    PRIORITY_SUM,
    VICTIMS,
    PENDING_ROOM,  # right after the number of victims in every order: docs/policy.md, "Under pressure"
    WORK_LOST,  # after the number of victims, before the deletion cost: docs/policy.md measures the places tried
    DELETION_COST,
    TIME_TO_ROOM,  # docs/policy.md measures the places tried
    START,  # the tie-breaker: last in every order
)
# What a policy may reorder: all but the first two and the tie-breaker, and the room left for
# the pending pods, which follows the number of victims wherever it goes (it is not monotone in
# the victims, so never before their number: policy.criteria.pending_room).
MOVABLE = tuple(c for c in CANONICAL[2:-1] if c is not PENDING_ROOM)
# criterion -> what follows it in every order
FOLLOWS = {VICTIMS: PENDING_ROOM}
BY_NAME = {c.name: c for c in CANONICAL}
# The parts of a cost's one-line summary (policy.ranking.Cost.describe), in its order.
SUMMARY = (OPTED_OUT, JOBS_FAILED, BROKEN_GANGS, GANG_WORK, MANAGERS, PDB_VIOLATIONS, TOP_PRIORITY, RETRIES_BURNED, HOMELESS, VICTIMS)

# The criteria a pod has a value of its own for, in CANONICAL's order: a pod's ``values``.
PER_POD = tuple(c for c in CANONICAL if c.kind in (Kind.SUM, Kind.MAX))
_OF_POD = tuple(c.of_pod for c in PER_POD)

assert all(c.kind is not Kind.TIE for c in CANONICAL[:-1]), "a tie-breaker is bounded only last"


def values(pod: Pod, facts: Facts) -> tuple:
    """``pod``'s own value for each criterion of PER_POD, computed once per request."""
    found = facts.values.get(pod.uid)
    if found is None:
        found = facts.values[pod.uid] = tuple(f(pod, facts) for f in _OF_POD)
    return found


__all__ = [
    "BROKEN_GANGS", "BURSTABLE", "BY_NAME", "CANONICAL", "FOLLOWS", "Criterion", "DELETION_COST", "Facts", "GANG_WORK", "GUARANTEED", "HOMELESS", "JOBS_FAILED", "Kind",
    "MANAGERS", "MOVABLE", "OPTED_OUT", "PDB_VIOLATIONS", "PENDING_ROOM", "PER_POD", "PRIORITY_SUM", "RETRIES_BURNED", "Reach", "START", "STRICT_BUDGETS", "SUMMARY", "Stay",
    "TIME_TO_ROOM", "TOP_PRIORITY", "Unit", "VICTIMS", "WORK_LOST", "values",
]

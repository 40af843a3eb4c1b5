"""Fewest Jobs failed (policy.jobs): Jobs, or indexes of Jobs with a budget per index, whose
retries the victims exhaust. A Job whose podFailurePolicy fails it on DisruptionTarget
(FailJob, or FailIndex for its index) fails with one victim; one that counts the eviction fails
once more victims are taken from it than it has retries left (``backoffLimit`` less its
failures so far, upstream's ``failed > backoffLimit``); one that ignores DisruptionTarget never.
Right after the budgets by default: docs/policy.md says why, with the measurements.

Adding a victim never lowers it: a budget already exhausted stays so.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from policy import jobs
from policy.criteria.criterion import Criterion, Facts, Kind, Running, Stay
from policy.model import Pod


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, tuple[jobs.Budget, ...]]:
    failed = jobs.failing(live, facts.stake_of)
    return len(failed), failed


def _budgets(pod: Pod, facts: Facts) -> tuple:
    found = facts.stake_of(pod) if facts.stake_of is not None else None
    return tuple((b.key, b.left) for b in found.budgets) if found is not None else ()


class _Running(Running):
    """Per budget, the victims taken from it so far and the fewest retries any of them left it:
    pods alike spend from the same budgets, each left alike."""

    def start(self, live: Sequence[Pod], facts: Facts) -> tuple:
        return ()

    def alike(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return _budgets(pod, facts)

    def of_class(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return _budgets(pod, facts)

    def add(self, state, of_class, pods, before, facts) -> tuple[tuple, int]:
        if not of_class:
            return state, 0
        counts = dict(state)
        added = 0
        for key, left in of_class:
            taken, least = counts.get(key, (0, math.inf))
            now = (taken + len(pods), min(least, left))
            counts[key] = now
            added += (now[0] > now[1]) - (taken > least)
        return tuple(sorted(counts.items())), added


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    mine, theirs = stay.stakes.get(pod.uid), stay.stakes.get(victim.uid)
    if mine is not None and mine.fails_alone() is not None and (theirs is None or theirs.fails_alone() is None):
        return mine.describe()
    return None


def _brief(value: float, _) -> str | None:
    return f"{value} Job(s) failed" if value else None


# No floor: whether a victim fails its Job depends on the others taken from it (0 bounds it).
CRITERION = Criterion(
    name="Jobs failed", field="jobs_failed", kind=Kind.SET, of_set=_of_set, running=_Running(),
    brief=_brief, stays=_stays,
)

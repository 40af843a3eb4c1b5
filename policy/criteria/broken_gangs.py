"""Fewest broken gangs (policy.gangs): a gang that loses more members than it can spare loses
every running member's work. After the budgets by default: docs/policy.md says why, with the
measurements."""

from __future__ import annotations

from collections.abc import Sequence

from policy import gangs
from policy.criteria.criterion import Criterion, Facts, Kind, Running, Stay
from policy.model import Pod


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, gangs.Broken]:
    broken = gangs.count_broken(victims, facts.gang_of)
    return broken.count, broken


class ByGang(Running):
    """A running count by gang: pods of one gang are alike, and a class's gang is its first pod's."""

    def alike(self, state: tuple, pod: Pod, facts: Facts) -> object:
        gang = facts.gang_of(pod) if facts.gang_of is not None else None
        return None if gang is None else gang.key

    def of_class(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return facts.gang_of(pod) if facts.gang_of is not None else None


class _Running(ByGang):
    """Per gang, the members taken so far: one more than its spare breaks it, once."""

    def start(self, live: Sequence[Pod], facts: Facts) -> tuple:
        return ()

    def add(self, state, of_class, pods, before, facts) -> tuple[tuple, int]:
        gang = of_class
        if gang is None:
            return state, 0
        was = dict(state).get(gang.key, 0)
        broken = was <= gang.spare < was + len(pods)
        return (*(t for t in state if t[0] != gang.key), (gang.key, was + len(pods))), int(broken)


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if pod.uid in stay.in_gangs and pod.priority <= victim.priority:  # (a higher priority says it plainer)
        return f"a member of {stay.in_gangs[pod.uid]}"
    return None


def _brief(value: float, _) -> str | None:
    return f"{value} broken gang(s)" if value else None


# No floor: a gang's spare changes with members on other nodes, which a per-node summary would
# not see change (0 bounds it: a node is never skipped for the gangs it must break, only for
# what comes after them in the key).
CRITERION = Criterion(
    name="broken gangs", field="broken_gangs", kind=Kind.SET, of_set=_of_set, running=_Running(),
    brief=_brief, stays=_stays,
)

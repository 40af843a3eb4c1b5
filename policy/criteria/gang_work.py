"""Fewest pods lost where gangs break: a broken gang loses every running member's work, not only
the members evicted (the rest stand idle, or are stranded), so where a victim set breaks gangs
its cost is every running member of each gang it breaks plus its other victims. Zero where no
gang breaks: it only decides between sets that break the same number of gangs (right after
broken gangs), and there the one that strands fewer members wins.

Adding a victim never lowers it: a victim outside the broken gangs adds one; one that breaks a
gang adds the gang's running members, less those already counted; one of a gang already broken
adds nothing (it was counted lost with its gang).
"""

from __future__ import annotations

from collections.abc import Sequence

from policy import gangs
from policy.criteria.broken_gangs import ByGang
from policy.criteria.criterion import Criterion, Facts, Kind
from policy.model import Pod


def lost(victims: Sequence[Pod], broken: gangs.Broken, gang_of: gangs.GangOf | None) -> int:
    """The running members of the ``broken`` gangs and the other live ``victims``; 0 if none breaks."""
    if not broken.count or gang_of is None:
        return 0
    keys = {g.key for g in broken.gangs}
    loose = sum(1 for p in victims if not p.terminating and getattr(gang_of(p), "key", None) not in keys)
    return broken.lost + loose


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, int]:
    broken = gangs.count_broken(victims, facts.gang_of)
    count = lost(victims, broken, facts.gang_of)
    return count, count - len(live) if count else 0  # detail: the members stranded (lost, not evicted)


class _Running(ByGang):
    """(members taken per gang, the broken gangs' running members together, the other victims,
    any gang broken); the value is the last two summed once a gang breaks."""

    def start(self, live: Sequence[Pod], facts: Facts) -> tuple:
        return ((), 0, 0, False)

    def add(self, state, of_class, pods, before, facts) -> tuple[tuple, int]:
        taken, members, loose, broke = state
        was_value = members + loose if broke else 0
        gang = of_class
        if gang is None:
            loose += len(pods)
        else:
            counts = dict(taken)
            was = counts.get(gang.key, 0)
            counts[gang.key] = was + len(pods)
            if was > gang.spare:
                pass  # already broken: its members are counted with it
            elif was + len(pods) > gang.spare:
                members, loose, broke = members + gang.running, loose - was, True
            else:
                loose += len(pods)
            taken = tuple(counts.items())
        state = (taken, members, loose, broke)
        return state, (members + loose if broke else 0) - was_value


def _brief(value: float, _) -> str | None:
    return f"{value} pod(s) lost with broken gangs" if value else None


CRITERION = Criterion(
    name="pods lost with broken gangs", field="pods_lost_with_gangs", kind=Kind.SET, of_set=_of_set,
    running=_Running(), brief=_brief,
)

"""The cheapest victim set on one node, found exactly (few pods) or improved locally (many).

policy.victims reprieves pods greedily in a few orders and keeps the cheapest result. No greedy
order is always cheapest (issue 10: protecting a budget's pods first evicted two priority-2
Guaranteed pods where one priority-0 Burstable pod would do). Here:

- ``cheapest``: for nodes with at most ``EXACT_LIMIT`` live candidates, branch and bound over
  every set of victims, by policy.ranking's full key. Pods that differ only in start time and
  name are one class, and of a class the least important go first (they are never worse on
  any criterion), so a node of sixteen identical pods has seventeen choices, not 65,536.
- ``improve``: for larger nodes, a bounded local search from the greedy result: give one victim
  back, take the least important of the rest until the preemptor fits, return what is not
  needed, and keep the change if it is cheaper; at most one pass over the victims.

Both take the reprieve's ``room`` (what reprieved pods may use of each checked resource,
already capped so that named victims free the scheduler's floor, see policy.victims) and
return a set only if it is strictly cheaper than the one they were given, so ties keep the
greedy answer and its reasons.

Why bounding works: adding a victim never lowers any criterion of the key (each criterion of
policy.criteria promises it) and raises the count, so a set's key bounds every superset's from
below, and a set whose kept pods all fit needs no further victim. The search adds victims a
class at a time: per-pod criteria add or compare the class's values, set-wide ones count with
their ``running`` (or are bounded by their least value), the tie-breaker waits for a whole set.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policy import criteria, ranking
from policy.criteria import Facts, Kind
from policy.importance import importance
from policy.model import Pod
from policy.pdb import Violations

# Above this many live candidates the exact search may take too long for the scheduler's
# cycle (2**EXACT_LIMIT sets at worst, when no two pods are alike): improve() instead.
EXACT_LIMIT = 16

# The key's criteria but the tie-breaker (last), in CANONICAL's order, as the search bounds them.
_PREFIX = ranking.CANONICAL[:-1]
_COLUMN = {c: i for i, c in enumerate(criteria.PER_POD)}
_SUMS = tuple((i, _COLUMN[c]) for i, c in enumerate(_PREFIX) if c.kind is Kind.SUM)
_MAXES = tuple((i, _COLUMN[c]) for i, c in enumerate(_PREFIX) if c.kind is Kind.MAX)
_RUNNING = tuple((i, c.running) for i, c in enumerate(_PREFIX) if c.kind is Kind.SET and c.running is not None)


@dataclass(frozen=True, slots=True)
class Search:
    """What every way of choosing victims on one node works with (policy.victims builds it)."""

    room: dict[str, int]  # what the pods that stay may use of each checked resource
    checked: Sequence[str]
    live: Sequence[Pod]  # the live candidates, most important first (policy.importance)
    leaving: Sequence[Pod]  # the terminating candidates the answer names
    facts: Facts  # what the criteria know of the request (policy.criteria)
    order: ranking.Order = ranking.DEFAULT


@dataclass(frozen=True, slots=True)
class Found:
    victims: tuple[Pod, ...]  # most important first
    cost: ranking.Cost

    @property
    def key(self) -> tuple:
        return self.cost.key

    @property
    def violations(self) -> Violations:
        return self.cost.detail(ranking.PDB_VIOLATIONS)


@dataclass(frozen=True, slots=True)
class _Class:
    pods: tuple[Pod, ...]  # most important first; the last ones are evicted first
    needs: tuple[int, ...]  # what one pod uses of each checked resource
    values: tuple  # one pod's values (policy.criteria.values)
    running: tuple  # what each running criterion (_RUNNING) needs of the class


def cheapest(search: Search, *, beat: tuple) -> Found | None:
    """The cheapest set of live victims (with every leaving pod named) after which the rest fit
    in ``search.room``, if it costs strictly less than ``beat`` (in ``search.order``); else None."""
    room, checked, live, leaving, facts, order = (
        search.room, search.checked, search.live, search.leaving, search.facts, search.order
    )
    states = tuple(running.start(live, facts) for _, running in _RUNNING)
    classes = _classes(live, checked, facts, states)
    # suffix[i]: what classes i.. use if all their pods stay.
    suffix = [tuple(0 for _ in checked)]
    for c in reversed(classes):
        suffix.append(tuple(s + n * len(c.pods) for s, n in zip(suffix[-1], c.needs)))
    suffix.reverse()
    best: list = [beat, None]

    def fits(i: int, left: tuple[int, ...]) -> bool:
        return all(s <= l for s, l in zip(suffix[i], left))

    def leaf(evicted: list[Pod]) -> None:
        victims = tuple(sorted((*leaving, *evicted), key=importance))
        cost = order.cost(victims, facts)
        if cost.key < best[0]:
            best[0], best[1] = cost.key, Found(victims, cost)

    def visit(i: int, left: tuple[int, ...], evicted: list[Pod], bound: _Bound) -> None:
        if fits(i, left):
            leaf(evicted)  # every remaining pod stays: more victims could only cost more
            return
        c = classes[i]
        size = len(c.pods)
        for j in range(size + 1):  # j victims of this class, its least important ones
            kept = size - j
            after = tuple(l - n * kept for l, n in zip(left, c.needs))
            if any(a < 0 for a in after):
                continue  # more of this class must go
            more = bound.evict(c, c.pods[kept:], evicted, facts) if j else bound
            low = order.arrange_prefix(more.low)
            if low > best[0][: len(low)]:
                break  # more victims of this class only cost more
            if low == best[0][: len(low)] and not fits(i + 1, after):
                break  # a tie at best, and it needs more victims still
            visit(i + 1, after, [*evicted, *c.pods[kept:]], more)

    visit(0, tuple(room[r] for r in checked), [], _Bound(tuple(c.least for c in _PREFIX), states))
    return best[1]


def improve(search: Search, *, victims: Sequence[Pod], key: tuple) -> Found | None:
    """One pass of single swaps from ``victims`` (live ones of a greedy result, cost ``key``):
    for each victim, most important first, try to keep it, making room by evicting the least
    important of the kept pods, then giving back (most important first) every victim not
    needed, so that the set stays inclusion-minimal.
    Returns the cheapest set found if strictly cheaper than ``key``; else None."""
    room, checked, live, leaving = search.room, search.checked, search.live, search.leaving
    needs = {p.uid: tuple(p.requests.get(r, 0) for r in checked) for p in live}
    limit = tuple(room[r] for r in checked)

    def fits(used) -> bool:
        return all(u <= l for u, l in zip(used, limit))

    def plus(used, uid, sign=1):
        return tuple(u + sign * n for u, n in zip(used, needs[uid]))

    current = {p.uid for p in victims if not p.terminating}
    kept_use = tuple(0 for _ in checked)
    for p in live:
        if p.uid not in current:
            kept_use = plus(kept_use, p.uid)
    best: Found | None = None
    for pod in sorted((p for p in live if p.uid in current), key=importance):
        if pod.uid not in current:
            continue  # given back by an earlier swap: already kept
        used, taken = plus(kept_use, pod.uid), []
        for other in reversed(live):  # least important first
            if fits(used):
                break
            if other.uid not in current:
                taken.append(other)
                used = plus(used, other.uid, -1)
        if not fits(used):
            continue
        candidate = {p.uid for p in taken} | (current - {pod.uid})
        # Give back every victim not needed, most important first: the pods just taken, and
        # earlier victims that a larger eviction has made unnecessary (inclusion-minimal).
        for other in live:
            if other.uid in candidate and fits(back := plus(used, other.uid)):
                used = back
                candidate.discard(other.uid)
        chosen = tuple(sorted((*leaving, *(p for p in live if p.uid in candidate)), key=importance))
        cost = search.order.cost(chosen, search.facts)
        if cost.key < (best.key if best else key):
            best = Found(chosen, cost)
            current, kept_use = candidate, used
    return best


@dataclass(frozen=True, slots=True)
class _Bound:
    """Ranking's key but its last criterion for the victims chosen so far, in CANONICAL's
    order (the start of the most important victims is known only for a whole set), and each
    running criterion's state."""

    low: tuple
    states: tuple

    def evict(self, c: _Class, pods: Sequence[Pod], before: Sequence[Pod], facts: Facts) -> "_Bound":
        """The bound with ``pods`` (of class ``c``) evicted after ``before``."""
        low = list(self.low)
        n = len(pods)
        values = c.values
        for at, column in _SUMS:
            low[at] += values[column] * n
        for at, column in _MAXES:
            if values[column] > low[at]:
                low[at] = values[column]
        states = list(self.states)
        for k, (at, running) in enumerate(_RUNNING):
            states[k], added = running.add(states[k], c.running[k], pods, before, facts)
            low[at] += added
        return _Bound(tuple(low), tuple(states))


def _classes(live: Sequence[Pod], checked: Sequence[str], facts: Facts, states: tuple) -> list[_Class]:
    """``live`` grouped into classes of interchangeable pods, most important class first. Pods
    are interchangeable when they use the same and agree on every criterion of the key but the
    start: their values, and what each running criterion needs alike (PDB violations keep
    every pod alone where budgets overlap)."""
    groups: dict[tuple, list[Pod]] = {}
    for pod in live:
        needs = tuple(pod.requests.get(r, 0) for r in checked)
        alike = tuple(running.alike(state, pod, facts) for (_, running), state in zip(_RUNNING, states))
        groups.setdefault((needs, criteria.values(pod, facts), alike), []).append(pod)
    classes = []
    for (needs, values, _), pods in groups.items():
        of_class = tuple(running.of_class(state, pods[0], facts) for (_, running), state in zip(_RUNNING, states))
        classes.append(_Class(tuple(pods), needs, values, of_class))
    classes.sort(key=lambda c: importance(c.pods[0]))
    return classes

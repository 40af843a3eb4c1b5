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

Why bounding works: adding a victim never lowers any criterion of the key (opted-out
victims, broken gangs, PDB violations, victims with no home, highest priority, Guaranteed and Burstable counts, the shifted
priority sum, the count) and raises the count, so a set's key bounds every superset's from
below, and a set whose kept pods all fit needs no further victim.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policy import gangs, ranking
from policy.importance import importance
from policy.model import Pod
from policy.pdb import BudgetsOf, Violations, count_violations
from policy.qos import QoS

# Above this many live candidates the exact search may take too long for the scheduler's
# cycle (2**EXACT_LIMIT sets at worst, when no two pods are alike): improve() instead.
EXACT_LIMIT = 16


@dataclass(frozen=True, slots=True)
class Found:
    victims: tuple[Pod, ...]  # most important first
    violations: Violations
    key: tuple


@dataclass(frozen=True, slots=True)
class _Class:
    pods: tuple[Pod, ...]  # most important first; the last ones are evicted first
    needs: tuple[int, ...]  # what one pod uses of each checked resource
    opted_out: bool
    budgets: tuple[str, ...]  # budgets one eviction spends
    allowed: tuple[int, ...]
    gang: gangs.Gang | None  # the gang its pods belong to
    homeless: bool  # its pods have no home (policy.homes)


def cheapest(
    *,
    room: dict[str, int],
    checked: Sequence[str],
    live: Sequence[Pod],
    leaving: Sequence[Pod],
    budgets_of: BudgetsOf,
    opted_out: set[str],
    beat: tuple,
    gang_of: gangs.GangOf | None = None,
    order: ranking.Order = ranking.DEFAULT,
    no_home: frozenset[str] = frozenset(),
) -> Found | None:
    """The cheapest set of ``live`` victims (with every ``leaving`` pod named) after which the
    rest fit in ``room``, if it costs strictly less than ``beat``; else None.

    ``live`` is most important first (policy.importance); ``opted_out`` are the UIDs of
    pods whose eviction counts as a last resort (ranking's first criterion); ``gang_of``
    the victims' gangs (policy.gangs); ``order`` the ranking's (``beat`` is in it); ``no_home``
    the UIDs of the candidates with no home (policy.homes)."""
    budget_sets = [_spent(p, budgets_of) for p in live]
    overlapping = any(len(b) > 1 for b in budget_sets)
    classes = _classes(live, budget_sets, checked, opted_out, budgets_of, gang_of, no_home, alike=not overlapping)
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
        violations = count_violations(victims, budgets_of)
        broken = gangs.count_broken(evicted, gang_of).count
        homeless = sum(p.uid in no_home for p in evicted)
        key = order.cost(victims, violations, sum(p.uid in opted_out for p in evicted), broken, homeless).key
        if key < best[0]:
            best[0], best[1] = key, Found(victims, violations, key)

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
            more = bound.evict(c, c.pods[kept:], evicted, budgets_of if overlapping else None) if j else bound
            low = order.arrange_prefix(more.low)
            if low > best[0][: len(low)]:
                break  # more victims of this class only cost more
            if low == best[0][: len(low)] and not fits(i + 1, after):
                break  # a tie at best, and it needs more victims still
            visit(i + 1, after, [*evicted, *c.pods[kept:]], more)

    visit(0, tuple(room[r] for r in checked), [], _Bound.empty())
    return best[1]


def improve(
    *,
    room: dict[str, int],
    checked: Sequence[str],
    live: Sequence[Pod],
    leaving: Sequence[Pod],
    budgets_of: BudgetsOf,
    opted_out: set[str],
    victims: Sequence[Pod],
    key: tuple,
    gang_of: gangs.GangOf | None = None,
    order: ranking.Order = ranking.DEFAULT,
    no_home: frozenset[str] = frozenset(),
) -> Found | None:
    """One pass of single swaps from ``victims`` (live ones of a greedy result, cost ``key``):
    for each victim, most important first, try to keep it, making room by evicting the least
    important of the kept pods, then giving back (most important first) every victim not
    needed, so that the set stays inclusion-minimal.
    Returns the cheapest set found if strictly cheaper than ``key``; else None."""
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
        violations = count_violations(chosen, budgets_of)
        broken = gangs.count_broken(chosen, gang_of).count
        found_key = order.cost(chosen, violations, len(candidate & opted_out), broken, len(candidate & no_home)).key
        if found_key < (best.key if best else key):
            best = Found(chosen, violations, found_key)
            current, kept_use = candidate, used
    return best


@dataclass(frozen=True, slots=True)
class _Bound:
    """Ranking's key but its last criterion for the victims chosen so far, in CANONICAL's
    order (the start of the most important victims is known only for a whole set)."""

    low: tuple
    covered: tuple[tuple[str, int], ...]  # budget key -> victims it covers so far
    taken: tuple[tuple[str, int], ...] = ()  # gang key -> its members taken so far

    @classmethod
    def empty(cls) -> "_Bound":
        return cls((0, 0, 0, float("-inf"), 0, 0, 0, 0, 0), ())

    def evict(self, c: _Class, pods: Sequence[Pod], before: Sequence[Pod], overlapping: BudgetsOf | None) -> "_Bound":
        """The bound with ``pods`` (of class ``c``) evicted after ``before``. Violations add up
        per budget while no pod is covered by two; otherwise (``overlapping`` is the budget
        lookup) they are counted over the whole set, in upstream's order."""
        opted, violations, broken, top, g, b, homeless, total, count = self.low
        taken = self.taken
        if c.gang is not None:
            gang = c.gang
            was = dict(taken).get(gang.key, 0)
            broken += was <= gang.spare < was + len(pods)
            taken = (*(t for t in taken if t[0] != gang.key), (gang.key, was + len(pods)))
        covered = dict(self.covered)
        for budget, allowed in zip(c.budgets, c.allowed):
            was = covered.get(budget, 0)
            covered[budget] = was + len(pods)
            violations += max(0, was + len(pods) - allowed) - max(0, was - allowed)
        if overlapping is not None:
            violations = count_violations(sorted((*before, *pods), key=importance), overlapping).count
        homeless += c.homeless * len(pods)
        for p in pods:
            top = max(top, p.priority)
            g += p.qos == QoS.GUARANTEED
            b += p.qos == QoS.BURSTABLE
            total += p.priority + ranking.SHIFT
        return _Bound(
            (opted + c.opted_out * len(pods), violations, broken, top, g, b, homeless, total, count + len(pods)),
            tuple(covered.items()),
            taken,
        )


def _classes(live, budget_sets, checked, opted_out, budgets_of, gang_of, no_home, *, alike: bool) -> list[_Class]:
    """``live`` grouped into classes of interchangeable pods (if ``alike``), most important
    class first. Pods are interchangeable when they agree on everything the key counts except
    their start time: priority, QoS, what they use, the budgets they spend, being opted out,
    their gang, having a home."""
    groups: dict[tuple, list[Pod]] = {}
    for pod, budgets in zip(live, budget_sets):
        needs = tuple(pod.requests.get(r, 0) for r in checked)
        gang = gang_of(pod) if gang_of is not None else None
        signature = (
            pod.priority, pod.qos, needs, tuple(b.key for b in budgets), pod.uid in opted_out,
            gang.key if gang is not None else None, pod.uid in no_home,
        )
        groups.setdefault(signature if alike else (pod.uid,), []).append(pod)
    classes = []
    for pods in groups.values():
        budgets = _spent(pods[0], budgets_of)
        classes.append(
            _Class(
                pods=tuple(pods),
                needs=tuple(pods[0].requests.get(r, 0) for r in checked),
                opted_out=pods[0].uid in opted_out,
                budgets=tuple(b.key for b in budgets),
                allowed=tuple(b.disruptions_allowed for b in budgets),
                gang=gang_of(pods[0]) if gang_of is not None else None,
                homeless=pods[0].uid in no_home,
            )
        )
    classes.sort(key=lambda c: importance(c.pods[0]))
    return classes


def _spent(pod: Pod, budgets_of: BudgetsOf):
    """The budgets whose allowance evicting the live ``pod`` spends (policy.pdb's rule)."""
    return [b for b in budgets_of(pod) if pod.name not in b.disrupted_pods]

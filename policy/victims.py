"""Choosing the fewest and least important victims on one node, after upstream's ``SelectVictimsOnNode``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from policy import apps, exact, gangs, jobs, ranking, resources
from policy.causes import Cause
from policy.criteria import Facts, pending_room
from policy.homes import NONE_HOMELESS, Homeless, Homes, homeless
from policy.importance import more_important, most_important_first
from policy.model import Pod
from policy.guards import Inside
from policy.pdb import BudgetsOf, Violations, spent_on, violating
from policy.pdb import protected as protected_by_budgets
from policy.resources import Vector
from policy.tenancy import Judgement, Screen
from policy.view import NodeInfo


# Why a live pod the answer may not name stays (see select_victims' ``unnameable``).
UNSETTLED = "may be unknown to the scheduler yet"
ANSWERED = "named in an earlier answer, so the scheduler may have deleted it already"


@dataclass(frozen=True, slots=True)
class Choosing:
    """What choosing victims needs of one preemption request, whatever the node: built once per
    request (policy.preempt) and shared by every node it judges."""

    preemptor: Pod
    budgets_of: BudgetsOf
    screen: Screen | None = None  # the multi-tenant rules' (policy.tenancy)
    gang_of: gangs.GangOf | None = None  # policy.gangs
    order: ranking.Order = ranking.DEFAULT  # how victim sets rank (policy.ranking)
    homes: Homes | None = None  # where victims could go (policy.homes)
    inside: Inside | None = None  # why a pod is inside its minimum runtime (policy.guards)
    strict_of: BudgetsOf | None = None  # the strict budgets covering a pod (policy.guards)
    app_of: apps.AppOf | None = None  # applications with a manager (policy.apps)
    stake_of: jobs.StakeOf | None = None  # what evicting a pod costs its Job (policy.jobs)
    # The greedy orders' cheapest result per node and inputs (_greedy_best), kept for the
    # request: policy.preempt asks again for the node it offers, with the swap pass.
    greedy: dict = field(default_factory=dict, compare=False, repr=False)
    now: float | None = None  # the request's time, seconds since the epoch (policy.criteria.work_lost)
    pending: pending_room.Queue | None = None  # the view's pending pods (policy.criteria.pending_room)


@dataclass(frozen=True, slots=True)
class VictimSelection:
    node: str
    victims: tuple[Pod, ...]  # most important first, as the scheduler's ranking expects
    violations: Violations
    reasons: tuple[str, ...]
    opted_out: int = 0  # victims whose PriorityClass opts out of preemption (a last resort)
    broken: gangs.Broken = gangs.NONE_BROKEN  # the gangs the victims break (policy.gangs)
    homeless: Homeless = NONE_HOMELESS  # the victims with nowhere else to go (policy.homes)
    cost: ranking.Cost | None = None  # the victims' rank key (policy.ranking)


@dataclass(frozen=True, slots=True)
class NodeRejected:
    node: str
    reason: str
    cause: Cause


@dataclass(frozen=True, slots=True)
class _Here:
    """One node's choice in progress: what stays whatever the victims, and what may go."""

    node: NodeInfo
    reservations: Sequence[Pod]
    protected: dict[str, str]  # pod key -> why it stays
    unnameable: Callable[[Pod], str] | None
    at_least: Vector | None
    swap: bool
    young: frozenset[str] = frozenset()  # keys of the protected pods inside their minimum runtime


def select_victims(
    *,
    node: NodeInfo,
    choosing: Choosing,
    reservations: Sequence[Pod] = (),
    unnameable: Callable[[Pod], str] | None = None,
    at_least: Vector | None = None,
    swap: bool = True,
) -> VictimSelection | NodeRejected:
    """The victims reprieve would evict on ``node`` so that ``choosing.preemptor`` fits.

    1. Potential victims are the pods on the node with priority strictly below the preemptor's
       that the multi-tenant rules allow (``choosing.screen``, see policy.tenancy); the pods the
       rules protect stay, like higher-priority pods.
    2. Remove them all. If the preemptor still does not fit next to the remaining pods and
       the room held for nominated pods (``reservations``), preemption cannot help here.
    3. Reprieve: add potential victims back one at a time while the preemptor still fits,
       members of gangs that cannot spare them first (policy.gangs.protected),
       PDB-protected pods first (policy.pdb.protected), pods with no home elsewhere first
       (policy.homes), pods whose Job counts their eviction first (policy.jobs), then the
       rest, each group most important first (see
       policy.importance). Terminating pods are never reprieved: they are
       leaving anyway and cost nothing to name. A BestEffort pod requests no cpu or memory,
       so it is only ever a victim when the node's pod-count limit is what blocks.
    4. The victims are the pods not reprieved, most important first, with the exact count of
       PodDisruptionBudget violations and the gangs broken for that set. "Cheapest" is by
       ``choosing.order`` (policy.ranking) throughout.

    With rules, pods whose PriorityClass opts out softly are left out of a first attempt and
    only become victims (reprieved before everyone else) if the preemptor cannot fit without
    them. If the victims would leave another queue below its share, the attempt is repeated
    with that queue's pods reprieved first; if that fails too, the node is rejected.

    With the policy's guards (policy.guards), pods inside their minimum runtime stay like
    protected ones (``choosing.inside``), and a set that violates a strict budget
    (``choosing.strict_of``; its criterion first in ``choosing.order``) is no answer: the
    attempt with the last resorts is tried, and if every attempt's cheapest set still violates
    one, the node is rejected (Cause.STRICT_BUDGET).

    ``unnameable`` says why the answer may not name a pod, "" where it may (policy.preempt: it
    names only pods the scheduler can resolve). A live pod it refuses stays, like a protected
    one; a terminating pod it refuses still leaves (its room is freed) but is not named.
    ``at_least``: the victims named must free at least this much of every resource the
    preemptor requests (the scheduler's own victims, when its proposal shows it sees less room
    than reprieve).

    Then a search for a cheaper set (policy.exact): every set when the node has few candidates,
    single swaps from the best greedy result when it has many (``swap``; policy.preempt runs
    that pass only on the node it offers, since it costs more than the rest together, and
    here on a node with many candidates that would be dropped for a strict budget without it).

    The result is inclusion-minimal: a failed reprieve only gets harder as later pods are
    added back, so no single victim could be spared (upstream's order, which also reprieves
    terminating pods, has the victims that fit back once they are gone given back).
    """
    # Step 1.
    preemptor = choosing.preemptor
    lower = [p for p in node.pods if p.priority < preemptor.priority]
    if not lower:
        return NodeRejected(node.name, f"no pod has priority below {preemptor.priority}", Cause.NO_LOWER_PRIORITY)
    protected, last_resort, young = _screened(lower, choosing, unnameable)
    here = _Here(node, reservations, protected, unnameable, at_least, swap, young)
    candidates = [p for p in lower if p.key not in protected]
    shunned = {p.uid for p in last_resort}
    attempts = [([p for p in candidates if p.uid not in shunned], ())]
    if last_resort:
        attempts.append((candidates, tuple(last_resort)))
    result: VictimSelection | NodeRejected | None = None
    violating: VictimSelection | None = None  # the first attempt's set that violates a strict budget
    for pool, spare_first in attempts:
        result = _attempt(here, choosing, pool, spare_first)
        if isinstance(result, VictimSelection):
            if not _strict_violations(result).count:
                break
            violating = violating or result
    assert result is not None
    if violating is not None and (not isinstance(result, VictimSelection) or _strict_violations(result).count):
        if not swap and len(candidates) > exact.EXACT_LIMIT:
            # Before giving up a large node, the swap pass its greedy orders skipped may keep them.
            return select_victims(node=node, choosing=choosing, reservations=reservations, unnameable=unnameable,
                                  at_least=at_least, swap=True)
        return _breaks_strict(here, violating, len(candidates))
    if isinstance(result, NodeRejected) and not candidates:
        return NodeRejected(
            node.name, f"every lower-priority pod is protected: {_protections(protected)}", _cause(protected, young)
        )
    return result


def _strict_violations(selection: VictimSelection) -> Violations:
    return selection.cost.detail(ranking.STRICT_BUDGETS)


def _breaks_strict(here: _Here, violating: VictimSelection, candidates: int) -> NodeRejected:
    """The node's cheapest victims still violate a strict budget: no answer here. Exact where
    the search saw every set (policy.exact.EXACT_LIMIT); above it, of the sets it tried."""
    strict = _strict_violations(violating)
    which = "every victim set that makes room here" if candidates <= exact.EXACT_LIMIT else (
        f"every victim set reprieve tried here ({candidates} candidates, more than it can try one by one)"
    )
    reason = (
        f"{which} violates strict PodDisruptionBudget {', '.join(strict.budgets)}: the cheapest "
        f"({_names(violating.victims)}) takes {strict.count} victim(s) past its allowance"
    )
    if here.protected:
        reason += f"; {len(here.protected)} protected: {_protections(here.protected)}"
    return NodeRejected(here.node.name, reason, Cause.STRICT_BUDGET)


def _screened(
    lower: Sequence[Pod], choosing: Choosing, unnameable: Callable[[Pod], str] | None
) -> tuple[dict[str, str], list[Pod], frozenset[str]]:
    """The lower-priority pods that stay whatever (key -> why: the answer may not name them,
    they are inside their minimum runtime, or the rules protect them), those the rules make a
    last resort, and the keys of those inside their minimum runtime."""
    protected: dict[str, str] = {}
    last_resort: list[Pod] = []
    screen, inside = choosing.screen, choosing.inside
    if unnameable is not None:
        for pod in lower:
            if not pod.terminating and (why := unnameable(pod)):
                protected[pod.key] = why
    young = set()
    if inside is not None:
        for pod in lower:
            if pod.key not in protected and (why := inside(pod)):  # inside() passes terminating pods
                protected[pod.key] = why
                young.add(pod.key)
    if screen is not None:
        for pod in lower:
            if pod.terminating or pod.key in protected:
                continue  # leaving anyway: naming it takes nothing from anyone
            judgement, why = screen.judge(pod)
            if judgement is Judgement.PROTECTED:
                protected[pod.key] = why
            elif judgement is Judgement.LAST_RESORT:
                last_resort.append(pod)
    return protected, last_resort, frozenset(young)


def _attempt(
    here: _Here, choosing: Choosing, candidates: list[Pod], spare_first: tuple[Pod, ...]
) -> VictimSelection | NodeRejected:
    """One attempt of select_victims with ``candidates`` as the potential victims, the pods
    of ``spare_first`` (opted out) reprieved before everyone else."""
    node, preemptor = here.node, choosing.preemptor
    checked = resources.checked_resources(preemptor.requests)
    # Step 2: everything that is not a candidate stays.
    room = _room(here, preemptor, candidates, checked)
    if isinstance(room, NodeRejected):
        return room
    # Step 3, and again with the pods of a queue that would fall below its share spared first.
    live = most_important_first(p for p in candidates if not p.terminating)
    # Terminating pods leave anyway; the answer names only those the scheduler can resolve.
    leaving = [p for p in candidates if p.terminating and (here.unnameable is None or not here.unnameable(p))]
    if here.at_least is not None:
        room = _freeing_at_least(here, room, checked, (*live, *leaving))
        if isinstance(room, NodeRejected):
            return room
    if choosing.strict_of is not None:
        short = _strict_shortfall(room, checked, live, choosing.strict_of)
        if short:
            return NodeRejected(node.name, f"every victim set that makes room here violates {short}", Cause.STRICT_BUDGET)
    first = frozenset(p.uid for p in spare_first)
    homes = choosing.homes
    no_home = frozenset(p.uid for p in live if homes.home(p, excluding=node.name) is None) if homes else frozenset()
    facts = Facts(
        choosing.budgets_of, choosing.gang_of, first, no_home,
        app_of=choosing.app_of, strict_of=choosing.strict_of, stake_of=choosing.stake_of,
        now=choosing.now, allocatable=node.node.allocatable,
        pending_room=pending_room.room(choosing.pending, node.node, node.requested, preemptor, here.reservations),
    )
    search = exact.Search(room, checked, live, leaving, facts, choosing.order)
    greedy = _greedy_best(here, choosing, search, candidates, first)
    best = _best_reprieve(search, greedy, here, choosing.screen)
    # Law 2 over the whole set: if the reprieve takes too much from some queue, choose again,
    # least important first, skipping pods whose queue could not afford them.
    screen = choosing.screen
    short = screen.shortfalls(best.victims) if screen is not None else {}
    if short:
        budgeted = _within_shares(room, checked, live, leaving, screen, first)
        if budgeted is None:
            reason = next(iter(short.values()))
            return NodeRejected(node.name, f"the victims it needs are out of reach: {reason}", Cause.QUEUE_SHARE)
        victims = most_important_first(budgeted)
        best = _Best(choosing.order.cost(victims, facts), victims, len(live) + len(leaving) - len(victims), frozenset(), "")
    return _selection(here, choosing, best, candidates, facts)


def _strict_shortfall(room: dict[str, int], checked: Sequence[str], live: Sequence[Pod], strict_of: BudgetsOf) -> str:
    """Why no victim set keeps every strict budget ('' if one may; else the budgets that cover
    more candidates than they allow, and the shortfall): the most the victims can
    free without a strict violation, the live pods no strict budget covers and, per strict
    budget, its ``disruptionsAllowed`` largest members (an upper bound, as policy.bounds'
    spared: a pod under two budgets counts in both), is short of what they must free. A cheap
    check before the search, so that a node that must violate one is not solved."""
    spared = dict.fromkeys(checked, 0)
    members: dict[str, tuple[int, list[Pod]]] = {}
    for pod in live:
        budgets = spent_on(pod, strict_of)
        if not budgets:
            for r in checked:
                spared[r] += pod.requests.get(r, 0)
        for budget in budgets:
            members.setdefault(budget.key, (budget.disruptions_allowed, []))[1].append(pod)
    for allowed, pods in members.values():
        if allowed > 0:
            for r in checked:
                spared[r] += sum(sorted((p.requests.get(r, 0) for p in pods), reverse=True)[:allowed])
    short = {}
    for r in checked:
        need = sum(p.requests.get(r, 0) for p in live) - room[r]
        if need > spared[r]:
            short[r] = need - spared[r]
    if not short:
        return ""
    tight = sorted(key for key, (allowed, pods) in members.items() if len(pods) > allowed)
    return (
        f"strict PodDisruptionBudget {', '.join(tight)}: the pods it may take within their allowance free too "
        f"little (short of {resources.describe(short)})"
    )


def _room(here: _Here, preemptor: Pod, candidates: list[Pod], checked: Sequence[str]) -> dict[str, int] | NodeRejected:
    """What the reprieved candidates may use of each checked resource: the node's room once
    every candidate is gone and the preemptor and the room held are placed."""
    node = here.node
    pool = {p.uid for p in candidates}
    staying = [p for p in node.pods if p.priority < preemptor.priority and p.uid not in pool]
    kept = resources.add(
        node.requested_at_or_above(preemptor.priority),
        *(p.requests for p in staying),
        *(p.requests for p in here.reservations),
    )
    alloc = node.node.allocatable
    missing = resources.shortfalls(request=preemptor.requests, allocatable=alloc, used=kept)
    if missing:
        return _no_room(here, f"short of {resources.describe(missing)}")
    return {r: alloc.get(r, 0) - kept.get(r, 0) - preemptor.requests[r] for r in checked}


def _freeing_at_least(
    here: _Here, room: dict[str, int], checked: Sequence[str], named: Sequence[Pod]
) -> dict[str, int] | NodeRejected:
    """``room`` capped so that the victims named free at least ``here.at_least``: the reprieved
    may use no more than the rest."""
    for r in checked:
        cap = sum(p.requests.get(r, 0) for p in named) - here.at_least.get(r, 0)
        room[r] = min(room[r], cap)
    short = {r: -v for r, v in room.items() if v < 0}
    if short:
        return _no_room(here, f"cannot free as much as the scheduler's own victims (short of {resources.describe(short)})")
    return room


def _selection(
    here: _Here, choosing: Choosing, best: "_Best", candidates: list[Pod], facts: Facts
) -> VictimSelection:
    """Step 4: the chosen victims, with their reasons (_best_reprieve ordered them and counted
    their violations)."""
    node, victims, checked = here.node, best.victims, resources.checked_resources(choosing.preemptor.requests)
    violations = best.cost.detail(ranking.PDB_VIOLATIONS)
    freed = resources.add(*(p.requests for p in victims))
    lower = sum(p.priority < choosing.preemptor.priority for p in node.pods)
    reasons = [
        f"{lower} lower-priority pod(s), {best.reprieved} reprieved"
        + (f" ({len(best.shielded)} PDB-protected tried first)" if best.shielded else "")
        + (f" ({best.searched})" if best.searched else ""),
        f"evicting {len(victims)} frees {resources.describe(_only(freed, checked))}",
        violations.describe(),
    ]
    broken = best.cost.detail(ranking.BROKEN_GANGS)
    if broken.count:
        reasons.append(broken.describe())
    reasons.extend(jobs.reasons(victims, choosing.stake_of, best.cost.detail(ranking.JOBS_FAILED)))
    whole = gangs.kept_whole(candidates, victims, choosing.gang_of)
    if whole:
        reasons.append("takes no more than it can spare from " + "; ".join(g.describe() for g in whole))
    ended = best.cost.detail(ranking.MANAGERS)
    if ended.count:
        reasons.append(ended.describe())
    kept = _managers_kept(candidates, victims, choosing.app_of)
    if kept:
        reasons.append("keeps the manager of " + "; ".join(kept))
    gone = homeless(victims, choosing.homes, node=node.name) if choosing.homes is not None else NONE_HOMELESS
    if gone.count:
        reasons.append(gone.describe())
    if here.at_least is not None:
        reasons.append(
            f"frees at least what the scheduler's victims free ({resources.describe(_only(here.at_least, checked))}): "
            "its proposal shows it sees less room here than reprieve"
        )
    if here.protected:
        reasons.append(f"{len(here.protected)} protected: {_protections(here.protected)}")
    opted_out = sum(p.uid in facts.opted_out for p in victims)
    if opted_out:
        reasons.append(f"{opted_out} victim(s) opted out of preemption: no victim set without them fits")
    if here.reservations:
        reasons.append(f"room held for nominated {_names(here.reservations)} kept free")
    return VictimSelection(node.name, victims, violations, tuple(reasons), opted_out, broken, gone, best.cost)


def _managers_kept(candidates: Sequence[Pod], victims: Sequence[Pod], app_of: apps.AppOf | None) -> list[str]:
    """``Spark application ns/x (4 running pod(s)): ns/driver`` for each live candidate that
    manages running pods and stays (policy.apps): what the choice kept from ending."""
    gone = {p.uid for p in victims}
    kept = []
    for pod in candidates:
        found = None if pod.terminating or pod.uid in gone else apps.manages(pod, app_of)
        if found is not None and found.running > 1:
            kept.append(f"{found.describe()}: {pod.key}")
    return kept


def _no_room(here: _Here, short: str) -> NodeRejected:
    node, reservations, protected = here.node, here.reservations, here.protected
    held = f" (room held for {_names(reservations)})" if reservations else ""
    if protected:
        return NodeRejected(
            node.name,
            f"does not fit unless protected pods go{held}: {short}; {_protections(protected)}",
            _cause(protected, here.young),
        )
    return NodeRejected(
        node.name, f"does not fit even with every lower-priority pod removed{held}: {short}", Cause.DOES_NOT_FIT
    )


def _cause(protected: dict[str, str], young: frozenset[str]) -> Cause:
    """Only kept because the answer may not name them (the scheduler may not know them yet, or
    may have deleted them already; when any is: policy.preempt then weighs the scheduler's own
    victims, _no_room_here, which checks the rules and guards itself), protected by the
    multi-tenant rules, or inside a minimum runtime."""
    if any(why in (UNSETTLED, ANSWERED) for why in protected.values()):
        return Cause.DOES_NOT_FIT
    if any(key not in young for key in protected):
        return Cause.PROTECTED
    return Cause.MIN_RUNTIME if young else Cause.DOES_NOT_FIT


def _orders(
    live: Sequence[Pod], terminating: Sequence[Pod], facts: Facts, checked: Sequence[str], *, ganged: bool = True
) -> list[tuple[Callable, frozenset[str], Sequence[Pod]]]:
    """The greedy orders to reprieve in, each (sort key, pods it tries first, pods it may
    reprieve), after the pods to spare first (``facts.opted_out``). Orders that would
    be the same as an earlier one on this node are left out.

    No order is always cheapest: with a budget allowing 1 of a (2 cpu), b and c (1 each) and
    room for 2, PDB-protected first keeps a and loses b and c (1 violation), upstream's
    violators first keeps b and c and loses a (none); and when PDB-protected pods of low
    priority are kept first, pods of higher priority may go where one low-priority pod would
    do. Where a budget must be violated, keeping its pods first and the smallest first (then
    the others, smallest first) evicts the fewest of them: one 8-cpu victim instead of four 2-cpu ones, one violation instead of four (and
    what policy.bounds proves the fewest possible, so that preempt can leave the other
    candidates unsolved). With strict budgets, their pods come first of all in two orders: most
    important first, and smallest first (where only some fit, the allowance goes on the
    largest, as above). The last is upstream's own SelectVictimsOnNode (priority and start
    time, its violators first, terminating pods reprieved like the others), so that the
    result never costs more than the set stock kube-scheduler picks on the node.

    Members of gangs that cannot spare them (policy.gangs.protected) come first in a copy of
    every order but upstream's, tried before the plain ones (the ranking's order decides
    between a broken gang and what keeping it costs, policy.ranking). Where
    some candidates have no home (``facts.no_home``), one more order keeps them first; where
    some manage an application (policy.apps), one more keeps them first; where some candidates'
    Jobs would fail, or count their eviction (policy.jobs), one more keeps those first (each:
    _job_orders).
    """
    first, no_home, budgets_of = facts.opted_out, facts.no_home, facts.budgets_of
    in_gangs = gangs.protected(live, facts.gang_of) if ganged else frozenset()
    if in_gangs:
        plain = _orders(live, terminating, facts, checked, ganged=False)
        # The same orders with the gangs' members kept first, then the plain ones as they are
        # (keeping a gang may cost more PDB violations than it saves: the key decides).
        ganged = [
            ((lambda p, k=key_of: (p.uid not in first, p.uid not in in_gangs, k(p)[1:])), shield, pool)
            for key_of, shield, pool in plain[:-1]
        ]
        return [*ganged, *plain]
    protected = protected_by_budgets(live, budgets_of)
    violators = violating(live, budgets_of)
    everyone = sorted((*live, *terminating), key=more_important)
    upstream = violating(everyone, budgets_of, terminating_spends=True)
    orders = []
    strict = protected_by_budgets(live, facts.strict_of) if facts.strict_of is not None else frozenset()
    if strict:
        # The strict budgets' pods kept before every other (policy.guards): where a set that
        # violates none exists and they fit together, this order finds one.
        orders.append((lambda p: (p.uid not in first, p.uid not in strict, p.uid not in protected), strict, live))
        # The same, smallest first: where they do not all fit, the allowance goes on the largest.
        sized = _sizes(live, checked)
        orders.append((lambda p: (p.uid not in first, p.uid not in strict, sized[p.uid]), strict, live))
    if protected:
        orders.append((lambda p: (p.uid not in first, p.uid not in protected), protected, live))
    if violators:
        orders.append((lambda p: (p.uid not in first, p.uid not in violators), violators, live))
    orders.append((lambda p: (p.uid not in first,), frozenset(), live))
    if no_home and len(no_home) < len(live):
        orders.append((lambda p: (p.uid not in first, p.uid not in no_home), frozenset(), live))
    managing = frozenset(p.uid for p in live if apps.manages(p, facts.app_of) is not None)
    if managing and len(managing) < len(live):
        orders.append((lambda p: (p.uid not in first, p.uid not in managing), frozenset(), live))
    for kept in _job_orders(live, facts):
        orders.append((lambda p, kept=kept: (p.uid not in first, p.uid not in kept), frozenset(), live))
    if protected:
        size = _sizes(live, checked)
        orders.append((lambda p: (p.uid not in first, p.uid not in protected, size[p.uid]), protected, live))
    orders.append((lambda p: (p.uid not in first, p.uid not in upstream, more_important(p)), upstream, everyone))
    return orders


def _job_orders(live: Sequence[Pod], facts: Facts) -> list[frozenset[str]]:
    """The pods to keep first in an order of their own (policy.jobs): those whose eviction alone
    fails their Job or index, then all whose Job counts their eviction; each only where it is
    some of the candidates but not all, and not the same as the one before."""
    if facts.stake_of is None:
        return []
    stakes = [(p.uid, facts.stake_of(p)) for p in live]
    failing = frozenset(uid for uid, s in stakes if s is not None and s.fails_alone() is not None)
    burning = frozenset(uid for uid, s in stakes if s is not None and s.counts)
    return [kept for kept in dict.fromkeys((failing, burning)) if kept and len(kept) < len(live)]


def _sizes(live: Sequence[Pod], checked: Sequence[str]) -> dict[str, float]:
    """Each pod's largest share of what the pods together request of a checked resource."""
    totals = {r: sum(p.requests.get(r, 0) for p in live) or 1 for r in checked}
    return {p.uid: max((p.requests.get(r, 0) / totals[r] for r in checked), default=0.0) for p in live}


class _Best(NamedTuple):
    cost: ranking.Cost
    victims: Sequence[Pod]  # most important first
    reprieved: int
    shielded: frozenset[str]  # the pods the winning greedy order tried first
    searched: str  # how a search (policy.exact) beat the greedy orders, or ""


def _greedy_best(
    here: _Here, choosing: Choosing, search: exact.Search, candidates: list[Pod], first: frozenset[str]
) -> _Best:
    """_best_greedy over _orders, once per request for the same node and inputs (the node
    offered is judged again with the swap pass): keyed by the node's name, the candidates and
    terminating pods named (the objects, kept alive beside the result so that their ids stay
    theirs), the room, the pods spared first and the floor; the rest is the request's."""
    at_least = here.at_least
    key = (
        here.node.name, tuple(map(id, candidates)), tuple(map(id, search.leaving)), tuple(search.room.items()), first,
        None if at_least is None else tuple(sorted(at_least.items())),
    )
    kept = choosing.greedy.get(key)
    if kept is None:
        terminating = [p for p in candidates if p.terminating]
        best = _best_greedy(search, _orders(search.live, terminating, search.facts, search.checked), at_least)
        kept = choosing.greedy[key] = (tuple(candidates), tuple(search.leaving), best)
    return kept[2]


def _best_reprieve(search: exact.Search, best: _Best, here: _Here, screen: Screen | None) -> _Best:
    """``best``, the cheapest of the greedy orders by the ranking's order (_greedy_best; ties:
    the earlier greedy order), or a cheaper set (policy.exact): every set when the node
    has few candidates, single swaps when it has many (and ``here.swap``). Terminating victims are
    named only if in ``search.leaving``; a result that names less than ``here.at_least`` is not
    taken, and a searched set the rules refuse (``screen``, law 2) does not replace a greedy one
    they accept."""
    if len(search.live) <= exact.EXACT_LIMIT:
        better = exact.cheapest(search, beat=best.cost.key)
        how = "no greedy order was cheapest: the cheapest of every set"
    elif here.swap:
        better = exact.improve(search, victims=best.victims, key=best.cost.key)
        how = "swapping victims beat every greedy order"
    else:
        better = None
    if better is not None and screen is not None and screen.shortfalls(better.victims) and not screen.shortfalls(best.victims):
        better = None  # cheaper, but it takes too much from some queue: the greedy set stands
    if better is None:
        return best
    evicted = sum(not p.terminating for p in better.victims)
    return _Best(better.cost, better.victims, len(search.live) - evicted, frozenset(), how)


def _best_greedy(search: exact.Search, greedy: list, at_least: Vector | None) -> _Best:
    """The cheapest of the greedy orders' results (ties: the earlier order)."""
    room, checked, live, leaving = search.room, search.checked, search.live, search.leaving
    named = {p.uid for p in leaving}
    best = None
    tried = set()
    for key_of, shield, pool in greedy:
        victims, reprieved = _reprieve(room, checked, pool, () if pool is not live else leaving, key_of)
        victims = most_important_first(p for p in victims if not p.terminating or p.uid in named)
        if pool is not live:
            # Upstream's order reprieves terminating pods too: their room is counted as used,
            # so a live victim may not be needed once they are gone. They leave anyway and are
            # named like in every order (a pod the scheduler cannot resolve is not in
            # ``leaving``): name them, and give back the live victims that fit once they are gone.
            victims = most_important_first({p.uid: p for p in (*victims, *leaving)}.values())
            victims, spared = _spare_unneeded(room, checked, live, victims)
            reprieved += spared
        found = tuple(p.uid for p in victims)
        if found in tried or (at_least is not None and not _frees(victims, at_least, checked)):
            continue
        tried.add(found)
        cost = search.order.cost(victims, search.facts)
        if best is None or cost.key < best.cost.key:
            best = _Best(cost, victims, reprieved, shield, "")
    return best


def _spare_unneeded(room, checked, live, victims) -> tuple[list[Pod], int]:
    """``victims`` without the live ones that fit back in ``room`` beside the live pods kept,
    most important first (inclusion-minimal), and how many were given back."""
    gone = {p.uid for p in victims}
    left = [room[r] - sum(p.requests.get(r, 0) for p in live if p.uid not in gone) for r in checked]
    spared = set()
    for pod in victims:  # most important first
        if pod.terminating:
            continue
        needs = [pod.requests.get(r, 0) for r in checked]
        if all(n <= free for n, free in zip(needs, left)):
            left = [free - n for n, free in zip(needs, left)]
            spared.add(pod.uid)
    if not spared:
        return victims, 0
    return [p for p in victims if p.uid not in spared], len(spared)


def _frees(victims: Sequence[Pod], at_least: Vector, checked: Sequence[str]) -> bool:
    return all(sum(p.requests.get(r, 0) for p in victims) >= at_least.get(r, 0) for r in checked)


def _within_shares(room, checked, live, leaving, screen, first) -> list[Pod] | None:
    """Victims that leave every other queue at or above its share, or None.

    Take pods least important first (opted-out ones last), skipping any whose queue could not
    afford it next to those already taken, until the preemptor fits; then give back, most
    important first, every victim the preemptor can do without. Inclusion-minimal like the
    reprieve, but it may take more important pods than the reprieve would have.
    """
    # The victims must free at least ``need``: what the live candidates use beyond the room.
    need = {r: sum(p.requests.get(r, 0) for p in live) - room[r] for r in checked}

    def frees_enough(pods: list[Pod]) -> bool:
        return all(sum(p.requests.get(r, 0) for p in pods) >= need[r] for r in checked)

    taken: list[Pod] = []
    for pod in _least_important_first(live, first):
        if frees_enough(taken):
            break
        if not screen.shortfalls([*taken, pod]):
            taken.append(pod)
    if not frees_enough(taken):
        return None
    for pod in most_important_first(taken):
        rest = [p for p in taken if p is not pod]
        if frees_enough(rest):
            taken = rest
    return [*leaving, *taken]


def _least_important_first(live: Sequence[Pod], first: set[str]) -> list[Pod]:
    """``live`` (most important first) reversed, with the pods to spare first moved last."""
    backwards = list(reversed(live))
    return [p for p in backwards if p.uid not in first] + [p for p in backwards if p.uid in first]


def _reprieve(room, checked, live, leaving, key_of) -> tuple[list[Pod], int]:
    """Add the ``live`` candidates (most important first) back while they fit in ``room``, by
    ``key_of`` then importance; the rest go, with every ``leaving`` (terminating) pod."""
    order = sorted(live, key=key_of)  # stable: importance order within equal keys
    victims = list(leaving)
    reprieved = 0
    # Pods of one workload share one requests vector: its checked amounts are looked up once.
    amounts: dict[int, tuple[int, ...]] = {}
    left = [room[r] for r in checked]
    width = range(len(left))
    for pod in order:
        needs = amounts.get(id(pod.requests))
        if needs is None:
            needs = amounts[id(pod.requests)] = tuple(pod.requests.get(r, 0) for r in checked)
        for i in width:  # a plain loop: this runs for every pod of every greedy order
            if needs[i] > left[i]:
                victims.append(pod)
                break
        else:
            for i in width:
                left[i] -= needs[i]
            reprieved += 1
    return victims, reprieved


def _protections(protected: dict[str, str], limit: int = 3) -> str:
    """``a, b (why); c (why)``: pods grouped by reason, a few names per reason."""
    by_reason: dict[str, list[str]] = {}
    for key, why in sorted(protected.items()):
        by_reason.setdefault(why, []).append(key)
    parts = []
    for why, keys in by_reason.items():
        more = len(keys) - limit
        parts.append(", ".join(keys[:limit]) + (f" and {more} more" if more > 0 else "") + f" ({why})")
    return "; ".join(parts)


def _only(vector: resources.Vector, names: Iterable[str]) -> dict[str, int]:
    return {n: vector.get(n, 0) for n in names}


def _names(pods: Iterable[Pod]) -> str:
    return ", ".join(sorted(p.key for p in pods))

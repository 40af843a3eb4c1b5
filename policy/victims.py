"""Choosing the fewest and least important victims on one node, after upstream's ``SelectVictimsOnNode``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from policy import exact, gangs, ranking, resources
from policy.causes import Cause
from policy.homes import NONE_HOMELESS, Homeless, Homes, homeless
from policy.importance import more_important, most_important_first
from policy.model import Pod
from policy.pdb import BudgetsOf, Violations, count_violations, violating
from policy.pdb import protected as protected_by_budgets
from policy.resources import Vector
from policy.tenancy import Judgement, Screen
from policy.view import NodeInfo


# Why a live pod the answer may not name stays (see select_victims' ``nameable``).
UNSETTLED = "may be unknown to the scheduler yet"


@dataclass(frozen=True, slots=True)
class VictimSelection:
    node: str
    victims: tuple[Pod, ...]  # most important first, as the scheduler's ranking expects
    violations: Violations
    reasons: tuple[str, ...]
    opted_out: int = 0  # victims whose PriorityClass opts out of preemption (a last resort)
    broken: gangs.Broken = gangs.NONE_BROKEN  # the gangs the victims break (policy.gangs)
    homeless: Homeless = NONE_HOMELESS  # the victims with nowhere else to go (policy.homes)


@dataclass(frozen=True, slots=True)
class NodeRejected:
    node: str
    reason: str
    cause: Cause


def select_victims(
    *,
    node: NodeInfo,
    preemptor: Pod,
    reservations: Sequence[Pod],
    budgets_of: BudgetsOf,
    screen: Screen | None = None,
    nameable: Callable[[Pod], bool] | None = None,
    at_least: Vector | None = None,
    swap: bool = True,
    gang_of: gangs.GangOf | None = None,
    order: ranking.Order = ranking.DEFAULT,
    homes: Homes | None = None,
) -> VictimSelection | NodeRejected:
    """The victims reprieve would evict on ``node`` so that ``preemptor`` fits.

    1. Potential victims are the pods on the node with priority strictly below the preemptor's
       that the multi-tenant rules allow (``screen``, see policy.tenancy); the pods the rules
       protect stay, like higher-priority pods.
    2. Remove them all. If the preemptor still does not fit next to the remaining pods and
       the room held for nominated pods (``reservations``), preemption cannot help here.
    3. Reprieve: add potential victims back one at a time while the preemptor still fits,
       members of gangs that cannot spare them first (policy.gangs.protected, ``gang_of``),
       PDB-protected pods first (policy.pdb.protected), pods with no home elsewhere first
       (policy.homes, ``homes``), then the rest, each group most important first (see
       policy.importance). Terminating pods are never reprieved: they are
       leaving anyway and cost nothing to name. A BestEffort pod requests no cpu or memory,
       so it is only ever a victim when the node's pod-count limit is what blocks.
    4. The victims are the pods not reprieved, most important first, with the exact count of
       PodDisruptionBudget violations and the gangs broken for that set. "Cheapest" is by
       ``order`` (policy.ranking) throughout.

    With rules, pods whose PriorityClass opts out softly are left out of a first attempt and
    only become victims (reprieved before everyone else) if the preemptor cannot fit without
    them. If the victims would leave another queue below its share, the attempt is repeated
    with that queue's pods reprieved first; if that fails too, the node is rejected.

    ``nameable`` says which pods the answer may name (policy.preempt: those the scheduler can
    resolve). A live pod it refuses stays, like a protected one; a terminating pod it refuses
    still leaves (its room is freed) but is not named. ``at_least``: the victims named must
    free at least this much of every resource the preemptor requests (the scheduler's own
    victims, when its proposal shows it sees less room than reprieve).

    Then a search for a cheaper set (policy.exact): every set when the node has few candidates,
    single swaps from the best greedy result when it has many (``swap``; policy.preempt runs
    that pass only on the node it offers, since it costs more than the rest together).

    The result is inclusion-minimal: a failed reprieve only gets harder as later pods are
    added back, so no single victim could be spared (upstream's order, which also reprieves
    terminating pods, has the victims that fit back once they are gone given back).
    """
    # Step 1.
    lower = [p for p in node.pods if p.priority < preemptor.priority]
    if not lower:
        return NodeRejected(node.name, f"no pod has priority below {preemptor.priority}", Cause.NO_LOWER_PRIORITY)
    protected: dict[str, str] = {}
    last_resort: list[Pod] = []
    if nameable is not None:
        for pod in lower:
            if not pod.terminating and not nameable(pod):
                protected[pod.key] = UNSETTLED
    if screen is not None:
        for pod in lower:
            if pod.terminating or pod.key in protected:
                continue  # leaving anyway: naming it takes nothing from anyone
            judgement, why = screen.judge(pod)
            if judgement is Judgement.PROTECTED:
                protected[pod.key] = why
            elif judgement is Judgement.LAST_RESORT:
                last_resort.append(pod)
    candidates = [p for p in lower if p.key not in protected]
    shunned = {p.uid for p in last_resort}
    attempts = [([p for p in candidates if p.uid not in shunned], ())]
    if last_resort:
        attempts.append((candidates, tuple(last_resort)))
    result: VictimSelection | NodeRejected | None = None
    for pool, spare_first in attempts:
        result = _attempt(
            node, preemptor, pool, reservations, budgets_of, screen, spare_first, protected, nameable, at_least, swap,
            gang_of, order, homes,
        )
        if isinstance(result, VictimSelection):
            break
    assert result is not None
    if isinstance(result, NodeRejected) and not candidates:
        return NodeRejected(
            node.name, f"every lower-priority pod is protected: {_protections(protected)}", _cause(protected)
        )
    return result


def _attempt(
    node: NodeInfo,
    preemptor: Pod,
    candidates: list[Pod],
    reservations: Sequence[Pod],
    budgets_of: BudgetsOf,
    screen: Screen | None,
    spare_first: tuple[Pod, ...],
    protected: dict[str, str],
    nameable: Callable[[Pod], bool] | None,
    at_least: Vector | None,
    swap: bool,
    gang_of: gangs.GangOf | None,
    order: ranking.Order,
    homes: Homes | None,
) -> VictimSelection | NodeRejected:
    alloc = node.node.allocatable
    request = preemptor.requests
    checked = resources.checked_resources(request)
    # Step 2: everything that is not a candidate stays.
    pool = {p.uid for p in candidates}
    staying = [p for p in node.pods if p.priority < preemptor.priority and p.uid not in pool]
    kept = resources.add(
        node.requested_at_or_above(preemptor.priority),
        *(p.requests for p in staying),
        *(p.requests for p in reservations),
    )
    missing = resources.shortfalls(request=request, allocatable=alloc, used=kept)
    if missing:
        return _no_room(node, reservations, protected, f"short of {resources.describe(missing)}")
    # Step 3, and again with the pods of a queue that would fall below its share spared first.
    live = most_important_first(p for p in candidates if not p.terminating)
    # Terminating pods leave anyway; the answer names only those the scheduler can resolve.
    leaving = [p for p in candidates if p.terminating and (nameable is None or nameable(p))]
    # ``room``: what the reprieved pods may use in each checked resource.
    room = {r: alloc.get(r, 0) - kept.get(r, 0) - request[r] for r in checked}
    if at_least is not None:
        # Named victims free at least ``at_least``: the reprieved may use no more than the rest.
        for r in checked:
            cap = sum(p.requests.get(r, 0) for p in (*live, *leaving)) - at_least.get(r, 0)
            room[r] = min(room[r], cap)
        short = {r: -v for r, v in room.items() if v < 0}
        if short:
            return _no_room(
                node, reservations, protected,
                f"cannot free as much as the scheduler's own victims (short of {resources.describe(short)})",
            )
    first = {p.uid for p in spare_first}
    terminating = [p for p in candidates if p.terminating]
    no_home = frozenset(p.uid for p in live if homes.home(p, excluding=node.name) is None) if homes else frozenset()
    within_shares = (lambda victims: not screen.shortfalls(victims)) if screen is not None else None
    victims, violations, reprieved, shielded, searched = _best_reprieve(
        room, checked, live, leaving, _orders(live, terminating, budgets_of, gang_of, first, checked, no_home),
        budgets_of, at_least, first, swap, within_shares, gang_of, order, no_home,
    )
    # Law 2 over the whole set: if the reprieve takes too much from some queue, choose again,
    # least important first, skipping pods whose queue could not afford them.
    short = screen.shortfalls(victims) if screen is not None else {}
    if short:
        budgeted = _within_shares(room, checked, live, leaving, screen, first)
        if budgeted is None:
            reason = next(iter(short.values()))
            return NodeRejected(node.name, f"the victims it needs are out of reach: {reason}", Cause.QUEUE_SHARE)
        victims = most_important_first(budgeted)
        violations = count_violations(victims, budgets_of)
        reprieved, shielded, searched = len(live) + len(leaving) - len(victims), frozenset(), ""
    # Step 4 (_best_reprieve orders the victims and counts their violations).
    freed = resources.add(*(p.requests for p in victims))
    lower = len(candidates) + len(staying)
    reasons = [
        f"{lower} lower-priority pod(s), {reprieved} reprieved"
        + (f" ({len(shielded)} PDB-protected tried first)" if shielded else "")
        + (f" ({searched})" if searched else ""),
        f"evicting {len(victims)} frees {resources.describe(_only(freed, checked))}",
        violations.describe(),
    ]
    broken = gangs.count_broken(victims, gang_of)
    if broken.count:
        reasons.append(broken.describe())
    whole = gangs.kept_whole(candidates, victims, gang_of)
    if whole:
        reasons.append("takes no more than it can spare from " + "; ".join(g.describe() for g in whole))
    gone = homeless(victims, homes, node=node.name) if homes is not None else NONE_HOMELESS
    if gone.count:
        reasons.append(gone.describe())
    if at_least is not None:
        reasons.append(
            f"frees at least what the scheduler's victims free ({resources.describe(_only(at_least, checked))}): "
            "its proposal shows it sees less room here than reprieve"
        )
    if protected:
        reasons.append(f"{len(protected)} protected: {_protections(protected)}")
    opted_out = sum(p.uid in first for p in victims)
    if opted_out:
        reasons.append(f"{opted_out} victim(s) opted out of preemption: no victim set without them fits")
    if reservations:
        reasons.append(f"room held for nominated {_names(reservations)} kept free")
    return VictimSelection(node.name, victims, violations, tuple(reasons), opted_out, broken, gone)


def _no_room(node: NodeInfo, reservations: Sequence[Pod], protected: dict[str, str], short: str) -> NodeRejected:
    held = f" (room held for {_names(reservations)})" if reservations else ""
    if protected:
        return NodeRejected(
            node.name,
            f"does not fit unless protected pods go{held}: {short}; {_protections(protected)}",
            _cause(protected),
        )
    return NodeRejected(
        node.name, f"does not fit even with every lower-priority pod removed{held}: {short}", Cause.DOES_NOT_FIT
    )


def _cause(protected: dict[str, str]) -> Cause:
    """Protected by the multi-tenant rules, or only kept because the scheduler may not know them."""
    return Cause.PROTECTED if any(why != UNSETTLED for why in protected.values()) else Cause.DOES_NOT_FIT


def _orders(
    live: Sequence[Pod], terminating: Sequence[Pod], budgets_of: BudgetsOf, gang_of: gangs.GangOf | None,
    first: set[str], checked: Sequence[str], no_home: frozenset[str] = frozenset(),
) -> list[tuple[Callable, frozenset[str], Sequence[Pod]]]:
    """The greedy orders to reprieve in, each (sort key, pods it tries first, pods it may
    reprieve), after the pods to spare first (``first``, opted-out ones). Orders that would
    be the same as an earlier one on this node are left out.

    No order is always cheapest: with a budget allowing 1 of a (2 cpu), b and c (1 each) and
    room for 2, PDB-protected first keeps a and loses b and c (1 violation), upstream's
    violators first keeps b and c and loses a (none); and when PDB-protected pods of low
    priority are kept first, pods of higher priority may go where one low-priority pod would
    do. Where a budget must be violated, keeping its pods first and the smallest first (then
    the others, smallest first) evicts the fewest of them: one 8-cpu victim instead of four 2-cpu ones, one violation instead of four (and
    what policy.bounds proves the fewest possible, so that preempt can leave the other
    candidates unsolved). The last is upstream's own SelectVictimsOnNode (priority and start
    time, its violators first, terminating pods reprieved like the others), so that the
    result never costs more than the set stock kube-scheduler picks on the node.

    Members of gangs that cannot spare them (policy.gangs.protected) come first in a copy of
    every order but upstream's, tried before the plain ones (the ranking's order decides
    between a broken gang and what keeping it costs, policy.ranking). Where
    some candidates have no home (``no_home``), one more order keeps them first.
    """
    in_gangs = gangs.protected(live, gang_of)
    if in_gangs:
        plain = _orders(live, terminating, budgets_of, None, first, checked, no_home)
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
    if protected:
        orders.append((lambda p: (p.uid not in first, p.uid not in protected), protected, live))
    if violators:
        orders.append((lambda p: (p.uid not in first, p.uid not in violators), violators, live))
    orders.append((lambda p: (p.uid not in first,), frozenset(), live))
    if no_home and len(no_home) < len(live):
        orders.append((lambda p: (p.uid not in first, p.uid not in no_home), frozenset(), live))
    if protected:
        size = _sizes(live, checked)
        orders.append((lambda p: (p.uid not in first, p.uid not in protected, size[p.uid]), protected, live))
    orders.append((lambda p: (p.uid not in first, p.uid not in upstream, more_important(p)), upstream, everyone))
    return orders


def _sizes(live: Sequence[Pod], checked: Sequence[str]) -> dict[str, float]:
    """Each pod's largest share of what the pods together request of a checked resource."""
    totals = {r: sum(p.requests.get(r, 0) for p in live) or 1 for r in checked}
    return {p.uid: max((p.requests.get(r, 0) / totals[r] for r in checked), default=0.0) for p in live}


def _best_reprieve(
    room, checked, live, leaving, greedy, budgets_of, at_least, first, swap, within_shares, gang_of, order, no_home
):
    """Reprieve in each ``greedy`` order and keep the cheapest result by the ranking's ``order``
    (ties: the earlier greedy order); then look for a cheaper set (policy.exact): every set when the node
    has few candidates, single swaps when it has many (and ``swap``). Terminating victims are
    named only if in ``leaving``; a result that names less than ``at_least`` is not taken, and
    a searched set the rules refuse (``within_shares``, law 2) does not replace a greedy one
    they accept. Returns (victims most important first, their violations, reprieved, the pods
    the winning order tried first, how a search beat the orders or "")."""
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
        violations = count_violations(victims, budgets_of)
        broken = gangs.count_broken(victims, gang_of).count
        homeless_count = sum(p.uid in no_home for p in victims)
        key = order.cost(victims, violations, sum(p.uid in first for p in victims), broken, homeless_count).key
        if best is None or key < best[0]:
            best = (key, victims, violations, reprieved, shield)
    key, victims, violations, reprieved, shield = best
    common = dict(
        room=room, checked=checked, live=live, leaving=leaving, budgets_of=budgets_of, opted_out=first, gang_of=gang_of,
        order=order, no_home=no_home,
    )
    if len(live) <= exact.EXACT_LIMIT:
        better, how = exact.cheapest(**common, beat=key), "no greedy order was cheapest: the cheapest of every set"
    elif swap:
        better, how = exact.improve(**common, victims=victims, key=key), "swapping victims beat every greedy order"
    else:
        better = None
    if better is not None and within_shares is not None and not within_shares(better.victims) and within_shares(victims):
        better = None  # cheaper, but it takes too much from some queue: the greedy set stands
    if better is None:
        return victims, violations, reprieved, shield, ""
    evicted = sum(not p.terminating for p in better.victims)
    return better.victims, better.violations, len(live) - evicted, frozenset(), how


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
    for pod in order:
        needs = amounts.get(id(pod.requests))
        if needs is None:
            needs = amounts[id(pod.requests)] = tuple(pod.requests.get(r, 0) for r in checked)
        if all(n <= free for n, free in zip(needs, left)):
            left = [free - n for n, free in zip(needs, left)]
            reprieved += 1
        else:
            victims.append(pod)
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

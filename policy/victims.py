"""Choosing the fewest and least important victims on one node, after upstream's ``SelectVictimsOnNode``."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from policy import resources
from policy.causes import Cause
from policy.model import Pod
from policy.pdb import BudgetsOf, Violations, count_violations, protected
from policy.view import NodeInfo


def importance(pod: Pod) -> tuple:
    """Sort key putting the most important pod first.

    Priority (higher first), then QoS class (Guaranteed, Burstable, BestEffort), then the
    earlier ``status.startTime`` (an unknown start sorts as the latest, like upstream's
    "now"), then namespace/name so that the order is total and stable.
    """
    start = pod.start_time if pod.start_time is not None else math.inf
    return (-pod.priority, -pod.qos, start, pod.key)


def most_important_first(pods: Iterable[Pod]) -> tuple[Pod, ...]:
    return tuple(sorted(pods, key=importance))


@dataclass(frozen=True, slots=True)
class VictimSelection:
    node: str
    victims: tuple[Pod, ...]  # most important first, as the scheduler's ranking expects
    violations: Violations
    reasons: tuple[str, ...]


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
) -> VictimSelection | NodeRejected:
    """The victims reprieve would evict on ``node`` so that ``preemptor`` fits.

    1. Potential victims are the pods on the node with priority strictly below the preemptor's.
    2. Remove them all. If the preemptor still does not fit next to the remaining pods and
       the room held for nominated pods (``reservations``), preemption cannot help here.
    3. Reprieve: add potential victims back one at a time while the preemptor still fits,
       PDB-protected pods first (policy.pdb.protected), then the rest, each group most
       important first (see ``importance``). Terminating pods are never reprieved: they are
       leaving anyway and cost nothing to name. A BestEffort pod requests no cpu or memory,
       so it is only ever a victim when the node's pod-count limit is what blocks.
    4. The victims are the pods not reprieved, most important first, with the exact count of
       PodDisruptionBudget violations for that set.

    The result is inclusion-minimal: a failed reprieve only gets harder as later pods are
    added back, so no single victim could be spared.
    """
    alloc = node.node.allocatable
    request = preemptor.requests
    # Step 1.
    candidates = [p for p in node.pods if p.priority < preemptor.priority]
    if not candidates:
        return NodeRejected(node.name, f"no pod has priority below {preemptor.priority}", Cause.NO_LOWER_PRIORITY)
    # Step 2.
    kept = resources.add(
        node.requested_at_or_above(preemptor.priority), *(p.requests for p in reservations)
    )
    missing = resources.shortfalls(request=request, allocatable=alloc, used=kept)
    if missing:
        held = f" (room held for {_names(reservations)})" if reservations else ""
        return NodeRejected(
            node.name,
            f"does not fit even with every lower-priority pod removed{held}: "
            f"short of {resources.describe(missing)}",
            Cause.DOES_NOT_FIT,
        )
    # Step 3. ``slack`` is the room left for reprieved pods in each checked resource.
    checked = resources.checked_resources(request)
    slack = {r: alloc.get(r, 0) - kept.get(r, 0) - request[r] for r in checked}
    shielded = protected((p for p in candidates if not p.terminating), budgets_of)
    order = sorted(
        (p for p in candidates if not p.terminating),
        key=lambda p: (p.uid not in shielded, importance(p)),
    )
    victims = [p for p in candidates if p.terminating]
    reprieved = 0
    for pod in order:
        needs = pod.requests
        if all(needs.get(r, 0) <= slack[r] for r in checked):
            for r in checked:
                slack[r] -= needs.get(r, 0)
            reprieved += 1
        else:
            victims.append(pod)
    # Step 4.
    ordered = most_important_first(victims)
    violations = count_violations(ordered, budgets_of)
    freed = resources.add(*(p.requests for p in victims))
    reasons = [
        f"{len(candidates)} lower-priority pod(s), {reprieved} reprieved"
        + (f" ({len(shielded)} PDB-protected tried first)" if shielded else ""),
        f"evicting {len(victims)} frees {resources.describe(_only(freed, checked))}",
        violations.describe(),
    ]
    if reservations:
        reasons.append(f"room held for nominated {_names(reservations)} kept free")
    return VictimSelection(node.name, ordered, violations, tuple(reasons))


def _only(vector: resources.Vector, names: Iterable[str]) -> dict[str, int]:
    return {n: vector.get(n, 0) for n in names}


def _names(pods: Iterable[Pod]) -> str:
    return ", ".join(sorted(p.key for p in pods))

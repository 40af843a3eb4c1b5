"""Fewest costly victims: the highest pod-deletion-cost among them, lower first. The cost is
what a victim's owner says losing it costs (``controller.kubernetes.io/pod-deletion-cost``, which the ReplicaSet controller reads to choose
whom to remove at scale-down: lower goes first). An explicit signal, so it ranks before the start
of the most important victims (upstream's inferred "youngest work" tie-breaker); only between sets
alike on everything before it, the number of victims included, as the controller uses it only
among pods it would otherwise treat alike.

A set's value is its costliest victim's (never lower with a victim more; none: -inf, as a cost
may be negative); no set on a node costs less than its cheapest candidate (policy.bounds), so
that identical nodes still bound each other exactly."""

from __future__ import annotations

import math

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod

ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"


def _of_pod(pod: Pod, facts: Facts) -> int:
    return pod.deletion_cost


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if pod.deletion_cost > victim.deletion_cost:
        return f"a higher pod-deletion-cost ({pod.deletion_cost}, {victim.key}'s is {victim.deletion_cost})"
    return None


CRITERION = Criterion(
    name="highest pod-deletion-cost", field="highest_deletion_cost", kind=Kind.MAX, least=-math.inf,
    of_pod=_of_pod, floor="deletion_cost", stays=_stays,
)

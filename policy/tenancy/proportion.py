"""Deserved shares: kube-arbitrator's proportion policy, splitting capacity by weight."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from policy import resources
from policy.resources import Vector


def water_fill(capacity: Vector, claims: Sequence[tuple[str, int, Vector]]) -> dict[str, dict[str, int]]:
    """kube-arbitrator's proportion policy, per resource: split ``capacity`` by weight, cap
    each claimant at its demand, and split what the capped ones leave among the others until
    nothing is left or everyone is satisfied. Shares are exact fractions, floored at the end.

    The pod-count slot is not shared out: every pending pod would otherwise make its queue
    "below its share" of pods on any roomy cluster.

    Example (seed 001): 9 cpus, weights 2, 4, 3, every demand larger than its split: 2, 4, 3.
    """
    result: dict[str, dict[str, int]] = {name: {} for name, _, _ in claims}
    for resource, amount in capacity.items():
        if resource == resources.PODS:
            continue
        given = {name: Fraction(0) for name, _, _ in claims}
        active = {name: (weight, demand.get(resource, 0)) for name, weight, demand in claims if weight > 0}
        active = {n: wd for n, wd in active.items() if wd[1] > 0}
        left = Fraction(amount)
        while left > 0 and active:
            weights = sum(w for w, _ in active.values())
            for name, (weight, _) in active.items():
                given[name] += left * weight / weights
            left = Fraction(0)
            for name, (_, demand) in list(active.items()):
                if given[name] >= demand:
                    left += given[name] - demand
                    given[name] = Fraction(demand)
                    del active[name]
        for name, value in given.items():
            if value:
                result[name][resource] = int(value)  # floor: shares never exceed capacity
    return result

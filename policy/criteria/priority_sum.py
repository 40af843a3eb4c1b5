"""Smallest sum of victim priorities, each shifted by 2**31 as upstream does, so that negative
priorities do not make more victims look cheaper."""

from __future__ import annotations

from policy.criteria import victims
from policy.criteria.criterion import Criterion, Facts, Kind, Reach
from policy.model import Pod

SHIFT = 2**31


def _of_pod(pod: Pod, facts: Facts) -> int:
    return pod.priority + SHIFT


def _floor(reach: Reach) -> float:
    return reach.victims * (reach.lowest + SHIFT) if reach.victims else 0


def _show(value: float, value_of) -> str:  # undo the shift: the plain sum of victim priorities
    return str(value - value_of(victims.CRITERION) * SHIFT)


def _plain(value: float, value_of) -> int:
    return value - value_of(victims.CRITERION) * SHIFT


def _at_least(value: float, value_of) -> str:
    """A floor on the shifted sum is a number of victims and the lowest priority they can have
    (with negative priorities more victims make a smaller plain sum)."""
    count = value_of(victims.CRITERION)
    return f"from at least {count} victim(s), each of priority {value // count - SHIFT} or more,"


def _best(value: float, value_of) -> str:
    return f"{value_of(victims.CRITERION)} victim(s) summing to {_show(value, value_of)}"


CRITERION = Criterion(
    name="sum of victim priorities", field="priority_sum", kind=Kind.SUM, of_pod=_of_pod, floor=_floor,
    show=_show, plain=_plain, at_least=_at_least, best=_best,
)

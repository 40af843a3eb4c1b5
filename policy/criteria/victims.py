"""Fewest victims (live ones: a terminating victim is leaving anyway and costs nothing)."""

from __future__ import annotations

from policy.criteria import burstable, guaranteed
from policy.criteria.criterion import Criterion, Facts, Kind
from policy.model import Pod


def _of_pod(pod: Pod, facts: Facts) -> int:
    return 1


def _brief(value: float, value_of) -> str:
    g, b = value_of(guaranteed.CRITERION), value_of(burstable.CRITERION)
    return f"{g} Guaranteed / {b} Burstable of {value} live victim(s)"


CRITERION = Criterion(name="victims", field="victims", kind=Kind.SUM, of_pod=_of_pod, floor="victims", brief=_brief)

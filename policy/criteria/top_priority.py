"""Lowest priority of the most important victim (upstream's first rule after the budgets)."""

from __future__ import annotations

import math

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod


def _of_pod(pod: Pod, facts: Facts) -> int:
    return pod.priority


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if pod.priority == victim.priority:
        return None
    higher = "higher" if pod.priority > victim.priority else "lower"
    return f"{higher} priority {pod.priority}" + ("" if higher == "higher" else ", but too small to make room")


def _brief(value: float, _) -> str:
    return f"highest victim priority {'none' if value == -math.inf else value}"


CRITERION = Criterion(
    name="highest victim priority", field="highest_priority", kind=Kind.MAX, least=-math.inf,
    of_pod=_of_pod, floor="top", brief=_brief, stays=_stays,
)

"""Latest "earliest start among the highest-priority victims" (upstream's last rule: evict the
youngest work). A tie-breaker: last in every order, and bounded only where the priorities
before it are equal (policy.bounds)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from policy.criteria.criterion import Criterion, Facts, Kind, Stay, Unit
from policy.model import Pod


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[float, None]:
    top = max((p.priority for p in live), default=-math.inf)
    starts = [p.start_time if p.start_time is not None else math.inf for p in live if p.priority == top]
    return -min(starts, default=math.inf), None


def _show(value: float, _) -> str:
    return f"{-value:.0f}s since the epoch"


def _at_least(value: float, _) -> str:
    return f"no later than {-value:.0f}s since the epoch"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if (pod.start_time or 0) < (victim.start_time or float("inf")):
        return f"started earlier, same priority and QoS class {pod.qos.wire}"
    return None


CRITERION = Criterion(
    name="start of the most important victims (later is better)", field="top_victims_start", kind=Kind.TIE,
    least=-math.inf, unit=Unit.TIME, of_set=_of_set, floor="start", show=_show, at_least=_at_least, stays=_stays,
)

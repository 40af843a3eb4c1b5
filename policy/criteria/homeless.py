"""Fewest victims with no home (policy.homes): nothing re-creates them, or their replacement fits
on no other node without preempting in turn. After the QoS classes: docs/policy.md says why."""

from __future__ import annotations

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod


def _of_pod(pod: Pod, facts: Facts) -> int:
    return int(pod.uid in facts.no_home)


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if pod.uid in stay.no_home and victim.uid not in stay.no_home:
        return f"no home elsewhere ({stay.no_home[pod.uid]}), where {victim.key} has one"
    return None


def _brief(value: float, _) -> str | None:
    return f"{value} with no home" if value else None


CRITERION = Criterion(
    name="victims with no home", field="homeless_victims", kind=Kind.SUM, of_pod=_of_pod, floor="homeless",
    brief=_brief, stays=_stays,
)

"""Fewest Burstable victims: after the Guaranteed ones, Burstable before BestEffort."""

from __future__ import annotations

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.criteria.guaranteed import qos_stays
from policy.model import Pod
from policy.qos import QoS


def _of_pod(pod: Pod, facts: Facts) -> int:
    return int(pod.qos == QoS.BURSTABLE)


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    return qos_stays(pod, victim, QoS.BURSTABLE)


CRITERION = Criterion(
    name="Burstable victims", field="burstable", kind=Kind.SUM, of_pod=_of_pod, floor="burstable", stays=_stays
)

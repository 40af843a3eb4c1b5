"""Fewest Guaranteed victims: among victims of equal priority, the QoS class the kubelet protects
most goes last (the 2017 preemption design's promise, which upstream never built)."""

from __future__ import annotations

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod
from policy.qos import QoS


def _of_pod(pod: Pod, facts: Facts) -> int:
    return int(pod.qos == QoS.GUARANTEED)


def qos_stays(pod: Pod, victim: Pod, cls: QoS) -> str | None:
    """Why ``pod`` stays rather than ``victim`` of equal priority where one of them is of
    class ``cls`` and the other of a less protected one."""
    if pod.qos == victim.qos or cls not in (pod.qos, victim.qos):
        return None
    if pod.qos > victim.qos:
        return f"{pod.qos.wire} before {victim.qos.wire} at priority {pod.priority}"
    return f"{pod.qos.wire}, but too small to make room"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    return qos_stays(pod, victim, QoS.GUARANTEED)


CRITERION = Criterion(
    name="Guaranteed victims", field="guaranteed", kind=Kind.SUM, of_pod=_of_pod, floor="guaranteed", stays=_stays
)

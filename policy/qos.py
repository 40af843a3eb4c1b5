"""Pod QoS class, as upstream's ``GetPodQOS`` computes it."""

from __future__ import annotations

import enum
from collections.abc import Iterable

from policy.quantity import CPU
from policy.resources import MEMORY, Vector

_COMPUTE = (CPU, MEMORY)


class QoS(enum.IntEnum):
    """Ordered by importance: a larger value is a more important victim to keep."""

    BEST_EFFORT = 0
    BURSTABLE = 1
    GUARANTEED = 2

    @property
    def wire(self) -> str:
        return {0: "BestEffort", 1: "Burstable", 2: "Guaranteed"}[self.value]

    @classmethod
    def from_wire(cls, text: str) -> "QoS":
        for member in cls:
            if member.wire == text:
                return member
        raise ValueError(f"unknown QoS class {text!r} (expected BestEffort, Burstable or Guaranteed)")


def _container_qos(requests: Vector, limits: Vector) -> QoS:
    req = [requests.get(name, 0) for name in _COMPUTE]
    lim = [limits.get(name, 0) for name in _COMPUTE]
    if not any(req) and not any(lim):
        return QoS.BEST_EFFORT
    if req != lim:
        return QoS.BURSTABLE
    return QoS.GUARANTEED if all(req) else QoS.BURSTABLE


def compute_qos(
    *, containers: Iterable[tuple[Vector, Vector]], pod_level: tuple[Vector, Vector] | None = None
) -> QoS:
    """QoS from ``(requests, limits)`` of every container, init containers included.

    Only cpu and memory count; a missing value counts as 0. With pod-level resources the pod's
    own requests and limits decide alone. Any Burstable container, or a mix of BestEffort and
    Guaranteed containers, makes the pod Burstable.
    """
    if pod_level is not None:
        return _container_qos(*pod_level)
    classes = {_container_qos(requests, limits) for requests, limits in containers}
    if not classes:
        return QoS.BEST_EFFORT
    if len(classes) == 1:
        return classes.pop()
    return QoS.BURSTABLE

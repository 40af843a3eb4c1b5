"""Which pods matter more: the orders victims are kept and named in."""

from __future__ import annotations

import math
from collections.abc import Iterable

from policy.model import Pod


def importance(pod: Pod) -> tuple:
    """Sort key putting the most important pod first.

    Priority (higher first), then QoS class (Guaranteed, Burstable, BestEffort), then the
    earlier ``status.startTime`` (an unknown start sorts as the latest, like upstream's
    "now"), then namespace/name so that the order is total and stable.
    """
    start = pod.start_time if pod.start_time is not None else math.inf
    return (-pod.priority, -pod.qos, start, pod.key)


def more_important(pod: Pod) -> tuple:
    """Sort key for upstream's ``MoreImportantPod``: higher priority, then the earlier start.

    A pod without ``status.startTime`` counts as starting now, i.e. after every known start.
    Upstream's ``sort.Slice`` leaves equal pods in no particular order; namespace/name makes
    the order deterministic.
    """
    start = pod.start_time if pod.start_time is not None else math.inf
    return (-pod.priority, start, pod.key)


def most_important_first(pods: Iterable[Pod]) -> tuple[Pod, ...]:
    return tuple(sorted(pods, key=importance))

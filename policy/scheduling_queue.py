"""kube-scheduler's queue: which pending pods it takes up, and in which order.

- **Queued**: a pod with no node (``spec.nodeName`` empty), not being deleted (upstream's
  ``skipPodSchedule`` skips a pod with a ``deletionTimestamp``), and without scheduling gates
  (the SchedulingGates PreEnqueue plugin keeps a gated pod out of the active queue until its
  last gate is removed). Succeeded and Failed pods are not in a view at all. DaemonSet pods are
  queued like any other (their node affinity names their node: policy.placement). Every
  ``spec.schedulerName`` is taken: which names a kube-scheduler answers to is not in a dump.
- **Order**: upstream's PrioritySort, higher priority first, then the earlier time the pod
  entered the queue, taken here as its ``metadata.creationTimestamp`` (a pod without one goes
  after those with one); pods still equal, namespace/name, so that the order is total.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from policy.model import Pod

BOUND = "bound to a node"
TERMINATING = "terminating"
GATED = "scheduling-gated"


def left_out(pod: Pod) -> str:
    """Why the scheduler does not queue ``pod`` (BOUND, TERMINATING or GATED), or ''."""
    if pod.node_name is not None:
        return BOUND
    if pod.terminating:
        return TERMINATING
    if pod.gated:
        return GATED
    return ""


def order(pods: Iterable[Pod]) -> list[Pod]:
    """``pods`` in PrioritySort's order (see the module docstring)."""
    return sorted(pods, key=_position)


def _position(pod: Pod) -> tuple:
    return (-pod.priority, math.inf if pod.created is None else pod.created, pod.namespace, pod.name)

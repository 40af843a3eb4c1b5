"""Queue tallies: per queue, the summed requests of its own pods that hold room and of those
still waiting for it."""

from __future__ import annotations

from collections import defaultdict

from policy.model import Pod
from policy.resources import Vector

Tally = defaultdict[str, dict[str, int]]  # queue -> resource -> amount


def holds_room(pod: Pod) -> bool:
    """Whether ``pod`` counts in its queue's usage: bound, or nominated to a node by an earlier
    preemption (room already won). A pod that does not only waits: it counts in the demand."""
    return bool(pod.node_name or pod.nominated_node_name)


def count(usage: Tally, waiting: Tally, queue: str, pod: Pod, sign: int = 1) -> None:
    """Adds ``pod``'s requests to ``queue``'s usage if it holds room, else to its waiting;
    with ``sign`` -1, takes them back."""
    requests = pod.requests if sign > 0 else {name: -value for name, value in pod.requests.items()}
    # holds_room(pod), written out too: a call per pod is a tenth of a from-scratch assess.
    total = (usage if pod.node_name or pod.nominated_node_name else waiting)[queue]
    for name, value in requests.items():  # accumulate's loop, written out: assess runs it per pod
        total[name] = total.get(name, 0) + value


def accumulate(total: dict[str, int], vector: Vector, sign: int = 1) -> None:
    for name, value in vector.items():
        total[name] = total.get(name, 0) + sign * value

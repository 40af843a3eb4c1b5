"""Where a pod that fits without preemption goes: kube-scheduler's resource scores, for the replay.

The replay (policy.replay) binds a pod that fits somewhere without preemption on both sides
alike; where it binds it shapes every later preemption. ``Placement`` names the choices
``reprieve simulate --placement`` offers:

- ``least-allocated`` (the default profile): NodeResourcesFit's LeastAllocated score over cpu
  and memory (weight 1 each), plus NodeResourcesBalancedAllocation over cpu and memory, both
  0-100 and weighted 1, as kube-scheduler's default plugins score. LeastAllocated counts a
  request of 0 as upstream's non-zero defaults (100m cpu, 200 MiB); BalancedAllocation counts
  requests as they are and skips BestEffort pods, as upstream does. It spreads pods.
- ``most-allocated``: NodeResourcesFit's MostAllocated score over cpu, memory and every
  extended resource the pod requests (weight 1 each; operators who pack GPU clusters list their
  GPU resource there), plus BalancedAllocation as above. It packs pods.
- ``first``: the first node by name (the replay's rule before this module).

The other default score plugins (TaintToleration, NodeAffinity's preferred terms,
PodTopologySpread's system default spreading, InterPodAffinity, ImageLocality) are not
modelled: the generated workloads carry no preferences, taints or images they would read. Ties
go to the first node by name (the scheduler picks one of them at random), so that a replay is
deterministic.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from enum import Enum

from policy.model import Pod
from policy.quantity import CPU
from policy.resources import EPHEMERAL_STORAGE, MEMORY, PODS, Vector
from policy.view import ClusterView

MAX_SCORE = 100
NON_ZERO_CPU = 100  # millicores: upstream's DefaultMilliCPURequest
NON_ZERO_MEMORY = 200 * 1024 * 1024  # bytes: upstream's DefaultMemoryRequest


class Placement(Enum):
    LEAST_ALLOCATED = "least-allocated"
    MOST_ALLOCATED = "most-allocated"
    FIRST = "first"


DEFAULT = Placement.FIRST  # TODO(lead): least-allocated once issue 29's branches are merged


def choose(view: ClusterView, pod: Pod, fits: Iterable[str], placement: Placement = DEFAULT) -> str:
    """The node among ``fits`` (nodes where ``pod`` fits as it is) that ``placement`` scores highest."""
    names = sorted(fits)
    if placement is Placement.FIRST:
        return names[0]
    best, best_score = names[0], -1
    for name in names:  # ties go to the first by name
        value = score(view, pod, name, placement)
        if value > best_score:
            best, best_score = name, value
    return best


def score(view: ClusterView, pod: Pod, node: str, placement: Placement) -> int:
    """The node's resource score for ``pod`` (0-200: the fit score plus the balance score)."""
    info = view.nodes[node]
    allocatable, used = info.node.allocatable, info.requested
    if placement is Placement.LEAST_ALLOCATED:
        fit = _weighted(_least, (CPU, MEMORY), allocatable, _non_zero(used, info.pods), _non_zero_pod(pod))
    else:
        extended = sorted(r for r in pod.requests if r not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS))
        fit = _weighted(_most, (CPU, MEMORY, *extended), allocatable, used, pod.requests)
    return fit + _balanced(allocatable, used, pod)


def _least(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_SCORE // capacity


def _most(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    return min(requested, capacity) * MAX_SCORE // capacity


def _weighted(scorer, resources: tuple[str, ...], allocatable: Vector, used: Vector, pod: Vector) -> int:
    total = counted = 0
    for name in resources:
        capacity = allocatable.get(name, 0)
        if capacity == 0 and pod.get(name, 0) == 0:
            continue  # a resource the node lacks and the pod does not ask for: not scored
        total += scorer(used.get(name, 0) + pod.get(name, 0), capacity)
        counted += 1
    return total // counted if counted else 0


def _balanced(allocatable: Vector, used: Vector, pod: Pod) -> int:
    if not any(pod.requests.get(r, 0) for r in (CPU, MEMORY)):
        return 0  # upstream skips BalancedAllocation for BestEffort pods
    fractions = [
        min(1.0, (used.get(r, 0) + pod.requests.get(r, 0)) / allocatable[r])
        for r in (CPU, MEMORY)
        if allocatable.get(r, 0)
    ]
    std = abs(fractions[0] - fractions[1]) / 2 if len(fractions) == 2 else 0.0
    return math.floor((1 - std) * MAX_SCORE)


def _non_zero_pod(pod: Pod) -> dict[str, int]:
    return {
        CPU: pod.requests.get(CPU, 0) or NON_ZERO_CPU,
        MEMORY: pod.requests.get(MEMORY, 0) or NON_ZERO_MEMORY,
    }


def _non_zero(used: Vector, pods: Iterable[Pod]) -> dict[str, int]:
    """What the node's pods request with upstream's non-zero defaults for requests of 0."""
    cpu, memory = used.get(CPU, 0), used.get(MEMORY, 0)
    for p in pods:
        if not p.requests.get(CPU, 0):
            cpu += NON_ZERO_CPU
        if not p.requests.get(MEMORY, 0):
            memory += NON_ZERO_MEMORY
    return {CPU: cpu, MEMORY: memory}

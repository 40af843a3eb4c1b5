"""Least work lost since the last checkpoint: each victim loses what it did since it started, or
since its annotation ``reprieve.io/last-checkpoint`` (RFC 3339) where that is later, weighted by
the share of its node it holds; less lost goes first. It refines upstream's inferred tie-breaker
(evict the youngest work) with what the workload says it has saved, and weighs a large pod's
hour above a small one's.

The weight is the victim's dominant share of its node's allocatable (the largest of
request / allocatable over the resources it asks for) in the node's cores: a pod whose cpu
dominates weighs its cpu request, and a pod holding one of eight GPUs an eighth of the node's
cores, however little cpu it asks (the pod slot counts too, so a BestEffort pod's work is not
free). So a value is in core-seconds, the same on a large node as on a small one, and GPUs and
memory count at the node's own rate (docs/policy.md measures this against the share alone,
which made a pod on a 32-core node look eight times cheaper than the same pod on a 4-core one).
Whole core-seconds, rounded down per victim: differences under one are noise, and pods alike
within one stay one class for the exact search (policy.exact). Integers keep the sums and the
bound exact.

At the request's ``now`` (Facts.now); an unknown start reads as just started (upstream treats a
nil start time as now), and so does a checkpoint in the future; without ``now`` or the node's
allocatable every value is 0. A SUM: never lower with a victim more; its bound (policy.bounds)
is the fewest victims' youngest ages at the smallest weight among the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from fractions import Fraction

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod
from policy.quantity import CPU
from policy.resources import Vector

ANNOTATION = "reprieve.io/last-checkpoint"
# GPUs per unit of each GPU resource: NVIDIA's device plugin counts whole GPUs; the generated GPU
# shape (policy.workload_gpu.GPU_MILLI) counts milli-GPUs.
GPUS = {"nvidia.com/gpu": Fraction(1), "example.com/gpu-milli": Fraction(1, 1000)}


def since(pod: Pod) -> float | None:
    """When the work the pod would lose began: its start, or its last checkpoint where later;
    None where its start is unknown."""
    if pod.start_time is None:
        return None
    return pod.start_time if pod.checkpoint is None else max(pod.start_time, pod.checkpoint)


def age(pod: Pod, now: float | None) -> int:
    """Whole seconds of work since ``since(pod)`` at ``now`` (0 unknown, or not yet begun)."""
    began = since(pod)
    if now is None or began is None:
        return 0
    return max(0, int(now - began))


# A weight in cores, exactly: (numerator, denominator), both integers, the denominator positive.
Weight = tuple[int, int]
NONE: Weight = (0, 1)


def weight(requests: Vector, allocatable: Vector) -> Weight:
    """Cores: the dominant share (the largest request / allocatable over what the node has)
    times the node's cores (one where it has none). Integers only: it runs for every pod of
    every candidate node (policy.bounds' summary)."""
    num, den = NONE
    for r, v in requests.items():
        a = allocatable.get(r, 0)
        if v > 0 and a > 0 and v * den > num * a:
            num, den = v, a
    return num * (allocatable.get(CPU, 0) or 1000), den * 1000


def lightest(weights: Iterable[Weight]) -> Weight:
    """The smallest of ``weights`` (NONE if there are none)."""
    found = None
    for num, den in weights:
        if found is None or num * found[1] < found[0] * den:
            found = (num, den)
    return found or NONE


def core_seconds(pod: Pod, allocatable: Vector, now: float | None) -> int:
    """The pod's work lost in whole core-seconds, rounded down."""
    seconds = age(pod, now)
    if not seconds:
        return 0
    num, den = weight(pod.requests, allocatable)
    return num * seconds // den


def _of_pod(pod: Pod, facts: Facts) -> int:
    if facts.allocatable is None:
        return 0
    return core_seconds(pod, facts.allocatable, facts.now)


def floor(least: Weight, latest: Sequence[float], count: int, now: float | None) -> int:
    """A lower bound on any ``count`` or more candidates' work lost: the ``count`` youngest ages
    (``latest``: the candidates' ``since``, latest first, unknown as +inf) at the smallest weight."""
    num, den = least
    if now is None or not num:
        return 0
    return sum(num * max(0, int(now - t)) // den for t in latest[:count] if t != math.inf)


def cpu_seconds(victims: Iterable[Pod], now: float | None) -> float:
    """Cores x seconds of work lost, over the live victims (simulate's ``work_lost_cpu_seconds``)."""
    return sum(p.requests.get(CPU, 0) * age(p, now) for p in victims if not p.terminating) / 1000


def gpu_seconds(victims: Iterable[Pod], now: float | None) -> float:
    """GPUs x seconds of work lost, over the live victims (``gpu_seconds_lost``)."""
    return float(sum(gpus(p.requests) * age(p, now) for p in victims if not p.terminating))


def gpus(requests: Mapping[str, int]) -> Fraction:
    return sum((requests.get(r, 0) * per for r, per in GPUS.items()), Fraction(0))


def _show(value: float, _) -> str:
    return f"{value:.0f} core-seconds"


def _at_least(value: float, _) -> str:
    return f"at least {value:.0f} core-seconds of work lost"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    mine, theirs = since(pod), since(victim)
    if mine is None or theirs is None or mine >= theirs:
        return None
    what = "checkpointed" if pod.checkpoint is not None and pod.checkpoint > (pod.start_time or 0) else "started"
    return f"more work to lose (last {what} {mine:.0f}s since the epoch, {victim.key} {theirs:.0f}s since the epoch)"


CRITERION = Criterion(
    name="work lost since the last checkpoint", field="work_lost_core_seconds", kind=Kind.SUM, of_pod=_of_pod,
    floor="work_lost", show=_show, at_least=_at_least, stays=_stays,
)

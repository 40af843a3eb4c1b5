"""Least work lost since the last checkpoint: each victim loses what it did since it started, or
since its annotation ``reprieve.io/last-checkpoint`` (RFC 3339) where that is later, weighted by
the share of its node it holds; less lost goes first. It refines upstream's inferred tie-breaker
(evict the youngest work) with what the workload says it has saved, and weighs a large pod's
hour above a small one's.

The weight is the victim's dominant share of its node's allocatable (the largest of
request / allocatable over the resources it asks for) in the node's cores: a pod whose cpu
dominates weighs its cpu request, and a pod holding one of eight GPUs an eighth of the node's
cores, however little cpu it asks (the pod slot counts too, so a BestEffort pod's work is not
free). So work is counted in cores, the same on a large node as on a small one, and GPUs and
memory count at the node's own rate (docs/policy.md measures this against the share alone,
which made a pod on a 32-core node look eight times cheaper than the same pod on a 4-core one).
A value is an integer: the weight in millicores (rounded down) times whole seconds, in
millicore-seconds (words and JSON say core-seconds). Integers keep the sums and the bound exact,
and the bound costs one multiplication per node (``Youngest``).

At the request's ``now`` (Facts.now); an unknown start reads as just started (upstream treats a
nil start time as now), and so does a checkpoint in the future; without ``now`` or the node's
allocatable every value is 0. A SUM: never lower with a victim more; its bound (policy.bounds)
is the fewest victims' youngest ages at the smallest weight among the candidates.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
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
    """Whole seconds of work since ``since(pod)`` at ``now``: from the second after it began to
    the second ``now`` is in (0 unknown, or not yet begun)."""
    began = since(pod)
    if now is None or began is None:
        return 0
    return max(0, math.floor(now) - math.ceil(began))


def weight(requests: Vector, allocatable: Vector) -> int:
    """Millicores: the dominant share (the largest request / allocatable over what the node
    has) times the node's cpu (one core where it has none), rounded down. Integers only: it runs
    for every pod of every candidate node (policy.bounds' summary)."""
    cores = allocatable.get(CPU, 0) or 1000
    most = 0
    for r, v in requests.items():
        a = allocatable.get(r, 0)
        if v > 0 and a > 0:
            w = v * cores // a
            if w > most:
                most = w
    return most


def lost(pod: Pod, allocatable: Vector, now: float | None) -> int:
    """The pod's work lost in millicore-seconds: its weight times its age."""
    seconds = age(pod, now)
    return weight(pod.requests, allocatable) * seconds if seconds else 0


def _of_pod(pod: Pod, facts: Facts) -> int:
    if facts.allocatable is None:
        return 0
    return lost(pod, facts.allocatable, facts.now)


@dataclass(frozen=True, slots=True)
class Youngest:
    """What a node's summary keeps of its candidates for the bound (policy.bounds): their
    smallest weight, how many have no start, and the others' starts (or checkpoints), as whole
    seconds rounded up, latest first, with their running sums."""

    least: int = 0
    unknown: int = 0
    known: tuple[int, ...] = ()
    sums: tuple[int, ...] = (0,)

    @classmethod
    def of(cls, pods: Iterable[Pod], allocatable: Vector) -> "Youngest":
        least, unknown, known = None, 0, []
        for p in pods:
            w = weight(p.requests, allocatable)
            least = w if least is None or w < least else least
            began = since(p)
            if began is None:
                unknown += 1
            else:
                known.append(math.ceil(began))
        known.sort(reverse=True)
        sums = [0]
        for t in known:
            sums.append(sums[-1] + t)
        return cls(least or 0, unknown, tuple(known), tuple(sums))

    def floor(self, count: int, now: float | None) -> int:
        """A lower bound on the work any ``count`` or more of the candidates lose at ``now``: the
        ``count`` youngest ages (those with no start lose none) at the smallest weight."""
        k = min(count - self.unknown, len(self.known))
        if now is None or not self.least or k <= 0:
            return 0
        n = math.floor(now)
        if self.known[0] <= n:  # every one began by now: the ages sum to k * n less their starts
            return self.least * (k * n - self.sums[k])
        return self.least * sum(max(0, n - t) for t in self.known[:k])


def cpu_seconds(victims: Iterable[Pod], now: float | None) -> float:
    """Cores x seconds of work lost, over the live victims (simulate's ``work_lost_cpu_seconds``)."""
    return sum(p.requests.get(CPU, 0) * age(p, now) for p in victims if not p.terminating) / 1000


def gpu_seconds(victims: Iterable[Pod], now: float | None) -> float:
    """GPUs x seconds of work lost, over the live victims (``gpu_seconds_lost``)."""
    return float(sum(gpus(p.requests) * age(p, now) for p in victims if not p.terminating))


def gpus(requests: Mapping[str, int]) -> Fraction:
    return sum((requests.get(r, 0) * per for r, per in GPUS.items()), Fraction(0))


def core_seconds(value: float) -> str:
    """Millicore-seconds as core-seconds, in words: ``1.5 core-seconds``."""
    return f"{value / 1000:.3f}".rstrip("0").rstrip(".") + " core-seconds"


def _show(value: float, _) -> str:
    return core_seconds(value)


def _at_least(value: float, _) -> str:
    return f"at least {core_seconds(value)} of work lost"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    mine, theirs = stay.lost.get(pod.uid), stay.lost.get(victim.uid)
    if mine is None or theirs is None or mine <= theirs:
        return None
    what = "checkpointed" if pod.checkpoint is not None and pod.checkpoint > (pod.start_time or 0) else "started"
    return (
        f"more work to lose ({core_seconds(mine)} since it last {what} {since(pod):.0f}s since the epoch, "
        f"{victim.key} {core_seconds(theirs)})"
    )


CRITERION = Criterion(
    name="work lost since the last checkpoint", field="work_lost_core_seconds", kind=Kind.SUM, of_pod=_of_pod,
    floor="work_lost", show=_show, plain=lambda value, _: value / 1000, at_least=_at_least, stays=_stays,
)

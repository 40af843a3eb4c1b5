"""Resource vectors and a pod's effective requests, counted as kube-scheduler counts them.

A vector is a plain ``dict`` of resource name to integer (see policy.quantity for the
units) that is never mutated after it is built. Every pod also requests one ``pods`` slot.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from policy.quantity import CPU

MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

Vector = Mapping[str, int]
EMPTY: Vector = {}


def add(*vectors: Vector) -> dict[str, int]:
    total: dict[str, int] = {}
    for vector in vectors:
        for name, value in vector.items():
            total[name] = total.get(name, 0) + value
    return total


def maximum(a: Vector, b: Vector) -> dict[str, int]:
    result = dict(a)
    for name, value in b.items():
        if value > result.get(name, 0):
            result[name] = value
    return result


def checked_resources(request: Vector) -> tuple[str, ...]:
    """The resources the NodeResourcesFit filter checks for this request.

    Upstream checks the pod-count slot always and every other resource only when the pod
    requests a positive amount of it (an overcommitted node still admits a 0-cpu pod).
    """
    return tuple(name for name, value in request.items() if value > 0 or name == PODS)


def shortfalls(*, request: Vector, allocatable: Vector, used: Vector) -> dict[str, int]:
    """How much of each checked resource is missing for ``request`` to fit; empty if it fits."""
    missing = {}
    for name in checked_resources(request):
        free = allocatable.get(name, 0) - used.get(name, 0)
        if request[name] > free:
            missing[name] = request[name] - free
    return missing


def effective_requests(
    *,
    containers: Iterable[Vector],
    init_containers: Iterable[tuple[Vector, bool]] = (),
    overhead: Vector = EMPTY,
    pod_level: Vector = EMPTY,
    in_place: Iterable[Vector] = (),
    spec_too: bool = True,
) -> dict[str, int]:
    """A pod's requests as upstream's ``resource.PodRequests`` computes them, plus one pod slot.

    ``init_containers`` are ``(requests, restartable)`` pairs in spec order. Restartable
    (sidecar) init containers keep running, so they add to the regular containers and to every
    later init container; a plain init container needs its own requests plus the sidecars
    started before it. The pod needs the larger of the two phases. ``in_place``: for a pod
    being resized in place, its containers' requests as the kubelet has allocated them and as
    it has actuated them, each already summed so: the pod needs, per resource, the largest of
    those and the spec's (upstream's ``UseStatusResources``), or of those alone where the
    resize is infeasible (not ``spec_too``). Pod-level requests (``spec.resources``), when set,
    then replace the sum for the resources they name, and the overhead is added.
    """
    total = containers_total(containers, init_containers) if spec_too else {}
    for other in in_place:
        total = maximum(total, other)
    total.update(pod_level)
    total = add(total, overhead)
    total[PODS] = 1
    return total


def containers_total(containers: Iterable[Vector], init_containers: Iterable[tuple[Vector, bool]] = ()) -> dict[str, int]:
    """What a pod's containers need together (``effective_requests``' first step)."""
    running = add(*containers)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for requests, restartable in init_containers:
        if restartable:
            running = add(running, requests)
            sidecars = add(sidecars, requests)
            phase = sidecars
        else:
            phase = add(requests, sidecars)
        init_peak = maximum(init_peak, phase)
    return maximum(running, init_peak)


def describe(vector: Vector) -> str:
    """A short human form, e.g. ``cpu=1500m memory=2Gi pods=1``."""
    return " ".join(f"{name}={_human(name, value)}" for name, value in sorted(vector.items()))


def _human(name: str, value: int) -> str:
    if name == CPU:
        return f"{value // 1000}" if value % 1000 == 0 else f"{value}m"
    if name in (MEMORY, EPHEMERAL_STORAGE) or name.startswith("hugepages-"):
        for suffix, size in (("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
            if value and value % size == 0:
                return f"{value // size}{suffix}"
    return str(value)

"""The immutable records policy decides on: pods, nodes, PodDisruptionBudgets, priority classes.

They hold only what the decisions need, already in scheduler units (see policy.resources),
so they are cheap to keep for every pod of a large cluster.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from policy.apps import AppMark
from policy.gangs import GangMark
from policy.jobs import JobIndex
from policy.labels import Selector
from policy.placement import BARE, Placement, Taint
from policy.qos import QoS
from policy.resources import Vector

# Scheduling constraints the preemption policy does not model. A preemptor that has one of
# these keeps the scheduler's own victims (see policy.preempt).
HOST_PORTS = "host ports"
POD_AFFINITY = "inter-pod affinity"
POD_ANTI_AFFINITY = "inter-pod anti-affinity"
TOPOLOGY_SPREAD = "topology spread constraints"
NODE_LIMITED_VOLUMES = "volumes with node limits"
RESOURCE_CLAIMS = "dynamic resource claims"

# What the API server writes into an empty spec.schedulerName.
DEFAULT_SCHEDULER = "default-scheduler"
# What it writes into an absent spec.terminationGracePeriodSeconds.
DEFAULT_GRACE = 30


@dataclass(frozen=True, slots=True)
class Pod:
    uid: str
    name: str
    namespace: str
    priority: int
    requests: Vector
    qos: QoS
    labels: Mapping[str, str]
    node_name: str | None = None
    nominated_node_name: str | None = None
    # status.startTime as seconds since the epoch; None sorts as the latest (upstream: "now").
    start_time: float | None = None
    # metadata.creationTimestamp as seconds since the epoch (the preemption delay counts from it).
    created: float | None = None
    terminating: bool = False
    # A scheduler is evicting it to make room for another pod: the status condition
    # DisruptionTarget, reason PreemptionByScheduler, which kube-scheduler sets before deleting.
    preempted: bool = False
    preemption_never: bool = False
    unmodelled: tuple[str, ...] = ()
    priority_class: str = ""
    owner: str | None = None  # UID of the controlling owner (a ReplicaSet, a Job, ...)
    # spec.schedulerName: the scheduler whose nominator holds this pod's nomination (see
    # policy.view.known_to_scheduler).
    scheduler_name: str = DEFAULT_SCHEDULER
    gang: GangMark | None = None  # the all-or-nothing group it belongs to (policy.gangs)
    app: AppMark | None = None  # the application with a manager it belongs to (policy.apps)
    # Its controller's kind and its node constraints (policy.placement): one shared object per
    # distinct value, so that each pod pays one slot (policy.homes reads it).
    placement: Placement = BARE
    # spec.schedulingGates is not empty: the scheduler does not queue it yet (policy.scheduling_queue).
    gated: bool = False
    # When reprieve's view first showed the pod bound to its node (seconds since the epoch);
    # None: as old as the view itself (a snapshot, a first list). Not part of the pod's identity.
    bound_at: float | None = field(default=None, compare=False)
    # controller.kubernetes.io/pod-deletion-cost: what its owner says losing it costs (0 unset or
    # invalid, as the ReplicaSet controller reads it)
    deletion_cost: int = 0
    # An Indexed Job's pod: its completion index and the index's failures so far (policy.jobs)
    job_index: JobIndex | None = None
    # spec.terminationGracePeriodSeconds (the API server's default: 30): how long the kubelet lets
    # it stop once deleted, as kube-scheduler deletes a victim (default DeleteOptions: the pod's own)
    grace: int = DEFAULT_GRACE
    # reprieve.io/last-checkpoint (RFC 3339) as seconds since the epoch: the work before it is
    # saved (policy.criteria.work_lost); None unset or malformed
    checkpoint: float | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class InFlight:
    """A preemption reprieve answered that its view may not show yet: the preemptor about to
    be nominated to ``node``, its victims about to be deleted."""

    preemptor: Pod
    node: str
    victims: tuple[Pod, ...]


@dataclass(frozen=True, slots=True)
class Node:
    name: str
    allocatable: Vector
    labels: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False  # spec.unschedulable: cordoned


@dataclass(frozen=True, slots=True)
class DisruptionBudget:
    namespace: str
    name: str
    selector: Selector
    disruptions_allowed: int
    disrupted_pods: frozenset[str] = frozenset()
    key: str = field(init=False, compare=False)  # namespace/name, kept: accounting indexes by it

    def __post_init__(self) -> None:
        object.__setattr__(self, "key", f"{self.namespace}/{self.name}")

    def covers(self, pod: Pod) -> bool:
        """Upstream's match: same namespace, a labelled pod, a non-empty matching selector."""
        return (
            pod.namespace == self.namespace
            and bool(pod.labels)
            and self.selector.matches(pod.labels)
        )


@dataclass(frozen=True, slots=True)
class PriorityClass:
    name: str
    value: int
    global_default: bool = False
    annotations: Mapping[str, str] = field(default_factory=dict)


def resolve_priority(
    *, spec_priority: int | None, class_name: str, classes: Mapping[str, PriorityClass]
) -> int:
    """``spec.priority``, else the named class's value, else the global default's, else 0."""
    if spec_priority is not None:
        return spec_priority
    if class_name and class_name in classes:
        return classes[class_name].value
    defaults = [c.value for c in classes.values() if c.global_default]
    # Several global defaults can exist after a race; the Priority admission plugin then picks
    # the one with the lowest value, and so does reprieve.
    return min(defaults) if defaults else 0

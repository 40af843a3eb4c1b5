"""Lean pydantic projections of the Kubernetes objects reprieve reads.

They mirror the API's camelCase JSON, read only the fields policy needs and ignore the
rest, so a validation error names the exact field (``spec.containers.0.resources...``).
"""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal

import pydantic
from pydantic import AfterValidator, AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field
from pydantic import StrictBool, StrictInt, StrictStr

from policy import gangs, jobs
from policy.criteria.deletion_cost import ANNOTATION as DELETION_COST
from policy.criteria.work_lost import ANNOTATION as CHECKPOINT
from policy.quantity import parse_quantity


@functools.lru_cache(maxsize=4096, typed=True)
def _quantity(value: str | int | float) -> str | int | float:
    # Every watch event and every verb's pod repeats the same few quantities ("1", "500Mi"):
    # check each once (a bad one raises, and errors are not cached). parse_quantity raises
    # ValueError with a message naming the bad text.
    if parse_quantity(value) < 0:  # ValidateNonnegativeQuantity: requests, limits, overhead, allocatable
        raise ValueError(f"{value!r} must not be negative")
    return value


Quantity = Annotated[StrictStr | StrictInt | float, AfterValidator(_quantity)]
# The API server's own bounds, so that whatever it accepts passes and nothing else is echoed
# back, logged or remembered at any size: names are DNS subdomains (253 characters),
# namespaces and label values DNS labels (63), label keys and resource names qualified names
# (a 253-character prefix, "/", and 63 characters).
Name = Annotated[StrictStr, Field(max_length=253)]
Namespace = Annotated[StrictStr, Field(max_length=63)]
QualifiedName = Annotated[StrictStr, Field(max_length=317)]
LabelValue = Annotated[StrictStr, Field(max_length=63)]
Int32 = Annotated[StrictInt, Field(ge=-(2**31), le=2**31 - 1)]  # priority, PriorityClass value, ports
Count32 = Annotated[StrictInt, Field(ge=0, le=2**31 - 1)]  # a Job's limits and counts
Int64 = Annotated[StrictInt, Field(ge=-(2**63), le=2**63 - 1)]  # a pod's terminationGracePeriodSeconds
ResourceList = dict[QualifiedName, Quantity]


@functools.lru_cache(maxsize=4096, typed=True)
def _held_quantity(value: str | int | float) -> str | int | float:
    parse_quantity(value)  # a bad one raises; a negative one stands (translate reads it as 0)
    return value


# What a kubelet reports it holds (a pod resized in place): the API server checks no sign there,
# so a negative value is not refused (translate.in_place reads it as nothing held).
HeldList = dict[QualifiedName, Annotated[StrictStr | StrictInt | float, AfterValidator(_held_quantity)]]


class _Object(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class OwnerReference(_Object):
    uid: Name = ""
    kind: Name = ""
    controller: StrictBool | None = None


class ObjectMeta(_Object):
    name: Name = ""
    namespace: Namespace = ""
    uid: Name = ""
    labels: dict[QualifiedName, LabelValue] | None = None
    creationTimestamp: AwareDatetime | None = None
    deletionTimestamp: AwareDatetime | None = None
    ownerReferences: list[OwnerReference] | None = None


class AnnotatedMeta(ObjectMeta):
    """Metadata with annotations: read only for the few objects whose annotations matter."""

    annotations: dict[StrictStr, StrictStr] | None = None


# The pod annotations reprieve reads: gang membership (policy.gangs), the pod-deletion-cost and
# an Indexed Job's index and its failures (policy.jobs), and the last checkpoint (policy.criteria.work_lost).
POD_ANNOTATIONS = gangs.ANNOTATIONS | {DELETION_COST} | jobs.ANNOTATIONS | {CHECKPOINT}


def pod_annotations(value: Any) -> Any:
    """Only the annotations reprieve reads (``POD_ANNOTATIONS``), picked before validation: the
    rest (kubectl's last-applied-configuration can be 256 KiB) is neither checked nor kept. A
    kept value longer than a name (253 characters) is dropped too: no PodGroup has such a name,
    the counts gangs reads and a deletion cost are at most 11 characters, and an RFC 3339 time
    at most 35, so it marks nothing either way."""
    if not isinstance(value, dict):
        return value  # not a map: let validation say so
    return {k: v for k in POD_ANNOTATIONS if (v := value.get(k)) is not None and not (isinstance(v, str) and len(v) > 253)}


class PodMeta(ObjectMeta):
    """A pod's metadata: the annotations that mark gang membership, its deletion cost, its Job
    index and its last checkpoint, none other."""

    annotations: Annotated[dict[StrictStr, StrictStr] | None, BeforeValidator(pod_annotations)] = None


class ResourceRequirements(_Object):
    requests: ResourceList | None = None
    limits: ResourceList | None = None


class ContainerPort(_Object):
    hostPort: Int32 | None = None


class Container(_Object):
    name: StrictStr = ""
    resources: ResourceRequirements | None = None
    ports: list[ContainerPort] | None = None
    restartPolicy: StrictStr | None = None


class AffinityTerms(_Object):
    requiredDuringSchedulingIgnoredDuringExecution: list[dict[str, Any]] | None = None


class NodeSelectorRequirement(_Object):
    key: QualifiedName
    operator: StrictStr  # any: one policy.placement does not know matches nothing, as upstream
    values: list[Name] | None = None


class NodeSelectorTerm(_Object):
    matchExpressions: list[NodeSelectorRequirement] | None = None
    matchFields: list[NodeSelectorRequirement] | None = None


class NodeSelector(_Object):
    nodeSelectorTerms: list[NodeSelectorTerm] | None = None


class NodeAffinity(_Object):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None


class Affinity(_Object):
    nodeAffinity: NodeAffinity | None = None
    podAffinity: AffinityTerms | None = None
    podAntiAffinity: AffinityTerms | None = None


class SchedulingGroup(_Object):
    podGroupName: Name | None = None  # the Workload API's PodGroup (scheduling.k8s.io/v1beta1)


class TopologySpreadConstraint(_Object):
    whenUnsatisfiable: StrictStr = "DoNotSchedule"


class PodSpec(_Object):
    nodeName: Name | None = None
    schedulerName: Name | None = None
    priority: Int32 | None = None
    priorityClassName: Name | None = None
    preemptionPolicy: StrictStr | None = None
    containers: list[Container] | None = None
    initContainers: list[Container] | None = None
    overhead: ResourceList | None = None
    resources: ResourceRequirements | None = None
    affinity: Affinity | None = None
    nodeSelector: dict[QualifiedName, LabelValue] | None = None
    # Read as plain JSON (translate._tolerations): every pod carries two or more, and a model
    # each made reading a pod a quarter slower.
    tolerations: list[Any] | None = None
    topologySpreadConstraints: list[TopologySpreadConstraint] | None = None
    volumes: list[dict[str, Any]] | None = None
    resourceClaims: list[dict[str, Any]] | None = None
    schedulingGroup: SchedulingGroup | None = None
    schedulingGates: list[Any] | None = None  # only whether there are any (translate.pod_record)
    terminationGracePeriodSeconds: Int64 | None = None  # translate.grace_period


class StatusResources(_Object):
    requests: HeldList | None = None  # what the kubelet has actuated (a container's, or the pod's)


class ContainerStatus(_Object):
    """What a pod resized in place reads of a container's status (translate.in_place)."""

    name: StrictStr = ""
    allocatedResources: HeldList | None = None
    resources: StatusResources | None = None


class PodStatus(_Object):
    phase: StrictStr | None = None
    # Read as plain JSON, only for kube-scheduler's DisruptionTarget mark (translate.preempted):
    # a model per condition made every pod 40% slower to read, for a field policy only glances at.
    conditions: list[Any] | None = None
    qosClass: Literal["BestEffort", "Burstable", "Guaranteed"] | None = None
    nominatedNodeName: Name | None = None
    startTime: AwareDatetime | None = None
    # A pod resized in place (translate.in_place): what the kubelet has allocated and actuated,
    # per container and, with pod-level resources, for the pod.
    containerStatuses: list[ContainerStatus] | None = None
    initContainerStatuses: list[ContainerStatus] | None = None
    allocatedResources: HeldList | None = None
    resources: StatusResources | None = None


class Pod(_Object):
    metadata: PodMeta = PodMeta()
    spec: PodSpec = PodSpec()
    status: PodStatus = PodStatus()


class NodeStatus(_Object):
    allocatable: ResourceList | None = None


class Taint(_Object):
    key: QualifiedName
    value: LabelValue = ""
    effect: StrictStr = ""


class NodeSpec(_Object):
    taints: list[Taint] | None = None
    unschedulable: StrictBool | None = None


class Node(_Object):
    metadata: ObjectMeta = ObjectMeta()
    spec: NodeSpec = NodeSpec()
    status: NodeStatus = NodeStatus()


class LabelSelectorRequirement(_Object):
    key: StrictStr
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"]
    values: list[StrictStr] | None = None


class LabelSelector(_Object):
    matchLabels: dict[StrictStr, StrictStr] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


class PodDisruptionBudgetSpec(_Object):
    selector: LabelSelector | None = None


class PodDisruptionBudgetStatus(_Object):
    disruptionsAllowed: Int32 = 0
    disruptedPods: dict[StrictStr, Any] | None = None


class PodDisruptionBudget(_Object):
    metadata: ObjectMeta = ObjectMeta()
    spec: PodDisruptionBudgetSpec = PodDisruptionBudgetSpec()
    status: PodDisruptionBudgetStatus = PodDisruptionBudgetStatus()


class PriorityClass(_Object):
    metadata: AnnotatedMeta = AnnotatedMeta()
    value: Int32
    globalDefault: StrictBool | None = None


# Gang group objects (policy.gangs.GroupMinimum): only the minimum is read.


class MinMemberSpec(_Object):
    minMember: Int32 | None = None  # int32, omitempty: absent means 0, no minimum


class MinMemberPodGroup(_Object):
    """scheduler-plugins' coscheduling PodGroup (scheduling.x-k8s.io/v1alpha1) and Volcano's
    (scheduling.volcano.sh/v1beta1): both keep the minimum in ``spec.minMember``."""

    metadata: ObjectMeta = ObjectMeta()
    spec: MinMemberSpec = MinMemberSpec()


class GangSchedulingPolicy(_Object):
    minCount: Int32 | None = None


class PodGroupSchedulingPolicy(_Object):
    # A union: ``basic`` (no all-or-nothing, so no minimum) or ``gang``.
    gang: GangSchedulingPolicy | None = None


class WorkloadPodGroupSpec(_Object):
    schedulingPolicy: PodGroupSchedulingPolicy | None = None


class WorkloadPodGroup(_Object):
    """The Workload API's PodGroup (scheduling.k8s.io/v1beta1, Kubernetes 1.37 with the
    GenericWorkload gate): the minimum is ``spec.schedulingPolicy.gang.minCount``."""

    metadata: ObjectMeta = ObjectMeta()
    spec: WorkloadPodGroupSpec = WorkloadPodGroupSpec()


# Jobs (batch/v1): only what their retry budgets need (policy.jobs).


class NamedMeta(_Object):
    """Metadata read for its name and UID alone (a Job's labels and owners change nothing here)."""

    name: Name = ""
    namespace: Namespace = ""
    uid: Name = ""


class PodConditionPattern(_Object):
    type: StrictStr
    status: StrictStr = "True"  # the API's default


class PodFailurePolicyRule(_Object):
    action: Literal["Ignore", "FailJob", "FailIndex", "Count"]
    onPodConditions: list[PodConditionPattern] | None = None  # onExitCodes is not read (policy.jobs)


class PodFailurePolicy(_Object):
    rules: list[PodFailurePolicyRule] | None = None


class JobSpec(_Object):
    backoffLimit: Count32 | None = None
    backoffLimitPerIndex: Count32 | None = None
    podFailurePolicy: PodFailurePolicy | None = None


class UncountedTerminatedPods(_Object):
    failed: list[StrictStr] | None = None  # UIDs of failed pods not yet in status.failed


class JobCondition(_Object):
    type: StrictStr
    status: StrictStr


class JobStatus(_Object):
    failed: Count32 | None = None
    # "1,3-5", read as ascending (first, last) ranges; anything else names itself
    failedIndexes: Annotated[StrictStr, AfterValidator(jobs.parse_ranges)] | None = None
    uncountedTerminatedPods: UncountedTerminatedPods | None = None
    conditions: list[JobCondition] | None = None


class Job(_Object):
    metadata: NamedMeta = NamedMeta()
    spec: JobSpec = JobSpec()
    status: JobStatus = JobStatus()


def describe_validation(exc: pydantic.ValidationError, *, limit: int = 3) -> str:
    """``field.path: message`` for the first few errors, the way an operator would fix them."""
    parts = []
    for error in exc.errors()[:limit]:
        where = ".".join(str(p) for p in error["loc"])
        message = error["msg"].removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    more = exc.error_count() - limit
    return "; ".join(parts) + (f" (and {more} more)" if more > 0 else "")

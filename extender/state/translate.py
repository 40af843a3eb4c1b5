"""The one place where Kubernetes objects become policy records."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import re
from collections.abc import Mapping
from typing import Any

from extender.state import kube
from policy import apps, gangs, jobs, model, resources
from policy import placement as place
from policy.criteria.deletion_cost import ANNOTATION as DELETION_COST
from policy.criteria.work_lost import ANNOTATION as CHECKPOINT
from policy.labels import Requirement, Selector
from policy.quantity import to_units
from policy.qos import QoS, compute_qos

# Volume sources that count against a node's attach limit (NodeVolumeLimits) or need a
# volume binding decision; reprieve does not model either.
_NODE_LIMITED_VOLUMES = frozenset(
    {"persistentVolumeClaim", "ephemeral", "csi", "awsElasticBlockStore", "gcePersistentDisk", "azureDisk", "cinder"}
)
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})

# Records of a large cluster repeat the same small values: share them. Each table keeps the
# SHARED_ENTRIES most recently used values (a value that falls out is only no longer shared:
# the records holding it keep it), so churn cannot grow them (docs/input-limits.md).
SHARED_ENTRIES = 32_768


@functools.lru_cache(maxsize=SHARED_ENTRIES)
def _shared_mapping(items: tuple[tuple[str, str | int], ...]) -> Mapping[str, str | int]:
    """One dict per distinct label set or resource vector, so that 150,000 pods hold a few
    thousand (half the memory of a live view)."""
    return dict(items)


@functools.lru_cache(maxsize=SHARED_ENTRIES)
def _shared_name(text: str) -> str:
    """One string object per node name, namespace or class name. Not sys.intern: CPython 3.12
    makes interned strings immortal, so every name ever seen would stay."""
    return text


@functools.lru_cache(maxsize=4096, typed=True)
def _units(name: str, quantity: str | int | float) -> int:
    return to_units(name, quantity)


def vector(quantities: Mapping[str, str | int | float] | None) -> dict[str, int]:
    return {name: _units(name, q) for name, q in (quantities or {}).items()}


def _share_mapping(mapping: Mapping | None) -> Mapping:
    return _shared_mapping(tuple(sorted(mapping.items()))) if mapping else {}


def _share_name(text: str | None) -> str | None:
    return _shared_name(text) if text else None


@functools.lru_cache(maxsize=SHARED_ENTRIES)
def _shared_mark(mark: gangs.GangMark | apps.AppMark) -> gangs.GangMark | apps.AppMark:
    """One GangMark per gang, one AppMark per application and role (and one key string each):
    their pods carry the same."""
    return mark


def _as_is(value):
    return value


# A pod's placement as plain tuples (controller kind, node selector, affinity terms as
# ((key, operator, values), ...) pairs of expressions and fields, tolerations as
# (key, operator, value, effect)): hashable, so that equal ones become one shared Placement.
_PlacementKey = tuple[str | None, tuple, tuple | None, tuple]


def _placement_of(key: _PlacementKey) -> place.Placement:
    kind, node_selector, affinity, tolerations = key
    terms = None
    if affinity is not None:
        terms = tuple(
            place.Term(
                tuple(place.Requirement(k, op, values) for k, op, values in expressions),
                tuple(place.Requirement(k, op, values) for k, op, values in fields),
            )
            for expressions, fields in affinity
        )
    return place.Placement(kind, node_selector, terms, tuple(place.Toleration(*t) for t in tolerations))


_shared_placement = functools.lru_cache(maxsize=SHARED_ENTRIES)(_placement_of)


def _placement(kind: str | None, spec: kube.PodSpec, *, shared: bool) -> place.Placement:
    """What a replacement of the pod would carry (policy.placement): ``kind`` its controller's;
    shared unless ``shared=False``."""
    node_selector = tuple(sorted(spec.nodeSelector.items())) if spec.nodeSelector else ()
    required = spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution if (
        spec.affinity and spec.affinity.nodeAffinity
    ) else None
    affinity = None
    if required is not None:  # present, even without terms (then no node matches)
        affinity = tuple(
            (_requirements(term.matchExpressions), _requirements(term.matchFields)) for term in required.nodeSelectorTerms or ()
        )
    tolerations = _tolerations(spec.tolerations)
    if kind is None and not node_selector and affinity is None and not tolerations:
        return place.BARE
    key = (kind, node_selector, affinity, tolerations)
    return _shared_placement(key) if shared else _placement_of(key)


def _requirements(requirements: list[kube.NodeSelectorRequirement] | None) -> tuple:
    return tuple((r.key, r.operator, tuple(r.values or ())) for r in requirements or ())


def _tolerations(raw: list[Any] | None) -> tuple[tuple[str, str, str, str], ...]:
    """(key, operator, value, effect) per toleration. An entry that is not a map of strings
    (the API server would have refused it) is left out: it tolerates nothing."""
    found = []
    for t in raw or ():
        if type(t) is dict:  # written out: every pod has some, and this runs per watch event
            f = (t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")
            if type(f[0]) is str and type(f[1]) is str and type(f[2]) is str and type(f[3]) is str:
                found.append(f)
    return tuple(found)


def _requests_and_limits(rr: kube.ResourceRequirements | None) -> tuple[dict[str, int], dict[str, int]]:
    if rr is None:
        return {}, {}
    limits = vector(rr.limits)
    # The API server defaults a missing request to the limit; do the same for hand-written
    # snapshots and requests so that requests and QoS match what the cluster would hold.
    return {**limits, **vector(rr.requests)}, limits


_NO_CONTAINER = object()


def _held(quantities: Mapping[str, str | int | float]) -> dict[str, int]:
    """What a kubelet reports it holds, in scheduler units: a negative value (the API server
    does not check the sign there) as nothing."""
    return {name: max(0, units) for name, units in vector(quantities).items()}


def in_place(
    pod: kube.Pod, containers: list[dict[str, int]], inits: list[dict[str, int]], restartable: list[bool],
    infeasible: bool = False,
) -> tuple[dict[str, int], ...]:
    """For a pod resized in place, its containers' requests as the kubelet has allocated them
    and as it has actuated them (``containers`` and ``inits``: the spec's, in spec order;
    ``restartable``: which init containers are sidecars), each summed as the spec's are (from
    the pod's own status, one where the two agree); () where the containers' statuses hold the
    spec's (every pod not being resized on a kubelet before 1.36, which writes no pod-level
    status) and its resize is not ``infeasible``. As upstream's ``resource.PodRequests`` with
    ``UseStatusResources``: a container without a status is taken at the spec (at nothing while
    the resize is infeasible, when upstream leaves the spec out); its actuated requests, where
    the status has none, at its allocated ones; where the pod's own status has both (a kubelet
    of 1.36 or later writes them for every pod), those are the two."""
    status, spec = pod.status, pod.spec
    if status.allocatedResources is not None and status.resources is not None and status.resources.requests is not None:
        if status.resources.requests == status.allocatedResources:
            return (_held(status.allocatedResources),)  # parsed once where they agree
        return _held(status.allocatedResources), _held(status.resources.requests)
    statuses = (*(status.containerStatuses or ()), *(status.initContainerStatuses or ()))
    if not statuses and not infeasible:
        return ()
    specs = (*(spec.containers or ()), *(spec.initContainers or ()))
    if not infeasible:
        wanted = {c.name: c.resources.requests if c.resources is not None else None for c in specs}
        if len(wanted) == len(specs) and all(_as_asked(s, wanted) for s in statuses):
            return ()  # every pod not being resized: one pass, nothing parsed
    by_name: dict[str, kube.ContainerStatus] = {}
    for s in statuses:
        by_name.setdefault(s.name, s)  # the first of a name, as upstream's findContainerStatus

    def read(specs, asked) -> tuple[list, list]:
        allocated, actuated = [], []
        for container, request in zip(specs, asked):
            s = by_name.get(container.name)
            given = s.allocatedResources if s is not None else None
            now = s.resources.requests if s is not None and s.resources is not None else None
            if infeasible:  # the spec left out: a container without a status at nothing
                a = {} if given is None else _held(given)
                t = a if now is None else _held(now)
            else:  # the spec's where the status holds it (``request``: with requests defaulted from limits)
                wanted = container.resources.requests if container.resources is not None else None
                a = request if given is None or given == wanted else _held(given)
                t = a if now is None else request if now == wanted else _held(now)
            allocated.append(a)
            actuated.append(t)
        return allocated, actuated

    regular = read(spec.containers or (), containers)
    initial = read(spec.initContainers or (), inits)
    return tuple(
        resources.containers_total(regular[i], zip(initial[i], restartable)) for i in (0, 1)
    )


def _as_asked(status: kube.ContainerStatus, wanted: Mapping[str, Any]) -> bool:
    """Whether the container status holds what the spec asks (or names no container of it)."""
    want = wanted.get(status.name, _NO_CONTAINER)
    if want is _NO_CONTAINER:
        return True  # not read
    now = status.resources.requests if status.resources is not None else None
    return status.allocatedResources in (None, want) and now in (None, want)


def _pod_level(asked: dict[str, int], status: kube.PodStatus, infeasible: bool) -> dict[str, int]:
    """Pod-level requests as upstream reads them while the pod is resized in place: the largest
    of the spec's (left out while the resize is infeasible), the actuated and the allocated."""
    if status.resources is None:
        return _pod_level_only(asked)  # upstream reads the pod's own status only where it has resources
    if infeasible:
        asked = {}
    for other in (status.resources.requests, status.allocatedResources):
        if other is not None:
            asked = resources.maximum(asked, _held(other))
    return _pod_level_only(asked)


def _pod_level_only(asked: dict[str, int]) -> dict[str, int]:
    """Only these stand for the containers' (upstream's IsSupportedPodLevelResource): the pod's
    own status may name others (a kubelet adds its DRA allocations there), a hand-written dump
    too."""
    return {r: v for r, v in asked.items() if r in ("cpu", "memory") or r.startswith("hugepages-")}


def resize_infeasible(conditions: Any) -> bool:
    """Whether the pod's resize is Infeasible (its first PodResizePending condition says so),
    read as upstream's ``IsPodResizeInfeasible`` reads it; ``conditions`` as the API sends them."""
    for condition in conditions if type(conditions) is list else ():
        if isinstance(condition, dict) and condition.get("type") == "PodResizePending":
            return condition.get("reason") == "Infeasible"
    return False


def is_terminal(pod: kube.Pod) -> bool:
    """Succeeded and Failed pods hold no room: the scheduler's informer does not even list them."""
    return pod.status.phase in TERMINAL_PHASES


def pod_record(pod: kube.Pod, classes: Mapping[str, model.PriorityClass], *, shared: bool = True) -> model.Pod:
    """The policy record of ``pod``. ``shared=False`` for a pod that lives only as long as one
    request (the preemptor): its values are not worth a place in the shared tables."""
    share, name, mark = (_share_mapping, _share_name, _shared_mark) if shared else (_as_is, _as_is, _as_is)
    spec, meta, status = pod.spec, pod.metadata, pod.status
    controller = next((o for o in meta.ownerReferences or () if o.controller), None)
    namespace = name(meta.namespace or "default")
    gang = gangs.mark(
        namespace=namespace,
        labels=meta.labels or {},
        annotations=meta.annotations or {},
        pod_group=spec.schedulingGroup.podGroupName if spec.schedulingGroup else None,
    )
    containers = [_requests_and_limits(c.resources) for c in spec.containers or ()]
    inits = [(c, _requests_and_limits(c.resources)) for c in spec.initContainers or ()]
    pod_level = _requests_and_limits(spec.resources) if spec.resources else None
    asked = [req for req, _ in containers]
    asked_inits = [req for _, (req, _) in inits]
    restartable = [c.restartPolicy == "Always" for c, _ in inits]
    infeasible = resize_infeasible(status.conditions)
    requests = resources.effective_requests(
        containers=asked,
        init_containers=zip(asked_inits, restartable),
        overhead=vector(spec.overhead),
        pod_level=_pod_level(pod_level[0], status, infeasible) if pod_level and pod_level[0] else resources.EMPTY,
        in_place=in_place(pod, asked, asked_inits, restartable, infeasible),
        spec_too=not infeasible,
    )
    if status.qosClass:
        qos = QoS.from_wire(status.qosClass)
    else:
        qos = compute_qos(containers=[*containers, *(rl for _, rl in inits)], pod_level=pod_level)
    return model.Pod(
        uid=meta.uid,
        name=meta.name,
        namespace=namespace,
        priority=model.resolve_priority(
            spec_priority=spec.priority, class_name=spec.priorityClassName or "", classes=classes
        ),
        requests=share(requests),
        qos=qos,
        labels=share(meta.labels) if meta.labels else {},
        created=meta.creationTimestamp.timestamp() if meta.creationTimestamp else None,
        preemption_never=spec.preemptionPolicy == "Never",
        unmodelled=_unmodelled(spec),
        priority_class=name(spec.priorityClassName) or "",
        owner=name(controller.uid) or None if controller else None,
        scheduler_name=name(spec.schedulerName) or model.DEFAULT_SCHEDULER,
        gang=mark(gang) if gang is not None else None,
        app=mark(app) if (app := apps.mark(namespace=namespace, labels=meta.labels or {})) is not None else None,
        placement=_placement(controller.kind or None if controller else None, spec, shared=shared),
        gated=bool(spec.schedulingGates),
        deletion_cost=deletion_cost((meta.annotations or {}).get(DELETION_COST)),
        job_index=jobs.index_of(annotations=meta.annotations or {}, labels=meta.labels or {}) if controller else None,
        grace=grace_period(spec.terminationGracePeriodSeconds),
        checkpoint=checkpoint((meta.annotations or {}).get(CHECKPOINT)),
        **_lifecycle(pod, name),
    )


# What a pod's life changes while the rest of it stays: bound, nominated, started, its deletion
# begun, marked for preemption; and its phase, which only says whether it is finished
# (is_terminal). The live watch decodes only these when nothing else changed (pod_revised).
LIFECYCLE_FIELDS = (
    ("spec", "nodeName"),
    ("status", "nominatedNodeName"),
    ("status", "startTime"),
    ("status", "conditions"),
    ("status", "phase"),
    ("metadata", "deletionTimestamp"),
)


def _lifecycle(pod: kube.Pod, name) -> dict[str, Any]:
    """The record's fields that LIFECYCLE_FIELDS give, and nothing else does."""
    spec, meta, status = pod.spec, pod.metadata, pod.status
    return {
        "node_name": name(spec.nodeName) or None,
        "nominated_node_name": name(status.nominatedNodeName) or None,
        "start_time": status.startTime.timestamp() if status.startTime else None,
        "terminating": meta.deletionTimestamp is not None,
        "preempted": any(preempted(c) for c in status.conditions or ()),
    }


def pod_revised(old: model.Pod, pod: kube.Pod) -> model.Pod:
    """``old`` (a shared record, pod_record's) with the lifecycle fields of ``pod``, a pod whose
    other fields are those ``old`` was made from."""
    return dataclasses.replace(old, **_lifecycle(pod, _share_name))


def grace_period(value: int | None) -> int:
    """``spec.terminationGracePeriodSeconds`` as a deletion with default options uses it (what
    kube-scheduler's preemption sends: the pod's own grace period): absent, the API server's
    default of 30; negative, 1 (the pod registry's CheckGracefulDelete)."""
    if value is None:
        return model.DEFAULT_GRACE
    return 1 if value < 0 else value


_INT32 = re.compile(r"-[0-9]+|0|[1-9][0-9]*")


def deletion_cost(value: str | None) -> int:
    """``controller.kubernetes.io/pod-deletion-cost`` as the ReplicaSet controller reads it
    (validFirstDigit, then ParseInt): an int32, with no plus sign and no leading zero unless it
    starts with a minus; anything else (or nothing) is 0."""
    if value is None or not _INT32.fullmatch(value):
        return 0
    cost = int(value)
    return cost if -(2**31) <= cost < 2**31 else 0


_RFC3339 = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?([Zz]|[+-][0-9]{2}:[0-9]{2})"
)


def checkpoint(value: str | None) -> float | None:
    """``reprieve.io/last-checkpoint`` as seconds since the epoch: an RFC 3339 date-time with a
    zone (``2026-12-06T15:04:05Z``, fractions of a second allowed); anything else, or nothing,
    is None (no checkpoint), as a bad pod-deletion-cost reads as none."""
    if value is None or not _RFC3339.fullmatch(value):
        return None
    text = value.upper().replace("Z", "+00:00")
    whole, dot, rest = text.partition(".")
    if dot:  # fromisoformat takes at most 6 digits of a second
        digits = rest[: len(rest) - 6]
        text = f"{whole}.{digits[:6].ljust(6, '0')}{rest[len(digits):]}"
    try:
        return datetime.datetime.fromisoformat(text).timestamp()
    except ValueError:  # a date or time out of range (month 13, hour 25)
        return None


def preempted(condition: Any) -> bool:
    """kube-scheduler's mark on a victim, set before it deletes the pod (upstream's preemption
    executor: DisruptionTarget, True, reason PreemptionByScheduler)."""
    return (
        isinstance(condition, dict)
        and condition.get("type") == "DisruptionTarget"
        and condition.get("status") == "True"
        and condition.get("reason") == "PreemptionByScheduler"
    )


def _unmodelled(spec: kube.PodSpec) -> tuple[str, ...]:
    found = []
    containers = [*(spec.containers or ()), *(spec.initContainers or ())]
    if any(p.hostPort for c in containers for p in c.ports or ()):
        found.append(model.HOST_PORTS)
    affinity = spec.affinity
    if affinity and affinity.podAffinity and affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution:
        found.append(model.POD_AFFINITY)
    if (
        affinity
        and affinity.podAntiAffinity
        and affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution
    ):
        found.append(model.POD_ANTI_AFFINITY)
    if any(t.whenUnsatisfiable == "DoNotSchedule" for t in spec.topologySpreadConstraints or ()):
        found.append(model.TOPOLOGY_SPREAD)
    if any(_NODE_LIMITED_VOLUMES & volume.keys() for volume in spec.volumes or ()):
        found.append(model.NODE_LIMITED_VOLUMES)
    if spec.resourceClaims:
        found.append(model.RESOURCE_CLAIMS)
    return tuple(found)


def node_record(node: kube.Node) -> model.Node:
    return model.Node(
        name=_shared_name(node.metadata.name),
        allocatable=_share_mapping(vector(node.status.allocatable)),
        labels=node.metadata.labels or {},
        taints=tuple(place.Taint(t.key, t.value, t.effect) for t in node.spec.taints or ()),
        unschedulable=bool(node.spec.unschedulable),
    )


def selector(sel: kube.LabelSelector | None) -> Selector:
    if sel is None:
        return Selector()
    expressions = tuple(
        Requirement(term.key, term.operator, frozenset(term.values or ())) for term in sel.matchExpressions or ()
    )
    return Selector(tuple(sorted((sel.matchLabels or {}).items())), expressions)


def budget_record(pdb: kube.PodDisruptionBudget) -> model.DisruptionBudget:
    return model.DisruptionBudget(
        namespace=pdb.metadata.namespace or "default",
        name=pdb.metadata.name,
        selector=selector(pdb.spec.selector),
        disruptions_allowed=pdb.status.disruptionsAllowed,
        disrupted_pods=frozenset(pdb.status.disruptedPods or ()),
    )


def priority_class_record(pc: kube.PriorityClass) -> model.PriorityClass:
    return model.PriorityClass(
        name=pc.metadata.name,
        value=pc.value,
        global_default=bool(pc.globalDefault),
        annotations=dict(pc.metadata.annotations or {}),
    )


# The largest backoffLimit: the API's default where backoffLimitPerIndex is set and it is not.
_NO_LIMIT = 2**31 - 1
_FINISHED = frozenset({"Complete", "Failed"})


def job_record(job: kube.Job) -> jobs.Job:
    """The retry budget of ``job`` (policy.jobs), with the API's defaults for what it leaves out."""
    spec, status, meta = job.spec, job.status, job.metadata
    on_disruption, rule = _on_disruption(spec.podFailurePolicy)
    per_index = spec.backoffLimitPerIndex
    if spec.backoffLimit is not None:
        backoff = spec.backoffLimit
    else:
        backoff = _NO_LIMIT if per_index is not None else jobs.DEFAULT_BACKOFF_LIMIT
    uncounted = status.uncountedTerminatedPods.failed if status.uncountedTerminatedPods else None
    return jobs.Job(
        uid=meta.uid,
        namespace=meta.namespace or "default",
        name=meta.name,
        backoff_limit=backoff,
        failed=(status.failed or 0) + len(uncounted or ()),
        on_disruption=on_disruption,
        rule=rule,
        per_index=per_index,
        failed_indexes=status.failedIndexes or (),
        finished=any(c.type in _FINISHED and c.status == "True" for c in status.conditions or ()),
    )


def _on_disruption(policy: kube.PodFailurePolicy | None) -> tuple[jobs.OnDisruption, int | None]:
    """The action of the first rule whose pod conditions match DisruptionTarget (status True),
    and its place; Count (no rule) where none does."""
    for i, rule in enumerate(policy.rules or () if policy else ()):
        if any(p.type == jobs.DISRUPTION and p.status == "True" for p in rule.onPodConditions or ()):
            return jobs.OnDisruption(rule.action), i
    return jobs.OnDisruption.COUNT, None


# Gang group objects (the PodGroup kinds): their minimum, under the key policy.gangs.mark gives
# the pods that name the group.


def coscheduling_minimum(group: kube.MinMemberPodGroup) -> gangs.GroupMinimum | None:
    """A scheduler-plugins PodGroup (scheduling.x-k8s.io/v1alpha1): its pods carry the label
    scheduling.x-k8s.io/pod-group."""
    return _minimum(gangs.COSCHEDULING, group.metadata, "spec.minMember", group.spec.minMember)


def volcano_minimum(group: kube.MinMemberPodGroup) -> gangs.GroupMinimum | None:
    """A Volcano PodGroup (scheduling.volcano.sh/v1beta1): its pods carry the annotation
    scheduling.k8s.io/group-name."""
    return _minimum(gangs.VOLCANO, group.metadata, "spec.minMember", group.spec.minMember)


def workload_minimum(group: kube.WorkloadPodGroup) -> gangs.GroupMinimum | None:
    """A Workload API PodGroup (scheduling.k8s.io/v1beta1): its pods name it in
    spec.schedulingGroup.podGroupName. A ``basic`` policy (or none) is not all-or-nothing."""
    policy = group.spec.schedulingPolicy
    count = policy.gang.minCount if policy is not None and policy.gang is not None else None
    return _minimum(gangs.WORKLOAD, group.metadata, "spec.schedulingPolicy.gang.minCount", count)


def _minimum(framework: str, meta: kube.ObjectMeta, field: str, minimum: int | None) -> gangs.GroupMinimum | None:
    """None for no minimum, or one below 2: the pods are independent (policy.gangs.gang), never
    an error. Volcano makes a PodGroup of minimum 1 for every plain pod: no record for those."""
    if minimum is None or minimum < 2:
        return None
    namespace = meta.namespace or "default"
    return gangs.GroupMinimum(
        gangs.key(framework, namespace, meta.name), minimum, f"PodGroup {namespace}/{meta.name} {field}"
    )


# The gang group objects reprieve reads (policy.gangs.GroupMinimum): apiVersion -> (projection,
# record), all of kind PodGroup. Other apiVersions of a PodGroup kind belong to other projects
# (or other Workload API versions): ignored, like any unknown kind.
GROUP_KINDS = {
    "scheduling.x-k8s.io/v1alpha1": (kube.MinMemberPodGroup, coscheduling_minimum),
    "scheduling.volcano.sh/v1beta1": (kube.MinMemberPodGroup, volcano_minimum),
    "scheduling.k8s.io/v1beta1": (kube.WorkloadPodGroup, workload_minimum),
}


def group_kind(api_version: str) -> str:
    """The live cache's name for the PodGroups of ``api_version`` (as /readyz says it):
    ``podgroups.<API group>``."""
    return "podgroups." + api_version.split("/")[0]

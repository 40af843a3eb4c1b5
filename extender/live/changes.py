"""Translation of listed objects and watch events into record changes, one table per kind.

Most watch events change nothing reprieve reads (a kubelet's status update of a running pod, a
node's heartbeat, a budget's counts). A Decoder remembers, per object, a digest of its fields
of interest (what its projection in extender.state.kube declares): an event whose fields of
interest are unchanged is UNCHANGED, with no validation and no new record. Where only a pod's
lifecycle fields changed (translate.LIFECYCLE_FIELDS: a bind, a nomination, a start, a deletion
begun), only those are validated and the record is revised; anything else new is decoded
whole, as a listed object is. An object is refused (no record, a warning) exactly where
decoding it whole would refuse it.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson
import pydantic

from extender.state import kube, translate
from policy.model import PriorityClass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Kind:
    name: str
    path: str  # the cluster-wide collection
    params: Mapping[str, str]  # extra list/watch parameters
    model: type[pydantic.BaseModel]
    record: Callable[[Any, Mapping[str, PriorityClass]], Any]
    keep: Callable[[Any], bool] = lambda obj: True
    # Served only where a CRD or a feature gate provides it: watched while discovery finds it
    # (LiveCluster), and never a reason not to be ready.
    optional: bool = False
    # Fields of interest (section, field) whose change alone is applied by revising the record,
    # with only them validated: revise(old record, the model validated from them alone). keep
    # must read only these.
    lifecycle: tuple[tuple[str, str], ...] = ()
    revise: Callable[[Any, Any], Any] | None = None
    # Fields of interest read in part: (section, field) -> what of the raw value decides both
    # whether the model accepts it and what the record takes from it.
    reduced: Mapping[tuple[str, str], Callable[[Any], Any]] = field(default_factory=dict)
    # Sections whose other fields seldom change (a pod's spec): digested whole (but for their
    # lifecycle fields) rather than field by field, a superset of what the model reads.
    whole: frozenset[str] = frozenset()
    # Fields of interest digested only through what a function of the whole object keeps of
    # them (a pod's container statuses: only where they are not the spec's), or None.
    derived: tuple[frozenset[tuple[str, str]], Callable[[dict], Any]] | None = None

    @property
    def group_version(self) -> str:
        """The discovery document that lists it: /apis/<group>/<version> (or /api/v1)."""
        return self.path.rsplit("/", 1)[0]

    @property
    def resource(self) -> str:
        return self.path.rsplit("/", 1)[1]


def _pod_key(raw: dict) -> str:
    return raw["metadata"]["uid"]


def _named_key(raw: dict) -> str:
    meta = raw["metadata"]
    return f"{meta['namespace']}/{meta['name']}" if meta.get("namespace") else meta["name"]


KINDS = {
    "priorityclasses": Kind(
        "priorityclasses",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {},
        kube.PriorityClass,
        lambda obj, classes: translate.priority_class_record(obj),
    ),
    "nodes": Kind("nodes", "/api/v1/nodes", {}, kube.Node, lambda obj, classes: translate.node_record(obj)),
    "poddisruptionbudgets": Kind(
        "poddisruptionbudgets",
        "/apis/policy/v1/poddisruptionbudgets",
        {},
        kube.PodDisruptionBudget,
        lambda obj, classes: translate.budget_record(obj),
    ),
    # Like the scheduler's own informer, never list finished pods: they hold no room.
    "pods": Kind(
        "pods",
        "/api/v1/pods",
        {"fieldSelector": "status.phase!=Succeeded,status.phase!=Failed"},
        kube.Pod,
        translate.pod_record,
        keep=lambda pod: not translate.is_terminal(pod),
        lifecycle=translate.LIFECYCLE_FIELDS,
        revise=translate.pod_revised,
        whole=frozenset({"spec"}),
        reduced={
            ("metadata", "annotations"): kube.pod_annotations,
            # Null and a list are read alike (no condition marks it preempted in either), as are null
            # and a phase that is not a finished one.
            ("status", "conditions"): lambda value: (
                ["list", any(map(translate.preempted, value))] if type(value) is list
                else ["list", False] if value is None else ["raw", value]
            ),
            ("status", "phase"): lambda value: (
                ["str", value in translate.TERMINAL_PHASES] if type(value) is str or value is None else ["raw", value]
            ),
        },
        derived=(frozenset({("status", "containerStatuses"), ("status", "initContainerStatuses")}), lambda raw: _resizing(raw)),
    ),
    # Jobs' retry budgets (policy.jobs; docs/running.md, "Live mode"): optional, as a cluster role
    # without them must not keep reprieve from being ready. Their projection reads no template:
    # the status updates of running Jobs (active, ready) change nothing it reads.
    "jobs": Kind("jobs", "/apis/batch/v1/jobs", {}, kube.Job, lambda obj, classes: translate.job_record(obj), optional=True),
    # Gang group objects (policy.gangs.GroupMinimum; docs/running.md, "Gangs"): a record only
    # for a group with a minimum.
    **{
        translate.group_kind(version): Kind(
            translate.group_kind(version), f"/apis/{version}/podgroups", {}, model,
            lambda obj, classes, minimum=minimum: minimum(obj), optional=True,
        )
        for version, (model, minimum) in translate.GROUP_KINDS.items()
    },
}


def _resizing(raw: dict) -> list:
    """What the container statuses of pod ``raw`` can change of its record (kube.ContainerStatus,
    translate.in_place): whether its resize is infeasible, and each status but those read as if
    absent: a status whose allocated resources and actuated requests are its container's
    requests in the spec, or absent, of a name no other status and no other container has, while
    the resize is not infeasible. A pod not being resized has none, so that a kubelet's status
    updates of a running pod (its containers' state, readiness, restarts) change no field of
    interest."""
    status, spec = raw.get("status"), raw.get("spec")
    if type(status) is not dict:
        return []  # digested as it is (Decoder._fields)
    infeasible = translate.resize_infeasible(status.get("conditions"))
    asked: dict[Any, Any] = {}
    doubled: set[Any] = set()  # names of two containers, or of two statuses: never read as absent
    if type(spec) is dict:
        for key in ("containers", "initContainers"):
            listed = spec.get(key)
            for container in listed if type(listed) is list else ():
                name = container.get("name", "") if type(container) is dict else None
                if type(name) is str:  # else the pod is refused (the spec is digested whole)
                    given = container.get("resources")
                    if name in asked:
                        doubled.add(name)
                    asked[name] = given.get("requests") if type(given) is dict else None
    lists = [(key, status.get(key)) for key in ("containerStatuses", "initContainerStatuses")]
    named: set[Any] = set()
    for _, statuses in lists:
        for one in statuses if type(statuses) is list else ():
            name = one.get("name", "") if type(one) is dict else None
            if type(name) is str:  # else kept whole, below
                if name in named:
                    doubled.add(name)
                named.add(name)
    read: list = [["infeasible"]] if infeasible else []
    for key, statuses in lists:
        if statuses is None:
            continue
        if type(statuses) is not list:
            read.append([key, "raw", statuses])
            continue
        for one in statuses:
            name = one.get("name", "") if type(one) is dict else None
            given = one.get("resources") if type(one) is dict else None
            if type(name) is not str or (given is not None and type(given) is not dict):
                read.append([key, "raw", one])
                continue
            allocated, actuated = one.get("allocatedResources"), given.get("requests") if given else None
            want = asked.get(name)
            if not infeasible and name not in doubled and allocated in (None, want) and actuated in (None, want):
                continue  # read as if absent: at the spec
            read.append([key, name, allocated, actuated])
    return read


def key_of(kind: Kind, raw: dict) -> str:
    return _pod_key(raw) if kind.name == "pods" else _named_key(raw)


def record_of(kind: Kind, raw: dict, classes: Mapping[str, PriorityClass]) -> Any | None:
    """The record for a live object, or None if it holds nothing (finished, a group without a
    minimum) or is unreadable."""
    try:
        obj = kind.model.model_validate(raw)
    except pydantic.ValidationError as exc:
        # The API server validated it; a projection that cannot read it is reprieve's problem,
        # and one object must not stop the watch. Leave it out, loudly.
        log.warning("ignoring unreadable %s %s: %s", kind.name, _named_key(raw), kube.describe_validation(exc))
        return None
    if not kind.keep(obj):
        return None
    return kind.record(obj, classes)


class _Unchanged:
    def __repr__(self) -> str:
        return "UNCHANGED"


UNCHANGED: Any = _Unchanged()  # Decoder.event: the event changes no field of interest
_WHOLE = object()  # Decoder._revised: decode the object whole instead
_DIGEST = 16  # bytes of each digest (sha256's first): a false "unchanged" needs a 2**-128 coincidence


def _sections(model: type[pydantic.BaseModel]) -> tuple[tuple[str, tuple[tuple[str, bool], ...] | None], ...]:
    """A projection's top-level fields and, for each that is itself a projection, its fields,
    each with whether the projection reads it null as it reads it absent: what the model reads
    of an object (everything else it ignores)."""
    out = []
    for name, info in model.model_fields.items():
        sub = info.annotation
        fields = None
        if isinstance(sub, type) and issubclass(sub, pydantic.BaseModel):
            fields = tuple((f.alias or n, _null_is_absent(sub, n, f.alias or n)) for n, f in sub.model_fields.items())
        out.append((info.alias or name, fields))
    return tuple(out)


def _null_is_absent(model: type[pydantic.BaseModel], attribute: str, name: str) -> bool:
    """Whether ``model`` accepts the field ``name`` set to null and reads it as its default."""
    try:
        return getattr(model.model_validate({name: None}), attribute) == getattr(model(), attribute)
    except pydantic.ValidationError:
        return False


def _digest(value: Any) -> bytes:
    return hashlib.sha256(orjson.dumps(value)).digest()[:_DIGEST]  # sha256: in hardware on x86-64 and arm64


def _picked(section: dict, fields: tuple[tuple[str, Callable[[Any], Any] | None, bool], ...]) -> dict[str, Any]:
    """The ``fields`` of a section as the model reads them: reduced, null where absent is."""
    picked = {}
    for name, reduce, null in fields:
        value = section.get(name, _WHOLE)
        if value is _WHOLE:
            if not null:
                continue
            value = None
        picked[name] = value if reduce is None else reduce(value)
    return picked


class Decoder:
    """One kind's objects into records, remembering of each object with a record a digest of
    its fields of interest: the fields its projection reads, each section's present fields
    with their raw values (or what ``Kind.reduced`` keeps of them), in two parts, the
    lifecycle fields (Kind.lifecycle) and the rest.

    Equal fields of interest make the projection accept the same and the record come out the
    same; so does equal rest beside lifecycle fields the model accepts on their own (no
    projection here checks one field against another). Records depend on the priority
    classes too: with other classes every object is decoded anew. Objects are JSON values
    (as the watch parses them), so equal encodings are equal values.

    One per reflector, called from its thread only.
    """

    def __init__(self, kind: Kind) -> None:
        self.kind = kind
        lifecycle = set(kind.lifecycle)

        derived = kind.derived[0] if kind.derived else frozenset()

        def fields(section: str, names: tuple[tuple[str, bool], ...], *, life: bool):
            return tuple(
                (f, kind.reduced.get((section, f)), null) for f, null in names
                if ((section, f) in lifecycle) == life and (section, f) not in derived
            )

        for section, field_name in kind.reduced:
            assert section not in kind.whole, f"{section}.{field_name}: a section digested whole is not reduced"
        # Per top-level field: its name; None if read whole (not a projection), else the fields
        # of the rest, each with its reduction and whether it reads null as absent (then an
        # absent one is taken as null: the same to the model); the lifecycle fields, alike;
        # whether digested whole.
        self._plan = tuple(
            (section, None if names is None else fields(section, names, life=False),
             () if names is None else fields(section, names, life=True), section in kind.whole)
            for section, names in _sections(kind.model)
        )
        self._seen: dict[str, bytes] = {}  # key -> digest of the rest + digest of the lifecycle fields
        self._classes: Mapping[str, PriorityClass] | None = None  # those the remembered records were made with

    def list(self, pages: Iterable[tuple[Iterable[dict], Mapping[str, PriorityClass]]]) -> dict[str, Any]:
        """Records of a whole LIST, by key, from its pages (each with the priority classes of
        its moment). The objects listed become those remembered, once the last page is in."""
        records: dict[str, Any] = {}
        seen: dict[str, bytes] = {}
        classes_then = None
        for items, classes in pages:
            if classes is not classes_then:
                seen.clear()  # the records of earlier pages were made with other classes
                classes_then = classes
            for raw in items:
                record = record_of(self.kind, raw, classes)
                if record is not None:
                    key = key_of(self.kind, raw)
                    records[key] = record
                    digest = self._fields(raw)
                    if digest is not None:
                        seen[key] = digest
        self._seen, self._classes = seen, classes_then
        return records

    def event(
        self, event: dict, classes: Mapping[str, PriorityClass], current: Callable[[str], Any | None]
    ) -> tuple[str, Any]:
        """(key, new record, None to delete, or UNCHANGED) for an ADDED, MODIFIED or DELETED
        watch event. ``current(key)``: the record last applied for the key."""
        kind, raw = self.kind, event["object"]
        key = key_of(kind, raw)
        if event["type"] == "DELETED":
            self._seen.pop(key, None)
            return key, None
        if classes is not self._classes:
            self._seen.clear()
            self._classes = classes
        digest = self._fields(raw)
        seen = self._seen.get(key)
        if digest is not None and seen is not None:
            if digest == seen:
                return key, UNCHANGED
            if kind.revise is not None and digest[:_DIGEST] == seen[:_DIGEST]:
                old = current(key)
                record = _WHOLE if old is None else self._revised(raw, old)
                if record is not _WHOLE:
                    return key, self._settle(key, digest, record, old)
        return key, self._settle(key, digest, record_of(kind, raw, classes), current(key))

    def _settle(self, key: str, digest: bytes | None, record: Any | None, old: Any | None) -> Any:
        """Remember the object's digest while it has a record; UNCHANGED for the record it had."""
        if record is None or digest is None:
            self._seen.pop(key, None)
        else:
            self._seen[key] = digest
        return UNCHANGED if record == old else record

    def _revised(self, raw: dict, old: Any) -> Any:
        """The record with only the lifecycle fields decoded; _WHOLE where the model refuses
        them (decoded whole, the object is refused with every reason, as ever)."""
        fields: dict[str, dict] = {}
        for section, _, lifecycle, _ in self._plan:
            value = raw.get(section)
            if lifecycle and type(value) is dict:
                fields[section] = {name: value[name] for name, _, _ in lifecycle if name in value}
        try:
            obj = self.kind.model.model_validate(fields)
        except pydantic.ValidationError:
            return _WHOLE
        return self.kind.revise(old, obj) if self.kind.keep(obj) else None

    def _fields(self, raw: dict) -> bytes | None:
        """The digest of ``raw``'s fields of interest (the rest's, then the lifecycle fields'
        if the kind has any); None if they cannot be encoded."""
        rest: dict[str, Any] = {}
        life: dict[str, Any] = {}
        for section, fields, lifecycle, whole in self._plan:
            value = raw.get(section, _WHOLE)
            if value is _WHOLE:
                continue  # absent: the model's default
            if fields is None or type(value) is not dict:
                rest[section] = value
                continue
            if whole:
                value = value.copy()
                if lifecycle:
                    life[section] = _picked({name: value.pop(name) for name, _, _ in lifecycle if name in value}, lifecycle)
                rest[section] = value
                continue
            rest[section] = _picked(value, fields)
            if lifecycle:
                life[section] = _picked(value, lifecycle)
        if self.kind.derived is not None:
            rest["(derived)"] = self.kind.derived[1](raw)  # not a section's name: a projection's are identifiers
        try:
            return _digest(rest) + (_digest(life) if self.kind.lifecycle else b"")
        except (TypeError, ValueError):  # not JSON (orjson.JSONEncodeError is a TypeError)
            return None

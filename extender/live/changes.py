"""Pure translation of listed objects and watch events into record changes, one table per kind."""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

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
    ),
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


def event_change(kind: Kind, event: dict, classes: Mapping[str, PriorityClass]) -> tuple[str, Any | None]:
    """(key, new record or None to delete) for an ADDED, MODIFIED or DELETED watch event."""
    raw = event["object"]
    key = key_of(kind, raw)
    if event["type"] == "DELETED":
        return key, None
    return key, record_of(kind, raw, classes)

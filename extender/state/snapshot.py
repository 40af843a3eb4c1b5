"""Reading a cluster dump (``kubectl get nodes,pods,pdb,priorityclasses,jobs -A -o yaml|json``,
and the gang PodGroups of docs/running.md if the cluster has them)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pydantic
import yaml

from extender.state import kube, translate
from extender.errors import SnapshotError
from policy.view import ClusterView

log = logging.getLogger(__name__)

# kind -> the apiVersions reprieve reads it at
KINDS = {
    "Node": ("v1",),
    "Pod": ("v1",),
    "PodDisruptionBudget": ("policy/v1",),
    "PriorityClass": ("scheduling.k8s.io/v1",),
    "Job": ("batch/v1",),
}
# (apiVersion, kind) -> (projection, record) of the gang group objects (translate.GROUP_KINDS).
GROUP_KINDS = {(version, "PodGroup"): entry for version, entry in translate.GROUP_KINDS.items()}
_GROUP_KIND_NAMES = frozenset(kind for _, kind in GROUP_KINDS)


@dataclass(frozen=True)
class LeftOut:
    """An item of a dump the view leaves out (or, a pod on a node the dump lacks, places on no
    node), and why (docs/running.md, "Snapshot mode")."""

    where: str  # "dump.yaml: document 0 item 3 (Pod ns/p)"
    reason: str
    at: int = field(default=0, compare=False, repr=False)  # the item's place in the dump, to list them in order

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class Loaded:
    view: ClusterView
    left_out: tuple[LeftOut, ...] = ()


def load(path: str | Path, *, strict: bool = False) -> ClusterView:
    """Build a ClusterView from a snapshot file; any bad object raises SnapshotError naming it.
    Each item left out is logged as a warning; with ``strict`` the first one is an error."""
    return read(path, strict=strict, warn=log.warning).view


def read(path: str | Path, *, strict: bool = False, warn=None, need_nodes: bool = False) -> Loaded:
    """The view and what was left out of it; ``warn(line)`` is called once per item left out
    (a line on stderr for the offline commands, a log line for serve). With ``need_nodes``, a
    dump without a single Node is an error: every decision would be "no node"."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror}") from exc
    loaded = build(_documents(path, text), source=str(path), strict=strict, warn=warn)
    if need_nodes and not loaded.view.nodes:
        raise SnapshotError(
            f"snapshot {path} has no nodes, so there is nothing to decide on "
            f"(a dump is what kubectl get nodes,pods,pdb,priorityclasses,jobs -A -o yaml prints)"
        )
    return loaded


def _documents(path: Path, text: bytes) -> list[Any]:
    try:
        if path.suffix == ".json":
            return [orjson.loads(text)]
        return [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise SnapshotError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc


def _objects(documents: list[Any], source: str) -> Iterator[tuple[str, Any]]:
    """(where, object) for every object, flattening ``kind: List`` documents."""
    for d, doc in enumerate(documents):
        # `kind: List` from kubectl; also typed lists such as PodList from the raw API.
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and "items" in doc:
            items = doc.get("items") or []
            if not isinstance(items, list):
                raise SnapshotError(f"{source}: document {d}: items must be a list")
            for i, item in enumerate(items):
                yield f"{source}: document {d} item {i}", item
        else:
            yield f"{source}: document {d}", doc


def from_documents(documents: list[Any], *, source: str = "snapshot", strict: bool = False) -> ClusterView:
    return build(documents, source=source, strict=strict, warn=log.warning).view


def build(documents: list[Any], *, source: str = "snapshot", strict: bool = False, warn=None) -> Loaded:
    """The view of ``documents``. Left out, each named with its reason: an item with no kind
    or a kind reprieve does not read, the second copy of an object (a copy that differs is an
    error: which one is true?), and the room of a pod bound to a node the dump does not have.
    With ``strict`` any of them is a SnapshotError."""
    left_out: list[LeftOut] = []
    raw: dict[str, list[tuple[str, dict]]] = {kind: [] for kind in KINDS}
    raw_groups: dict[tuple[str, str], list[tuple[str, dict]]] = {kind: [] for kind in GROUP_KINDS}
    at: dict[str, int] = {}
    for where, obj in _objects(documents, source):
        at[where] = len(at)
        if not isinstance(obj, dict):
            raise SnapshotError(f"{where}: expected a Kubernetes object, found {type(obj).__name__}")
        kind, version = obj.get("kind"), obj.get("apiVersion")
        if (version, kind) in GROUP_KINDS:
            raw_groups[version, kind].append((where, obj))
            continue
        if not kind:
            left_out.append(LeftOut(f"{where} ({_name(obj)})", "left out: no kind, so reprieve cannot tell what it is", at[where]))
            continue
        if kind not in KINDS:
            left_out.append(LeftOut(f"{where} ({kind} {_name(obj)})", _unread(kind, version), at[where]))
            continue
        if version not in KINDS[kind]:
            raise SnapshotError(f"{where}: {kind} apiVersion {version!r} is not supported (want {KINDS[kind][0]})")
        raw[kind].append((where, obj))
    for kind, entries in raw.items():
        raw[kind] = _first_copies(kind, entries, left_out, at, key=_uid if kind == "Pod" else _key)
    for group, entries in raw_groups.items():
        raw_groups[group] = _first_copies(group[1], entries, left_out, at, key=_key)

    classes = {pc.name: pc for pc in _parse(raw["PriorityClass"], kube.PriorityClass, translate.priority_class_record)}
    nodes = _parse(raw["Node"], kube.Node, translate.node_record)
    budgets = _parse(raw["PodDisruptionBudget"], kube.PodDisruptionBudget, translate.budget_record)
    jobs = _parse(raw["Job"], kube.Job, translate.job_record)
    parsed_pods = _parse(
        raw["Pod"],
        kube.Pod,
        lambda p: translate.pod_record(p, classes),
        keep=lambda p: not translate.is_terminal(p),
        where=True,
    )
    # A pod bound to a node the dump lacks stays known by UID (its budgets and gang count it)
    # but holds room on no node reprieve sees: named, like the items left out.
    node_names = {n.name for n in nodes}
    for where, pod in parsed_pods:
        if pod.node_name is not None and pod.node_name not in node_names:
            left_out.append(
                LeftOut(
                    f"{where} (Pod {pod.key})", f"on no node: bound to {pod.node_name}, which is not in the dump (known by UID, holding no room)", at[where]
                )
            )
    pods = [pod for _, pod in parsed_pods]
    minimums = []
    for group, entries in raw_groups.items():
        model, record = GROUP_KINDS[group]
        minimums += [minimum for minimum in _parse(entries, model, record) if minimum is not None]
    left_out.sort(key=lambda item: item.at)
    if strict and left_out:
        more = f" (and {len(left_out) - 1} more)" if len(left_out) > 1 else ""
        raise SnapshotError(f"{left_out[0]}{more}; --strict makes each an error")
    for item in left_out if warn is not None else ():
        warn(str(item))
    view = ClusterView.build(
        nodes=nodes, pods=pods, budgets=budgets, priority_classes=classes.values(), group_minimums=minimums,
        jobs=jobs,
    )
    return Loaded(view, tuple(left_out))


def _unread(kind: str, version: object) -> str:
    if kind in _GROUP_KIND_NAMES:
        versions = ", ".join(sorted(v for v, _ in GROUP_KINDS))
        return f"left out: reprieve does not read PodGroup {version} (it reads {versions})"
    return f"left out: reprieve does not read kind {kind} (it reads {', '.join(KINDS)}, PodGroup)"


def _first_copies(
    kind: str, entries: list[tuple[str, dict]], left_out: list[LeftOut], at: dict[str, int], *, key
) -> list[tuple[str, dict]]:
    """Each object once: a second identical copy (two dumps concatenated) is left out; a copy
    that differs raises SnapshotError naming both, as reprieve cannot tell which is current."""
    first: dict[str, tuple[str, dict]] = {}
    kept = []
    for where, obj in entries:
        name = key(obj)
        if name is None or name not in first:
            if name is not None:
                first[name] = (where, obj)
            kept.append((where, obj))
            continue
        seen_at, seen = first[name]
        what = f"{kind} {_name(obj)}" + (f" (UID {name})" if kind == "Pod" else "")
        if obj != seen:
            raise SnapshotError(
                f"{where}: duplicate {what}, different from the copy at {seen_at.rsplit(': ', 1)[-1]}: which is current?"
            )
        left_out.append(LeftOut(f"{where} ({kind} {_name(obj)})", f"left out: a copy of {seen_at.rsplit(': ', 1)[-1]}", at[where]))
    return kept


def _parse(entries, model, record, keep=lambda _: True, where: bool = False) -> list:
    """The records of ``entries``; with ``where``, (where, record) pairs."""
    out = []
    for place, obj in entries:
        name = _name(obj)
        try:
            parsed = model.model_validate(obj)
        except pydantic.ValidationError as exc:
            raise SnapshotError(f"{place} ({obj.get('kind')} {name}): {kube.describe_validation(exc)}") from None
        if not parsed.metadata.name:
            raise SnapshotError(f"{place} ({obj.get('kind')}): metadata.name: required")
        if model is kube.Pod and not parsed.metadata.uid:
            raise SnapshotError(f"{place} (Pod {name}): metadata.uid: required (preempt answers name pods by UID)")
        if model is kube.Job and not parsed.metadata.uid:
            raise SnapshotError(f"{place} (Job {name}): metadata.uid: required (its pods name their Job by UID)")
        if keep(parsed):
            out.append((place, record(parsed)) if where else record(parsed))
    return out


def _name(obj: dict) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name, namespace = meta.get("name", "?"), meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)


def _uid(obj: dict) -> str | None:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    uid = meta.get("uid")
    return uid if isinstance(uid, str) and uid else None


def _key(obj: dict) -> str | None:
    """``namespace/name`` (or ``name``) of an object that has a name; None otherwise."""
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    return _name(obj) if isinstance(meta.get("name"), str) and meta["name"] else None

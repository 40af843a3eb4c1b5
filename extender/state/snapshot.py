"""Reading a cluster dump (``kubectl get nodes,pods,pdb,priorityclasses -A -o yaml|json``, and
the gang PodGroups of docs/running.md if the cluster has them)."""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
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
}
# (apiVersion, kind) -> (projection, record) of the gang group objects (translate.GROUP_KINDS).
GROUP_KINDS = {(version, "PodGroup"): entry for version, entry in translate.GROUP_KINDS.items()}
_GROUP_KIND_NAMES = frozenset(kind for _, kind in GROUP_KINDS)


def load(path: str | Path) -> ClusterView:
    """Build a ClusterView from a snapshot file; any bad object raises SnapshotError naming it."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise SnapshotError(f"cannot read snapshot {path}: {exc.strerror}") from exc
    return from_documents(_documents(path, text), source=str(path))


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


def from_documents(documents: list[Any], *, source: str = "snapshot") -> ClusterView:
    raw: dict[str, list[tuple[str, dict]]] = {kind: [] for kind in KINDS}
    raw_groups: dict[tuple[str, str], list[tuple[str, dict]]] = {kind: [] for kind in GROUP_KINDS}
    ignored: Counter[str] = Counter()
    for where, obj in _objects(documents, source):
        if not isinstance(obj, dict):
            raise SnapshotError(f"{where}: expected a Kubernetes object, found {type(obj).__name__}")
        kind, version = obj.get("kind"), obj.get("apiVersion")
        if (version, kind) in GROUP_KINDS:
            raw_groups[version, kind].append((where, obj))
            continue
        if kind not in KINDS:
            # The log line names a PodGroup's apiVersion when it is one reprieve does not read.
            ignored[f"{kind} {version}" if kind in _GROUP_KIND_NAMES else str(kind)] += 1
            continue
        if version not in KINDS[kind]:
            raise SnapshotError(f"{where}: {kind} apiVersion {version!r} is not supported (want {KINDS[kind][0]})")
        raw[kind].append((where, obj))
    if ignored:
        log.info("snapshot %s: ignored %s", source, ", ".join(f"{n} {k}" for k, n in sorted(ignored.items())))

    classes = {pc.name: pc for pc in _parse(raw["PriorityClass"], kube.PriorityClass, translate.priority_class_record)}
    nodes = _parse(raw["Node"], kube.Node, translate.node_record)
    budgets = _parse(raw["PodDisruptionBudget"], kube.PodDisruptionBudget, translate.budget_record)
    pods = _parse(
        raw["Pod"],
        kube.Pod,
        lambda p: translate.pod_record(p, classes),
        keep=lambda p: not translate.is_terminal(p),
    )
    minimums = []
    for (version, kind), entries in raw_groups.items():
        model, record = GROUP_KINDS[version, kind]
        parsed = _parse(entries, model, lambda g: (f"{version} {g.metadata.namespace or 'default'}/{g.metadata.name}", record(g)))
        _unique(kind, (name for name, _ in parsed))
        minimums += [minimum for _, minimum in parsed if minimum is not None]
    _unique("Node", (n.name for n in nodes))
    _unique("Pod UID", (p.uid for p in pods))
    return ClusterView.build(
        nodes=nodes, pods=pods, budgets=budgets, priority_classes=classes.values(), group_minimums=minimums
    )


def _parse(entries, model, record, keep=lambda _: True) -> list:
    out = []
    for where, obj in entries:
        name = _name(obj)
        try:
            parsed = model.model_validate(obj)
        except pydantic.ValidationError as exc:
            raise SnapshotError(f"{where} ({obj.get('kind')} {name}): {kube.describe_validation(exc)}") from None
        if not parsed.metadata.name:
            raise SnapshotError(f"{where} ({obj.get('kind')}): metadata.name: required")
        if model is kube.Pod and not parsed.metadata.uid:
            raise SnapshotError(f"{where} (Pod {name}): metadata.uid: required (preempt answers name pods by UID)")
        if keep(parsed):
            out.append(record(parsed))
    return out


def _unique(what: str, values) -> None:
    seen = Counter(values)
    dupes = sorted(v for v, n in seen.items() if n > 1)
    if dupes:
        raise SnapshotError(f"duplicate {what}: {', '.join(dupes[:5])}")


def _name(obj: dict) -> str:
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    name, namespace = meta.get("name", "?"), meta.get("namespace")
    return f"{namespace}/{name}" if namespace else str(name)

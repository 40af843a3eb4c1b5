"""The queue ``reprieve simulate`` replays: a dump's own pending pods, or a ``--pods`` file's.

- **The dump's own** (``--snapshot`` alone): the pods the scheduler would queue
  (policy.scheduling_queue: unbound, not terminating, not scheduling-gated), in its queue order.
- **A ``--pods`` file**: its Pods, in file order; any other kind (a full dump's Nodes,
  PodDisruptionBudgets, ...) and the Pods the scheduler would not queue are left out, with a note.
  A Pod of the file that the snapshot holds as pending (the same UID) is the same pod: it is
  queued once, and the cluster starts with the file's copy of it in place of the snapshot's. A
  Pod of the file that the snapshot holds bound to a node is an error: the two disagree.

Every Pod of a ``--pods`` file is checked as the API server would check it
(extender.state.handwritten: unknown fields, extended resources whole and equal to their limits).
Notes (what was left out, and why) are for stderr; bad input raises a ConfigError naming the
file, the document and the object.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson
import yaml

from extender.errors import ConfigError
from extender.state import handwritten, translate
from policy import scheduling_queue
from policy.model import Pod
from policy.view import ClusterView

FINISHED = "finished (Succeeded or Failed)"


@dataclass(frozen=True)
class Queue:
    view: ClusterView  # the cluster to start from
    pods: tuple[Pod, ...]  # the pods to replay, in order
    notes: tuple[str, ...]  # what was left out or merged, one line each


def of_snapshot(view: ClusterView, where: str) -> Queue:
    """The snapshot's own pending pods the scheduler would queue, in its queue order."""
    kept, left = [], Counter()
    for pod in view.pods.values():
        if pod.node_name is not None:
            continue  # a bound pod is the cluster, not the queue: no note
        why = scheduling_queue.left_out(pod)
        if why:
            left[why] += 1
        else:
            kept.append(pod)
    notes = (f"{where}: left out pending Pods the scheduler would not queue: {_counted(left)}",) if left else ()
    if not kept:
        also = f" (left out: {_counted(left)})" if left else ""
        raise ConfigError(f"{where}: no pending Pods to replay{also}; give the queue with --pods FILE")
    return Queue(view, tuple(scheduling_queue.order(kept)), notes)


def of_file(view: ClusterView, path: Path) -> Queue:
    """The pending Pods of a YAML (one or more documents) or JSON file, in file order."""
    pods: list[Pod] = []
    seen: set[str] = set()
    left: Counter[str] = Counter()
    other: Counter[str] = Counter()
    replaced: dict[str, Pod] = {}
    for where, obj in _objects(path):
        kind = obj.get("kind", "Pod") if isinstance(obj, dict) else None
        if kind != "Pod":
            if not isinstance(obj, dict) or not isinstance(kind, str) or not kind:
                raise ConfigError(f"{where}: expected a Kubernetes object, found {_what(obj)}")
            other[kind] += 1
            continue
        pod, why = _pod(view, where, obj)
        if why:
            left[why] += 1
            continue
        if pod.uid in seen:
            raise ConfigError(f"{where}: Pod {pod.key}: UID {pod.uid} appears twice")
        known = view.pods.get(pod.uid)
        if known is not None and known.node_name is not None:
            raise ConfigError(
                f"{where}: Pod {pod.key}: UID {pod.uid} is bound to {known.node_name} in the snapshot, not pending"
            )
        if known is not None:
            replaced[pod.uid] = pod
        seen.add(pod.uid)
        pods.append(pod)
    notes = _file_notes(path, left, other, len(replaced))
    if not pods:
        detail = "; ".join(n.split(": ", 1)[1] for n in notes)
        raise ConfigError(f"--pods {path}: no pending Pod objects" + (f" ({detail})" if detail else ""))
    return Queue(_with_copies(view, replaced), tuple(pods), notes)


def _objects(path: Path) -> Iterator[tuple[str, object]]:
    """(where, object) for every object of the file, ``kind: List`` documents flattened."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--pods {path}: cannot read: {exc.strerror}") from None
    try:
        docs = [orjson.loads(text)] if path.suffix == ".json" else [d for d in yaml.safe_load_all(text) if d is not None]
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        form = "JSON" if path.suffix == ".json" else "YAML"
        raise ConfigError(f"--pods {path}: not valid {form}: {' '.join(str(exc).split())}") from None
    if not docs:
        raise ConfigError(f"--pods {path}: no Pod objects")
    for d, doc in enumerate(docs):
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            for i, item in enumerate(doc["items"]):
                yield f"--pods {path}: document {d} item {i}", item
        else:
            yield f"--pods {path}: document {d}", doc


def _pod(view: ClusterView, where: str, obj: dict) -> tuple[Pod, str]:
    """The Pod's record, and why the scheduler would not queue it ('' if it would). Every Pod of
    the file is first checked as the API server would check it (extender.state.handwritten)."""
    parsed = handwritten.parse_pod(obj, where)
    name = parsed.metadata.name
    if not name:
        raise ConfigError(f"{where}: metadata.name: required")
    pod = translate.pod_record(parsed, view.priority_classes)
    why = FINISHED if translate.is_terminal(parsed) else scheduling_queue.left_out(pod)
    if why:
        return pod, why
    spec = parsed.spec
    if spec.priority is None and spec.priorityClassName and spec.priorityClassName not in view.priority_classes:
        raise ConfigError(f"{where} (Pod {name}): spec.priorityClassName: no PriorityClass {spec.priorityClassName!r} in the snapshot")
    if not pod.uid:  # a manifest, not yet created: any stable, unique UID does
        pod = dataclasses.replace(pod, uid=f"pending:{pod.key}")
    return pod, ""


def _with_copies(view: ClusterView, replaced: dict[str, Pod]) -> ClusterView:
    """``view`` with the file's copies of the snapshot's pending pods in place of its own."""
    if all(view.pods[uid] == pod for uid, pod in replaced.items()):
        return view
    return ClusterView.build(
        nodes=[info.node for info in view.nodes.values()],
        pods=[replaced.get(uid, pod) for uid, pod in view.pods.items()],
        budgets=[b for bs in view.budgets.values() for b in bs],
        priority_classes=view.priority_classes.values(),
        group_minimums=view.group_minimums.values(),
        jobs=view.jobs.values(),
    )


def _file_notes(path: Path, left: Counter[str], other: Counter[str], merged: int) -> tuple[str, ...]:
    notes = []
    if left:
        notes.append(f"--pods {path}: left out Pods the scheduler would not queue: {_counted(left)}")
    if other:
        kinds = ", ".join(f"{n} {kind}" for kind, n in sorted(other.items()))
        notes.append(f"--pods {path}: left out objects that are not Pods: {kinds}")
    if merged:
        notes.append(
            f"--pods {path}: {merged} Pod(s) also pending in the snapshot: each is the same pod, replayed once"
        )
    return tuple(notes)


def _counted(reasons: Counter[str]) -> str:
    return ", ".join(f"{n} {why}" for why, n in sorted(reasons.items()))


def _what(obj: object) -> str:
    if isinstance(obj, dict):
        return "an object without a kind"
    return type(obj).__name__

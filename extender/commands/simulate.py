"""``reprieve simulate``: replay pending pods through stock preemption and through reprieve.

Reads the workload (a snapshot and a file of pending Pods, or a seeded synthetic one from
policy.workload), runs policy.replay on both sides and renders the totals side by side, as a
table or as JSON. docs/simulate.md documents every field.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

import orjson
import pydantic
import yaml

from extender.commands import warn
from extender.errors import ConfigError
from extender.state import handwritten, kube, snapshot, translate
from policy import replay, workload
from policy.model import Pod
from policy.view import ClusterView

VERSION = 1

ROWS = (
    ("preemptions", "preemptions"),
    ("victims", "victims"),
    ("pdb_violations", "PDB violations"),
    ("broken_gangs", "broken gangs"),
    ("guaranteed_victims", "Guaranteed victims"),
    ("burstable_victims", "Burstable victims"),
    ("priority_loss", "priority-weighted loss"),
    ("no_home", "victims with no home"),
    ("cascade", "cascade length"),
    ("pending", "pods left pending"),
)


def run(
    *,
    snapshot_path: str | None = None,
    pods_path: str | None = None,
    generate: int | None = None,
    seed: int = 0,
    replace: bool = False,
    output: str = "table",
    strict: bool = False,
) -> str:
    """The rendered report; bad input raises a ReprieveError naming the file and object.
    Items of the snapshot left out are named on stderr (with ``strict``, an error)."""
    if generate is not None:
        if snapshot_path or pods_path:
            raise ConfigError("--generate makes its own cluster and pods; leave out --snapshot and --pods")
        if generate < 1:
            raise ConfigError(f"--generate must be at least 1, not {generate}")
        made = workload.generate(random.Random(seed), generate)
        view, pending = made.view, made.pending
        source = {"snapshot": None, "pods": None, "generate": generate, "seed": seed}
    else:
        if not snapshot_path or not pods_path:
            raise ConfigError("give --snapshot and --pods, or --generate N (with --seed S)")
        view = snapshot.read(snapshot_path, strict=strict, warn=warn, need_nodes=True).view
        pending = load_pending(view, Path(pods_path))
        source = {"snapshot": snapshot_path, "pods": pods_path, "generate": None, "seed": None}
    report = build_report(view, pending, replace=replace)
    report["input"] = {**source, "replace": replace}
    if output == "json":
        return orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode() + "\n"
    return render(report)


def build_report(view: ClusterView, pending: tuple[Pod, ...], *, replace: bool) -> dict:
    runs = replay.compare(view, pending, replace=replace)
    totals = {side: r.totals.as_dict() for side, r in runs.items()}
    totals["difference"] = {k: totals[replay.REPRIEVE][k] - totals[replay.STOCK][k] for k in replay.Totals.FIELDS}
    return {
        "version": VERSION,
        "kind": "simulate",
        "workload": {
            "nodes": len(view.nodes),
            "bound_pods": sum(1 for p in view.pods.values() if p.node_name is not None),
            "pending_pods": len(pending),
            "budgets": sum(len(b) for b in view.budgets.values()),
            "priority_floor": replay.floor_priority(view, pending),
        },
        "totals": totals,
        "steps": {side: [_step(s) for s in r.steps] for side, r in runs.items()},
    }


def _step(step: replay.Step) -> dict:
    return {
        "pod": step.pod,
        "depth": step.depth,
        "node": step.node,
        "victims": list(step.victims),
        "pdb_violations": step.pdb_violations,
        "no_home": list(step.no_home),
        "broken_gangs": list(step.broken_gangs),
        "why": step.why,
    }


def render(report: dict) -> str:
    source = report["input"]
    load = report["workload"]
    if source["generate"] is not None:
        what = f"generated workload (--generate {source['generate']} --seed {source['seed']})"
    else:
        what = f"{source['snapshot']} + {source['pods']}"
    lines = [
        what,
        f"{load['nodes']} nodes, {load['bound_pods']} bound pods, {load['budgets']} PDBs, "
        f"{load['pending_pods']} pending pods, replacements {'on' if source['replace'] else 'off'}",
        "",
        f"{'':<24}{'stock':>10}{'reprieve':>10}{'difference':>12}",
    ]
    totals = report["totals"]
    for key, label in ROWS:
        diff = totals["difference"][key]
        lines.append(
            f"{label:<24}{totals['stock'][key]:>10}{totals['reprieve'][key]:>10}{(f'{diff:+d}' if diff else '0'):>12}"
        )
    return "\n".join(lines) + "\n"


def load_pending(view: ClusterView, path: Path) -> tuple[Pod, ...]:
    """Pending Pods from a YAML (one or more documents) or JSON file, or a ``kind: List`` of them."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--pods {path}: cannot read: {exc.strerror}") from None
    try:
        docs = [orjson.loads(text)] if path.suffix == ".json" else [d for d in yaml.safe_load_all(text) if d is not None]
    except (orjson.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"--pods {path}: not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {' '.join(str(exc).split())}") from None
    objects: list[tuple[str, object]] = []
    for d, doc in enumerate(docs):
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            objects.extend((f"--pods {path}: document {d} item {i}", item) for i, item in enumerate(doc["items"]))
        else:
            objects.append((f"--pods {path}: document {d}", doc))
    if not objects:
        raise ConfigError(f"--pods {path}: no Pod objects")
    pods: list[Pod] = []
    seen: set[str] = set()
    for where, obj in objects:
        pod = _pending_pod(view, where, obj)
        if pod.uid in seen or pod.uid in view.pods:
            raise ConfigError(f"{where}: Pod {pod.key}: UID {pod.uid} appears twice")
        seen.add(pod.uid)
        pods.append(pod)
    return tuple(pods)


def _pending_pod(view: ClusterView, where: str, obj: object) -> Pod:
    if not isinstance(obj, dict) or obj.get("kind", "Pod") != "Pod":
        kind = obj.get("kind") if isinstance(obj, dict) else type(obj).__name__
        raise ConfigError(f"{where}: expected a Pod, found {kind!r}")
    problems = handwritten.pod_problems(obj)  # checked as the API server would (docs/simulate.md)
    if problems:
        raise ConfigError(f"{where}: {handwritten.describe(problems)}")
    try:
        parsed = kube.Pod.model_validate(obj)
    except pydantic.ValidationError as exc:
        raise ConfigError(f"{where}: {kube.describe_validation(exc)}") from None
    name = parsed.metadata.name
    if not name:
        raise ConfigError(f"{where}: metadata.name: required")
    spec = parsed.spec
    if spec.nodeName:
        raise ConfigError(f"{where} (Pod {name}): spec.nodeName is set ({spec.nodeName}); simulate places pending pods")
    if spec.priority is None and spec.priorityClassName and spec.priorityClassName not in view.priority_classes:
        raise ConfigError(f"{where} (Pod {name}): spec.priorityClassName: no PriorityClass {spec.priorityClassName!r} in the snapshot")
    pod = translate.pod_record(parsed, view.priority_classes)
    if not pod.uid:  # a manifest, not yet created: any stable, unique UID does
        pod = dataclasses.replace(pod, uid=f"pending:{pod.key}")
    return pod

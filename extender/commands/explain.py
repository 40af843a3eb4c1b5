"""``reprieve explain``: reprieve's decision and stock preemption's, side by side, offline.

Inputs (a pod or a captured request, against a snapshot or a live cluster read once by
extender.commands.cluster) are read here; extender.commands.explain_report
builds the report, a plain dict, from policy's decisions; it is rendered as JSON here or as
a table by extender.commands.explain_table. docs/explain.md documents every field.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import yaml

from extender.commands import explain_table

from extender import wire

from extender.commands.cluster import Cluster
from extender.state import handwritten, kube, translate
from extender.errors import BadRequest, ConfigError
from extender.commands.explain_report import args_report, preemption_report
from policy import ranking
from policy.model import Pod
from policy.guards import Guards
from policy.preempt import Proposal
from policy.tenancy import Rules
from policy.view import ClusterView


def run(
    *,
    cluster: Cluster,
    pod: str | None = None,
    request: str | None = None,
    nodes: str | None = None,
    output: str = "table",
    rules: Rules | None = None,
    now: float | None = None,
    order: ranking.Order = ranking.DEFAULT,
    policy: str | None = None,
    guards: Guards | None = None,
) -> str:
    """The report for ``reprieve explain``, rendered; bad input raises a ReprieveError.
    ``now`` (seconds since the epoch) is when the preemption delay of ``rules`` and the minimum
    runtime of ``guards`` are judged; ``order`` the ranking's and ``policy`` the path of the
    policy file they all come from."""
    view, where = cluster.view, cluster.noun()
    source = {
        "snapshot": cluster.snapshot,
        "cluster": cluster.live,
        "loaded": cluster.loaded(),
        "policy": policy,
        "queues": len(rules.queue_names()) if rules is not None else None,
        "ranking": list(order.names),
        "guards": describe_guards(guards),
        "pod": pod,
        "request": request,
        "nodes": None,
    }
    if request is not None:
        if nodes is not None:
            raise ConfigError("--nodes goes with --pod; a request names its own nodes")
        report = _from_request(view, where, Path(request), source, rules, now, order, guards)
    else:
        names = _node_names(view, where, nodes)
        source["nodes"] = names if nodes is not None else None
        report = preemption_report(
            view=view, preemptor=load_pod(view, where, pod), node_names=names, rules=rules, now=now, order=order,
            guards=guards,
        )
        report["input"] = source
    if output == "json":
        return as_json(report).decode() + "\n"
    return explain_table.render(report)


def _node_names(view: ClusterView, where: str, nodes: str | None) -> list[str]:
    if nodes is None:
        return sorted(view.nodes)
    names = [n.strip() for n in nodes.split(",") if n.strip()]
    if not names:
        raise ConfigError("--nodes: expected a comma-separated list of node names")
    unknown = [n for n in names if n not in view.nodes]
    if unknown:
        raise ConfigError(f"--nodes: unknown node {unknown[0]!r} ({where} has {', '.join(sorted(view.nodes))})")
    return list(dict.fromkeys(names))


def load_pod(view: ClusterView, where: str, spec: str) -> Pod:
    """The preemptor: a Pod file (YAML or JSON), or NAMESPACE/NAME of a pod in ``where``
    (the snapshot or the cluster)."""
    path = Path(spec)
    if path.is_file() or path.suffix in (".yaml", ".yml", ".json"):
        return _pod_from_file(view, where, path)
    found = [p for p in view.pods.values() if p.key == spec]
    if not found:
        raise ConfigError(f"--pod {spec}: no such file, and no pod {spec} in {where} (give NAMESPACE/NAME or a file)")
    pod = found[0]
    if pod.node_name is not None:
        raise ConfigError(f"--pod {spec}: already bound to {pod.node_name}; explain places a pending pod")
    return pod


def _pod_from_file(view: ClusterView, where: str, path: Path) -> Pod:
    try:
        docs = [d for d in yaml.safe_load_all(path.read_bytes()) if d is not None]
    except OSError as exc:
        raise ConfigError(f"--pod {path}: cannot read: {exc.strerror}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"--pod {path}: not valid YAML or JSON: {_one_line(exc)}") from None
    if len(docs) != 1 or not isinstance(docs[0], dict):
        raise ConfigError(f"--pod {path}: expected exactly one Pod object")
    obj = docs[0]
    if obj.get("kind", "Pod") != "Pod":
        raise ConfigError(f"--pod {path}: kind is {obj.get('kind')!r}, expected Pod")
    # Written by hand: checked as the API server would (unknown fields, extended resources).
    parsed = handwritten.parse_pod(obj, f"--pod {path}")
    return _preemptor(view, where, parsed, f"--pod {path}")


def _preemptor(view: ClusterView, where: str, parsed: kube.Pod, what: str) -> Pod:
    spec = parsed.spec
    if not parsed.metadata.name:
        raise ConfigError(f"{what}: metadata.name: required")
    if spec.nodeName:
        raise ConfigError(f"{what}: spec.nodeName is set ({spec.nodeName}); explain places a pending pod")
    if spec.priority is None and spec.priorityClassName and spec.priorityClassName not in view.priority_classes:
        raise ConfigError(f"{what}: spec.priorityClassName: no PriorityClass {spec.priorityClassName!r} in {where}")
    return translate.pod_record(parsed, view.priority_classes, shared=False)


def _from_request(
    view: ClusterView, where: str, path: Path, source: dict, rules: Rules | None, now: float | None, order: ranking.Order,
    guards: Guards | None = None,
) -> dict:
    try:
        body = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"--request {path}: cannot read: {exc.strerror}") from None
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ConfigError(f"--request {path}: not JSON: {exc}") from None
    # filter and prioritize send ExtenderArgs, preempt ExtenderPreemptionArgs: tell them apart by key.
    preempt = isinstance(doc, dict) and ("NodeNameToMetaVictims" in doc or "NodeNameToVictims" in doc)
    try:
        args = wire.parse(wire.ExtenderPreemptionArgs if preempt else wire.ExtenderArgs, body)
    except BadRequest as exc:
        raise ConfigError(f"--request {path}: {exc}") from None
    preemptor = _preemptor(view, where, args.pod, f"--request {path}: Pod")
    if preempt:
        proposals = {n: Proposal(uids, count) for n, (uids, count) in args.proposals().items()}
        report = preemption_report(
            view=view, preemptor=preemptor, proposals=proposals, rules=rules, now=now, order=order, guards=guards
        )
    else:
        try:
            names = args.candidate_names()
        except BadRequest as exc:
            raise ConfigError(f"--request {path}: {exc}") from None
        report = args_report(view=view, pod=preemptor, node_names=names)
    report["input"] = source
    return report


def describe_guards(guards: Guards | None) -> list[str] | None:
    """The policy's strictBudgets and minimumRuntime in words, one line each; None without."""
    if guards is None:
        return None
    lines = [f"strictBudgets: {guards.strict.describe()}"] if guards.strict is not None else []
    return lines + [rule.describe() for rule in guards.runtime]


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def as_json(report: Mapping[str, Any]) -> bytes:
    """Stable JSON: sorted keys, two-space indent."""
    return orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)

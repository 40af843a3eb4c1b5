"""``reprieve simulate``: replay pending pods through stock preemption and through reprieve.

Reads the workload (a snapshot with its own pending pods or a file of them, as
extender.commands.pending picks them; or a seeded synthetic one from policy.workload), runs
policy.replay on both sides and renders the totals side by side, as a table or as JSON.
docs/simulate.md documents every field.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path

import orjson

from extender import times
from extender.commands import pending as pending_pods
from extender.commands import warn as to_stderr
from extender.errors import ConfigError
from extender.policy_file import Policy
from extender.state import snapshot
from policy import replay, scoring, workload, workload_gpu
from policy.model import Pod
from policy.view import ClusterView

VERSION = 1

ROWS = (
    ("preemptions", "preemptions"),
    ("victims", "victims"),
    ("pdb_violations", "PDB violations"),
    ("jobs_failed", "Jobs failed"),
    ("broken_gangs", "broken gangs"),
    ("members_stranded", "members stranded"),
    ("managed_pods_lost", "pods lost with managers"),
    ("guaranteed_victims", "Guaranteed victims"),
    ("burstable_victims", "Burstable victims"),
    ("priority_loss", "priority-weighted loss"),
    ("priority_loss_stranded", "priority loss + stranded"),
    ("no_home", "victims with no home"),
    ("retries_burned", "retries burned"),
    ("room_wait_seconds", "room wait (seconds)"),
    ("work_lost_cpu_seconds", "work lost, cpu-seconds"),
    ("gpu_seconds_lost", "GPU-seconds lost"),
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
    warn: Callable[[str], None] = to_stderr,
    strict: bool = False,
    shape: str = "cpu",
    pressure: float = 1.0,
    placement: str = scoring.DEFAULT.value,
    policy: Policy | None = None,
    policy_path: str | None = None,
    now: float | None = None,
) -> str:
    """The rendered report; bad input raises a ReprieveError naming the file and object.
    Both sides are judged at one time: the end of the generated day (policy.workload.EPOCH +
    1 day) for a generated workload, and for a snapshot the latest time it shows
    (policy.replay.dump_time), so that replaying it again gives the same report; ``now`` (the
    wall clock) only where it shows none. ``warn`` is given a line for each item the snapshot loader leaves out (with ``strict``, the
    first is an error instead) and for each thing left out of the queue
    (extender.commands.pending); by default the lines go to stderr. With ``policy`` (the file
    at ``policy_path``) reprieve's side decides under its rules, ranking and guards."""
    how = _placement(placement)
    if generate is not None:
        if snapshot_path or pods_path:
            raise ConfigError("--generate makes its own cluster and pods; leave out --snapshot and --pods")
        if generate < 1:
            raise ConfigError(f"--generate must be at least 1, not {generate}")
        made = generated(generate, seed=seed, shape=shape, pressure=pressure)
        view, pending = made.view, made.pending
        now = workload.END
        source = {"snapshot": None, "pods": None, "generate": generate, "seed": seed, "shape": shape, "pressure": pressure}
    else:
        if shape != "cpu" or pressure != 1.0:
            raise ConfigError("--shape and --pressure shape a generated workload: give --generate N")
        if not snapshot_path:
            raise ConfigError("give --snapshot (with --pods, or alone to replay its own pending pods), or --generate N")
        view = snapshot.read(snapshot_path, strict=strict, warn=warn, need_nodes=True).view
        if pods_path:
            queue = pending_pods.of_file(view, Path(pods_path))
        else:
            queue = pending_pods.of_snapshot(view, f"snapshot {snapshot_path}")
        for note in queue.notes:
            warn(note)
        view, pending = queue.view, queue.pods
        shown = replay.dump_time(view)
        now = now if shown is None else shown
        source = {"snapshot": snapshot_path, "pods": pods_path, "generate": None, "seed": None}
    reprieve = None
    if policy is not None:
        reprieve = replay.reprieve_with(rules=policy.rules, order=policy.order, guards=policy.guards, now=now)
    report = build_report(view, pending, replace=replace, placement=how, reprieve=reprieve, now=now)
    report["input"] = {**source, "replace": replace, "placement": placement, "policy": policy_path, "now": now}
    if output == "json":
        return orjson.dumps(report, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2).decode() + "\n"
    return render(report)


SHAPES = ("cpu", "gpu")  # policy.workload, policy.workload_gpu


def generated(count: int, *, seed: int, shape: str = "cpu", pressure: float = 1.0) -> workload.Workload:
    """The seeded workload of ``--generate count --shape shape --pressure pressure``."""
    if shape not in SHAPES:
        raise ConfigError(f"--shape must be one of {', '.join(SHAPES)}, not {shape!r}")
    if not 0 < pressure <= 10:
        raise ConfigError(f"--pressure must be above 0 and at most 10, not {pressure}")
    rng = random.Random(seed)
    if shape == "gpu":
        return workload_gpu.generate(rng, count, pressure=pressure)
    return workload.generate(rng, count, pressure=pressure)


def _placement(name: str) -> scoring.Placement:
    try:
        return scoring.Placement(name)
    except ValueError:
        raise ConfigError(
            f"--placement must be one of {', '.join(p.value for p in scoring.Placement)}, not {name!r}"
        ) from None


def build_report(
    view: ClusterView,
    pending: tuple[Pod, ...],
    *,
    replace: bool,
    placement: scoring.Placement = scoring.DEFAULT,
    reprieve: replay.Decider | None = None,
    now: float | None = None,
) -> dict:
    runs = replay.compare(view, pending, replace=replace, placement=placement, reprieve=reprieve, now=now)
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
        "members_stranded": step.stranded,
        "managed_pods_lost": step.managed_lost,
        "stranded_pods": list(step.stranded_pods),
        "jobs_failed": list(step.jobs_failed),
        "retries_burned": step.retries_burned,
        "room_wait_seconds": step.room_wait,
        "work_lost_cpu_seconds": round(step.cpu_seconds_lost),
        "gpu_seconds_lost": round(step.gpu_seconds_lost),
        "why": times.readable(step.why),  # policy writes times as seconds since the epoch
    }


def render(report: dict) -> str:
    source = report["input"]
    load = report["workload"]
    if source["generate"] is not None:
        what = f"generated workload (--generate {source['generate']} --seed {source['seed']}"
        if source.get("shape", "cpu") != "cpu" or source.get("pressure", 1.0) != 1.0:
            what += f" --shape {source['shape']} --pressure {source['pressure']:g}"
        what += ")"
    elif source["pods"] is None:
        what = f"{source['snapshot']}: its own pending pods, in queue order"
    else:
        what = f"{source['snapshot']} + {source['pods']}"
    if source.get("policy"):
        what += f", reprieve under policy {source['policy']}"
    lines = [
        what,
        f"{load['nodes']} nodes, {load['bound_pods']} bound pods, {load['budgets']} PDBs, "
        f"{load['pending_pods']} pending pods, replacements {'on' if source['replace'] else 'off'}",
        *([f"a pod that fits goes where the {source['placement']} score puts it"] if source['placement'] != scoring.DEFAULT.value else []),
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

"""The replay workload (examples/workload/) through the real kube-scheduler, stock and
reprieve side by side (issue 10): the same cluster is built in two namespaces, the 31
preemptors are sent as one wave through ``default-scheduler`` in one and ``reprieve-scheduler``
in the other, and the totals ``reprieve simulate`` reports are counted from the cluster:

- **preemptions**: the scheduler's ``"the target node for the preemption is determined"`` log
  lines for the namespace's pods (tests/e2e/burst.py says why that line);
- **victims**, **Guaranteed / Burstable victims**, **priority-weighted loss**: the workload's
  bound pods that are gone or terminating afterwards (only preemption deletes them), with
  their QoS class and priority from the workload file;
- **PDB violations**: per budget, the covered victims beyond the allowance it showed before the
  wave (the workload's budgets do not overlap, so this is policy.pdb.count_violations's count);
- **pods left pending**: preemptors not bound when the wave ends.

The workload has no controller-owned pods, so victims with no home and cascades are 0 on both
sides (asserted of the workload, not measured). reprieve must be no worse than stock on every
column, and better on PDB violations and Guaranteed victims; ``reprieve simulate`` on the same
files predicts both sides, and the test checks the real counts against that prediction too.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path

import yaml

from extender.commands import pending as pending_pods, simulate
from extender.state import snapshot
from policy import replay
from tests.e2e import burst
from tests.e2e.client import Kube
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario

WORKLOAD = Path(__file__).resolve().parents[2] / "examples" / "workload"
CLUSTER, PENDING = WORKLOAD / "cluster.yaml", WORKLOAD / "pending.yaml"


def _items(path: Path) -> list[dict]:
    return [item for doc in yaml.safe_load_all(path.read_text()) if doc for item in doc["items"]]


def _build(scenario: Scenario, objects: list[dict]) -> dict[str, dict]:
    """The workload's nodes, pods (oldest start tier first) and budgets in the scenario's
    namespace; returns the bound pods by name."""
    classes = {o["metadata"]["name"]: o["value"] for o in objects if o["kind"] == "PriorityClass"}
    for node in (o for o in objects if o["kind"] == "Node"):
        name = f"{scenario.ns}-{node['metadata']['name']}"
        allocatable = node["status"]["allocatable"]
        scenario.saw("nodes", scenario.kube.create({
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": {"e2e/scenario": scenario.ns}},
            "status": {"capacity": allocatable, "allocatable": allocatable,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
        }))
        scenario.nodes.append(name)
    pods = {o["metadata"]["name"]: o for o in objects if o["kind"] == "Pod"}
    tiers = sorted({p["status"]["startTime"] for p in pods.values()})
    for i, tier in enumerate(tiers):
        if i:
            time.sleep(1.1)  # startTime has one-second resolution: each tier starts later
        names = [n for n, p in pods.items() if p["status"]["startTime"] == tier]
        for name in names:
            p = pods[name]
            body = _pod(scenario, p, classes, scheduler=STOCK)
            body["spec"]["nodeName"] = f"{scenario.ns}-{p['spec']['nodeName']}"
            scenario.saw("pods", scenario.kube.create(body))
        scenario.running_all(*names)
    for pdb in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
        scenario.pdb(pdb["metadata"]["name"], match=pdb["spec"]["selector"]["matchLabels"], min_available=pdb["spec"]["minAvailable"])
    for pdb in (o for o in objects if o["kind"] == "PodDisruptionBudget"):
        scenario.pdb_ready(pdb["metadata"]["name"], allowed=pdb["status"]["disruptionsAllowed"], healthy=pdb["status"]["currentHealthy"])
    return pods


def _pod(scenario: Scenario, pod: dict, classes: dict[str, int], *, scheduler: str, labels: dict | None = None) -> dict:
    spec = pod["spec"]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": pod["metadata"]["name"], "namespace": scenario.ns, "labels": {**pod["metadata"]["labels"], **(labels or {})}},
        "spec": {
            "schedulerName": scheduler,
            "priorityClassName": scenario.priority_class(classes[spec["priorityClassName"]]),
            "terminationGracePeriodSeconds": spec.get("terminationGracePeriodSeconds", 1),
            "nodeSelector": {"e2e/scenario": scenario.ns},
            "containers": copy.deepcopy(spec["containers"]),
        },
    }


def _replay(plane, scheduler: str) -> dict[str, int]:
    """Build the workload, send the wave through ``scheduler``, count the totals."""
    objects, pending = _items(CLUSTER), _items(PENDING)
    classes = {o["metadata"]["name"]: o["value"] for o in objects if o["kind"] == "PriorityClass"}
    scenario = Scenario(plane, f"e2e-replay-{'stock' if scheduler == STOCK else 'reprieve'}-{int(time.time()) % 100000}")
    kube = Kube.pooled(str(plane.kubeconfig), burst.WAVE_CONNECTIONS + 2)
    watch = burst.BindWatch(kube, scenario.ns, len(pending))
    try:
        bound = _build(scenario, objects)
        scenario.synced(timeout=30)
        bodies = [_pod(scenario, p, classes, scheduler=scheduler, labels=burst.PREEMPTOR) for p in pending]
        log = plane.work / f"{burst.SCHEDULER_LOGS[scheduler]}.log"
        mark = log.stat().st_size
        watch.start()
        burst._create_all(kube, scenario.ns, bodies)
        watch.all_bound.wait(90)
        budgets = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
        victims = [p for name, p in bound.items() if scenario.terminating(name)]
        lines = burst.read_log(log, mark).splitlines()
        floor = min(p["spec"]["priority"] for p in [*bound.values(), *pending])
        return {
            "preemptions": len(burst.named_in(lines, scenario.ns, "pod", burst.PREEMPTION_LINE)),
            "victims": len(victims),
            "pdb_violations": sum(
                max(0, sum(1 for v in victims if _covers(b, v)) - b["status"]["disruptionsAllowed"]) for b in budgets
            ),
            "guaranteed_victims": sum(v["status"]["qosClass"] == "Guaranteed" for v in victims),
            "burstable_victims": sum(v["status"]["qosClass"] == "Burstable" for v in victims),
            "priority_loss": sum(v["spec"]["priority"] - floor + 1 for v in victims),
            # No gang and no manager in the workload: a victim strands no running pod.
            "priority_loss_stranded": sum(v["spec"]["priority"] - floor + 1 for v in victims),
            "jobs_failed": 0,  # no Job in the workload
            "broken_gangs": 0,
            "members_stranded": 0,  # no gang in the workload
            "managed_pods_lost": 0,  # no Spark, Ray, LeaderWorkerSet or MPI pod in the workload
            "no_home": len(victims),  # every pod is bare: nothing re-creates a victim
            "retries_burned": 0,
            # Each preemption here evicts one pod (asserted below): its wait is that pod's grace.
            "room_wait_seconds": sum(v["spec"]["terminationGracePeriodSeconds"] for v in victims),
            "cascade": 0,
            "pending": len(pending) - len(watch.bound_at()),
        }
    finally:
        watch.stop()
        scenario.cleanup()


def _covers(budget: dict, pod: dict) -> bool:
    return all(pod["metadata"]["labels"].get(k) == v for k, v in budget["spec"]["selector"]["matchLabels"].items())


# The columns counted from the cluster. Work lost (cpu- and GPU-seconds) is left out: it is
# measured at a time, and the pods here start when this test creates them, not at the dump's
# times the offline replay judges at; nor is reprieve below stock on it here (lanes q and p spare
# Guaranteed and budgeted pods by taking pods that ran longer: the QoS classes and budgets rank
# first, docs/simulate.md).
COUNTED = tuple(k for k in replay.Totals.FIELDS if k not in ("work_lost_cpu_seconds", "gpu_seconds_lost"))


def test_replay_reprieve_no_worse_than_stock_on_every_column(plane, record_property):
    objects = _items(CLUSTER)
    assert not any(o["metadata"].get("ownerReferences") for o in objects), "no_home is every victim and cascade 0 only without owners"
    view = snapshot.load(CLUSTER)
    predicted = simulate.build_report(view, pending_pods.of_file(view, PENDING).pods, replace=False)["totals"]

    real = {replay.STOCK: _replay(plane, STOCK), replay.REPRIEVE: _replay(plane, REPRIEVE)}
    table = "\n".join(
        f"{key:<20} stock {real['stock'][key]:>3} (simulate {predicted['stock'][key]:>3})   "
        f"reprieve {real['reprieve'][key]:>3} (simulate {predicted['reprieve'][key]:>3})"
        for key in COUNTED
    )
    record_property("burst", table)
    stock_totals, reprieve_totals = real[replay.STOCK], real[replay.REPRIEVE]
    assert stock_totals["preemptions"] >= 30, table
    assert stock_totals["pending"] == 0 and reprieve_totals["pending"] == 0, table
    assert all(t["victims"] == t["preemptions"] for t in real.values()), table  # one victim each: room wait is their grace
    for key in COUNTED:
        assert reprieve_totals[key] <= stock_totals[key], f"reprieve worse on {key}:\n{table}"
    assert reprieve_totals["pdb_violations"] < stock_totals["pdb_violations"], table
    assert reprieve_totals["guaranteed_victims"] < stock_totals["guaranteed_victims"], table
    # The offline replay predicts what the real schedulers did.
    assert real == {side: {k: predicted[side][k] for k in COUNTED} for side in real}, table

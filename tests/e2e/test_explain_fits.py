"""`reprieve explain --kubeconfig`'s "fits without preemption" is where the real kube-scheduler
binds the pod, with the pod's own constraints in play (issue 26).

The cluster: ``gpu`` (8 cpu, 2 nvidia.com/gpu, tainted nvidia.com/gpu=present:NoSchedule,
labelled e2e/pool=gpu), ``cpu-a`` (4 cpu, 3 taken: 1 free) and ``cpu-b`` (4 cpu, cordoned,
empty). Three pending pods, kept pending by naming a scheduler nobody runs:

- ``plain`` (1 cpu, no tolerations): the tainted gpu node has the most room and the cordoned
  cpu-b is empty, but only cpu-a admits it;
- ``trainer`` (2 cpu, 1 GPU, tolerates the taint, selects e2e/pool=gpu): only gpu;
- ``debugger`` (2 cpu, tolerates node.kubernetes.io/unschedulable): cpu-a has 1 cpu free, gpu
  is tainted against it: only the cordoned cpu-b.

Each is explained on the live cluster, then a twin through ``default-scheduler`` shows where the
real scheduler binds it. The twins do not compete: each explained node is the only one.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.e2e.scenario import STOCK

ROOT = Path(__file__).resolve().parents[2]
NOBODY = "e2e-unserved-scheduler"  # keeps the explained pods pending
GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def make_node(scenario, name: str, *, cpu: str, gpu: str | None = None, labels: dict | None = None, spec: dict | None = None) -> str:
    name = f"{scenario.ns}-{name}"
    allocatable = {"cpu": cpu, "memory": "64Gi", "pods": "110", **({"nvidia.com/gpu": gpu} if gpu else {})}
    scenario.saw("nodes", scenario.kube.create({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"e2e/scenario": scenario.ns, **(labels or {})}},
        "spec": spec or {},
        "status": {"capacity": allocatable, "allocatable": allocatable,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
    }))
    scenario.nodes.append(name)
    return name


def pending(scenario, name: str, *, cpu: str, gpu: str | None = None, scheduler: str, tolerations=(), selector=None) -> None:
    spec = scenario.pod_spec(cpu=cpu, scheduler=scheduler)
    if gpu:
        for key in ("requests", "limits"):
            spec["containers"][0]["resources"][key]["nvidia.com/gpu"] = gpu
    spec["tolerations"] = list(tolerations)
    spec["nodeSelector"] = {**spec["nodeSelector"], **(selector or {})}
    scenario.create_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": scenario.ns}, "spec": spec})


def explain(scenario, name: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "extender.cli", "explain", "--kubeconfig", str(scenario.plane.kubeconfig),
         "--pod", f"{scenario.ns}/{name}", "--output", "json"],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_explain_fits_where_the_real_scheduler_binds_the_pod(scenario):
    gpu = make_node(scenario, "gpu", cpu="8", gpu="2", labels={"e2e/pool": "gpu"}, spec={"taints": [GPU_TAINT]})
    cpu_a = make_node(scenario, "cpu-a", cpu="4")
    cpu_b = make_node(scenario, "cpu-b", cpu="4", spec={"unschedulable": True})
    scenario.pod("filler", cpu="3", node=cpu_a)
    scenario.running("filler")

    gpu_toleration = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
    cordon_toleration = {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}
    pods = {
        "plain": ({"cpu": "1"}, cpu_a),
        "trainer": ({"cpu": "2", "gpu": "1", "tolerations": [gpu_toleration], "selector": {"e2e/pool": "gpu"}}, gpu),
        "debugger": ({"cpu": "2", "tolerations": [cordon_toleration]}, cpu_b),
    }
    for name, (kw, _) in pods.items():
        pending(scenario, name, scheduler=NOBODY, **kw)

    reports = {name: explain(scenario, name) for name in pods}
    for name, (_, expected) in pods.items():
        assert reports[name]["preemption"]["fits"] == [expected], (name, reports[name]["preemption"])
    rows = {r["name"]: r for r in reports["plain"]["nodes"]}
    assert rows[gpu]["stock"]["reasons"] == ["node(s) had untolerated taint {nvidia.com/gpu: present} (NoSchedule)"]
    assert rows[cpu_b]["stock"]["reasons"] == ["node(s) were unschedulable: cordoned (spec.unschedulable)"]

    # The real scheduler, the same pods: each twin binds where explain said its pod fits.
    for name, (kw, _) in pods.items():
        pending(scenario, f"{name}-twin", scheduler=STOCK, **kw)
        assert scenario.running(f"{name}-twin") == reports[name]["preemption"]["fits"][0], name

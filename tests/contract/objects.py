"""Kubernetes objects as a cluster dump has them, built by keyword: nodes, pods of a namespace
(a queue's, in the policy tests) that request memory as real workloads do, and the
PriorityClasses they name."""

from __future__ import annotations

LOW, HIGH = 10, 1000
OPTED_OUT = "opted-out"


def k8s_node(name: str, *, cpu: str, memory: str = "64Gi", pods: int = 110, gpu: int = 0) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods)} | ({"example.com/gpu": str(gpu)} if gpu else {})
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "uid": f"uid-{name}"}, "status": {"allocatable": allocatable}}


def k8s_pod(
    name: str, queue: str, *, node: str | None = None, cpu: str | None = None, memory: str = "100Mi",
    gpu: int = 0, priority: int = LOW, minute: int = 0, opted_out: bool = False, never: bool = False,
) -> dict:
    """A pod of namespace ``queue``, started ``minute`` minutes after 10:00 (its creation too)."""
    requests = {"memory": memory} | ({"cpu": cpu} if cpu else {}) | ({"example.com/gpu": str(gpu)} if gpu else {})
    stamp = f"2025-06-01T10:{minute:02d}:00Z"
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": queue, "uid": f"uid-{queue}-{name}", "creationTimestamp": stamp},
        "spec": {
            "containers": [{"name": "main", "resources": {"requests": requests}}],
            "priority": priority,
            "priorityClassName": OPTED_OUT if opted_out else f"p{priority}",
            "preemptionPolicy": "Never" if never else "PreemptLowerPriority",
            "schedulerName": "default-scheduler",
        },
        "status": {"phase": "Pending"},
    }
    if node:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": stamp}
    return pod


def priority_classes() -> list[dict]:
    def pc(name: str, value: int, annotations: dict | None = None) -> dict:
        meta = {"name": name, "uid": f"uid-pc-{name}"} | ({"annotations": annotations} if annotations else {})
        return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": meta, "value": value}

    return [pc(f"p{LOW}", LOW), pc(f"p{HIGH}", HIGH), pc("p100", 100), pc("p500", 500),
            pc(OPTED_OUT, LOW, {"yunikorn.apache.org/allow-preemption": "false"})]


def dump(*objects: dict) -> dict:
    """A ``kubectl get -o yaml`` List of ``objects`` and the PriorityClasses they name."""
    return {"apiVersion": "v1", "kind": "List", "items": [*priority_classes(), *objects]}

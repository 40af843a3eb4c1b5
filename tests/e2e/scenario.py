"""Builders and waits for end-to-end scenarios, in the cluster's own terms."""

from __future__ import annotations

import time

from extender.apiserver import ApiError
from tests.e2e.client import Kube, wait_for

REPRIEVE = "reprieve-scheduler"
STOCK = "default-scheduler"


class Scenario:
    """One test's namespace and nodes; everything it made is removed afterwards."""

    def __init__(self, plane, namespace: str) -> None:
        self.plane = plane
        self.kube: Kube = plane.kube
        self.ns = namespace
        self.nodes: list[str] = []
        self.written: dict[str, int] = {}  # reprieve's kind name -> newest resourceVersion this test saw
        self.kube.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})

    def saw(self, kind: str, obj: dict) -> dict:
        """Note what this test wrote or read (``obj``'s resourceVersion), for ``synced``."""
        rv = int(obj["metadata"]["resourceVersion"])
        self.written[kind] = max(self.written.get(kind, 0), rv)
        return obj

    def synced(self, timeout: float = 10, port: int | None = None) -> None:
        """Wait until reprieve's published view includes everything this test wrote or saw.

        Scenarios test decisions, not how fast the cache converges (the live-cache tests do
        that), so they start the decisive step only once reprieve is current. ``port``: another
        reprieve than the one the shipped configuration points at."""
        import json
        import urllib.request

        def current() -> bool:
            with urllib.request.urlopen(f"http://127.0.0.1:{port or self.plane.reprieve_port}/readyz", timeout=2) as r:
                versions = json.loads(r.read())["resourceVersions"]
            return all(int(versions.get(kind, 0)) >= rv for kind, rv in self.written.items())

        wait_for("reprieve's view to catch up", current, timeout)

    # --------------------------------------------------------------- objects

    def node(self, name: str, *, cpu: str = "10", memory: str = "64Gi", pods: int = 110) -> str:
        name = f"{self.ns}-{name}"
        allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods)}
        self.saw("nodes", self.kube.create(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"e2e/scenario": self.ns}},
                "status": {
                    "capacity": allocatable,
                    "allocatable": allocatable,
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                },
            }
        ))
        self.nodes.append(name)
        return name

    def priority_class(self, value: int, *, never: bool = False) -> str:
        # The Priority admission plugin takes preemptionPolicy from the class, so a pod that
        # must never preempt needs a class that says so.
        name = f"e2e-priority-{value}" + ("-never" if never else "")
        body = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}
        if never:
            body["preemptionPolicy"] = "Never"
        try:
            self.kube.create(body)
        except ApiError as exc:
            if exc.status != 409:
                raise
        return name

    def pod(self, name: str, *, labels: dict | None = None, extra: dict | None = None, **spec) -> dict:
        """A pod of ``pod_spec(**spec)``, with the fields of ``extra`` added to its spec."""
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": self.ns, "labels": labels or {"app": name}},
            "spec": {**self.pod_spec(**spec), **(extra or {})},
        }
        # The Priority admission plugin may not have seen a brand-new PriorityClass yet.
        return self.create_pod(body)

    def create_pod(self, body: dict) -> dict:
        """Create a pod, waiting while the Priority admission plugin has not seen a brand-new
        PriorityClass yet; noted for ``synced``."""
        name = body["metadata"]["name"]
        return self.saw("pods", wait_for(f"pod {name} admitted", lambda: self._try_create(body), timeout=15, interval=0.1))

    def replicaset(self, name: str, *, replicas: int, labels: dict, **spec) -> None:
        """A ReplicaSet whose pods carry ``labels`` (its selector) and ``spec`` (see pod_spec)."""
        self.priority_class(spec.get("priority", 0))
        self.kube.create(
            {
                "apiVersion": "apps/v1",
                "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {
                    "replicas": replicas,
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": self.pod_spec(**spec)},
                },
            }
        )

    def job(self, name: str, *, backoff_limit: int, ignore_disruption: bool, **spec) -> None:
        """A Job of one pod of ``spec`` (see pod_spec), restartPolicy Never; with
        ``ignore_disruption`` its podFailurePolicy ignores a pod failed with DisruptionTarget."""
        body = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name, "namespace": self.ns},
            "spec": {
                "backoffLimit": backoff_limit,
                "template": {"metadata": {"labels": {"app": name}}, "spec": {**self.pod_spec(**spec), "restartPolicy": "Never"}},
            },
        }
        if ignore_disruption:
            body["spec"]["podFailurePolicy"] = {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]}
        self.saw("jobs", self.kube.create(body))

    def job_status(self, name: str) -> dict:
        """The Job's status, noted for ``synced``."""
        return self.saw("jobs", self.kube.get_obj("Job", name, self.ns)).get("status") or {}

    def scale(self, name: str, replicas: int) -> None:
        self.kube.patch("ReplicaSet", name, self.ns, {"spec": {"replicas": replicas}})

    def pods_with(self, labels: dict) -> list[dict]:
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return self.kube.list("Pod", self.ns, labelSelector=selector)

    def pod_spec(
        self,
        *,
        cpu: str | None = None,
        memory: str = "100Mi",
        limit_cpu: str | None = None,
        priority: int = 0,
        qos: str = "burstable",
        node: str | None = None,
        grace: int = 1,
        scheduler: str = REPRIEVE,
        never: bool = False,
    ) -> dict:
        if qos == "besteffort":
            resources = {}
        elif qos == "guaranteed":
            resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": cpu, "memory": memory}}
        else:
            resources = {"requests": {"cpu": cpu, "memory": memory}, "limits": {"cpu": limit_cpu or cpu, "memory": "1Gi"}}
        spec = {
            "schedulerName": scheduler,
            "priorityClassName": self.priority_class(priority, never=never),
            "terminationGracePeriodSeconds": grace,
            # Keep pods on this scenario's nodes even though others may exist.
            "nodeSelector": {"e2e/scenario": self.ns},
            "containers": [{"name": "main", "image": "registry.invalid/e2e:1", "resources": resources}],
        }
        if node:
            spec["nodeName"] = node
        return spec

    def _try_create(self, body: dict) -> dict | None:
        try:
            return self.kube.create(body)
        except ApiError as exc:
            if exc.status == 403 and "PriorityClass" in str(exc):
                return None
            raise

    def pdb(self, name: str, *, match: dict, min_available: int) -> None:
        self.kube.create(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": name, "namespace": self.ns},
                "spec": {"minAvailable": min_available, "selector": {"matchLabels": match}},
            }
        )

    # --------------------------------------------------------------- reading

    def get(self, name: str) -> dict | None:
        try:
            return self.kube.get_obj("Pod", name, self.ns)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def node_of(self, name: str) -> str | None:
        pod = self.get(name)
        return pod and pod["spec"].get("nodeName")

    def nominated(self, name: str) -> str | None:
        pod = self.get(name)
        return pod and (pod.get("status") or {}).get("nominatedNodeName")

    def qos_tie(self, node: str) -> None:
        """The QoS tie-break's setup: two priority-1 2-cpu pods on ``node``, a Burstable one
        ("burstable") and a Guaranteed one a second younger ("guaranteed"), both running. Stock
        preemption keeps the older pod (start time is its only tie-break) and evicts the
        Guaranteed one; reprieve evicts the Burstable one."""
        self.pod("burstable", cpu="2", limit_cpu="3", priority=1, node=node)
        self.running("burstable")
        time.sleep(1.1)  # startTime has one-second resolution
        self.pod("guaranteed", cpu="2", qos="guaranteed", priority=1, node=node)
        self.running("guaranteed")

    def running(self, name: str, *, timeout: float = 30) -> str:
        """Wait until the pod runs; returns its node."""

        def check():
            pod = self.get(name)
            return pod and pod["status"].get("phase") == "Running" and pod

        return self.saw("pods", wait_for(f"{self.ns}/{name} to run", check, timeout))["spec"]["nodeName"]

    def running_all(self, *names: str, timeout: float = 30) -> None:
        for name in names:
            self.running(name, timeout=timeout)

    def gone(self, name: str, *, timeout: float = 30) -> None:
        wait_for(f"{self.ns}/{name} to be deleted", lambda: self.get(name) is None, timeout)

    def terminating(self, name: str) -> bool:
        pod = self.get(name)
        return pod is None or bool(pod["metadata"].get("deletionTimestamp"))

    def pending_for(self, name: str, seconds: float) -> None:
        """Assert the pod stays unbound for ``seconds``."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            assert self.node_of(name) is None, f"{name} was bound to {self.node_of(name)}"
            time.sleep(0.2)

    def condition_message(self, name: str) -> str:
        pod = self.get(name) or {}
        for condition in (pod.get("status") or {}).get("conditions") or ():
            if condition["type"] == "PodScheduled":
                return condition.get("message", "")
        return ""

    def pdb_ready(self, name: str, *, allowed: int, healthy: int) -> None:
        def check():
            pdb = self.kube.get_obj("PodDisruptionBudget", name, self.ns)
            status = pdb.get("status") or {}
            return status.get("currentHealthy") == healthy and status.get("disruptionsAllowed") == allowed and pdb

        self.saw("poddisruptionbudgets", wait_for(f"PDB {name} status", check, timeout=30))

    def nominate(self, name: str, node: str) -> None:
        """Set status.nominatedNodeName, as a scheduler does after preempting for the pod."""
        self.saw("pods", self.kube.patch_status("Pod", name, self.ns, {"nominatedNodeName": node}))

    # --------------------------------------------------------------- teardown

    def cleanup(self) -> None:
        for job in self.kube.list("Job", self.ns):  # with their pods (a Job's deletion orphans them by default)
            self.kube.request(
                "DELETE", f"{self.kube.collection('Job', self.ns)}/{job['metadata']['name']}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"},
            )
        for rs in self.kube.list("ReplicaSet", self.ns):
            self.kube.delete("ReplicaSet", rs["metadata"]["name"], self.ns, grace=0)
        for pod in self.kube.list("Pod", self.ns):
            self.kube.delete("Pod", pod["metadata"]["name"], self.ns, grace=0)
        for node in self.nodes:
            self.kube.delete("Node", node)
        self.kube.delete("Namespace", self.ns)

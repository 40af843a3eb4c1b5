"""A small JSON client for the tests: reprieve's own reader plus the writes tests need."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

import orjson
import urllib3

from extender.apiserver import ApiError, ApiServer, _error

PATHS = {
    "Node": "/api/v1/nodes",
    "Namespace": "/api/v1/namespaces",
    "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
    "Pod": "/api/v1/namespaces/{ns}/pods",
    "PodDisruptionBudget": "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets",
    "ReplicaSet": "/apis/apps/v1/namespaces/{ns}/replicasets",
    "Job": "/apis/batch/v1/namespaces/{ns}/jobs",
    "Event": "/api/v1/namespaces/{ns}/events",
    "EventV1": "/apis/events.k8s.io/v1/namespaces/{ns}/events",
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "ConfigMap": "/api/v1/namespaces/{ns}/configmaps",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
    "Deployment": "/apis/apps/v1/namespaces/{ns}/deployments",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "Lease": "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
    "Secret": "/api/v1/namespaces/{ns}/secrets",
    "SubjectAccessReview": "/apis/authorization.k8s.io/v1/subjectaccessreviews",
    "PodGroup": "/apis/scheduling.k8s.io/v1beta1/namespaces/{ns}/podgroups",
}


class Kube(ApiServer):
    @classmethod
    def pooled(cls, kubeconfig: str, connections: int) -> "Kube":
        """A client of its own keeping up to ``connections`` connections alive, for many requests
        in parallel (the shared client keeps 8; more would be opened and thrown away each time)."""
        kube = cls.from_kubeconfig(kubeconfig)
        kube._pool.connection_pool_kw["maxsize"] = connections
        return kube

    def request(self, method: str, path: str, body: Any = None, params: dict | None = None, content_type="application/json") -> dict:
        headers = {**self._headers(), "Content-Type": content_type}
        url = f"{self._host}{path}" + (f"?{urlencode(params)}" if params else "")
        response = self._pool.request(
            method, url, body=orjson.dumps(body) if body is not None else None, headers=headers, timeout=urllib3.Timeout(connect=5, read=30)
        )
        if response.status >= 300:
            raise _error(response.status, response.data)
        return orjson.loads(response.data) if response.data else {}

    def collection(self, kind: str, ns: str | None = None) -> str:
        return PATHS[kind].format(ns=ns)

    def create(self, obj: dict) -> dict:
        ns = obj["metadata"].get("namespace")
        return self.request("POST", self.collection(obj["kind"], ns), obj)

    def get_obj(self, kind: str, name: str, ns: str | None = None) -> dict:
        return self.request("GET", f"{self.collection(kind, ns)}/{name}")

    def list(self, kind: str, ns: str | None = None, **params) -> list[dict]:
        if ns is None and "{ns}" in PATHS[kind]:  # every namespace
            path = PATHS[kind].replace("/namespaces/{ns}", "")
        else:
            path = self.collection(kind, ns)
        return self.request("GET", path, params=params or None).get("items") or []

    def delete(self, kind: str, name: str, ns: str | None = None, grace: int | None = None) -> None:
        params = {"gracePeriodSeconds": grace} if grace is not None else None
        try:
            self.request("DELETE", f"{self.collection(kind, ns)}/{name}", params=params)
        except ApiError as exc:
            if exc.status != 404:
                raise

    def patch_status(self, kind: str, name: str, ns: str | None, status: dict) -> dict:
        return self.request(
            "PATCH", f"{self.collection(kind, ns)}/{name}/status", {"status": status}, content_type="application/merge-patch+json"
        )

    def patch(self, kind: str, name: str, ns: str | None, patch: dict) -> dict:
        return self.request("PATCH", f"{self.collection(kind, ns)}/{name}", patch, content_type="application/merge-patch+json")


def wait_for(what: str, check: Callable[[], Any], timeout: float = 30, interval: float = 0.2) -> Any:
    """Poll ``check`` until it returns something truthy; fail with ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")

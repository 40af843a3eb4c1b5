"""A stand-in for the kubelets of hollow nodes: pods bound to a node start Running and Ready, and a
deleted pod disappears when its grace period ends (its deletionTimestamp), as a kubelet would let it.
A deleted pod that a finalizer holds (a Job's pods: batch.kubernetes.io/job-tracking) first
turns Failed, its container killed, as a kubelet reports it: the Job controller counts such a
pod (and applies its podFailurePolicy) only once it is terminal."""

from __future__ import annotations

import datetime as dt
import logging
import threading

import urllib3

from extender.apiserver import ApiError
from tests.e2e.client import Kube

log = logging.getLogger(__name__)


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse(ts: str) -> dt.datetime:
    return dt.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)


class FakeKubelet(threading.Thread):
    def __init__(self, kube: Kube) -> None:
        super().__init__(name="fake-kubelet", daemon=True)
        self._kube = kube
        self._stopping = threading.Event()
        self._finishing: set[str] = set()
        self._lock = threading.Lock()

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        while not self._stopping.is_set():
            try:
                pods = self._kube.get("/api/v1/pods", {}, timeout=30)
                for pod in pods.get("items") or ():
                    self._handle(pod)
                rv = pods["metadata"]["resourceVersion"]
                for event in self._kube.watch("/api/v1/pods", {"resourceVersion": rv, "timeoutSeconds": 30}, read_timeout=40):
                    if self._stopping.is_set():
                        return
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self._handle(event["object"])
            except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                log.debug("fake kubelet: %s", exc)  # the apiserver may be restarting in fault tests
                self._stopping.wait(0.5)

    def _handle(self, pod: dict) -> None:
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
        if meta.get("deletionTimestamp"):
            self._finish_later(pod)
        elif spec.get("nodeName") and status.get("phase") == "Pending":
            self._start(pod)

    def _start(self, pod: dict) -> None:
        now = _now()
        conditions = [
            {"type": t, "status": "True", "lastTransitionTime": now}
            for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")
        ]
        try:
            self._kube.patch_status(
                "Pod",
                pod["metadata"]["name"],
                pod["metadata"]["namespace"],
                {
                    "phase": "Running",
                    "startTime": now,
                    "conditions": conditions,
                    "podIP": "10.1.0.1",
                    "containerStatuses": [
                        {
                            "name": c["name"],
                            "image": c.get("image", ""),
                            "imageID": "",
                            "ready": True,
                            "started": True,
                            "restartCount": 0,
                            "state": {"running": {"startedAt": now}},
                        }
                        for c in pod["spec"].get("containers") or ()
                    ],
                },
            )
        except (ApiError, urllib3.exceptions.HTTPError, OSError) as exc:
            log.debug("fake kubelet: start %s: %s", pod["metadata"]["name"], exc)

    def _finish_later(self, pod: dict) -> None:
        meta = pod["metadata"]
        uid = meta["uid"]
        with self._lock:
            if uid in self._finishing:
                return
            self._finishing.add(uid)
        delay = (_parse(meta["deletionTimestamp"]) - dt.datetime.now(dt.timezone.utc)).total_seconds()
        held = bool(meta.get("finalizers")) and (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        containers = tuple(c["name"] for c in pod["spec"].get("containers") or ()) if held else ()
        timer = threading.Timer(max(0.0, delay), self._finish, args=(meta["name"], meta["namespace"], uid, containers))
        timer.daemon = True
        timer.start()

    def _finish(self, name: str, namespace: str, uid: str, held: tuple[str, ...] = ()) -> None:
        """Delete the pod; one a finalizer holds (its containers ``held``) turns Failed first."""
        try:
            if held:
                self._kube.patch_status("Pod", name, namespace, {
                    "phase": "Failed",
                    "containerStatuses": [
                        {
                            "name": c, "image": "", "imageID": "", "ready": False, "restartCount": 0,
                            "state": {"terminated": {"exitCode": 143, "reason": "Error", "finishedAt": _now()}},
                        }
                        for c in held
                    ],
                })
            self._kube.request(
                "DELETE",
                f"/api/v1/namespaces/{namespace}/pods/{name}",
                {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
            )
        except (ApiError, urllib3.exceptions.HTTPError, OSError) as exc:
            log.debug("fake kubelet: finish %s: %s", name, exc)
        finally:
            with self._lock:
                self._finishing.discard(uid)

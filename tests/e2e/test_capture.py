"""Capture what a real kube-scheduler sends on each verb, in both nodeCacheCapable modes.

Two extra kube-schedulers call reprieve through a recording proxy. For every captured call the
test also records the cluster as the apiserver had it at that moment, and checks that reprieve
serving that state from a snapshot gives byte for byte the answer live reprieve gave: the
snapshot and live modes decide alike. The bodies must have the shape of the committed golden
cases under tests/golden/*-scheduler/; REPRIEVE_UPDATE_GOLDEN=1 rewrites those cases.
"""

from __future__ import annotations

import copy
import os
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import orjson
import pytest
import yaml

from extender.state import snapshot
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from extender.config import Settings
from tests.e2e.client import wait_for
from tests.ports import free_port

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
VERBS = ("filter", "prioritize", "preempt")
KINDS = (
    ("v1", "Node", "/api/v1/nodes"),
    ("v1", "Pod", "/api/v1/pods"),
    ("policy/v1", "PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
    ("scheduling.k8s.io/v1", "PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"),
)


def cluster_state(kube) -> dict:
    """What `kubectl get nodes,pods,pdb,priorityclasses -A -o yaml` would print, lightly trimmed."""
    items = []
    for api_version, kind, path in KINDS:
        for item in kube.get(path, {}, timeout=10).get("items") or ():
            item["metadata"].pop("managedFields", None)
            items.append({"apiVersion": api_version, "kind": kind, **item})
    return {"apiVersion": "v1", "kind": "List", "items": items}


class Recorder:
    """A loopback proxy in front of reprieve that keeps (verb, body, cluster state, answer)."""

    def __init__(self, kube, target: str) -> None:
        self.calls: list[tuple[str, bytes, dict, bytes]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers["Content-Length"]))
                state = cluster_state(kube)
                request = urllib.request.Request(target + self.path, data=body, headers={"Content-Type": "application/json"})
                with urllib.request.urlopen(request, timeout=5) as response:
                    answer = response.read()
                recorder.calls.append((self.path.strip("/"), body, state, answer))
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def first(self, verb: str):
        return next((c for c in self.calls if c[0] == verb), None)


@pytest.fixture
def capturing(plane, scenario):
    """Two schedulers named capture-cache and capture-nocache, both calling reprieve via a Recorder."""
    recorders = {}
    names = []
    manifest = yaml.safe_load(plane.scheduler_config().read_text())
    for mode, cache in (("cache", True), ("nocache", False)):
        recorder = recorders[mode] = Recorder(plane.kube, f"http://127.0.0.1:{plane.reprieve_port}")
        config = copy.deepcopy(manifest)
        config["profiles"] = [{"schedulerName": f"capture-{mode}"}]
        # prioritize is not in the shipped stanza: added, so that every verb is captured.
        config["extenders"][0].update(
            urlPrefix=recorder.url, nodeCacheCapable=cache, ignorable=False, prioritizeVerb="prioritize", weight=1
        )
        path = plane.work / f"capture-{mode}.yaml"
        path.write_text(yaml.safe_dump(config))
        port = free_port()
        name = f"capture-{mode}-scheduler"
        plane._spawn(name, [*plane._component("kube-scheduler", port), f"--config={path}"], lambda p=port: plane._secure_healthz(p))
        names.append(name)
    try:
        yield recorders
    finally:
        for name in names:
            plane.stop_process(name)
        for recorder in recorders.values():
            recorder.server.shutdown()


def drive_every_verb(scenario, scheduler: str) -> None:
    # filter and prioritize: a pod that fits on two nodes.
    n1, n2 = scenario.node("n1", cpu="4"), scenario.node("n2", cpu="4")
    scenario.synced()  # else prioritize may run before reprieve has seen the new nodes
    scenario.pod("fits", cpu="1", priority=5, scheduler=scheduler)
    on = scenario.running("fits")
    # preempt: fill both nodes with priority-1 pods, then ask for 2 cpu at priority 10. The
    # larger filler-b starts a whole second before filler-a, so at any moment it has lost more
    # work (policy.criteria.work_lost counts whole seconds: 4 cores x (k + 1) > 3 cores x k, and
    # also 4 x 1 > 3 x 0 in filler-a's first second): the live answer and the snapshot's, judged
    # a few seconds later, agree on filler-a. Started in the same second, both would have lost
    # nothing while that second lasts, and a live answer in it would fall to a later tie-break
    # (seen in CI: live chose filler-b's node, the snapshot filler-a's).
    scenario.pod("filler-b", cpu="4", priority=1, node=n2 if on == n1 else n1)
    scenario.running("filler-b")
    time.sleep(1.1)  # startTime has one-second resolution
    scenario.pod("filler-a", cpu="3", priority=1, node=on)
    scenario.running_all("filler-a", "filler-b")
    scenario.synced()
    scenario.pod("urgent", cpu="2", priority=10, scheduler=scheduler)
    scenario.running("urgent", timeout=30)


def shape(value):
    """Keys and JSON types, recursively, what must not drift. List elements and the values of
    maps keyed by names (node names contain '-') are represented by their first one."""
    if isinstance(value, dict):
        if any("-" in key for key in value):
            return {"<name>": shape(next(iter(value.values())))}
        return {k: shape(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [shape(value[0])] if value else []
    return type(value).__name__


@pytest.mark.parametrize("mode", ["cache", "nocache"])
def test_capture_real_scheduler_requests(capturing, scenario, mode):
    recorder = capturing[mode]
    drive_every_verb(scenario, f"capture-{mode}")
    wait_for("a call on every verb", lambda: all(recorder.first(v) for v in VERBS), timeout=10)
    for verb in VERBS:
        _, body, state, live_answer = recorder.first(verb)
        request = orjson.loads(body)
        # Snapshot mode on the same state answers exactly as live mode did.
        view = snapshot.from_documents([state], source=f"{verb}-{mode} capture")
        offline = create_app(Settings(), cluster=StaticCluster(view)).test_client().post(f"/{verb}", data=body)
        assert offline.status_code == 200
        assert offline.data == live_answer, f"{verb} ({mode}): snapshot and live answers differ"
        # The wire shape the scheduler uses is the one pinned in tests/golden.
        case = GOLDEN / f"{verb}-{mode}-scheduler"
        if os.environ.get("REPRIEVE_UPDATE_GOLDEN"):
            case.mkdir(exist_ok=True)
            (case / "request.json").write_bytes(body)
            (case / "snapshot.yaml").write_text(yaml.safe_dump(state, sort_keys=False))
            (case / "response.json").write_bytes(live_answer + b"\n")
        golden = orjson.loads((case / "request.json").read_bytes())
        assert list(request) == list(golden), f"{verb} ({mode}): top-level keys changed"
        assert shape({k: v for k, v in request.items() if k != "Pod"}) == shape(
            {k: v for k, v in golden.items() if k != "Pod"}
        ), f"{verb} ({mode}): wire shape changed"
        assert set(request["Pod"]) == set(golden["Pod"])

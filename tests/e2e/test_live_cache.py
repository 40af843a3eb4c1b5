"""reprieve's live view against the real apiserver: convergence under churn, faults, readiness.

The cache runs in the test process (the same LiveCluster class `reprieve serve --kubeconfig`
runs), connected through a TCP relay the tests can cut or silence.
"""

from __future__ import annotations

import concurrent.futures
import time

import pytest
import yaml

from extender.serving.app import create_app
from extender.config import Settings
from extender.apiserver import ApiServer
from extender.live.cache import LiveCluster
from extender.metrics import Metrics
from tests.e2e.client import wait_for
from tests.e2e.relay import Relay
from tests.e2e.scenario import Scenario

PRIORITIES = 20


@pytest.fixture
def relay(plane):
    r = Relay(plane.ports["apiserver"])
    yield r
    r.close()


def live(plane, relay, **kwargs) -> tuple[LiveCluster, Metrics]:
    """A LiveCluster that reaches the apiserver through ``relay``."""
    config = yaml.safe_load(plane.kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{relay.port}"
    path = plane.work / f"relay-{relay.port}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    metrics = Metrics()
    kwargs.setdefault("staleness_bound", 1.0)
    return LiveCluster(ApiServer.from_kubeconfig(str(path)), metrics=metrics, **kwargs).start(), metrics


def truth(kube, scenario: Scenario) -> dict:
    """The apiserver's state of everything this test owns, in the terms the view keeps."""
    ns = scenario.ns
    pods = {
        p["metadata"]["uid"]: (p["metadata"].get("labels", {}).get("gen"), p["spec"].get("nodeName"))
        for p in kube.list("Pod", ns)
        if p.get("status", {}).get("phase") not in ("Succeeded", "Failed")
    }
    nodes = {n["metadata"]["name"]: n["status"]["allocatable"]["cpu"] for n in kube.list("Node") if n["metadata"]["name"].startswith(ns)}
    pdbs = {f"{ns}/{b['metadata']['name']}": (b.get("status") or {}).get("disruptionsAllowed", 0) for b in kube.list("PodDisruptionBudget", ns)}
    classes = {c["metadata"]["name"]: c["value"] for c in kube.list("PriorityClass") if c["metadata"]["name"].startswith(ns)}
    return {"pods": pods, "nodes": nodes, "pdbs": pdbs, "classes": classes}


def seen(cache: LiveCluster, scenario: Scenario) -> dict | None:
    view = cache.view()
    if view is None:
        return None
    ns = scenario.ns
    return {
        "pods": {p.uid: (p.labels.get("gen"), p.node_name) for p in view.pods.values() if p.namespace == ns},
        "nodes": {n: str(i.node.allocatable["cpu"] // 1000) for n, i in view.nodes.items() if n.startswith(ns)},
        "pdbs": {b.key: b.disruptions_allowed for b in view.budgets.get(ns, ())},
        "classes": {c.name: c.value for c in view.priority_classes.values() if c.name.startswith(ns)},
    }


def converged(kube, cache, scenario, within: float) -> float:
    """Seconds until the view equals the apiserver's state (no ghosts, nothing missing)."""
    started = time.monotonic()
    deadline = started + within
    while True:
        view, apiserver = seen(cache, scenario), truth(kube, scenario)
        if view == apiserver:
            return time.monotonic() - started
        if time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if view is None:
        raise AssertionError(f"view not ready {within}s after the last write: {cache.describe()}")
    diff = {}
    for kind in apiserver:
        ghosts = set(view[kind]) - set(apiserver[kind])
        missing = set(apiserver[kind]) - set(view[kind])
        stale = {k for k in set(view[kind]) & set(apiserver[kind]) if view[kind][k] != apiserver[kind][k]}
        if ghosts or missing or stale:
            diff[kind] = {"ghosts": sorted(ghosts)[:3], "missing": sorted(missing)[:3], "stale": sorted(stale)[:3], "counts": (len(ghosts), len(missing), len(stale))}
    raise AssertionError(f"view differs from the apiserver {within}s after the last write: {diff}")


def churn(scenario: Scenario, *, pods: int, nodes: int, budgets: int, rate: float) -> None:
    """Create, update and delete objects of all four kinds at about ``rate`` writes per second."""
    kube, ns = scenario.kube, scenario.ns
    writes = []
    for i in range(PRIORITIES):
        writes.append(lambda i=i: kube.create({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": f"{ns}-pc-{i}"}, "value": i}))
    for i in range(nodes):
        writes.append(lambda i=i: scenario.node(f"node-{i}", cpu=str(4 + i % 4)))
    for i in range(budgets):
        writes.append(lambda i=i: scenario.pdb(f"pdb-{i}", match={"app": f"app-{i}"}, min_available=1))
    for i in range(pods):
        body = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": f"pod-{i}", "namespace": ns, "labels": {"app": f"app-{i % budgets}", "gen": "0"}},
            "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "registry.invalid/x", "resources": {"requests": {"cpu": "10m"}}}]},
        }
        writes.append(lambda body=body: kube.create(body))
    # Updates and deletes of a share of everything just made.
    for i in range(0, pods, 3):
        writes.append(lambda i=i: kube.patch("Pod", f"pod-{i}", ns, {"metadata": {"labels": {"gen": "1"}}}))
    for i in range(0, pods, 5):
        writes.append(lambda i=i: kube.delete("Pod", f"pod-{i}", ns, grace=0))
    for i in range(0, nodes, 4):
        writes.append(lambda i=i: kube.delete("Node", f"{ns}-node-{i}"))
    for i in range(0, budgets, 3):
        writes.append(lambda i=i: kube.delete("PodDisruptionBudget", f"pdb-{i}", ns))
    for i in range(0, PRIORITIES, 2):
        writes.append(lambda i=i: kube.delete("PriorityClass", f"{ns}-pc-{i}"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        started = time.monotonic()
        for n, write in enumerate(writes):
            delay = started + n / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            pool.submit(write)


@pytest.fixture
def synced(plane, relay, scenario):
    """Make a LiveCluster through the relay and wait for its initial sync; stop it afterwards."""
    made = []

    def make(**kwargs) -> tuple[LiveCluster, Metrics]:
        cache, metrics = live(plane, relay, **kwargs)
        made.append(cache)
        wait_for("initial sync", cache.ready, timeout=10)
        return cache, metrics

    yield make
    for cache in made:
        cache.stop()
    for c in plane.kube.list("PriorityClass"):  # cluster-scoped: not removed with the namespace
        if c["metadata"]["name"].startswith(scenario.ns):
            plane.kube.delete("PriorityClass", c["metadata"]["name"])


def test_converges_within_2s_of_the_last_write(plane, synced, scenario):
    cache, _ = synced()
    churn(scenario, pods=2000, nodes=100, budgets=60, rate=400)
    lag = converged(plane.kube, cache, scenario, within=2.0)
    assert seen(cache, scenario)["pods"], "the view saw no pods at all"
    print(f"converged {lag:.2f}s after the last of ~3,100 writes")


def test_recovers_from_a_cut_watch(plane, relay, synced, scenario):
    cache, metrics = synced()
    assert relay.cut() >= 4, "expected the four watches to be open"
    churn(scenario, pods=200, nodes=10, budgets=10, rate=400)
    converged(plane.kube, cache, scenario, within=10)
    assert sum(metrics.cache_watch_restarts.labels(k)._value.get() for k in ("pods", "nodes")) >= 2


def test_notices_a_silent_watch_and_readyz_shows_the_gap(plane, relay, synced, scenario):
    # The connection stays open but nothing flows: only the client-side timeout can tell.
    cache, _ = synced(watch_seconds=2, silence_timeout=3)
    relay.silent = True
    churn(scenario, pods=50, nodes=5, budgets=5, rate=400)
    wait_for("not ready while the watch is silent", lambda: not cache.ready(), timeout=10)
    relay.silent = False
    relay.cut()
    converged(plane.kube, cache, scenario, within=10)
    assert cache.ready()


def test_survives_an_apiserver_restart_and_a_forced_relist(plane, relay, synced, scenario):
    cache, metrics = synced()
    churn(scenario, pods=100, nodes=5, budgets=5, rate=400)
    converged(plane.kube, cache, scenario, within=2)
    relists_before = metrics.cache_relists.labels("pods")._value.get()
    # Take the apiserver down; behind reprieve's back, write into a fresh one and compact
    # etcd, so reprieve's resourceVersion is gone: its watch must get 410 and relist.
    relay.accepting = False  # reprieve cannot reach the apiserver from here on
    plane.kill_apiserver()
    wait_for("/readyz to show the gap", lambda: not cache.ready(), timeout=10)
    plane.start_apiserver()
    for i in range(100, 150):
        plane.kube.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i}", "namespace": scenario.ns}, "spec": {"schedulerName": "nobody", "containers": [{"name": "c", "image": "x"}]}})
    plane.compact_etcd()
    plane.kill_apiserver()
    plane.start_apiserver()
    relay.accepting = True
    lag = converged(plane.kube, cache, scenario, within=10)
    assert cache.ready()
    assert metrics.cache_relists.labels("pods")._value.get() > relists_before, "expected a relist after 410 Gone"
    print(f"converged {lag:.2f}s after the apiserver came back")


def test_readiness_gating_and_safe_answers(plane, relay, scenario):
    relay.accepting = False  # the apiserver is unreachable at startup
    cache, metrics = live(plane, relay)
    client = create_app(Settings(), cluster=cache, metrics=metrics).test_client()
    try:
        pod = {"metadata": {"name": "p", "namespace": scenario.ns, "uid": "u"}, "spec": {"priority": 10}}
        proposal = {"n1": {"Pods": [{"UID": "victim-uid"}], "NumPDBViolations": 3}}
        time.sleep(1)
        assert client.get("/readyz").status_code == 503
        assert client.post("/filter", json={"Pod": pod, "NodeNames": ["n1", "n2"]}).json["NodeNames"] == ["n1", "n2"]
        assert client.post("/prioritize", json={"Pod": pod, "NodeNames": ["n1"]}).json == []
        assert client.post("/preempt", json={"Pod": pod, "NodeNameToMetaVictims": proposal}).json == {"NodeNameToMetaVictims": proposal}
        relay.accepting = True
        wait_for("ready once the apiserver is reachable", lambda: client.get("/readyz").status_code == 200, timeout=15)
        # Now a real decision: an unknown node passes filter, but preempt drops nothing it knows.
        assert client.post("/prioritize", json={"Pod": pod, "NodeNames": ["n1"]}).json == [{"Host": "n1", "Score": 0}]
        text = client.get("/metrics").data.decode()
        assert 'reprieve_not_ready_answers_total{verb="preempt"} 1.0' in text
    finally:
        cache.stop()

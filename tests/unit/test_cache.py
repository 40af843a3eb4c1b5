"""The live cache's optional kinds, the gang PodGroups and Jobs: watched where the API server serves
them (and reprieve may read them), picked up when their CRD arrives, forgotten when it goes, and
never a reason for the cache not to be ready.

A small API server on loopback serves the four required kinds (empty), Jobs (as every API server
does) and, per test, discovery documents, lists and watch streams for the three PodGroup kinds."""

from __future__ import annotations

import logging
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import kubernetes
import orjson
import pytest

from extender.commands import cluster as cluster_command
from extender.apiserver import ApiServer
from extender.live.cache import REQUIRED as REQUIRED_KINDS, LiveCluster
from extender.live.changes import KINDS
from extender.live.reflector import Reflector
from extender.metrics import Metrics
from tests.e2e.client import wait_for
from tests.ports import free_port
from tests.unit.test_reflector import OneEvent

COSCHEDULING = "podgroups.scheduling.x-k8s.io"
VOLCANO = "podgroups.scheduling.volcano.sh"
WORKLOAD = "podgroups.scheduling.k8s.io"
JOBS = "jobs"
REQUIRED = [kind.path for kind in KINDS.values() if not kind.optional]


class FakeApiServer:
    """Lists and watches on loopback. ``discovery``: group-version path -> HTTP status, or the
    resource names it serves; ``broken``: collection path -> the status its list and watch get."""

    def __init__(self) -> None:
        self.lock = threading.Condition()
        self.rv = 100
        self.objects: dict[str, dict[str, dict]] = {path: {} for path in REQUIRED}
        self.events: dict[str, list[tuple[int, dict]]] = {}
        self.discovery: dict[str, int | list[str]] = {}
        self.broken: dict[str, int] = {}
        self.requests: list[str] = []
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                url = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(url.query).items()}
                with api.lock:
                    api.requests.append(url.path)
                    found = api.discovery.get(url.path)
                    broken = api.broken.get(url.path)
                    known = url.path in api.objects
                if found is not None:
                    if isinstance(found, int):
                        return self.status(found)
                    resources = [{"name": name, "namespaced": True, "verbs": ["get", "list", "watch"]} for name in found]
                    return self.send(200, {"kind": "APIResourceList", "groupVersion": url.path[6:], "resources": resources})
                if broken is not None:
                    return self.status(broken)
                if not known:
                    return self.status(404)
                if query.get("watch") == "true":
                    return self.watch(url.path, int(query["resourceVersion"]), float(query.get("timeoutSeconds", 1)))
                with api.lock:
                    items, rv = list(api.objects[url.path].values()), api.rv
                return self.send(200, {"kind": "List", "metadata": {"resourceVersion": str(rv)}, "items": items})

            def status(self, code):
                self.send(code, {"kind": "Status", "code": code, "message": f"the fake says {code}"})

            def send(self, code, body):
                data = orjson.dumps(body)
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def watch(self, path, since, seconds):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                deadline = time.monotonic() + seconds
                try:
                    while time.monotonic() < deadline:
                        with api.lock:
                            if path in api.broken or path not in api.objects:
                                break  # the CRD went: the API server ends its watches
                            pending = [e for rv, e in api.events.get(path, ()) if rv > since]
                            if not pending:
                                api.lock.wait(0.05)
                                continue
                        for event in pending:
                            line = orjson.dumps(event) + b"\n"
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
                            since = int(event["object"]["metadata"]["resourceVersion"])
                        self.wfile.flush()
                    self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.serve(JOBS)  # batch/v1 is built in

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def serve(self, kind: str, status: int | None = None) -> None:
        """Serve ``kind`` (its CRD installed), or answer its discovery with ``status``."""
        path = KINDS[kind].path
        with self.lock:
            if status is None:
                self.discovery[KINDS[kind].group_version] = [KINDS[kind].resource]
                self.objects.setdefault(path, {})
            else:
                self.discovery[KINDS[kind].group_version] = status
                self.objects.pop(path, None)
            self.lock.notify_all()

    def put(self, kind: str, obj: dict) -> None:
        path = KINDS[kind].path
        with self.lock:
            self.rv += 1
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(self.rv)}}
            key = f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"
            kind_of_event = "MODIFIED" if key in self.objects[path] else "ADDED"
            self.objects[path][key] = obj
            self.events.setdefault(path, []).append((self.rv, {"type": kind_of_event, "object": obj}))
            self.lock.notify_all()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def podgroup(name: str, spec: dict, ns: str = "ml") -> dict:
    return {"kind": "PodGroup", "metadata": {"name": name, "namespace": ns, "uid": f"u-{name}"}, "spec": spec}


@pytest.fixture
def fake():
    server = FakeApiServer()
    yield server
    server.close()


def start(fake: FakeApiServer, first_views: list | None = None) -> tuple[LiveCluster, Metrics]:
    config = kubernetes.client.Configuration()
    config.host = fake.host
    metrics = Metrics()
    first = (lambda: first_views.append(cluster._view)) if first_views is not None else (lambda: None)
    cluster = LiveCluster(
        ApiServer(config), metrics=metrics, watch_seconds=1, discovery_interval=0.2, staleness_bound=5.0, on_first_view=first
    )
    return cluster.start(), metrics


def minimums(cluster: LiveCluster) -> dict[str, int] | None:
    view = cluster.view()
    return None if view is None else {key: m.minimum for key, m in view.group_minimums.items()}


def watched(metrics: Metrics, kind: str) -> float | None:
    return metrics.registry.get_sample_value("reprieve_cache_kind_watched", {"kind": kind})


def test_absent_and_forbidden_kinds_leave_the_cache_ready_with_the_served_ones(fake, caplog):
    fake.serve(COSCHEDULING, 404)  # no such API group: the CRD is not installed
    fake.serve(VOLCANO)
    fake.broken[KINDS[VOLCANO].path] = 403  # installed, but reprieve's RBAC does not reach it
    fake.serve(WORKLOAD)
    fake.put(WORKLOAD, podgroup("infer", {"schedulingPolicy": {"gang": {"minCount": 3}}}))
    fake.put(WORKLOAD, podgroup("notebook", {"schedulingPolicy": {"basic": {}}}))
    first: list = []
    caplog.set_level(logging.INFO, logger="extender.live.cache")
    cluster, metrics = start(fake, first)
    try:
        assert wait_for("a view", lambda: minimums(cluster), timeout=10) == {"workload ml/infer": 3}
        # The first view already had the served kind's groups: it waited for their first list.
        assert [set(view.group_minimums) for view in first] == [{"workload ml/infer"}]
        assert [watched(metrics, k) for k in (COSCHEDULING, VOLCANO, WORKLOAD)] == [0, 0, 1]
        assert set(cluster.resource_versions()) == {*(k.name for k in KINDS.values() if not k.optional), WORKLOAD, JOBS}
        time.sleep(1.0)  # several discovery rounds: the forbidden kind is retried, and stays harmless
        assert cluster.ready() and cluster.staleness() == 0.0
        assert fake.requests.count(KINDS[VOLCANO].path) >= 2
        # A kind being watched is not discovered again: its reflector sees it go (404, 403).
        assert fake.requests.count(KINDS[WORKLOAD].group_version) == 1
        assert fake.requests.count(KINDS[COSCHEDULING].group_version) >= 2
        # Each kind's fate is logged once, though discovery repeats and the forbidden list is retried.
        said = sorted((r.levelname, r.getMessage().split(":")[0]) for r in caplog.records if r.name == "extender.live.cache")
        assert said == sorted([("INFO", COSCHEDULING), ("INFO", WORKLOAD), ("WARNING", VOLCANO), ("INFO", JOBS)]), caplog.text
    finally:
        cluster.stop()


def test_a_crd_installed_later_is_watched_and_one_removed_is_forgotten(fake):
    fake.serve(COSCHEDULING, 404)
    fake.serve(VOLCANO, 404)
    fake.discovery[KINDS[WORKLOAD].group_version] = ["workloads"]  # v1beta1 served, GenericWorkload off
    cluster, metrics = start(fake)
    try:
        assert wait_for("a view", lambda: minimums(cluster) is not None, timeout=10)
        assert minimums(cluster) == {}
        # Volcano is installed: discovery finds it within a round or two.
        fake.serve(VOLCANO)
        fake.put(VOLCANO, podgroup("sim", {"minMember": 2}))
        assert wait_for("the new kind's groups", lambda: minimums(cluster) == {"volcano ml/sim": 2}, timeout=5)
        assert watched(metrics, VOLCANO) == 1
        fake.put(VOLCANO, podgroup("sim", {"minMember": 4}))  # a watch event
        assert wait_for("the changed minimum", lambda: minimums(cluster) == {"volcano ml/sim": 4}, timeout=5)
        fake.put(VOLCANO, podgroup("sim", {"minMember": 0}))  # no minimum any more: independent pods
        assert wait_for("the minimum gone", lambda: minimums(cluster) == {}, timeout=5)
        fake.put(VOLCANO, podgroup("sim", {"minMember": 2}))
        assert wait_for("the minimum back", lambda: minimums(cluster) == {"volcano ml/sim": 2}, timeout=5)
        # Volcano is uninstalled: its watch ends, the next one is a 404, and its groups go.
        fake.serve(VOLCANO, 404)
        assert wait_for("the groups forgotten", lambda: minimums(cluster) == {}, timeout=5)
        assert watched(metrics, VOLCANO) == 0 and VOLCANO not in cluster.resource_versions()
        assert cluster.ready()
        assert watched(metrics, WORKLOAD) == 0  # its group version without podgroups was never watched
        assert KINDS[WORKLOAD].path not in fake.requests
    finally:
        cluster.stop()


def test_a_served_kind_that_fails_to_list_does_not_hold_the_first_view_back(fake):
    fake.serve(COSCHEDULING)
    fake.broken[KINDS[COSCHEDULING].path] = 500  # e.g. a broken conversion webhook
    fake.serve(VOLCANO, 404)
    fake.serve(WORKLOAD, 404)
    cluster, metrics = start(fake)
    try:
        assert wait_for("a view", lambda: minimums(cluster) == {}, timeout=10)
        fake.put(COSCHEDULING, podgroup("train", {"minMember": 2}))
        with fake.lock:
            del fake.broken[KINDS[COSCHEDULING].path]
        assert wait_for("the kind listed after all", lambda: minimums(cluster) == {"coscheduling ml/train": 2}, timeout=10)
        assert cluster.ready()
    finally:
        cluster.stop()


def test_the_cluster_command_probes_only_the_required_kinds(fake):
    for kind in (COSCHEDULING, VOLCANO, WORKLOAD):
        fake.serve(kind, 403)
        fake.broken[KINDS[kind].path] = 403
    config = kubernetes.client.Configuration()
    config.host = fake.host
    cluster_command._probe(ApiServer(config), "test")  # no ConfigError
    assert not {KINDS[k].path for k in (COSCHEDULING, VOLCANO, WORKLOAD)} & set(fake.requests)


class _Discovery:
    """An API server that answers every discovery GET with one document (no HTTP)."""

    def __init__(self, document) -> None:
        self.document = document

    def get(self, path, params, timeout=None):
        return self.document


@pytest.mark.parametrize(
    "document",
    [
        pytest.param({"resources": [{"name": "podgroups", "verbs": 5}]}, id="verbs-a-number"),
        pytest.param({"resources": [{"name": "podgroups", "verbs": "list"}]}, id="verbs-a-string"),
        pytest.param({"resources": [{"name": "podgroups", "verbs": [1, None]}]}, id="verbs-not-strings"),
        pytest.param({"resources": "podgroups"}, id="resources-not-a-list"),
        pytest.param(["not", "a", "mapping"], id="not-a-mapping"),
    ],
)
def test_a_malformed_discovery_document_means_not_served_never_a_crash(document):
    # Found by review: non-list verbs raised TypeError and ended the round for every kind.
    from extender.live.cache import NOT_SERVED, OPTIONAL

    live = LiveCluster(_Discovery(document), metrics=Metrics())
    for kind in OPTIONAL:
        state, why = live._served(kind)
        assert state == NOT_SERVED, (state, why)


def test_a_pod_update_reprieve_does_not_read_publishes_its_resource_version_and_no_view(fake):
    for kind in (COSCHEDULING, VOLCANO, WORKLOAD):
        fake.serve(kind, 404)
    cluster, metrics = start(fake)
    try:
        pod = {"metadata": {"name": "web", "namespace": "shop", "uid": "u-web"}, "status": {"phase": "Pending"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}
        fake.put("pods", pod)
        view = wait_for("the pod in a view", lambda: (v := cluster.view()) is not None and "u-web" in v.pods and v, timeout=10)
        events = lambda: metrics.registry.get_sample_value("reprieve_cache_events_total", {"kind": "pods"}) or 0  # noqa: E731
        counted = events()
        fake.put("pods", {**pod, "status": {"phase": "Running", "podIP": "10.0.0.7"}})  # a kubelet's update
        rv = str(fake.rv)
        wait_for("its resourceVersion published", lambda: cluster.resource_versions().get("pods") == rv, timeout=5)
        assert cluster.view() is view
        assert events() == counted + 1  # an event all the same
        fake.put("pods", {**pod, "spec": {**pod["spec"], "nodeName": "n1"}})  # bound: a new view
        assert wait_for("the bind", lambda: cluster.view().pods["u-web"].node_name == "n1", timeout=5)
    finally:
        cluster.stop()


def a_job(name: str, *, failed: int = 0, active: int = 1, rules: list | None = None) -> dict:
    spec = {"backoffLimit": 2, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
    if rules is not None:
        spec["podFailurePolicy"] = {"rules": rules}
    return {"kind": "Job", "metadata": {"name": name, "namespace": "batch", "uid": f"u-{name}"}, "spec": spec,
            "status": {"failed": failed, "active": active}}


def jobs_of(cluster: LiveCluster) -> dict | None:
    view = cluster.view()
    return None if view is None else {uid: (j.key, j.failed, j.on_disruption.value) for uid, j in view.jobs.items()}


def test_jobs_are_watched_by_uid_and_only_their_budgets_make_a_new_view(fake):
    for kind in (COSCHEDULING, VOLCANO, WORKLOAD):
        fake.serve(kind, 404)
    ignore = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    fake.put(JOBS, a_job("etl", rules=ignore))
    cluster, metrics = start(fake)
    try:
        # Listed before the first view (an optional kind served at the first discovery).
        assert wait_for("a view", lambda: jobs_of(cluster), timeout=10) == {"u-etl": ("batch/etl", 0, "Ignore")}
        assert watched(metrics, JOBS) == 1
        fake.put(JOBS, a_job("train"))
        assert wait_for("the new Job", lambda: "u-train" in jobs_of(cluster), timeout=5)
        view = cluster.view()
        fake.put(JOBS, a_job("train", active=3))  # the controller's status update: nothing read changes
        rv = str(fake.rv)
        wait_for("its resourceVersion published", lambda: cluster.resource_versions().get(JOBS) == rv, timeout=5)
        assert cluster.view() is view
        fake.put(JOBS, a_job("train", failed=1))  # a retry spent: a new view
        assert wait_for("the failure counted", lambda: jobs_of(cluster)["u-train"] == ("batch/train", 1, "Count"), timeout=5)
        assert cluster.view().pods is view.pods  # the rest of the view is shared
    finally:
        cluster.stop()


def test_jobs_reprieve_may_not_read_leave_the_cache_ready(fake, caplog):
    for kind in (COSCHEDULING, VOLCANO, WORKLOAD):
        fake.serve(kind, 404)
    fake.broken[KINDS[JOBS].path] = 403  # a cluster role from before Jobs were read
    caplog.set_level(logging.INFO, logger="extender.live.cache")
    cluster, metrics = start(fake)
    try:
        assert wait_for("a view", lambda: jobs_of(cluster) is not None, timeout=10) and jobs_of(cluster) == {}
        assert wait_for("the refusal logged", lambda: any(
            r.levelname == "WARNING" and r.getMessage().startswith("jobs: forbidden") for r in caplog.records), timeout=5)
        assert cluster.ready() and watched(metrics, JOBS) == 0
    finally:
        cluster.stop()


def test_a_view_built_between_an_events_apply_and_its_applied_mark_leaves_no_lag_behind():
    # The reflector applies an event, then marks it applied for the lag; the publisher's thread
    # may build a view in between, which holds the event. Its next rounds find nothing new, so
    # they must still take the arrival off the lag, or reprieve_cache_lag_seconds climbs on a
    # quiet cluster (found in review).
    now = [100.0]
    cluster = LiveCluster(OneEvent(), metrics=Metrics(), clock=lambda: now[0])
    cluster._discovered, cluster._listed = True, set(REQUIRED_KINDS)
    cluster._out_of_sync_since.clear()
    store = cluster._store
    for kind in KINDS:
        store.replace(kind, {}, "1")
    cluster._changed.set()
    cluster._publish_once()  # the first view
    apply = store.apply

    def apply_then_publish(*args):
        apply(*args)
        cluster._changed.set()
        cluster._publish_once()  # the publisher's thread, between apply and lag.applied

    store.apply = apply_then_publish
    reflector = Reflector(KINDS["pods"], api=cluster._api, store=store, classes=dict, on_sync=lambda k, ok: None,
                          on_event=cluster._count_event, stop=threading.Event(), lag=cluster._lag)
    reflector._version = "1"
    reflector._watch()
    assert "u1" in cluster._view.pods
    cluster._publish_once()  # its next round: nothing changed since
    now[0] = 400.0
    assert cluster._lag.seconds() == 0.0

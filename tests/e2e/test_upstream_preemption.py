"""Upstream's preemption integration tests (kubernetes v1.36.3,
test/integration/scheduler/preemption/preemption_test.go and
test/integration/scheduler/preemption/misc/miscpreemption_test.go), each case through the stock
scheduler and through reprieve side by side. TestPreemptionRaces is test_upstream_races.py.

Adaptations, for every case: priorities come from PriorityClasses (LOW/MEDIUM/HIGH = 100/200/300;
the Priority admission plugin is on here, upstream's integration apiserver turns it off); each
case has its own namespace and nodes and its pods a nodeSelector for them (Scenario), where
upstream has an apiserver of its own; node and pod shapes are upstream's (memory in bytes, requests
only, the default 30 s grace where upstream sets none); upstream's "is getting evicted"
(deletionTimestamp set) accepts a pod already gone, and non-victims are read again once the
victims are out (upstream's check reads the object returned by Create, so it can never fail);
waitCachedPodsStable (the scheduler's cache) becomes "every pod runs"; upstream's CleanupNodes /
Nodes().DeleteCollection delete only this case's nodes. Upstream checks the preemptor's
.status.nominatedNodeName only with ClearingNominatedNodeNameAfterBinding off (the apiserver
clears it at binding when on, the default); here the victims' 30 s grace keeps the preemptor
unbound, so it is checked (to be the victims' node) while they terminate, under the default.

Upstream cases that cannot run here:
- TestPreemption "basic pod preemption with filter": needs an in-process Filter plugin whose
  RemovePod hands back a token in the preemption dry run (an extender has no AddPod/RemovePod).
- TestPreemption "basic pod preemption with preFilter": the same plugin, failing at PreFilter.
- TestPreemption "basic pod preemption with unresolvable filter": the same in-process plugin
  returning UnschedulableAndUnresolvable.
- TestAsyncPreemption (all 11 cases): in-process plugin wrappers hold the preemption goroutine
  and Bind on channels, and the test drives ScheduleOne by hand and reads the scheduling queue.
- TestPreemptionRespectsWaitingPod: needs an in-process Permit plugin parking the victim in
  WaitOnPermit.
- TestPreemptionRespectsBindingPod: needs an in-process PreBind plugin blocking the victim.
- TestPreemptionRaces: ported in test_upstream_races.py.
- (Beside these files, preemption/podgrouppreemption_test.go, TestPodGroupPreemption's 13 cases,
  is not ported: it needs the alpha gates GenericWorkload, GangScheduling and
  WorkloadAwarePreemption, off by default, and the scheduling.k8s.io/v1alpha2 PodGroup API.)

Cases ported with more than the generic adaptations: TestDisablePreemption runs through two more
kube-schedulers started for this module only (stock, and one whose extender is the shared
reprieve), each with upstream's profile (DefaultPreemption disabled at PostFilter); upstream's
TestPreemption token filter plugin is dropped (its cases here have 1000 tokens: it admits every
pod); TestReadWriteOncePodPreemption's volumes and claims are API objects only (pre-bound claims
need no volume controller, and the fake kubelet mounts nothing).

Feature gates not run (they are per process; only the v1.36.3 defaults run here:
SchedulerAsyncPreemption=true, SchedulerAsyncAPICalls=false,
ClearingNominatedNodeNameAfterBinding=true):
- TestPreemption: SchedulerAsyncPreemption=false, SchedulerAsyncAPICalls=true,
  ClearingNominatedNodeNameAfterBinding=false, in every combination but the defaults (7 of 8).
- TestNonPreemption, TestDisablePreemption, TestPodPriorityResolution:
  SchedulerAsyncPreemption=false.
- TestPreemptionStarvation, TestPDBInPreemption, TestReadWriteOncePodPreemption:
  SchedulerAsyncPreemption=false and ClearingNominatedNodeNameAfterBinding=false (3 of 4).
"""

from __future__ import annotations

import time

import pytest
import yaml

from extender.apiserver import ApiError
from tests.e2e.client import wait_for
from tests.e2e.scenario import REPRIEVE, STOCK, Scenario
from tests.ports import free_port

LOW, MEDIUM, HIGH = 100, 200, 300  # upstream's lowPriority, mediumPriority, highPriority

VIA = [pytest.param(STOCK, id="stock"), pytest.param(REPRIEVE, id="reprieve")]

NODE = {"cpu": "500m", "memory": "500", "pods": 32}  # upstream's nodeRes / defaultNodeRes
DEFAULT_POD_RES = {"cpu": "100m", "memory": "100"}  # upstream's defaultPodRes


# --------------------------------------------------------------------------- builders


def labelled_node(scenario: Scenario, name: str, *, labels: dict, **shape) -> str:
    """Scenario.node, plus upstream's node labels (``node=<name>``, the anti-affinity topology key)."""
    node = scenario.node(name, **shape)
    scenario.saw("nodes", scenario.kube.patch("Node", node, None, {"metadata": {"labels": labels}}))
    return node


def pod_body(
    scenario: Scenario,
    name: str,
    *,
    priority: int,
    scheduler: str,
    requests: dict | None = None,
    labels: dict | None = None,
    node: str | None = None,
    grace: int = 30,
    affinity: dict | None = None,
    volumes: list | None = None,
    never: bool = False,
    namespace: str | None = None,
    priority_class: str | None = None,
) -> dict:
    """Upstream's InitPausePod: one container with requests only (none if ``requests`` is None),
    the API's default 30 s grace unless told, priority through a PriorityClass."""
    spec = scenario.pod_spec(priority=priority, scheduler=scheduler, node=node, grace=grace, never=never, qos="besteffort")
    if requests:
        spec["containers"][0]["resources"] = {"requests": dict(requests)}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity:
        spec["affinity"] = affinity
    if volumes:
        spec["volumes"] = volumes
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace or scenario.ns, "labels": labels or {}},
        "spec": spec,
    }


def create(scenario: Scenario, body: dict) -> dict:
    return scenario.create_pod(body)


def make_pod(scenario: Scenario, name: str, **kw) -> dict:
    return create(scenario, pod_body(scenario, name, **kw))


def anti_affinity(*values: str) -> dict:
    """Required pod anti-affinity to pods labelled ``pod In values``, topology key ``node``."""
    term = {"labelSelector": {"matchExpressions": [{"key": "pod", "operator": "In", "values": list(values)}]}, "topologyKey": "node"}
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}


# --------------------------------------------------------------------------- waits


def bound(scenario: Scenario, name: str, timeout: float = 30) -> str:
    """Upstream's WaitForPodToSchedule: spec.nodeName set (100 ms polls)."""
    return wait_for(f"{name} to be bound", lambda: scenario.node_of(name), timeout, interval=0.1)


def evicted(scenario: Scenario, names, timeout: float = 30) -> None:
    """Upstream's PodIsGettingEvicted for each pod: deletionTimestamp set (or already gone)."""
    for name in names:
        wait_for(f"{name} to be getting evicted", lambda: scenario.terminating(name), timeout, interval=0.2)


def not_evicted(scenario: Scenario, names) -> None:
    kept = {n: scenario.get(n) for n in names}
    hit = [n for n, p in kept.items() if p is None or p["metadata"].get("deletionTimestamp")]
    assert not hit, f"pods preempted that should not be: {hit}"


def condition(scenario: Scenario, name: str, kind: str) -> dict | None:
    pod = scenario.get(name) or {}
    return next((c for c in (pod.get("status") or {}).get("conditions") or () if c["type"] == kind), None)


def unschedulable(scenario: Scenario, name: str, timeout: float = 30) -> None:
    """Upstream's PodUnschedulable: PodScheduled False for reason Unschedulable, no node."""

    def check():
        c = condition(scenario, name, "PodScheduled")
        return c and c["status"] == "False" and c.get("reason") == "Unschedulable" and not scenario.node_of(name)

    wait_for(f"{name} to be marked unschedulable", check, timeout, interval=0.1)


def never_nominated(scenario: Scenario, name: str, seconds: float) -> None:
    """Upstream's failing WaitForNominatedNodeNameWithTimeout(seconds): no nomination appears."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert not scenario.nominated(name), f"{name} was nominated to {scenario.nominated(name)}"
        time.sleep(0.1)


def nominated_while_victims_terminate(scenario: Scenario, preemptor: str, node: str) -> None:
    """Upstream's WaitForNominatedNodeName (checked there only with
    ClearingNominatedNodeNameAfterBinding off); here the victims' grace keeps the preemptor
    unbound, so its nomination is visible under the default too."""
    wait_for(f"{preemptor} nominated to {node}", lambda: scenario.nominated(preemptor) == node, 30, interval=0.1)


# --------------------------------------------------------------------------- TestPreemption


def existing(name, priority, requests, labels=None, affinity=None):
    return {"name": name, "priority": priority, "requests": requests, "labels": labels, "affinity": affinity}


PREEMPTION_CASES = [
    pytest.param(
        [existing("victim-pod", LOW, {"cpu": "400m", "memory": "200"})],
        existing("preemptor-pod", HIGH, {"cpu": "300m", "memory": "200"}),
        ["victim-pod"],
        id="basic-pod-preemption",
    ),
    pytest.param(
        [
            existing("pod-0", MEDIUM, DEFAULT_POD_RES, {"pod": "p0"}),
            existing("pod-1", LOW, DEFAULT_POD_RES, {"pod": "p1"}, anti_affinity("preemptor")),
        ],
        existing("preemptor-pod", HIGH, DEFAULT_POD_RES, {"pod": "preemptor"}, anti_affinity("p0")),
        ["pod-0", "pod-1"],
        id="preemption-is-performed-to-satisfy-anti-affinity",
    ),
    pytest.param(
        [
            existing("pod-0", MEDIUM, DEFAULT_POD_RES, {"pod": "p0"}),
            existing("pod-1", HIGH, DEFAULT_POD_RES, {"pod": "p1"}, anti_affinity("preemptor")),
        ],
        existing("preemptor-pod", HIGH, DEFAULT_POD_RES, {"pod": "preemptor"}, anti_affinity("p0")),
        [],
        id="preemption-is-not-performed-when-anti-affinity-is-not-satisfied",
    ),
]


@pytest.mark.parametrize("scheduler", VIA)
@pytest.mark.parametrize("pods, preemptor, victims", PREEMPTION_CASES)
def test_preemption(scenario: Scenario, scheduler, pods, preemptor, victims):
    # Upstream's token filter plugin is dropped: with 1000 tokens (these three cases) it passes
    # every pod. The node carries upstream's label node=<name> (the anti-affinity topology key).
    node = labelled_node(scenario, "node1", labels={"node": f"{scenario.ns}-node1"}, **NODE)
    for p in pods:
        make_pod(scenario, scheduler=scheduler, **p)
        bound(scenario, p["name"])
    scenario.running_all(*(p["name"] for p in pods))
    scenario.synced()
    make_pod(scenario, scheduler=scheduler, **preemptor)
    evicted(scenario, victims)
    for name in victims:
        assert condition(scenario, name, "DisruptionTarget"), f"{name} has no DisruptionTarget condition"
    if victims:
        nominated_while_victims_terminate(scenario, preemptor["name"], node)
    else:
        # Upstream's check is vacuous here; make it real: the preemptor is found unschedulable
        # (its preemption attempt failed) and nothing is evicted meanwhile or shortly after.
        unschedulable(scenario, preemptor["name"])
        scenario.pending_for(preemptor["name"], 2)
    not_evicted(scenario, [p["name"] for p in pods if p["name"] not in victims])


# --------------------------------------------------------------------------- TestNonPreemption


@pytest.mark.parametrize("scheduler", VIA)
@pytest.mark.parametrize("never", [pytest.param(False, id="pod-preemption-will-happen"), pytest.param(True, id="pod-preemption-will-not-happen")])
def test_non_preemption(scenario: Scenario, scheduler, never):
    # PreemptionPolicy Never comes from a PriorityClass that says so (e2e-priority-300-never): the
    # Priority admission plugin rejects a pod-level preemptionPolicy differing from its class's.
    scenario.node("node1", **NODE)
    make_pod(scenario, "victim-pod", priority=LOW, requests={"cpu": "400m", "memory": "200"}, scheduler=scheduler)
    bound(scenario, "victim-pod", timeout=5)
    scenario.running("victim-pod")
    scenario.synced()
    make_pod(scenario, "preemptor-pod", priority=HIGH, requests={"cpu": "300m", "memory": "200"}, scheduler=scheduler, never=never)
    if never:
        never_nominated(scenario, "preemptor-pod", 5)
        not_evicted(scenario, ["victim-pod"])
    else:
        # The victim's 30 s grace keeps the preemptor unbound, so the nomination stays visible.
        wait_for("preemptor-pod nominated", lambda: scenario.nominated("preemptor-pod"), 5, interval=0.1)


# --------------------------------------------------------------------------- TestDisablePreemption


def no_preemption_profile(name: str) -> dict:
    """initTestDisablePreemption's profile: DefaultPreemption off at PostFilter. The extender's
    preempt verb is reached only from DefaultPreemption, so reprieve's is off too."""
    return {"schedulerName": name, "plugins": {"postFilter": {"disabled": [{"name": "DefaultPreemption"}]}}}


@pytest.fixture(scope="module")
def no_preemption(plane):
    """Two more kube-schedulers, for this module only: stock, and reprieve's (extender at the
    shared reprieve), each with preemption disabled. Extenders are per process, not per profile."""
    names = {STOCK: "upstream-stock-no-preemption", REPRIEVE: "upstream-reprieve-no-preemption"}
    stock = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": plane.client_connection(),
        "leaderElection": {"leaderElect": False},
        "profiles": [no_preemption_profile(names[STOCK])],
    }
    with_reprieve = yaml.safe_load(plane.scheduler_config(names[REPRIEVE], plane.reprieve_port).read_text())
    with_reprieve["profiles"] = [no_preemption_profile(names[REPRIEVE])]
    try:
        for side, config in ((STOCK, stock), (REPRIEVE, with_reprieve)):
            path = plane.work / f"{names[side]}.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            plane.start_scheduler(names[side], path, free_port())
        yield names
    finally:
        for name in names.values():
            plane.stop_process(name)


@pytest.mark.parametrize("scheduler", VIA)
def test_disable_preemption(scenario: Scenario, no_preemption, scheduler):
    scheduler = no_preemption[scheduler]
    scenario.node("node1", **NODE)
    make_pod(scenario, "victim-pod", priority=LOW, requests={"cpu": "400m", "memory": "200"}, scheduler=scheduler)
    bound(scenario, "victim-pod")
    scenario.running("victim-pod")
    scenario.synced()
    make_pod(scenario, "preemptor-pod", priority=HIGH, requests={"cpu": "300m", "memory": "200"}, scheduler=scheduler)
    unschedulable(scenario, "preemptor-pod")
    never_nominated(scenario, "preemptor-pod", 5)
    not_evicted(scenario, ["victim-pod"])


# --------------------------------------------------------------------------- TestPodPriorityResolution

SYSTEM_CRITICAL = 2_000_000_000  # scheduling.SystemCriticalPriority


@pytest.mark.parametrize(
    "name, priority_class, expected",
    [
        pytest.param("pod1-system-node-critical", "system-node-critical", SYSTEM_CRITICAL + 1000, id="SystemNodeCritical-priority-class"),
        pytest.param("pod2-system-cluster-critical", "system-cluster-critical", SYSTEM_CRITICAL, id="SystemClusterCritical-priority-class"),
        pytest.param(
            "pod3-system-cluster-critical",
            "foo",
            'pods "pod3-system-cluster-critical" is forbidden: no PriorityClass with name foo was found',
            id="invalid-priority-class-should-result-in-error",
        ),
    ],
)
@pytest.mark.parametrize("scheduler", VIA)
def test_pod_priority_resolution(scenario: Scenario, scheduler, name, priority_class, expected):
    # As upstream, the pods live in kube-system (with a nodeSelector for this case's node; they
    # are deleted here, and upstream's CleanupNodes, which deletes every node, is not ported).
    scenario.node("node1", **NODE)
    body = pod_body(scenario, name, priority=0, scheduler=scheduler, namespace="kube-system", priority_class=priority_class)

    def get() -> dict | None:
        try:
            return scenario.kube.get_obj("Pod", name, "kube-system")
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    try:
        if isinstance(expected, str):
            with pytest.raises(ApiError) as exc:
                scenario.kube.create(body)
            assert exc.value.status == 403 and str(exc.value) == f"HTTP 403: {expected}"
            return
        scenario.kube.create(body)
        pod = wait_for(f"{name} to be bound", lambda: (p := get()) and p["spec"].get("nodeName") and p, 30, interval=0.1)
        assert pod["spec"].get("priority") == expected
    finally:
        scenario.kube.delete("Pod", name, "kube-system", grace=0)
        wait_for(f"kube-system/{name} to be gone", lambda: get() is None, 30, interval=0.1)


# --------------------------------------------------------------------------- TestPreemptionStarvation


@pytest.mark.parametrize("scheduler", VIA)
def test_preemption_starvation(scenario: Scenario, scheduler):
    # "starvation test: higher priority pod is scheduled before the lower priority ones".
    scenario.node("node1", **NODE)
    rpods, ppods = [f"rpod-{i}" for i in range(5)], [f"ppod-{i}" for i in range(5)]

    def medium(name):  # upstream's mkPriorityPodWithGrace(name, mediumPriority, 0)
        make_pod(scenario, name, priority=MEDIUM, requests=DEFAULT_POD_RES, labels={"pod": name}, grace=0, scheduler=scheduler)

    for name in rpods:
        medium(name)
    for name in rpods:
        bound(scenario, name)
    scenario.running_all(*rpods)  # for Scenario.synced: reprieve must see them bound
    for name in ppods:
        medium(name)
    for name in ppods:
        unschedulable(scenario, name)
    scenario.synced()
    make_pod(scenario, "preemptor-pod", priority=HIGH, requests={"cpu": "300m", "memory": "200"}, scheduler=scheduler)
    bound(scenario, "preemptor-pod", timeout=60)
    # Upstream asserts nothing more; the point of the test is that the pending pods did not take
    # the room freed for the preemptor (had they, it would have had to preempt them too).
    taken = [p for p in ppods if scenario.node_of(p)]
    assert not taken, f"pending lower-priority pods given the preemptor's room: {taken}"
    if scheduler == REPRIEVE:  # reprieve's minimal victims: the three rpods needed, no more
        assert len([p for p in rpods if scenario.terminating(p)]) == 3


# --------------------------------------------------------------------------- TestPDBInPreemption


def placed(name, priority, node=None, labels=None):
    return {"name": name, "priority": priority, "node": node, "labels": labels}


PDB_CASES = [
    pytest.param(
        1,
        [("pdb-1", {"foo": "bar"}, 2, 0)],
        [placed("low-pod1", LOW, labels={"foo": "bar"}), placed("low-pod2", LOW, labels={"foo": "bar"}), placed("mid-pod3", MEDIUM)],
        {"cpu": "300m", "memory": "200"},
        ["mid-pod3"],
        id="a-non-PDB-violating-pod-is-preempted-despite-its-higher-priority",
    ),
    pytest.param(
        2,
        [("pdb-1", {"foo": "bar"}, 1, 0)],
        [placed("low-pod1", LOW, "node-1", {"foo": "bar"}), placed("mid-pod2", MEDIUM, "node-2")],
        {"cpu": "500m", "memory": "200"},
        ["mid-pod2"],
        id="a-node-without-any-PDB-violating-pods-is-preferred-for-preemption",
    ),
    pytest.param(
        3,
        [("pdb-1", {"foo1": "bar"}, 1, 0), ("pdb-2", {"foo2": "bar"}, 5, 3)],
        [
            placed("low-pod1", LOW, "node-1", {"foo1": "bar"}),
            placed("mid-pod1", MEDIUM, "node-1"),
            placed("low-pod2", LOW, "node-2", {"foo2": "bar"}),
            placed("mid-pod2", MEDIUM, "node-2", {"foo2": "bar"}),
            placed("low-pod4", LOW, "node-3", {"foo2": "bar"}),
            placed("low-pod5", LOW, "node-3", {"foo2": "bar"}),
            placed("low-pod6", LOW, "node-3", {"foo2": "bar"}),
        ],
        {"cpu": "500m", "memory": "400"},
        # "The third node is chosen because PDB is not violated for node 3 and the victims have
        # lower priority than node-2."
        ["low-pod4", "low-pod5", "low-pod6"],
        id="a-node-with-fewer-PDB-violating-pods-is-preferred-for-preemption",
    ),
]


@pytest.mark.parametrize("scheduler", VIA)
@pytest.mark.parametrize("node_count, pdbs, pods, preemptor_requests, victims", PDB_CASES)
def test_pdb_in_preemption(scenario: Scenario, scheduler, node_count, pdbs, pods, preemptor_requests, victims):
    # The real disruption controller (kube-controller-manager) computes the budgets' status, as
    # upstream's in-process one does; the fake kubelet makes the pods Running and Ready, where
    # upstream writes that status itself. Each budget is waited for until currentHealthy is
    # upstream's pdbPodNum (and disruptionsAllowed what minAvailable 2 then leaves).
    nodes = {f"node-{i}": scenario.node(f"node-{i}", **NODE) for i in range(1, node_count + 1)}
    for p in pods:
        node = nodes[p["node"]] if p["node"] else None
        make_pod(scenario, p["name"], priority=p["priority"], requests=DEFAULT_POD_RES, labels=p["labels"], node=node, scheduler=scheduler)
        bound(scenario, p["name"])
    scenario.running_all(*(p["name"] for p in pods))
    for name, match, healthy, allowed in pdbs:
        scenario.pdb(name, match=match, min_available=2)
    for name, match, healthy, allowed in pdbs:
        scenario.pdb_ready(name, allowed=allowed, healthy=healthy)
    scenario.synced()
    victims_node = scenario.node_of(victims[0])
    make_pod(scenario, "preemptor-pod", priority=HIGH, requests=preemptor_requests, scheduler=scheduler)
    evicted(scenario, victims)
    nominated_while_victims_terminate(scenario, "preemptor-pod", victims_node)
    not_evicted(scenario, [p["name"] for p in pods if p["name"] not in victims])


# --------------------------------------------------------------------------- TestReadWriteOncePodPreemption


class Volumes:
    """Upstream's pre-bound ReadWriteOncePod PersistentVolumes and claims, as API objects only:
    a claim with volumeName and the bind-completed annotation is bound for the scheduler's
    VolumeBinding, and VolumeRestrictions enforces ReadWriteOncePod; nothing is mounted and no
    volume controller runs. PVs are cluster-wide, so their names carry the namespace.
    storageClassName "" on both, so no default class could be given to the claim."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.kube = scenario.kube
        self.pvs: list[str] = []
        self.pvcs: list[str] = []

    def claim(self, i: int) -> str:
        ns = self.scenario.ns
        pv, pvc = f"{ns}-pv-with-read-write-once-pod-{i}", f"pvc-with-read-write-once-pod-{i}"
        access, storage = ["ReadWriteOncePod"], {"storage": "1Mi"}
        self.kube.request("POST", "/api/v1/persistentvolumes", {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"accessModes": access, "capacity": storage, "storageClassName": "",
                     "hostPath": {"path": f"/mnt{i}", "type": "DirectoryOrCreate"}},
        })
        self.pvs.append(pv)
        self.kube.request("POST", f"/api/v1/namespaces/{ns}/persistentvolumeclaims", {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": pvc, "namespace": ns, "annotations": {"pv.kubernetes.io/bind-completed": "true"}},
            "spec": {"accessModes": access, "resources": {"requests": storage}, "storageClassName": "", "volumeName": pv},
        })
        self.pvcs.append(pvc)
        return pvc

    def cleanup(self) -> None:
        # No pvc- or pv-protection controller runs here: drop their finalizers, delete, and wait
        # until each is gone (a finalizer left behind would keep it, and the namespace, forever).
        ns = self.scenario.ns
        paths = [f"/api/v1/namespaces/{ns}/persistentvolumeclaims/{c}" for c in self.pvcs]
        paths += [f"/api/v1/persistentvolumes/{v}" for v in self.pvs]
        for path in paths:
            for method, body in (("PATCH", {"metadata": {"finalizers": None}}), ("DELETE", None)):
                self._request(method, path, body)
            wait_for(f"{path} to be gone", lambda: self._request("GET", path) is None, 10, interval=0.1)

    def _request(self, method: str, path: str, body: dict | None = None) -> dict | None:
        try:
            return self.kube.request(method, path, body, content_type="application/merge-patch+json")
        except ApiError as exc:
            if exc.status != 404:
                raise
            return None


def claim_volumes(claims: dict[int, str], uses: list[tuple[str, int]]) -> list[dict]:
    """Pod volumes: (volume name, claim number) -> that claim."""
    return [{"name": volume, "persistentVolumeClaim": {"claimName": claims[i]}} for volume, i in uses]


RWOP_CASES = [
    pytest.param(1, [("victim-pod", [("volume", 1)])], [("volume", 1)], ["victim-pod"], id="preempt-single-pod"),
    pytest.param(
        2,
        [("victim-pod-1", [("volume", 1)]), ("victim-pod-2", [("volume", 2)])],
        [("volume-1", 1), ("volume-2", 2)],
        ["victim-pod-1", "victim-pod-2"],
        id="preempt-two-pods",
    ),
    pytest.param(
        2,
        [("victim-pod", [("volume-1", 1), ("volume-2", 2)])],
        [("volume-1", 1), ("volume-2", 2)],
        ["victim-pod"],
        id="preempt-single-pod-with-two-volumes",
    ),
]


@pytest.mark.parametrize("scheduler", VIA)
@pytest.mark.parametrize("claims, pods, preemptor_volumes, victims", RWOP_CASES)
def test_read_write_once_pod_preemption(scenario: Scenario, scheduler, claims, pods, preemptor_volumes, victims):
    # Upstream's profile enables VolumeRestrictions explicitly; it is a default plugin anyway.
    node = labelled_node(scenario, "node1", labels={"node": f"{scenario.ns}-node1"}, **NODE)
    volumes = Volumes(scenario)
    try:
        pvc = {i: volumes.claim(i) for i in range(1, claims + 1)}
        for name, uses in pods:
            make_pod(scenario, name, priority=LOW, scheduler=scheduler, volumes=claim_volumes(pvc, uses))
            bound(scenario, name)
        scenario.running_all(*(name for name, _ in pods))
        scenario.synced()
        make_pod(scenario, "preemptor-pod", priority=HIGH, scheduler=scheduler, volumes=claim_volumes(pvc, preemptor_volumes))
        evicted(scenario, victims)
        nominated_while_victims_terminate(scenario, "preemptor-pod", node)
        not_evicted(scenario, [name for name, _ in pods if name not in victims])
    finally:
        for name, _ in pods + [("preemptor-pod", None)]:
            scenario.kube.delete("Pod", name, scenario.ns, grace=0)
        volumes.cleanup()

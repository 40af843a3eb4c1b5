"""Kubernetes 1.37's Workload API and what kube-scheduler sends an extender about gangs (issue 18).

With the GenericWorkload gate on (beta in 1.37, off by default; scheduling.k8s.io/v1beta1
served), two more kube-schedulers run for this module only, stock and with reprieve (the shared
one) as extender; the apiserver serves the API for the whole session (tests/e2e/controlplane.py).
Each case runs through both, side by side:

- a gang preemptor (pods with ``spec.schedulingGroup``, a PodGroup with a gang policy) never
  reaches the extender's preempt verb: the pod-group cycle skips PostFilter and its own group
  preemption calls no extender; the filter verb is asked about every member in turn;
- a single preemptor whose victim belongs to a PodGroup with ``disruptionMode: {all: {}}``: the
  scheduler proposes the whole group under the node it dry-ran, members on other nodes included,
  and resolves an answer's UIDs on that node only. reprieve cannot name the group, and naming the
  node's own member alone would break it: it answers 422 with its reason, the scheduler (the
  extender is ignorable) keeps its own choice, and the whole group goes, with no "claims to
  preempt" refusal.

Skipped, with the reason, only when KUBE_VERSION selects a release before 1.37 (CI runs the default).
"""

from __future__ import annotations

import json
import urllib.request

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.client import wait_for
from tests.e2e.scenario import Scenario
from tests.ports import free_port

GATES = "GenericWorkload=true"
STOCK_WORKLOAD, REPRIEVE_WORKLOAD = "workload-stock", "workload-reprieve"
VIA = [pytest.param(STOCK_WORKLOAD, id="stock"), pytest.param(REPRIEVE_WORKLOAD, id="reprieve")]


@pytest.fixture(scope="module")
def workload(plane):
    if plane.version < (1, 37):
        pytest.skip(f"the Workload API needs Kubernetes 1.37 or later; KUBE_VERSION selects {plane.bin.parent.name}")
    stock = plane.work / f"{STOCK_WORKLOAD}-config.yaml"
    stock.write_text(yaml.safe_dump({
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "clientConnection": plane.client_connection(),
        "leaderElection": {"leaderElect": False},
        "profiles": [{"schedulerName": STOCK_WORKLOAD}],
    }))
    try:
        plane.start_scheduler(STOCK_WORKLOAD, stock, free_port(), feature_gates=GATES)
        plane.start_scheduler(
            REPRIEVE_WORKLOAD, plane.scheduler_config(REPRIEVE_WORKLOAD, plane.reprieve_port), free_port(), feature_gates=GATES
        )
        yield plane
    finally:
        plane.stop_process(REPRIEVE_WORKLOAD)
        plane.stop_process(STOCK_WORKLOAD)


def pod_group(scenario: Scenario, name: str, *, min_count: int, priority: int, all_or_nothing: bool = False) -> None:
    spec = {
        "schedulingPolicy": {"gang": {"minCount": min_count}},
        "priorityClassName": scenario.priority_class(priority),
    }
    if all_or_nothing:
        spec["disruptionMode"] = {"all": {}}
    scenario.kube.create({"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": {"name": name, "namespace": scenario.ns}, "spec": spec})


def member(scenario: Scenario, name: str, group: str, **spec) -> None:
    scenario.pod(name, extra={"schedulingGroup": {"podGroupName": group}}, **spec)


def counters(port: int) -> dict[tuple, float]:
    """reprieve's decision and request counters, by their labels."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
        text = r.read().decode()
    return {
        (s.name, *sorted(s.labels.items())): s.value
        for f in text_string_to_metric_families(text) for s in f.samples
        if s.name in ("reprieve_decisions_total", "reprieve_requests_total")
    }


def delta(before: dict, after: dict, name: str, **labels) -> float:
    def total(counts):
        return sum(v for k, v in counts.items() if k[0] == name and all((l, labels[l]) in k[1:] for l in labels))
    return total(after) - total(before)


def test_a_gang_preemptor_never_reaches_the_preempt_verb(scenario: Scenario, workload, via_workload):
    # n1 and n2 (4 cpu) each run two 2-cpu priority-1 pods. A gang of two 2-cpu priority-100
    # pods (minCount 2) needs room on both: the pod-group cycle's own preemption makes it.
    plane, scheduler = workload, via_workload
    nodes = [scenario.node(n, cpu="4") for n in ("n1", "n2")]
    fillers = [f"f{i}" for i in range(4)]
    for i, name in enumerate(fillers):
        scenario.pod(name, cpu="2", priority=1, node=nodes[i // 2], scheduler=scheduler)
    scenario.running_all(*fillers)
    pod_group(scenario, "gang", min_count=2, priority=100)
    scenario.synced()
    before = counters(plane.reprieve_port)
    for name in ("g0", "g1"):
        member(scenario, name, "gang", cpu="2", priority=100, scheduler=scheduler)
    for name in ("g0", "g1"):
        wait_for(f"{name} bound", lambda n=name: scenario.node_of(n), 60)
    assert sum(scenario.terminating(f) for f in fillers) >= 2
    after = counters(plane.reprieve_port)
    if scheduler == REPRIEVE_WORKLOAD:
        # Asked to filter for the members (once per member and cycle, and again in the group's
        # preemption dry run), never to preempt for them.
        assert delta(before, after, "reprieve_decisions_total", verb="filter") >= 2
        assert delta(before, after, "reprieve_decisions_total", verb="preempt") == 0


def test_a_victim_group_that_spans_nodes_goes_whole_and_no_answer_is_refused(scenario: Scenario, workload, via_workload):
    # m1 (n1) and m2 (n2), 4 cpu each on 4-cpu nodes, are one priority-1 PodGroup with
    # disruptionMode all. A lone priority-100 4-cpu pod needs a node: the scheduler proposes both
    # members under n1 and under n2. Whatever the scheduler's choice, both members go.
    plane, scheduler = workload, via_workload
    nodes = [scenario.node(n, cpu="4") for n in ("n1", "n2")]
    pod_group(scenario, "victims", min_count=2, priority=1, all_or_nothing=True)
    for name, node in zip(("m1", "m2"), nodes):
        member(scenario, name, "victims", cpu="4", priority=1, node=node, scheduler=scheduler)
    scenario.running_all("m1", "m2")
    scenario.synced()
    mark = len(plane.log(scheduler))
    before = counters(plane.reprieve_port)
    scenario.pod("pre", cpu="4", priority=100, scheduler=scheduler)
    wait_for("pre bound", lambda: scenario.node_of("pre"), 60)
    assert scenario.terminating("m1") and scenario.terminating("m2"), "the group was broken"
    assert "claims to preempt" not in plane.log(scheduler)[mark:]
    if scheduler == REPRIEVE_WORKLOAD:
        after = counters(plane.reprieve_port)
        assert delta(before, after, "reprieve_requests_total", verb="preempt", code="422") >= 1
        decisions = [
            json.loads(l) for l in plane.log("reprieve").splitlines()
            if l.startswith("{") and '"msg":"preempt"' in l and f'"pod":"{scenario.ns}/pre"' in l
        ]
        assert decisions and decisions[0]["outcome"] == "deferred", decisions
        proposed = {n: sorted(d["proposed"]) for n, d in decisions[0]["nodes"].items()}
        # What the scheduler sends: the whole group under each node it dry-ran.
        assert set(map(tuple, proposed.values())) == {(f"{scenario.ns}/m1", f"{scenario.ns}/m2")}, proposed


@pytest.fixture(params=VIA)
def via_workload(request):
    return request.param

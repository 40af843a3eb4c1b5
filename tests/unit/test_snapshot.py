"""Loading cluster dumps: formats, priority resolution, and errors that name object and field."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from extender.state import snapshot
from extender.errors import SnapshotError
from policy.qos import QoS

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "cluster.yaml"


def write(tmp_path, docs, name="dump.yaml"):
    path = tmp_path / name
    if name.endswith(".json"):
        path.write_text(json.dumps(docs))
    else:
        path.write_text(yaml.safe_dump_all(docs) if isinstance(docs, list) else yaml.safe_dump(docs))
    return path


def pc(name, value, default=False):
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value, "globalDefault": default}


def raw_job(name, spec=None, status=None, **meta):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", **meta},
            "spec": spec or {}, "status": status or {}}


def raw_pod(name, **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}"}, "spec": {"containers": [], **spec}}


def test_example_snapshot_loads():
    view = snapshot.load(EXAMPLE)
    assert sorted(view.nodes) == ["node-a", "node-b", "node-c", "node-d"]
    assert [p.key for p in view.nominated["node-c"]] == ["ml/trainer-0"]
    assert view.nodes["node-d"].node.allocatable["example.com/gpu"] == 2


def test_priority_resolution(tmp_path):
    # spec.priority wins; else the named class; else the global default; else 0.
    docs = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            pc("high", 1000),
            pc("default", 50, default=True),
            raw_pod("explicit", priority=7, priorityClassName="high"),
            raw_pod("by-class", priorityClassName="high"),
            raw_pod("by-default"),
        ],
    }
    view = snapshot.load(write(tmp_path, docs))
    got = {p.name: p.priority for p in view.pods.values()}
    assert got == {"explicit": 7, "by-class": 1000, "by-default": 50}
    no_default = snapshot.from_documents([raw_pod("plain")])
    assert next(iter(no_default.pods.values())).priority == 0


def test_multi_document_yaml_and_json(tmp_path):
    docs = [raw_pod("a"), raw_pod("b")]
    assert len(snapshot.load(write(tmp_path, docs)).pods) == 2
    as_json = {"apiVersion": "v1", "kind": "List", "items": docs}
    assert len(snapshot.load(write(tmp_path, as_json, "dump.json")).pods) == 2


@pytest.mark.parametrize(
    "value, cost",
    [
        ("100", 100), ("-5", -5), ("0", 0), ("2147483647", 2**31 - 1), ("-2147483648", -(2**31)),
        # Read as the ReplicaSet controller reads it: anything but an int32 without a sign or
        # leading zeros is 0.
        ("+10", 0), ("008", 0), ("2147483648", 0), ("1.5", 0), ("", 0), (None, 0),
        ("-007", -7),  # upstream checks the first character only: a minus, then ParseInt
    ],
)
def test_the_pod_deletion_cost_annotation(tmp_path, value, cost):
    pod = raw_pod("a")
    if value is not None:
        pod["metadata"]["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": value, "other": "x" * 300}
    [loaded] = snapshot.load(write(tmp_path, [pod])).pods.values()
    assert loaded.deletion_cost == cost


@pytest.mark.parametrize(
    "grace, seconds",
    [
        (None, 30),  # absent: the API server's default
        (0, 0), (60, 60), (2**40, 2**40),
        (-5, 1),  # negative: a deletion gives it 1 s (the pod registry's CheckGracefulDelete)
    ],
)
def test_the_grace_period(tmp_path, grace, seconds):
    pod = raw_pod("a") if grace is None else raw_pod("a", terminationGracePeriodSeconds=grace)
    [loaded] = snapshot.load(write(tmp_path, [pod])).pods.values()
    assert loaded.grace == seconds


@pytest.mark.parametrize(
    "value, seconds",
    [
        ("2026-12-06T15:00:00Z", 1796569200.0), ("2026-12-06T16:00:00+01:00", 1796569200.0),
        ("2026-12-06t15:00:00.25z", 1796569200.25), ("2026-12-06T15:00:00.123456789Z", 1796569200.123456),
        # Anything but an RFC 3339 date-time with a zone is no checkpoint, as a bad
        # pod-deletion-cost is none: no zone, a date alone, out of range, not a time, unset.
        ("2026-12-06T15:00:00", None), ("2026-12-06", None), ("2026-13-06T15:00:00Z", None), ("soon", None), ("", None),
        (None, None),
    ],
)
def test_the_last_checkpoint_annotation(tmp_path, value, seconds):
    pod = raw_pod("a")
    if value is not None:
        pod["metadata"]["annotations"] = {"reprieve.io/last-checkpoint": value, "other": "x" * 300}
    [loaded] = snapshot.load(write(tmp_path, [pod])).pods.values()
    assert loaded.checkpoint == (None if seconds is None else pytest.approx(seconds, abs=1e-6))


def test_terminal_pods_hold_nothing_and_other_kinds_are_named(tmp_path, caplog):
    done = raw_pod("done", nodeName="n1")
    done["status"] = {"phase": "Succeeded"}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "ns"}}
    with caplog.at_level(logging.INFO):
        view = snapshot.load(write(tmp_path, [done, svc, {**svc, "metadata": {"name": "t"}}]))
    assert view.pods == {}
    path = tmp_path / "dump.yaml"
    reads = "it reads Node, Pod, PodDisruptionBudget, PriorityClass, Job, PodGroup"
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", f"{path}: document 1 (Service ns/s): left out: reprieve does not read kind Service ({reads})"),
        ("WARNING", f"{path}: document 2 (Service t): left out: reprieve does not read kind Service ({reads})"),
    ]


NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "pods": "10"}}}
LEFT_OUT = [
    pytest.param({"metadata": {"name": "x"}}, "document 0 item 1 (x): left out: no kind, so reprieve cannot tell what it is", id="no-kind"),
    pytest.param(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"}},
        "document 0 item 1 (Deployment shop/web): left out: reprieve does not read kind Deployment", id="unknown-kind",
    ),
    pytest.param(
        {"apiVersion": "scheduling.sigs.k8s.io/v1", "kind": "PodGroup", "metadata": {"name": "g", "namespace": "ml"}},
        "document 0 item 1 (PodGroup ml/g): left out: reprieve does not read PodGroup scheduling.sigs.k8s.io/v1", id="other-podgroup",
    ),
    pytest.param(NODE, "document 0 item 1 (Node n1): left out: a copy of document 0 item 0", id="duplicate-node"),
    pytest.param(
        raw_pod("lost", nodeName="n9"),
        "document 0 item 1 (Pod ns/lost): on no node: bound to n9, which is not in the dump (known by UID, holding no room)",
        id="pod-on-a-node-not-in-the-dump",
    ),
]


@pytest.mark.parametrize("item, line", LEFT_OUT)
def test_every_item_left_out_is_named_and_strict_makes_it_an_error(item, line):
    docs = [{"apiVersion": "v1", "kind": "List", "items": [NODE, item]}]
    named: list[str] = []
    loaded = snapshot.build(docs, source="dump.yaml", warn=named.append)
    assert len(named) == 1 and named[0].startswith(f"dump.yaml: {line}"), named
    assert [str(i) for i in loaded.left_out] == named
    assert list(loaded.view.nodes) == ["n1"]
    with pytest.raises(SnapshotError) as caught:
        snapshot.build(docs, source="dump.yaml", strict=True, warn=named.append)
    assert str(caught.value).startswith(f"dump.yaml: {line}") and str(caught.value).endswith("--strict makes each an error")
    assert len(named) == 1  # strict: the error, and no line


def test_a_pod_on_a_node_not_in_the_dump_is_known_but_holds_no_room():
    loaded = snapshot.build([NODE, raw_pod("here", nodeName="n1"), raw_pod("lost", nodeName="n9")])
    view = loaded.view
    assert sorted(p.name for p in view.pods.values()) == ["here", "lost"]  # its budgets and gang count it
    assert [p.name for p in view.nodes["n1"].pods] == ["here"]
    assert [i.where for i in loaded.left_out] == ["snapshot: document 2 (Pod ns/lost)"]


def test_items_left_out_are_listed_in_the_order_of_the_file():
    items = [raw_pod("lost", nodeName="n9"), {"kind": "Service", "metadata": {"name": "s"}}, NODE, NODE]
    loaded = snapshot.build([{"kind": "List", "items": items}], source="d")
    assert [i.where.split(" (")[0] for i in loaded.left_out] == ["d: document 0 item 0", "d: document 0 item 1", "d: document 0 item 3"]


def test_an_empty_dump_is_an_error_where_nodes_are_needed(tmp_path):
    empty = write(tmp_path, {"apiVersion": "v1", "kind": "List", "items": [raw_pod("a")]})
    assert snapshot.read(empty).view.nodes == {}
    with pytest.raises(SnapshotError, match=r"has no nodes, so there is nothing to decide on"):
        snapshot.read(empty, need_nodes=True)


def test_qos_and_requests_from_the_api_shape(tmp_path):
    pod = raw_pod(
        "g",
        containers=[{"name": "c", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}],
        overhead={"cpu": "100m"},
    )
    record = next(iter(snapshot.from_documents([pod]).pods.values()))
    # Requests default to limits, as the API server does: Guaranteed, 1 cpu + 100m overhead.
    assert record.qos is QoS.GUARANTEED
    assert record.requests == {"cpu": 1100, "memory": 2**30, "pods": 1}


@pytest.mark.parametrize(
    "obj, message",
    [
        pytest.param(
            raw_pod("bad", containers=[{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]),
            "(Pod ns/bad): spec.containers.0.resources.requests.cpu",
            id="bad-quantity-names-field",
        ),
        pytest.param(raw_pod("bad", priority="high"), "(Pod ns/bad): spec.priority", id="wrong-type"),
        pytest.param(
            raw_pod("bad", priority=2**31), "(Pod ns/bad): spec.priority: Input should be less than or equal to 2147483647", id="priority-beyond-int32"
        ),
        pytest.param(
            raw_pod("bad", containers=[{"name": "c", "resources": {"requests": {"cpu": "-500m"}}}]),
            "(Pod ns/bad): spec.containers.0.resources.requests.cpu: '-500m' must not be negative",
            id="negative-request",
        ),
        pytest.param(
            raw_pod("bad", containers=[{"name": "c", "resources": {"limits": {"memory": "1" * 100_000}}}]),
            "(Pod ns/bad): spec.containers.0.resources.limits.memory: '111111111111111111111111'... is too long",
            id="huge-quantity",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "\u0664"}}},
            "(Node n1): status.allocatable.cpu: '\u0664' is not a quantity",
            id="non-ascii-allocatable",
        ),
        pytest.param(
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "nouid", "namespace": "ns"}},
            "(Pod ns/nouid): metadata.uid: required",
            id="pod-without-uid",
        ),
        pytest.param({"apiVersion": "policy/v1beta1", "kind": "PodDisruptionBudget", "metadata": {"name": "old"}}, "apiVersion 'policy/v1beta1' is not supported", id="old-api-version"),
        pytest.param(
            {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"}, "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}},
            "spec.selector.matchExpressions.0.operator",
            id="bad-selector-operator",
        ),
        pytest.param("just a string", "expected a Kubernetes object", id="not-an-object"),
        pytest.param(
            raw_job("train", status={"failedIndexes": "5-3"}),
            "(Job ns/train): status.failedIndexes: '5-3': indexes must be ascending ranges (e.g. 1,3-5)",
            id="job-failed-indexes-backwards",
        ),
        pytest.param(
            raw_job("train", status={"failedIndexes": "1,x"}),
            "(Job ns/train): status.failedIndexes: 'x' is not an index or a range of them (e.g. 1,3-5)",
            id="job-failed-indexes-not-numbers",
        ),
        pytest.param(
            raw_job("train", {"podFailurePolicy": {"rules": [{"action": "Retry", "onPodConditions": [{"type": "DisruptionTarget"}]}]}}),
            "(Job ns/train): spec.podFailurePolicy.rules.0.action: Input should be 'Ignore', 'FailJob', 'FailIndex' or 'Count'",
            id="job-unknown-action",
        ),
        pytest.param(
            raw_job("train", {"podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"status": "True"}]}]}}),
            "(Job ns/train): spec.podFailurePolicy.rules.0.onPodConditions.0.type: Field required",
            id="job-condition-without-type",
        ),
        pytest.param(raw_pod("a", terminationGracePeriodSeconds="30"), "(Pod ns/a): spec.terminationGracePeriodSeconds: Input should be a valid integer", id="grace-not-a-number"),
        pytest.param(raw_pod("a", terminationGracePeriodSeconds=2**63), "(Pod ns/a): spec.terminationGracePeriodSeconds: Input should be less than or equal to", id="grace-beyond-int64"),
        pytest.param({**raw_pod("a"), "metadata": {"name": "a", "namespace": "ns", "uid": "u-a", "deletionTimestamp": "soon"}},
                     "(Pod ns/a): metadata.deletionTimestamp: Input should be a valid datetime", id="deletion-timestamp-not-a-time"),
        pytest.param(raw_job("train", {"backoffLimit": -1}), "(Job ns/train): spec.backoffLimit: Input should be greater than or equal to 0", id="job-negative-backoff-limit"),
        pytest.param(raw_job("train", status={"failed": "2"}), "(Job ns/train): status.failed: Input should be a valid integer", id="job-failed-not-a-number"),
        pytest.param(
            {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "nouid", "namespace": "ns"}},
            "(Job ns/nouid): metadata.uid: required (its pods name their Job by UID)",
            id="job-without-uid",
        ),
        pytest.param({**raw_job("train"), "apiVersion": "batch/v1beta1"}, "Job apiVersion 'batch/v1beta1' is not supported (want batch/v1)", id="job-old-api-version"),
    ],
)
def test_bad_objects_stop_loading_with_a_precise_message(tmp_path, obj, message):
    with pytest.raises(SnapshotError) as caught:
        snapshot.load(write(tmp_path, [obj]))
    assert message in str(caught.value)


def test_unreadable_and_unparsable_files(tmp_path):
    with pytest.raises(SnapshotError, match="cannot read snapshot"):
        snapshot.load(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("items: [unclosed")
    with pytest.raises(SnapshotError, match="is not valid YAML"):
        snapshot.load(broken)


def test_a_duplicate_that_differs_is_rejected_naming_both():
    other = raw_pod("a", priority=5)
    with pytest.raises(SnapshotError) as caught:
        snapshot.from_documents([raw_pod("a"), other], source="d")
    assert str(caught.value) == "d: document 1: duplicate Pod ns/a (UID u-a), different from the copy at document 0: which is current?"
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}}
    with pytest.raises(SnapshotError, match="duplicate Node n1, different from the copy at document 0"):
        snapshot.from_documents([node, {**node, "spec": {"unschedulable": True}}], source="d")
    # An identical copy is only left out (named), not an error.
    assert len(snapshot.from_documents([raw_pod("a"), raw_pod("a")]).pods) == 1


@pytest.mark.parametrize(
    "conditions, preempted",
    [
        pytest.param([{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}], True, id="preempted"),
        pytest.param([{"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"}], False, id="evicted"),
        pytest.param([{"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}], False, id="false"),
        pytest.param([{"type": "Ready", "status": "True"}, "not a condition"], False, id="other"),
        pytest.param(None, False, id="none"),
    ],
)
def test_kube_schedulers_preemption_mark_is_read(conditions, preempted):
    from extender.state import kube, translate

    raw = {"metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "status": {"conditions": conditions}}
    assert translate.pod_record(kube.Pod.model_validate(raw), {}).preempted is preempted


def test_jobs_and_their_pods_are_read(tmp_path):
    # A Job that ignores DisruptionTarget (its second rule; the first, on exit codes, is not
    # matched), one with a budget per index and failures (counted and not yet), a finished one.
    ignore = {"podFailurePolicy": {"rules": [
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}},
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
    ]}}
    indexed = {"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [
        {"action": "FailIndex", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]},
    ]}}
    owner = lambda name: [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": f"u-{name}", "controller": True}]  # noqa: E731
    pods = [raw_pod("etl-x"), raw_pod("train-2"), raw_pod("train-3"), raw_pod("bare")]
    pods[0]["metadata"]["ownerReferences"] = owner("etl")
    pods[1]["metadata"].update(ownerReferences=owner("train"), annotations={
        "batch.kubernetes.io/job-completion-index": "2", "batch.kubernetes.io/job-index-failure-count": "1"})
    pods[2]["metadata"].update(ownerReferences=owner("train"), labels={"batch.kubernetes.io/job-completion-index": "3"})
    jobs = [
        raw_job("etl", ignore),
        raw_job("train", indexed, {"failed": 2, "failedIndexes": "0,5-7", "uncountedTerminatedPods": {"failed": ["u-old"]}}),
        raw_job("done", status={"conditions": [{"type": "Complete", "status": "True"}]}),
    ]
    view = snapshot.load(write(tmp_path, [*jobs, *pods]))
    etl, train, done = (view.jobs[f"u-{n}"] for n in ("etl", "train", "done"))
    assert (etl.on_disruption.value, etl.rule, etl.backoff_limit, etl.failed) == ("Ignore", 1, 6, 0)
    # Per index: backoffLimit unset is the largest int32; the FailIndex rule wants status False.
    assert (train.on_disruption.value, train.backoff_limit, train.per_index, train.failed) == ("Count", 2**31 - 1, 1, 3)
    assert train.failed_indexes == ((0, 0), (5, 7)) and train.index_failed(6) and not train.index_failed(2)
    assert done.finished and not etl.finished
    by_name = {p.name: p for p in view.pods.values()}
    assert by_name["train-2"].job_index == (2, 1) and by_name["train-3"].job_index == (3, 0)
    assert by_name["etl-x"].job_index is None and by_name["bare"].owner is None
    assert view.stake_of(by_name["etl-x"]).describe() == "its Job ns/etl ignores DisruptionTarget (podFailurePolicy.rules[1]: Ignore)"
    # Index 2 has failed once of its 1: the next eviction fails it.
    assert view.stake_of(by_name["train-2"]).describe() == (
        "index 2 of its Job ns/train fails if it is evicted (backoffLimitPerIndex 1, 1 failed)"
    )
    assert view.stake_of(by_name["bare"]) is None

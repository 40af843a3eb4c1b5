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


def test_terminal_pods_hold_nothing_and_other_kinds_are_ignored(tmp_path, caplog):
    done = raw_pod("done", nodeName="n1")
    done["status"] = {"phase": "Succeeded"}
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}}
    with caplog.at_level(logging.INFO):
        view = snapshot.load(write(tmp_path, [done, svc, svc]))
    assert view.pods == {}
    assert [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()] == [f"snapshot {tmp_path / 'dump.yaml'}: ignored 2 Service"]


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


def test_duplicate_uids_are_rejected():
    with pytest.raises(SnapshotError, match="duplicate Pod UID: u-a"):
        snapshot.from_documents([raw_pod("a"), raw_pod("a")])


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

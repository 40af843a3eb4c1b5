"""The watch decodes only what changed (extender.live.changes.Decoder): after any sequence of
events, the record it leaves for an object is the one decoding the object whole would give,
and it refuses (no record, the same warning) exactly the objects decoding whole refuses."""

from __future__ import annotations

import copy
import dataclasses
import logging

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.live.changes import KINDS, UNCHANGED, Decoder, key_of, record_of
from policy.criteria.deletion_cost import ANNOTATION as COST
from policy.criteria.work_lost import ANNOTATION as CHECKPOINT
from policy.gangs import ANNOTATIONS
from policy.jobs import INDEX, INDEX_FAILURES

GANG = sorted(ANNOTATIONS)[0]
from policy.model import PriorityClass

POD = KINDS["pods"]
STAMP = "2026-11-26T10:00:00Z"

CLASSES = [
    {},
    {"high": PriorityClass("high", 1000, False, {}), "low": PriorityClass("low", 10, True, {})},
    {"high": PriorityClass("high", 2000, False, {})},
]


def base_pod() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "web-1", "namespace": "shop", "uid": "u-1", "resourceVersion": "1", "creationTimestamp": STAMP,
            "labels": {"app": "web"}, "annotations": {"note": "x"},
            "ownerReferences": [{"uid": "rs-1", "kind": "ReplicaSet", "controller": True}],
            "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}],
        },
        "spec": {
            "priorityClassName": "high",
            "containers": [{"name": "app", "image": "web:1", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute"}],
            "schedulerName": "default-scheduler",
        },
        "status": {"phase": "Pending", "qosClass": "Burstable"},
    }


ABSENT = object()
# (section, field) -> (values the projection accepts, values it refuses): fields of interest
# and not.
VALUES = {
    # the lifecycle fields (translate.LIFECYCLE_FIELDS)
    ("spec", "nodeName"): ([ABSENT, None, "n1", "n2", ""], [5, "n" * 300]),
    ("status", "nominatedNodeName"): ([ABSENT, None, "n1", "n3"], [7]),
    ("status", "startTime"): ([ABSENT, None, STAMP, "2026-11-26T11:00:00Z"], ["2026-11-26T10:00:00", "soon", 3]),
    ("metadata", "deletionTimestamp"): ([ABSENT, None, STAMP, "2026-11-26T12:00:00+02:00"], ["later", []]),
    ("status", "conditions"): (
        [ABSENT, None, [], [{"type": "Ready", "status": "True"}], [{"type": "Ready", "status": "False"}],
         [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}, {"type": "Ready", "status": "True"}],
         [{"type": "DisruptionTarget", "status": "False", "reason": "PreemptionByScheduler"}], ["odd"],
         [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}],
         [{"type": "PodResizePending", "status": "True", "reason": "Deferred"}, {"type": "Ready", "status": "True"}]],
        ["bad", {"type": "Ready"}, True],
    ),
    ("status", "phase"): ([ABSENT, None, "Pending", "Running", "Unknown", "Succeeded", "Failed"], [3, ["str", False]]),
    # the rest of what the projection reads
    ("status", "qosClass"): ([ABSENT, "Burstable", "Guaranteed"], ["Bogus"]),
    ("metadata", "labels"): ([ABSENT, {"app": "web"}, {"app": "api"}, None], [{"app": 5}]),
    ("metadata", "namespace"): ([ABSENT, "shop", "other"], [None, 5]),  # absent is "" (default), null is refused
    ("metadata", "annotations"): (
        [ABSENT, {"note": "y"}, {"note": 5}, {GANG: "group-a"}, {GANG: "g" * 300}, {COST: "5"}, {COST: "-3"}, {COST: "+1"},
         {INDEX: "2"}, {INDEX: "2", INDEX_FAILURES: "1"}, {INDEX: "x"},
         {CHECKPOINT: STAMP}, {CHECKPOINT: "2026-11-26T11:30:00.5+01:00"}, {CHECKPOINT: "yesterday"}],
        [{GANG: 5}, "bad"],
    ),
    ("metadata", "ownerReferences"): ([ABSENT, [{"uid": "rs-2", "kind": "ReplicaSet", "controller": True}]], [[{"uid": 5}]]),
    ("spec", "priority"): ([ABSENT, None, 10, 100], ["x", 2**40]),
    ("spec", "priorityClassName"): ([ABSENT, "high", "low", "gone"], []),
    ("spec", "containers"): (
        [[{"name": "app", "image": "web:1", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
         [{"name": "app", "image": "web:2", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
         [{"name": "app", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}}],
         [{"name": "app", "ports": [{"containerPort": 80, "hostPort": 8080}]}],
         # limits beyond the requests (translate fills the requests in), and a name twice
         [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"ephemeral-storage": "1Gi"}}}],
         [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
          {"name": "app", "resources": {"requests": {"cpu": "2"}}}]],
        [[{"name": "app", "resources": {"requests": {"cpu": "-1"}}}]],
    ),
    ("spec", "initContainers"): ([ABSENT, [{"name": "init", "resources": {"requests": {"cpu": "1"}}}],
                                  [{"name": "init", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}}]], []),
    ("spec", "tolerations"): ([ABSENT, [], [{"key": "k", "operator": "Exists"}], [5]], []),
    ("spec", "schedulingGates"): ([ABSENT, [], [{"name": "wait"}]], []),
    ("spec", "terminationGracePeriodSeconds"): ([ABSENT, None, 0, 30, 60, -1], ["30", 2**64]),
    # read by nothing: their changes are UNCHANGED
    ("metadata", "resourceVersion"): (["2", "3", "4"], []),
    ("metadata", "managedFields"): ([[], [{"manager": "kubelet"}]], []),
    # read only where a resize in place makes them other than the spec (translate.in_place)
    ("status", "containerStatuses"): (
        [ABSENT, None, [], [{"name": "app", "restartCount": 1}], [{"name": "app", "restartCount": 2}],
         [{"name": "app", "restartCount": 3, "allocatedResources": {"cpu": "500m", "memory": "1Gi"},
           "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": {"cpu": "x"}}}],
         [{"name": "app", "allocatedResources": {"cpu": "2", "memory": "1Gi"}}],
         [{"name": "app", "allocatedResources": {"cpu": "2"}, "resources": {"requests": {"cpu": "250m"}}}],
         [{"name": "app", "resources": {}}], [{"name": "other", "allocatedResources": {"cpu": "3"}}], [{}],
         [{"name": "app", "allocatedResources": {"cpu": "2"}}, {"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}],
         [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}, {"name": "app", "allocatedResources": {"cpu": "2"}}],
         [{"name": "init", "allocatedResources": {"cpu": "1"}}, {"name": "app"}]],
        ["bad", ["odd"], [{"name": 5}], [{"name": "app", "resources": "x"}], [{"name": "app", "allocatedResources": {"cpu": "-1"}}],
         [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}, "resources": {"requests": "x"}}]],
    ),
    ("status", "initContainerStatuses"): ([ABSENT, None, [{"name": "init", "allocatedResources": {"cpu": "4"}}],
                                           [{"name": "init", "allocatedResources": {"cpu": "1"}}], [{"name": "app"}],
                                           [{"name": "app", "allocatedResources": {"cpu": "3"}}]], [[5]]),
    ("status", "allocatedResources"): ([ABSENT, None, {"cpu": "2"}, {"cpu": "500m", "memory": "1Gi"}], [{"cpu": "lots"}]),
    ("status", "resources"): ([ABSENT, None, {"requests": {"cpu": "2"}}, {"requests": {"cpu": "500m", "memory": "1Gi"}}],
                              ["bad", {"requests": {"cpu": "lots"}}]),
    ("status", "podIP"): ([ABSENT, "10.0.0.1"], []),
    ("spec", "hostname"): ([ABSENT, "web-1"], []),  # not read, but in the spec digested whole
}
LIFECYCLE = [f for f in VALUES if f in POD.lifecycle]
UNREAD = [("metadata", "resourceVersion"), ("metadata", "managedFields"), ("status", "containerStatuses"), ("status", "podIP")]
SECTIONS = ["metadata", "spec", "status"]


def field_change(fields) -> st.SearchStrategy:
    return st.sampled_from(fields).flatmap(
        lambda where: st.tuples(st.just("field"), st.just(where), st.integers(0, 5).flatmap(
            lambda roll: st.sampled_from(VALUES[where][1] if roll == 0 and VALUES[where][1] else VALUES[where][0])
        ))
    )


change = st.one_of(
    field_change(LIFECYCLE),  # as often as all the rest together: they are what a pod's life changes
    field_change(sorted(VALUES, key=str)),
    st.tuples(st.just("section"), st.sampled_from(SECTIONS), st.sampled_from([ABSENT, None, "bad"])),
)
event = st.one_of(
    st.tuples(st.just("MODIFIED"), st.lists(field_change(LIFECYCLE), min_size=1, max_size=1)),  # a bind, a start, ...
    st.tuples(st.just("MODIFIED"), st.lists(field_change(UNREAD), min_size=1, max_size=2)),  # a kubelet's update
    st.tuples(st.just("MODIFIED"), st.lists(change, min_size=1, max_size=3)),
    st.tuples(st.just("DELETED"), st.just([])),
    st.tuples(st.just("ADDED"), st.lists(change, max_size=2)),
    st.tuples(st.just("classes"), st.integers(0, len(CLASSES) - 1)),
)


def changed(raw: dict, changes: list) -> dict:
    raw = copy.deepcopy(raw)
    for what, where, value in changes:
        if what == "section":
            if value is ABSENT:
                raw.pop(where, None)
            else:
                raw[where] = value
            continue
        section, name = where
        picked = value
        if not isinstance(raw.get(section), dict):
            raw[section] = {}
        if picked is ABSENT:
            raw[section].pop(name, None)
        else:
            raw[section][name] = copy.deepcopy(picked)
    return raw


class Refusals(logging.Handler):
    """The changes module's warnings, taken as they come."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __call__(self) -> list[str]:
        taken, self.messages = self.messages, []
        return taken

    def __enter__(self) -> "Refusals":
        logging.getLogger("extender.live.changes").addHandler(self)
        return self

    def __exit__(self, *exc) -> None:
        logging.getLogger("extender.live.changes").removeHandler(self)


def modified(*changes) -> tuple:
    return ("MODIFIED", [("field", where, value) for where, value in changes])


@settings(max_examples=400, deadline=None)
@given(events=st.lists(event, min_size=1, max_size=25))
# Absent, the namespace is "" (accepted); null, it is refused: the two are told apart.
@example(events=[modified((("metadata", "namespace"), ABSENT)), modified((("metadata", "namespace"), None))])
# Only the preemption mark changes: a lifecycle field read in part.
@example(events=[modified((("status", "conditions"), [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]))])
# Finished: the record goes, though nothing else changed.
@example(events=[modified((("spec", "nodeName"), "n1")), modified((("status", "phase"), "Succeeded"))])
# Two statuses of one container, swapped: the first is read (found in review).
@example(events=[
    modified((("status", "containerStatuses"), [{"name": "app", "allocatedResources": {"cpu": "2"}},
                                                {"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}])),
    modified((("status", "containerStatuses"), [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}},
                                                {"name": "app", "allocatedResources": {"cpu": "2"}}])),
])
# A status that holds the spec's shadows a later one of its name (found in review).
@example(events=[
    modified((("status", "initContainerStatuses"), [{"name": "app", "allocatedResources": {"cpu": "3"}}])),
    modified((("status", "containerStatuses"), [{"name": "app"}])),
])
# While a resize is infeasible a container without a status counts nothing: a status at the
# spec's is read, not skipped (found in review).
@example(events=[
    modified((("status", "conditions"), [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]),
             (("status", "containerStatuses"), [])),
    modified((("status", "containerStatuses"), [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}])),
])
# Two containers of one name: a status at the one's requests is not the other's (found in review).
@example(events=[
    modified((("spec", "containers"), [{"name": "app", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                                       {"name": "app", "resources": {"requests": {"cpu": "2"}}}])),
    modified((("status", "containerStatuses"), [{"name": "app", "allocatedResources": {"cpu": "2"}}])),
])
def test_the_decoder_leaves_the_record_decoding_whole_gives(events):
    with Refusals() as refusals:
        replay(events, refusals)


def replay(events: list, refusals: Refusals) -> None:
    decoder = Decoder(POD)
    classes = CLASSES[1]
    raw = base_pod()
    applied: dict[str, object] = {}  # what the store would hold
    listed = decoder.list([([raw], classes)])
    applied.update(listed)
    assert listed == {"u-1": record_of(POD, raw, classes)}
    refusals()
    for kind, arg in events:
        if kind == "classes":
            classes = dict(CLASSES[arg])  # a new mapping, as the store makes one
            continue
        raw = changed(raw, arg)
        if not isinstance(raw.get("metadata"), dict):
            raw["metadata"] = {}
        for name, value in (("uid", "u-1"), ("name", "web-1")):  # the API server's
            raw["metadata"].setdefault(name, value)
        key = key_of(POD, raw)
        before = applied.get(key)
        got_key, record = decoder.event({"type": kind, "object": raw}, classes, applied.get)
        decoded = refusals()
        assert got_key == key
        if kind == "DELETED":
            expected, whole = None, []
        else:
            expected = record_of(POD, raw, classes)
            whole = refusals()
        if record is UNCHANGED:
            assert before == expected
        elif record is None:
            applied.pop(key, None)
        else:
            applied[key] = record
        assert applied.get(key) == expected
        assert decoded == whole  # refused exactly when, and as, decoding whole refuses


def test_an_event_that_changes_no_field_of_interest_is_unchanged_without_validation(monkeypatch):
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = base_pod()
    applied = decoder.list([([raw], classes)])
    calls = []
    monkeypatch.setattr(POD.model, "model_validate", lambda *a, **k: calls.append(a) or pytest.fail("validated"))
    status = changed(raw, [("field", ("status", "containerStatuses"), [{"name": "app", "restartCount": 1}]),
                           ("field", ("metadata", "resourceVersion"), "2"), ("field", ("status", "podIP"), "10.0.0.1"),
                           ("field", ("status", "phase"), "Running"), ("field", ("status", "conditions"), [{"type": "Ready"}])])
    assert decoder.event({"type": "MODIFIED", "object": status}, classes, applied.get) == ("u-1", UNCHANGED)
    # A kubelet of 1.35 or later writes what it allocated and actuated: the spec's, unresized.
    started = changed(status, [("field", ("status", "containerStatuses"), [
        {"name": "app", "restartCount": 2, "ready": True, "allocatedResources": {"cpu": "500m", "memory": "1Gi"},
         "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}])])
    assert decoder.event({"type": "MODIFIED", "object": started}, classes, applied.get) == ("u-1", UNCHANGED)
    assert calls == []


def test_a_pod_resized_in_place_counts_what_the_kubelet_holds_until_it_is_actuated():
    # Resized down from 500m to 200m: the kubelet still holds 500m until it has allocated and
    # actuated the new size, and so does the scheduler (max of spec, allocated and actuated).
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = base_pod()
    raw["status"]["containerStatuses"] = [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"},
                                           "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}]
    applied = decoder.list([([raw], classes)])
    assert applied["u-1"].requests["cpu"] == 500
    asked = changed(raw, [("field", ("spec", "containers"), [
        {"name": "app", "image": "web:1", "resources": {"requests": {"cpu": "200m", "memory": "1Gi"}}}])])
    key, record = decoder.event({"type": "MODIFIED", "object": asked}, classes, applied.get)
    assert record is UNCHANGED  # the spec's new size changes nothing read while 500m is held
    allocated = copy.deepcopy(asked)
    allocated["status"]["containerStatuses"][0]["allocatedResources"]["cpu"] = "200m"
    key, record = decoder.event({"type": "MODIFIED", "object": allocated}, classes, applied.get)
    assert record is UNCHANGED  # allocated, not yet actuated: still 500m
    actuated = copy.deepcopy(allocated)
    actuated["status"]["containerStatuses"][0]["resources"]["requests"]["cpu"] = "200m"
    key, record = decoder.event({"type": "MODIFIED", "object": actuated}, classes, applied.get)
    assert record.requests["cpu"] == 200
    assert record == record_of(POD, actuated, classes)


def test_a_resize_found_infeasible_is_read_though_only_a_condition_changed():
    # Asked up from 500m to 2: the kubelet finds it can never fit (PodResizePending Infeasible),
    # and the scheduler counts what it holds. Conditions are a lifecycle field, revised without
    # decoding the pod; this one changes the requests, so it must not be revised alone.
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = changed(base_pod(), [("field", ("spec", "containers"), [
        {"name": "app", "image": "web:1", "resources": {"requests": {"cpu": "2", "memory": "1Gi"}}}])])
    raw["status"]["containerStatuses"] = [{"name": "app", "allocatedResources": {"cpu": "500m", "memory": "1Gi"}}]
    applied = decoder.list([([raw], classes)])
    assert applied["u-1"].requests["cpu"] == 2000
    infeasible = changed(raw, [("field", ("status", "conditions"), [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}])])
    key, record = decoder.event({"type": "MODIFIED", "object": infeasible}, classes, applied.get)
    assert record.requests["cpu"] == 500
    assert record == record_of(POD, infeasible, classes)


@pytest.mark.parametrize("before, after, checkpoint", [
    (None, STAMP, 1795687200.0),  # 2026-11-26T10:00:00Z in seconds since the epoch
    (STAMP, "2026-11-26T11:00:00Z", 1795690800.0),
    (STAMP, "not a time", None),  # malformed: no checkpoint
])
def test_the_fast_path_notices_a_new_checkpoint(before, after, checkpoint):
    # Only the annotation reprieve.io/last-checkpoint changes (a checkpointing workload writes
    # it): the watch must not take the event as unchanged, and the record carries the new time.
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = base_pod()
    if before is not None:
        raw["metadata"]["annotations"][CHECKPOINT] = before
    applied = decoder.list([([raw], classes)])
    assert applied["u-1"].checkpoint == (None if before is None else 1795687200.0)
    saved = changed(raw, [("field", ("metadata", "annotations"), {"note": "x", CHECKPOINT: after})])
    key, record = decoder.event({"type": "MODIFIED", "object": saved}, classes, applied.get)
    if checkpoint == applied["u-1"].checkpoint:
        assert record is UNCHANGED or record.checkpoint == checkpoint
    else:
        assert record is not UNCHANGED and record.checkpoint == checkpoint
        assert record == dataclasses.replace(applied[key], checkpoint=checkpoint)


def test_a_bind_is_revised_from_the_lifecycle_fields_alone(monkeypatch):
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = base_pod()
    applied = decoder.list([([raw], classes)])
    whole = []
    monkeypatch.setattr("extender.live.changes.record_of", lambda *a: whole.append(a) or pytest.fail("decoded whole"))
    bound = changed(raw, [("field", ("spec", "nodeName"), "n1"), ("field", ("status", "conditions"), [{"type": "PodScheduled"}])])
    key, record = decoder.event({"type": "MODIFIED", "object": bound}, classes, applied.get)
    assert record == dataclasses.replace(applied[key], node_name="n1")
    assert whole == []


def test_a_new_grace_period_is_not_unchanged():
    decoder, classes = Decoder(POD), CLASSES[1]
    raw = base_pod()
    applied = decoder.list([([raw], classes)])
    assert applied["u-1"].grace == 30  # absent: the API server's default
    longer = changed(raw, [("field", ("spec", "terminationGracePeriodSeconds"), 120)])
    key, record = decoder.event({"type": "MODIFIED", "object": longer}, classes, applied.get)
    assert record == dataclasses.replace(applied[key], grace=120)


@pytest.mark.parametrize(
    "kind, obj, change, unchanged",
    [
        pytest.param("nodes", {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}, "conditions": []}},
                     ("status", "conditions", [{"type": "Ready", "lastHeartbeatTime": STAMP}]), True, id="node-heartbeat"),
        pytest.param("nodes", {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4"}}},
                     ("status", "allocatable", {"cpu": "8"}), False, id="node-allocatable"),
        pytest.param("nodes", {"metadata": {"name": "n1"}, "spec": {}, "status": {"allocatable": {"cpu": "4"}}},
                     ("spec", "taints", [{"key": "k", "effect": "NoSchedule"}]), False, id="node-taint"),
        pytest.param("poddisruptionbudgets", {"metadata": {"name": "b", "namespace": "ns"}, "status": {"disruptionsAllowed": 1}},
                     ("status", "currentHealthy", 3), True, id="pdb-counts"),
        pytest.param("poddisruptionbudgets", {"metadata": {"name": "b", "namespace": "ns"}, "status": {"disruptionsAllowed": 1}},
                     ("status", "disruptionsAllowed", 0), False, id="pdb-allowance"),
        pytest.param("poddisruptionbudgets", {"metadata": {"name": "b", "namespace": "ns"}, "status": {"disruptionsAllowed": 1}},
                     ("status", "disruptionsAllowed", None), None, id="pdb-refused"),
    ],
)
def test_other_kinds_skip_what_their_projection_does_not_read(kind, obj, change, unchanged):
    decoder = Decoder(KINDS[kind])
    applied = decoder.list([([obj], {})])
    section, name, value = change
    new = copy.deepcopy(obj)
    new.setdefault(section, {})[name] = value
    key, record = decoder.event({"type": "MODIFIED", "object": new}, {}, applied.get)
    assert (record is UNCHANGED) == bool(unchanged)
    assert (record if record is not UNCHANGED else applied[key]) == record_of(KINDS[kind], new, {})

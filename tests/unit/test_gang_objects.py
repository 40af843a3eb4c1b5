"""Gang membership and group minimums from Kubernetes objects: what a pod carries (labels, the
few annotations policy.gangs reads, spec.schedulingGroup) and the three PodGroup kinds, in
snapshots and through the projections the live cache uses."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pydantic
import pytest

from extender.errors import SnapshotError
from extender.state import kube, snapshot, translate
from policy import gangs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gangs.yaml"

COSCHEDULING = "scheduling.x-k8s.io/v1alpha1"
VOLCANO = "scheduling.volcano.sh/v1beta1"
WORKLOAD = "scheduling.k8s.io/v1beta1"


def raw_pod(name, *, labels=None, annotations=None, ns="ml", **spec):
    meta = {"name": name, "namespace": ns, "uid": f"u-{name}"}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [], **spec}}


def group(api_version, name, spec, ns="ml"):
    return {"apiVersion": api_version, "kind": "PodGroup", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def record(raw, *, shared=True):
    return translate.pod_record(kube.Pod.model_validate(raw), {}, shared=shared)


@pytest.mark.parametrize(
    "raw, key, minimum, everyone",
    [
        pytest.param(raw_pod("a", schedulingGroup={"podGroupName": "train"}), "workload ml/train", None, False, id="workload-api"),
        pytest.param(raw_pod("a", labels={gangs.COSCHEDULING_LABEL: "train"}), "coscheduling ml/train", None, False, id="coscheduling"),
        pytest.param(raw_pod("a", annotations={gangs.VOLCANO_ANNOTATION: "train"}), "volcano ml/train", None, False, id="volcano"),
        pytest.param(
            raw_pod("a", labels={gangs.KUEUE_LABEL: "train"}, annotations={gangs.KUEUE_COUNT: "4"}), "kueue ml/train", 4, False, id="kueue"
        ),
        pytest.param(
            raw_pod("a", labels={gangs.LWS_GROUP_KEY: "abc123"}, annotations={gangs.LWS_SIZE: "3"}),
            "leaderworkerset ml/abc123", 3, False, id="leaderworkerset",
        ),
        pytest.param(
            raw_pod("a", labels={gangs.LWS_NAME: "srv", gangs.LWS_GROUP_INDEX: "0"}, annotations={gangs.LWS_SIZE: "2"}),
            "leaderworkerset ml/srv-0", 2, False, id="leaderworkerset-name-and-index",
        ),
        pytest.param(raw_pod("a", labels={gangs.JOBSET_LABEL: "train"}), "jobset ml/train", None, True, id="jobset"),
        pytest.param(raw_pod("a", ns="", labels={gangs.COSCHEDULING_LABEL: "g"}), "coscheduling default/g", None, False, id="no-namespace-is-default"),
    ],
)
def test_each_marking_makes_a_member(raw, key, minimum, everyone):
    mark = record(raw).gang
    assert (mark.key, mark.minimum, mark.everyone) == (key, minimum, everyone)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(raw_pod("a", labels={"app": "web"}), id="unmarked"),
        pytest.param(raw_pod("a", labels={gangs.KUEUE_LABEL: "train"}), id="kueue-without-count"),
        pytest.param(raw_pod("a", labels={gangs.KUEUE_LABEL: "t"}, annotations={gangs.KUEUE_COUNT: "many"}), id="kueue-bad-count"),
        pytest.param(raw_pod("a", labels={gangs.LWS_GROUP_KEY: "k"}, annotations={gangs.LWS_SIZE: "0"}), id="lws-size-zero"),
        pytest.param(raw_pod("a", schedulingGroup={}), id="empty-scheduling-group"),
    ],
)
def test_incomplete_markings_are_independent_pods(raw):
    assert record(raw).gang is None


def test_members_of_one_gang_share_their_mark_but_a_request_pod_does_not_enter_the_table():
    a = record(raw_pod("a", labels={gangs.COSCHEDULING_LABEL: "shared"}))
    b = record(raw_pod("b", labels={gangs.COSCHEDULING_LABEL: "shared"}))
    assert a.gang is b.gang
    before = translate._shared_mark.cache_info().currsize
    record(raw_pod("c", labels={gangs.COSCHEDULING_LABEL: "one-request-only"}), shared=False)
    assert translate._shared_mark.cache_info().currsize == before


def test_only_the_annotations_gangs_read_are_kept():
    last_applied = "x" * 2**20  # kubectl apply's copy of the whole object
    raw = raw_pod(
        "a",
        labels={gangs.KUEUE_LABEL: "train"},
        annotations={
            "kubectl.kubernetes.io/last-applied-configuration": last_applied,
            "prometheus.io/scrape": "true",
            gangs.KUEUE_COUNT: "2",
        },
    )
    parsed = kube.Pod.model_validate(raw)
    assert parsed.metadata.annotations == {gangs.KUEUE_COUNT: "2"}
    assert sys.getsizeof(parsed.metadata.annotations) < 1024
    assert record(raw).gang.minimum == 2
    assert gangs.ANNOTATIONS == {gangs.VOLCANO_ANNOTATION, gangs.KUEUE_COUNT, gangs.LWS_SIZE}


def test_annotations_not_read_are_not_validated_and_overlong_kept_ones_are_dropped():
    # Whatever the API server accepts must read: an annotation reprieve ignores is not checked,
    # and a group name longer than any object name names no PodGroup (the pod stays independent).
    parsed = kube.Pod.model_validate(raw_pod("a", annotations={"example.com/n": 5, gangs.VOLCANO_ANNOTATION: "g" * 254}))
    assert parsed.metadata.annotations == {}
    assert translate.pod_record(parsed, {}).gang is None
    with pytest.raises(pydantic.ValidationError) as err:
        kube.Pod.model_validate(raw_pod("a", annotations={gangs.VOLCANO_ANNOTATION: 5}))
    assert kube.describe_validation(err.value) == "metadata.annotations.scheduling.k8s.io/group-name: Input should be a valid string"
    with pytest.raises(pydantic.ValidationError) as err:
        kube.Pod.model_validate(raw_pod("a", annotations="not a map"))
    assert kube.describe_validation(err.value).startswith("metadata.annotations: ")


@pytest.mark.parametrize(
    "projection, to_minimum, spec, expected",
    [
        pytest.param(kube.MinMemberPodGroup, translate.coscheduling_minimum, {"minMember": 3}, ("coscheduling ml/g", 3, "PodGroup ml/g spec.minMember"), id="coscheduling"),
        pytest.param(kube.MinMemberPodGroup, translate.volcano_minimum, {"minMember": 2, "queue": "q"}, ("volcano ml/g", 2, "PodGroup ml/g spec.minMember"), id="volcano"),
        pytest.param(
            kube.WorkloadPodGroup, translate.workload_minimum, {"schedulingPolicy": {"gang": {"minCount": 4}}},
            ("workload ml/g", 4, "PodGroup ml/g spec.schedulingPolicy.gang.minCount"), id="workload-gang",
        ),
        pytest.param(kube.WorkloadPodGroup, translate.workload_minimum, {"schedulingPolicy": {"basic": {}}}, None, id="workload-basic"),
        pytest.param(kube.WorkloadPodGroup, translate.workload_minimum, {}, None, id="workload-no-policy"),
        pytest.param(kube.WorkloadPodGroup, translate.workload_minimum, {"schedulingPolicy": {"gang": {}}}, None, id="workload-gang-without-count"),
        pytest.param(kube.MinMemberPodGroup, translate.coscheduling_minimum, {}, None, id="no-min-member"),
        pytest.param(kube.MinMemberPodGroup, translate.volcano_minimum, {"minMember": 0}, None, id="min-member-zero"),
        # Volcano's PodGroup for a plain pod: no gang (policy.gangs.gang), so no record either.
        pytest.param(kube.MinMemberPodGroup, translate.volcano_minimum, {"minMember": 1}, None, id="min-member-one"),
        pytest.param(kube.MinMemberPodGroup, translate.coscheduling_minimum, {"minMember": -1}, None, id="min-member-negative"),
    ],
)
def test_group_minimums(projection, to_minimum, spec, expected):
    found = to_minimum(projection.model_validate(group("any", "g", spec)))
    assert (found and (found.key, found.minimum, found.source)) == expected


@pytest.mark.parametrize(
    "pod, group_object",
    [
        pytest.param(raw_pod("a", labels={gangs.COSCHEDULING_LABEL: "g"}), group(COSCHEDULING, "g", {"minMember": 2}), id="coscheduling"),
        pytest.param(raw_pod("a", annotations={gangs.VOLCANO_ANNOTATION: "g"}), group(VOLCANO, "g", {"minMember": 2}), id="volcano"),
        pytest.param(raw_pod("a", schedulingGroup={"podGroupName": "g"}), group(WORKLOAD, "g", {"schedulingPolicy": {"gang": {"minCount": 2}}}), id="workload"),
    ],
)
def test_a_group_object_has_the_key_of_the_pods_that_name_it(pod, group_object):
    # Two members running (bound): a gang of two, whole.
    running = [{**pod, "metadata": {**pod["metadata"], "name": n, "uid": f"u-{n}"}, "spec": {**pod["spec"], "nodeName": "n1"}} for n in "ab"]
    view = snapshot.from_documents([*running, group_object])
    member = next(iter(view.pods.values()))
    assert list(view.group_minimums) == [member.gang.key]
    assert view.gang_of(member).minimum == 2


def test_example_snapshot_reads_every_group_kind():
    view = snapshot.load(EXAMPLE)
    assert {k: g.minimum for k, g in view.group_minimums.items()} == {
        "coscheduling ml/train": 2,
        "volcano ml/sim": 2,
        "workload ml/infer": 2,
    }
    gang = {p.name: view.gang_of(p) for p in view.pods.values()}
    assert (gang["train-0"].running, gang["train-0"].spare) == (3, 1)
    assert (gang["sim-1"].running, gang["sim-1"].spare) == (2, 0)
    assert gang["infer-0"] is None  # 1 running of the 2 it needs: not whole, nothing breaks it now
    assert gang["notebook-0"] is None  # a basic PodGroup: no minimum
    assert gang["sim-0"].describe() == (
        "gang volcano ml/sim (2 running, at least 2 needed: annotation scheduling.k8s.io/group-name, PodGroup ml/sim spec.minMember=2)"
    )


def test_group_minimums_are_none_without_group_objects():
    view = snapshot.from_documents([raw_pod("a", labels={gangs.COSCHEDULING_LABEL: "g"})])
    assert view.group_minimums == {}
    assert view.gang_of(next(iter(view.pods.values()))) is None


@pytest.mark.parametrize(
    "obj, message",
    [
        pytest.param(group(COSCHEDULING, "g", {"minMember": "abc"}), "document 0 item 0 (PodGroup ml/g): spec.minMember: Input should be a valid integer", id="coscheduling-not-a-number"),
        pytest.param(group(VOLCANO, "g", {"minMember": 2**31}), "(PodGroup ml/g): spec.minMember: Input should be less than or equal to 2147483647", id="volcano-beyond-int32"),
        pytest.param(
            group(WORKLOAD, "g", {"schedulingPolicy": {"gang": {"minCount": "two"}}}),
            "(PodGroup ml/g): spec.schedulingPolicy.gang.minCount: Input should be a valid integer", id="workload-not-a-number",
        ),
        pytest.param({"apiVersion": VOLCANO, "kind": "PodGroup", "spec": {"minMember": 1}}, "(PodGroup): metadata.name: required", id="no-name"),
        pytest.param(
            [group(COSCHEDULING, "g", {"minMember": 1}), group(COSCHEDULING, "g", {"minMember": 2})],
            "document 0 item 1: duplicate PodGroup ml/g, different from the copy at document 0 item 0", id="duplicate",
        ),
    ],
)
def test_a_bad_group_object_stops_startup_naming_object_and_field(obj, message):
    items = obj if isinstance(obj, list) else [obj]
    with pytest.raises(SnapshotError) as err:
        snapshot.from_documents([{"apiVersion": "v1", "kind": "List", "items": items}], source="dump.yaml")
    assert message in str(err.value)


def test_same_name_in_two_group_kinds_is_two_gangs():
    docs = [group(COSCHEDULING, "g", {"minMember": 3}), group(VOLCANO, "g", {"minMember": 2})]
    assert {k: g.minimum for k, g in snapshot.from_documents(docs).group_minimums.items()} == {"coscheduling ml/g": 3, "volcano ml/g": 2}


def test_podgroups_of_other_api_versions_are_left_out_and_named(caplog):
    others = [group("scheduling.k8s.io/v1alpha3", "g", {}), group("scheduling.incubator.k8s.io/v1alpha1", "g", {"minMember": "x"})]
    with caplog.at_level(logging.INFO):
        view = snapshot.from_documents(others, source="dump.yaml")
    assert view.group_minimums == {}
    reads = "it reads scheduling.k8s.io/v1beta1, scheduling.volcano.sh/v1beta1, scheduling.x-k8s.io/v1alpha1"
    assert [r.getMessage() for r in caplog.records if "left out" in r.getMessage()] == [
        f"dump.yaml: document 0 (PodGroup ml/g): left out: reprieve does not read PodGroup scheduling.k8s.io/v1alpha3 ({reads})",
        f"dump.yaml: document 1 (PodGroup ml/g): left out: reprieve does not read PodGroup scheduling.incubator.k8s.io/v1alpha1 ({reads})",
    ]

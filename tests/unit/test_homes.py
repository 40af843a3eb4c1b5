"""policy.homes: whether a victim's replacement fits on another node now, and policy.placement's
filters (node selector, required node affinity, taints, cordon) it rests on."""

from __future__ import annotations

import dataclasses
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from extender.state import kube, translate
from policy import homes, placement, resources
from policy.homes import NO_CONTROLLER, NO_ROOM, SAME_NODE
from policy.placement import Placement, Requirement, Taint, Term, Toleration
from tests.builders import node, pod, term, tolerate, view

RS = "ReplicaSet"


def home_of(victim, nodes, others=(), *, excluding="n1"):
    """Where ``victim`` (bound to ``excluding``) could go in a view of ``nodes`` and ``others``."""
    v = view(nodes, [dataclasses.replace(victim, node_name=excluding), *others])
    return homes.of(v).home(v.pods[victim.uid], excluding=excluding)


FULL = node("n1", cpu=4)  # the node being preempted: always room there, never a home


@pytest.mark.parametrize(
    "victim, nodes, others, expected",
    [
        # Who re-creates it.
        pytest.param(pod("v", cpu=1), [FULL, node("n2")], [], None, id="bare-pod-has-no-home"),
        pytest.param(pod("v", cpu=1, kind="DaemonSet"), [FULL, node("n2")], [], None, id="daemonset-pod-comes-back-here"),
        pytest.param(pod("v", cpu=1, kind="Node"), [FULL, node("n2")], [], None, id="static-pod-comes-back-here"),
        pytest.param(pod("v", cpu=1, kind=RS), [FULL, node("n2")], [], "n2", id="replicaset-pod-fits-elsewhere"),
        pytest.param(pod("v", cpu=1, kind="Job"), [FULL, node("n2")], [], "n2", id="job-pod-fits-elsewhere"),
        pytest.param(pod("v", cpu=1, kind=RS), [FULL], [], None, id="only-the-preempted-node"),
        # Room: n2 has 2 cpu, 1.5 taken: 0.5 free.
        pytest.param(
            pod("v", cpu=1, kind=RS), [FULL, node("n2", cpu=2)], [pod("o", node="n2", cpu=1.5)], None, id="cpu-short-elsewhere"
        ),
        pytest.param(
            pod("v", cpu=0.5, kind=RS), [FULL, node("n2", cpu=2)], [pod("o", node="n2", cpu=1.5)], "n2", id="cpu-exactly-enough"
        ),
        pytest.param(
            pod("v", cpu=1, kind=RS), [FULL, node("n2", cpu=2)], [pod("o", node="n2", cpu=1.5, terminating=True)], None,
            id="terminating-pods-still-hold-room",
        ),
        # pods=1 on n2, taken by o: the pod-count slot is checked even for a pod asking nothing else.
        pytest.param(pod("v", kind=RS), [FULL, node("n2", pods=1)], [pod("o", node="n2")], None, id="no-pod-slot-elsewhere"),
        pytest.param(
            pod("v", kind=RS), [FULL, node("n2", cpu=1)], [pod("o", node="n2", cpu=2)], "n2", id="zero-cpu-fits-an-overcommitted-node"
        ),
        pytest.param(pod("v", cpu=1, kind=RS, gpu=1), [FULL, node("n2")], [], None, id="extended-resource-the-node-lacks"),
        pytest.param(pod("v", cpu=1, kind=RS, gpu=1), [FULL, node("n2"), node("n3", gpu=2)], [], "n3", id="extended-resource-elsewhere"),
        # Room held for nominated pods: n2 has 2 cpu, a pod of priority p nominated asks 1.5.
        pytest.param(
            pod("v", cpu=1, kind=RS, priority=5), [FULL, node("n2", cpu=2)], [pod("w", nominated="n2", cpu=1.5, priority=5)], None,
            id="room-held-for-an-equal-priority-nomination",
        ),
        pytest.param(
            pod("v", cpu=1, kind=RS, priority=5), [FULL, node("n2", cpu=2)], [pod("w", nominated="n2", cpu=1.5, priority=4)], "n2",
            id="lower-priority-nomination-holds-nothing",
        ),
        pytest.param(
            pod("v", cpu=1, kind=RS, priority=5), [FULL, node("n2", cpu=2)],
            [pod("w", nominated="n2", cpu=1.5, priority=9, scheduler="other")], None,
            id="any-schedulers-nomination-holds-room",
        ),
    ],
)
def test_home(victim, nodes, others, expected):
    assert home_of(victim, nodes, others) == expected


GPU = {"pool": "gpu", "zone": "a", "cores": "64"}
CPU = {"pool": "cpu", "zone": "b", "cores": "16"}


@pytest.mark.parametrize(
    "constraints, labels, expected",
    [
        pytest.param({}, CPU, True, id="nothing-asked"),
        pytest.param({"node_selector": {"pool": "gpu"}}, GPU, True, id="selector-match"),
        pytest.param({"node_selector": {"pool": "gpu"}}, CPU, False, id="selector-mismatch"),
        pytest.param({"node_selector": {"pool": "gpu", "zone": "b"}}, GPU, False, id="selector-every-label"),
        pytest.param({"node_selector": {"pool": ""}}, {}, False, id="selector-empty-value-needs-the-label"),
        pytest.param({"affinity": (term(("pool", "In", "gpu", "tpu")),)}, GPU, True, id="in"),
        pytest.param({"affinity": (term(("pool", "In", "tpu")),)}, GPU, False, id="in-other-value"),
        pytest.param({"affinity": (term(("pool", "In")),)}, GPU, False, id="in-without-values-is-invalid"),
        pytest.param({"affinity": (term(("pool", "NotIn", "gpu")),)}, CPU, True, id="notin"),
        pytest.param({"affinity": (term(("rack", "NotIn", "r1")),)}, CPU, True, id="notin-absent-label"),
        pytest.param({"affinity": (term(("pool", "NotIn", "cpu")),)}, CPU, False, id="notin-listed"),
        pytest.param({"affinity": (term(("zone", "Exists")),)}, CPU, True, id="exists"),
        pytest.param({"affinity": (term(("zone", "Exists", "b")),)}, CPU, False, id="exists-with-values-is-invalid"),
        pytest.param({"affinity": (term(("rack", "DoesNotExist")),)}, CPU, True, id="does-not-exist"),
        pytest.param({"affinity": (term(("zone", "DoesNotExist")),)}, CPU, False, id="does-not-exist-present"),
        pytest.param({"affinity": (term(("cores", "Gt", "32")),)}, GPU, True, id="gt"),  # 64 > 32
        pytest.param({"affinity": (term(("cores", "Gt", "32")),)}, CPU, False, id="gt-smaller"),  # 16 > 32: no
        pytest.param({"affinity": (term(("cores", "Gt", "64")),)}, GPU, False, id="gt-is-strict"),
        pytest.param({"affinity": (term(("cores", "Lt", "+32")),)}, CPU, True, id="lt-signed-bound"),  # 16 < 32
        pytest.param({"affinity": (term(("cores", "Lt", "32")),)}, {"cores": "1_0"}, False, id="lt-label-not-a-go-integer"),
        pytest.param({"affinity": (term(("cores", "Lt", "3.5")),)}, CPU, False, id="lt-bound-not-an-integer"),
        pytest.param({"affinity": (term(("cores", "Gt", "1", "2")),)}, GPU, False, id="gt-needs-one-value"),
        pytest.param({"affinity": (term(("rack", "Gt", "1")),)}, GPU, False, id="gt-absent-label"),
        pytest.param({"affinity": (term(("pool", "Near", "gpu")),)}, GPU, False, id="unknown-operator-matches-nothing"),
        pytest.param({"affinity": (term(("pool", "In", "gpu"), ("zone", "In", "b")),)}, GPU, False, id="expressions-are-anded"),
        pytest.param(
            {"affinity": (term(("pool", "In", "tpu")), term(("zone", "In", "a")))}, GPU, True, id="terms-are-ored"
        ),
        pytest.param({"affinity": (term(),)}, GPU, False, id="empty-term-matches-nothing"),
        pytest.param({"affinity": (term(), term(("pool", "Exists")))}, GPU, True, id="empty-term-beside-a-matching-one"),
        pytest.param({"affinity": ()}, GPU, False, id="no-terms-matches-nothing"),
        pytest.param({"affinity": (term(fields=(("metadata.name", "In", "n2"),)),)}, GPU, True, id="match-fields-name"),
        pytest.param({"affinity": (term(fields=(("metadata.name", "In", "n3"),)),)}, GPU, False, id="match-fields-other-name"),
        pytest.param({"affinity": (term(fields=(("metadata.name", "NotIn", "n3"),)),)}, GPU, True, id="match-fields-notin"),
        pytest.param(
            {"affinity": (term(fields=(("metadata.name", "In", "n2", "n3"),)),)}, GPU, False, id="match-fields-one-value-only"
        ),
        pytest.param(
            {"affinity": (term(("pool", "In", "gpu"), fields=(("metadata.name", "In", "n3"),)),)}, GPU, False,
            id="match-fields-anded-with-expressions",
        ),
        pytest.param(
            {"node_selector": {"pool": "cpu"}, "affinity": (term(("zone", "In", "a")),)}, GPU, False,
            id="selector-and-affinity-both-needed",
        ),
    ],
)
def test_node_selection(constraints, labels, expected):
    victim = pod("v", cpu=1, kind=RS, **constraints)
    assert home_of(victim, [FULL, node("n2", labels=labels)]) == ("n2" if expected else None)


NOT_READY = tolerate("node.kubernetes.io/not-ready", effect="NoExecute")  # what every pod gets


@pytest.mark.parametrize(
    "tolerations, taints, unschedulable, expected",
    [
        pytest.param((NOT_READY,), (), False, True, id="untainted"),
        pytest.param((NOT_READY,), ("dedicated=gpu:NoSchedule",), False, False, id="noschedule-untolerated"),
        pytest.param((NOT_READY,), ("dedicated=gpu:NoExecute",), False, False, id="noexecute-untolerated"),
        pytest.param((NOT_READY,), ("dedicated=gpu:PreferNoSchedule",), False, True, id="prefernoschedule-ignored"),
        pytest.param((tolerate("dedicated", "gpu", "NoSchedule"),), ("dedicated=gpu:NoSchedule",), False, True, id="equal"),
        pytest.param((tolerate("dedicated", "tpu", "NoSchedule"),), ("dedicated=gpu:NoSchedule",), False, False, id="equal-other-value"),
        pytest.param((tolerate("dedicated", "gpu"),), ("dedicated=gpu:NoSchedule",), False, True, id="equal-any-effect"),
        pytest.param((tolerate("dedicated", "gpu", "NoExecute"),), ("dedicated=gpu:NoSchedule",), False, False, id="other-effect"),
        pytest.param(
            (tolerate("dedicated", "gpu", operator=""),), ("dedicated=gpu:NoSchedule",), False, True, id="empty-operator-is-equal"
        ),
        pytest.param((tolerate("dedicated"),), ("dedicated=gpu:NoSchedule",), False, True, id="exists"),
        pytest.param((tolerate("dedicated", effect="NoSchedule"),), ("dedicated:NoSchedule",), False, True, id="exists-no-value"),
        pytest.param((tolerate("other"),), ("dedicated=gpu:NoSchedule",), False, False, id="exists-other-key"),
        pytest.param((tolerate(),), ("dedicated=gpu:NoSchedule", "x=y:NoExecute"), True, True, id="exists-empty-key-tolerates-all"),
        pytest.param((tolerate(effect="NoExecute"),), ("x=y:NoExecute", "d=g:NoSchedule"), False, False, id="every-taint-needed"),
        pytest.param(
            (tolerate("x", "9", operator="Gt"),), ("x=10:NoSchedule",), False, False, id="alpha-gt-operator-tolerates-nothing"
        ),
        # The cordon: spec.unschedulable, and the taint the node controller adds for it.
        pytest.param((NOT_READY,), (), True, False, id="cordoned"),
        pytest.param((NOT_READY,), ("node.kubernetes.io/unschedulable:NoSchedule",), False, False, id="cordon-taint"),
        pytest.param(
            (tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule"),), (), True, True, id="cordon-tolerated"
        ),
        pytest.param(
            (tolerate("node.kubernetes.io/unschedulable", effect="NoExecute"),), (), True, False, id="cordon-other-effect"
        ),
    ],
)
def test_taints_and_cordon(tolerations, taints, unschedulable, expected):
    victim = pod("v", cpu=1, kind=RS, tolerations=tolerations)
    assert home_of(victim, [FULL, node("n2", taints=taints, unschedulable=unschedulable)]) == ("n2" if expected else None)


def test_any_exclusion_leaves_an_answer():
    v = view([node("n1"), node("n2"), node("n3")], [pod("v", node="n1", cpu=1, kind=RS)])
    h, victim = homes.of(v), v.pods["uid-default-v"]
    assert {name: h.home(victim, excluding=name) for name in v.nodes} == {"n1": "n2", "n2": "n1", "n3": "n1"}
    # A node with more free room comes first: n2 has the most.
    v = view([node("n1"), node("n2", cpu=20), node("n3")], [pod("v", node="n1", cpu=1, kind=RS)])
    assert homes.of(v).home(v.pods["uid-default-v"], excluding="n1") == "n2"


def test_homes_are_kept_with_the_view_and_not_copied():
    v = view([node("n1"), node("n2")], [pod("v", node="n1", cpu=1, kind=RS)])
    assert homes.of(v) is homes.of(v)
    assert homes.of(dataclasses.replace(v, revision=7)) is not homes.of(v)


def test_homeless_counts_each_victim_alone_and_says_why():
    # n2 has room for one 1-cpu pod: both 1-cpu victims have a home, each judged alone.
    nodes = [node("n1", cpu=8), node("n2", cpu=1)]
    victims = [
        pod("a", node="n1", cpu=1, kind=RS),
        pod("b", node="n1", cpu=1, kind=RS),
        pod("c", node="n1", cpu=2, kind=RS),
        pod("d", node="n1", cpu=1),
        pod("e", node="n1", cpu=1, kind="DaemonSet"),
        pod("f", node="n1", cpu=1, terminating=True),
    ]
    v = view(nodes, victims)
    found = homes.homeless([v.pods[p.uid] for p in victims], homes.of(v), node="n1")
    assert (found.count, found.pods) == (3, ("default/c", "default/d", "default/e"))
    assert found.reasons == (NO_ROOM, NO_CONTROLLER, SAME_NODE["DaemonSet"])
    assert found.describe() == (
        "3 victim(s) have nowhere else to go: default/c (its replacement fits on no other node without preemption); "
        "default/d (no controller re-creates it); default/e (its DaemonSet re-creates it on this node only)"
    )
    none = homes.homeless((v.pods[p.uid] for p in victims[:2]), homes.of(v), node="n1")
    assert none is homes.NONE_HOMELESS and none.count == 0 and none.describe() == "every victim has somewhere else to go"


def test_selective_placements_walk_only_the_nodes_they_name():
    """A pinned or pooled shape looks at its own nodes, whatever the order by free room."""
    nodes = [node(f"n{i}", cpu=10 + i, labels={"pool": "big" if i in (7, 3) else "small"}) for i in range(10)]
    v = view(nodes, [pod("v", node="n0", cpu=1, kind=RS, node_selector={"pool": "big"})])
    h, victim = homes.of(v), v.pods["uid-default-v"]
    assert h.home(victim, excluding="n0") == "n3" and h.home(victim, excluding="n3") == "n7"
    # Looking at the pool's own nodes after the first candidate (n0, in the pool: found),
    # the pool's other node is found too.
    nodes = [node(f"n{i}", cpu=10 + i, labels={"pool": "big" if i in (0, 7) else "small"}) for i in range(10)]
    with mock.patch.object(homes, "PROBE", 0), mock.patch.object(homes, "WALK", 1):
        v = view(nodes, [pod("v", node="n0", cpu=1, kind=RS, node_selector={"pool": "big"})])
        h, victim = homes.of(v), v.pods["uid-default-v"]
        assert h.home(victim, excluding="n0") == "n7" and h.home(victim, excluding="n7") == "n0"


@mock.patch.object(homes, "SHAPES", 3)
@mock.patch.object(homes, "NODE_SETS", 2)
@mock.patch.object(homes, "PROBE", 0)
@mock.patch.object(homes, "WALK", 0)
def test_what_a_view_keeps_is_bounded():
    nodes = [node(f"n{i}", labels={"pool": f"p{i % 4}"}) for i in range(8)]
    victims = [pod(f"v{i}", node="n0", cpu=1 + i, kind=RS, node_selector={"pool": f"p{i % 4}"}) for i in range(6)]
    v = view(nodes, victims)
    h = homes.of(v)
    assert [h.home(v.pods[p.uid], excluding="n0") for p in victims] == ["n4", "n1", "n2", "n3", "n4", "n1"]
    assert (len(h._found), len(h._admitted)) == (3, 2)


# Brute force: every node but the excluded one, in full.


def brute(v, victim, excluding):
    if victim.placement.owner_kind in (None, *SAME_NODE):
        return set()
    fits = set()
    for name, info in v.nodes.items():
        if name == excluding or not victim.placement.admits(info.node):
            continue
        held = [p.requests for p in v.nominated.get(name, ()) if p.priority >= victim.priority]
        used = resources.add(info.requested, *held)
        if not resources.shortfalls(request=victim.requests, allocatable=info.node.allocatable, used=used):
            fits.add(name)
    return fits


LABELS = st.dictionaries(st.sampled_from(["pool", "zone", "cores"]), st.sampled_from(["a", "b", "8", "16"]), max_size=3)
TAINTS = st.lists(st.sampled_from(["d=a:NoSchedule", "d=b:NoExecute", "d=a:PreferNoSchedule", "e:NoSchedule"]), max_size=2, unique=True)
TOLERATIONS = st.lists(
    st.sampled_from([tolerate("d", "a"), tolerate("d", effect="NoExecute"), tolerate("e", effect="NoSchedule"), tolerate(),
                     tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule")]),
    max_size=2,
)
EXPRESSIONS = st.sampled_from(
    [("pool", "In", "a"), ("pool", "NotIn", "b"), ("zone", "Exists"), ("zone", "DoesNotExist"), ("cores", "Gt", "8"), ("cores", "Lt", "16")]
)
TERMS = st.one_of(
    st.none(),
    st.lists(
        st.builds(
            lambda exprs, name: term(*exprs, fields=((("metadata.name", "In", name),) if name else ())),
            st.lists(EXPRESSIONS, max_size=2),
            st.sampled_from([None, None, "n1", "n2"]),
        ),
        max_size=2,
    ).map(tuple),
)


@st.composite
def scenes(draw):
    count = draw(st.integers(1, 6))
    nodes = [
        node(f"n{i}", cpu=draw(st.integers(0, 4)), pods=draw(st.integers(1, 3)), labels=draw(LABELS), taints=tuple(draw(TAINTS)),
             unschedulable=draw(st.booleans()) and draw(st.booleans()))
        for i in range(count)
    ]
    names = [n.name for n in nodes]
    others = []
    for i in range(draw(st.integers(0, 8))):
        bound = draw(st.sampled_from([*names, None]))
        others.append(pod(f"o{i}", node=bound, nominated=None if bound else draw(st.sampled_from(names)), cpu=draw(st.integers(0, 2)),
                          priority=draw(st.integers(0, 2)), terminating=draw(st.booleans()) and draw(st.booleans())))
    victims = [
        pod(f"v{i}", node=draw(st.sampled_from(names)), cpu=draw(st.integers(0, 3)), priority=draw(st.integers(0, 2)),
            kind=draw(st.sampled_from([RS, RS, RS, "StatefulSet", "DaemonSet", None])), node_selector=draw(LABELS.filter(lambda d: len(d) < 2)),
            affinity=draw(TERMS), tolerations=tuple(draw(TOLERATIONS)))
        for i in range(draw(st.integers(1, 4)))
    ]
    return view(nodes, [*others, *victims]), victims, names


def agree(v, victims, names, data):
    h = homes.of(v)  # one per view: shapes and indexes are shared between the questions
    for victim in victims * 2:
        excluding = data.draw(st.sampled_from(names))
        fits = brute(v, victim, excluding)
        found = h.home(v.pods[victim.uid], excluding=excluding)
        assert (found is None) == (not fits), (found, fits)
        assert found is None or found in fits
    # Adding a victim never lowers the count of homeless ones.
    excluding = data.draw(st.sampled_from(names))
    counts = [homes.homeless([v.pods[p.uid] for p in victims[:k]], h, node=excluding).count for k in range(len(victims) + 1)]
    assert counts == sorted(counts)


@settings(max_examples=500, deadline=None)
@given(scene=scenes(), data=st.data(), probe=st.sampled_from([0, 1, homes.PROBE]), walk=st.sampled_from([0, 1, 2, homes.WALK]))
def test_home_agrees_with_a_walk_of_every_node(scene, data, probe, walk):
    """Also in the next view, as the live store makes it: one node's pods changed, the
    summaries of the others carried over. ``probe`` and ``walk`` small, to take the paths of
    large views on small ones (see Homes._search)."""
    v, victims, names = scene
    with mock.patch.object(homes, "PROBE", probe), mock.patch.object(homes, "WALK", walk):
        agree(v, victims, names, data)
        changed = data.draw(st.sampled_from(names))
        gone = {p.uid for p in v.nodes[changed].pods if p.uid not in {x.uid for x in victims}}
        arrived = pod("new", node=changed, cpu=data.draw(st.integers(0, 2)))
        after = view([i.node for i in v.nodes.values()], [*(p for p in v.pods.values() if p.uid not in gone), arrived])
        after = dataclasses.replace(after, memo=v.carry_memo(dirty_nodes={changed}, budgets_changed=False))
        agree(after, victims, names, data)
        for (what, *_), table in after.memo.items():  # each node's free room, ascending
            if what == homes.FREE_ROOM:
                assert table.keys() == after.nodes.keys() and list(table.values()) == sorted(table.values())


@mock.patch.object(homes, "PROBE", 0)
@mock.patch.object(homes, "WALK", 0)
def test_free_room_is_carried_to_the_next_view_for_nodes_that_did_not_change():
    nodes = [node("n1", cpu=4), node("n2", cpu=4), node("n3", cpu=4)]
    before = view(nodes, [pod("v", node="n1", cpu=3, kind=RS), pod("a", node="n2", cpu=1)])
    # Free cpu: n3 4, n2 3, n1 1; n3 and n2 have the 3 asked, n3 the most.
    assert homes.of(before).home(before.pods["uid-default-v"], excluding="n1") == "n3"
    assert list(before.memo[(homes.FREE_ROOM, "cpu")].items()) == [("n3", -4000), ("n2", -3000), ("n1", -1000)]
    after = view(nodes, [pod("v", node="n1", cpu=3, kind=RS), pod("b", node="n3", cpu=3.5)])
    after = dataclasses.replace(after, memo=before.carry_memo(dirty_nodes={"n2", "n3"}, budgets_changed=False))
    assert after.memo[(homes.FREE_ROOM, "cpu")] == {"n1": -1000}
    assert homes.of(after).home(after.pods["uid-default-v"], excluding="n1") == "n2"  # n2 4 free, n3 0.5
    assert list(after.memo[(homes.FREE_ROOM, "cpu")].items()) == [("n2", -4000), ("n1", -1000), ("n3", -500)]


# Read from Kubernetes objects (extender.state.translate).


def _pod(spec: dict, owners=()) -> kube.Pod:
    return kube.Pod.model_validate({"metadata": {"name": "p", "uid": "u", "ownerReferences": list(owners)}, "spec": spec})


RS_OWNER = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "rs-1", "controller": True}


def test_placement_is_read_from_the_pod():
    spec = {
        "nodeSelector": {"zone": "a", "pool": "gpu"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "cores", "operator": "Gt", "values": ["8"]}]},
                        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}]},
                    ]
                },
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "preference": {}}],
            }
        },
        "tolerations": [
            {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"},
            {"operator": "Exists"},
            {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        ],
    }
    other = {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "cm-1"}  # not the controller
    record = translate.pod_record(_pod(spec, [other, RS_OWNER]), {})
    assert record.placement == Placement(
        "ReplicaSet",
        (("pool", "gpu"), ("zone", "a")),
        (Term((Requirement("cores", "Gt", ("8",)),)), Term((), (Requirement("metadata.name", "NotIn", ("n9",)),))),
        (
            Toleration("dedicated", "Equal", "gpu", "NoSchedule"),
            Toleration("", "Exists", "", ""),
            Toleration("node.kubernetes.io/not-ready", "Exists", "", "NoExecute"),
        ),
    )
    assert record.owner == "rs-1"
    # Pods of one template share one placement; a request's pod is not kept in the table.
    assert translate.pod_record(_pod(spec, [RS_OWNER]), {}).placement is translate.pod_record(_pod(spec, [RS_OWNER]), {}).placement
    assert translate.pod_record(_pod(spec, [RS_OWNER]), {}, shared=False).placement is not record.placement


@pytest.mark.parametrize(
    "spec, owners, expected",
    [
        pytest.param({}, [], placement.BARE, id="bare-pod"),
        pytest.param({}, [{**RS_OWNER, "controller": False}], placement.BARE, id="owner-that-is-not-the-controller"),
        pytest.param({}, [{**RS_OWNER, "kind": "DaemonSet"}], Placement("DaemonSet"), id="daemonset"),
        pytest.param(
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}, [],
            Placement(affinity=()), id="required-affinity-without-terms-matches-nothing",
        ),
        pytest.param({"affinity": {"nodeAffinity": {}}}, [], placement.BARE, id="only-preferred-affinity"),
        pytest.param(
            {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "k", "operator": "SemverGt", "values": ["1.2.3"]}]}]}}}}, [],
            Placement(affinity=(Term((Requirement("k", "SemverGt", ("1.2.3",)),)),)), id="unknown-operator-is-read-and-matches-nothing",
        ),
        pytest.param(
            {"tolerations": ["oops", {"key": 5, "operator": "Exists"}, {"key": "k", "operator": None}]}, [],
            Placement(tolerations=(Toleration("k", "", "", ""),)), id="malformed-tolerations-tolerate-nothing",
        ),
    ],
)
def test_placement_edge_cases(spec, owners, expected):
    assert translate.pod_record(_pod(spec, owners), {}).placement == expected


def test_node_labels_taints_and_cordon_are_read():
    node_ = kube.Node.model_validate(
        {
            "metadata": {"name": "n1", "labels": {"pool": "gpu"}},
            "spec": {"unschedulable": True, "taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}]},
            "status": {"allocatable": {"cpu": "4", "pods": "110"}},
        }
    )
    record = translate.node_record(node_)
    assert (record.labels, record.taints, record.unschedulable) == (
        {"pool": "gpu"}, (Taint("dedicated", "gpu", "NoSchedule"), Taint("x", "", "NoExecute")), True
    )
    plain = translate.node_record(kube.Node.model_validate({"metadata": {"name": "n2"}}))
    assert (plain.labels, plain.taints, plain.unschedulable) == ({}, (), False)


def test_preempt_offers_the_node_whose_victim_has_a_home():
    # n1 and n2 (4 cpu) each run a 1-cpu priority-100 pod and a 2-cpu priority-1 pod: on n1 a
    # bare pod, on n2 a ReplicaSet's, whose replacement fits on the spare node (2 cpu, too small
    # for the 3-cpu preemptor). The bare pod is the younger: stock evicts it (gone for good);
    # reprieve the ReplicaSet's, which restarts on the spare node.
    from policy import preempt, stock
    from tests.builders import scheduler_proposals

    bare = pod("bare", node="n1", cpu=2, priority=1, start=200)
    owned = pod("owned", node="n2", cpu=2, priority=1, start=100, kind="ReplicaSet")
    high = [pod(f"high{i}", node=f"n{i}", cpu=1, priority=100) for i in (1, 2)]
    v = view([node("n1", cpu=4), node("n2", cpu=4), node("spare", cpu=2)], [bare, owned, *high])
    preemptor = pod("pre", cpu=3, priority=10)
    assert stock.decide(view=v, preemptor=preemptor, node_names=["n1", "n2", "spare"]).pick.chosen == "n1"
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor))
    assert list(decision.answer) == ["n2"]
    n1 = next(o for o in decision.outcomes if o.node == "n1")
    # Its bound says so without solving it (policy.bounds); solved, its reasons say why.
    assert n1.reasons == ("not solved: cannot beat n2: victims with no home at least 1 here vs 0",)
    full = preempt.decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor), exhaustive=True)
    n1 = next(o for o in full.outcomes if o.node == "n1")
    assert "victims with no home 1 here vs 0" in n1.reasons[-1], n1.reasons
    assert "1 victim(s) have nowhere else to go: default/bare (no controller re-creates it)" in n1.reasons


@settings(max_examples=300, deadline=None)
@given(scene=scenes())
def test_refusal_names_a_reason_exactly_where_admits_says_no(scene):
    """placement.refusal (the preemptor's filters, policy.stock) and placement.admits (victims'
    homes) are one judgement: a reason exactly where a node is not admitted."""
    v, victims, _ = scene
    for victim in victims:
        for info in v.nodes.values():
            reason = victim.placement.refusal(info.node)
            assert (reason == "") == victim.placement.admits(info.node), (reason, info.node)

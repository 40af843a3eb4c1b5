"""The live store publishes incrementally; every published view must equal a full rebuild."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from extender.live.store import GROUPS, Store
from extender.state.translate import group_kind
from extender.state.standings import Standings
from policy import bounds, prioritize, tenancy
from policy.criteria import pending_room
from policy.gangs import GroupMinimum
from policy.labels import Selector
from policy.view import ClusterView
from tests.builders import node, pdb, pod

KINDS = ("priorityclasses", "nodes", "poddisruptionbudgets", "pods", *sorted(GROUPS))
COSCHEDULING_GROUPS = group_kind("scheduling.x-k8s.io/v1alpha1")  # its keys are the builders' gangs'
NODES = ["n1", "n2", "n3"]
APPS = ["a", "b", "c"]

pod_op = st.tuples(
    st.just("pods"),
    st.integers(0, 7),  # which pod
    st.one_of(
        st.none(),  # delete
        st.tuples(
            st.sampled_from([*NODES, None]),  # bound to
            st.sampled_from([*NODES, None]),  # nominated to (if not bound)
            st.integers(0, 3),  # priority
            st.integers(1, 4),  # cpu
            st.sampled_from(APPS),  # app label
            st.integers(0, 2),  # memory (GiB), none at 0: a resource only some pods of a priority ask for
            st.booleans(),  # terminating (a pending one leaves the scheduling queue)
        ),
    ),
)
node_op = st.tuples(st.just("nodes"), st.integers(0, 2), st.one_of(st.none(), st.integers(1, 8)))
budget_op = st.tuples(
    st.just("poddisruptionbudgets"),
    st.integers(0, 2),
    st.one_of(st.none(), st.tuples(st.sampled_from(APPS), st.integers(0, 2), st.sampled_from(["ns1", "ns2"]))),
)
# A group object named after an app: (kind, namespace, app, minimum or None to delete, or "forget":
# the kind is no longer served). Minimum 0 is a group without a minimum (no record, as translate).
group_op = st.tuples(
    st.sampled_from(sorted(GROUPS)),
    st.sampled_from(["ns1", "ns2"]),
    st.sampled_from(APPS),
    st.one_of(st.none(), st.integers(0, 3), st.just("forget")),
)


def record(kind, i, spec):
    if spec is None:
        return None
    if kind == "pods":
        bound, nominated, priority, cpu, app, mem, terminating = spec
        return pod(
            f"p{i}", node=bound, nominated=None if bound else nominated, priority=priority, cpu=cpu, mem=mem, ns=pod_ns(i),
            terminating=terminating,
            labels={"app": app, **_spark(i, app)}, gang={"a": (app, 2), "b": (app, None)}.get(app),  # b: its group object's minimum
        )
    if kind == "nodes":
        return node(NODES[i], cpu=spec)
    app, allowed, ns = spec
    return pdb(f"b{i}", allowed=allowed, match={"app": app}, ns=ns)


def _spark(i: int, app: str) -> dict[str, str]:
    """App c's pods are a Spark application (policy.apps): pod 0 its driver, the rest executors."""
    if app != "c":
        return {}
    return {"spark-app-selector": app, "spark-role": "driver" if i == 0 else "executor"}


def pod_ns(i: int) -> str:
    return "ns1" if i % 2 else "ns2"


def key(kind, i, spec, rec):
    if kind == "pods":
        return f"uid-{pod_ns(i)}-p{i}"  # the builders' UID: a pod keeps it across updates
    if kind == "nodes":
        return NODES[i]
    return f"b{i}"


def digest(view: ClusterView) -> dict:
    """What policy reads, with incidental order removed."""
    return {
        "nodes": {n: (i.node, sorted(p.uid for p in i.pods), i.requested, [i.requested_at_or_above(p) for p in range(5)]) for n, i in view.nodes.items()},
        # NodeInfo as NodeInfo.build makes it: the pods in its order, its levels and sums (the
        # store keeps them up to date rather than building them: _node_info).
        "node_infos": dict(view.nodes),
        "pods": dict(view.pods),
        "nominated": {n: sorted(p.uid for p in ps) for n, ps in view.nominated.items() if ps},
        "waiting": dict(view.waiting),  # policy.criteria.pending_room's queue
        "budgets": {ns: sorted(b.key for b in bs) for ns, bs in view.budgets.items() if bs},
        "pod_budgets": {u: sorted(b.key for b in bs) for u, bs in view.pod_budgets.items() if bs},
        "budget_members": {k: sorted(p.uid for p in ps) for k, ps in view.budget_members.items() if ps},
        "budget_records": {b.key: b for bs in view.budgets.values() for b in bs},
        "gang_members": {k: sorted(p.uid for p in ps) for k, ps in view.gang_members.items() if ps},
        "group_minimums": dict(view.group_minimums),
        "gangs": {p.uid: view.gang_of(p) for p in view.pods.values()},
        "app_members": {k: sorted(p.uid for p in ps) for k, ps in view.app_members.items() if ps},
        "apps": {p.uid: view.app_of(p) for p in view.pods.values()},
    }


@settings(max_examples=150, deadline=None)
@given(
    batches=st.lists(st.lists(st.one_of(pod_op, node_op, budget_op, group_op), max_size=12), min_size=1, max_size=6),
    skip=st.integers(0, 3),
)
def test_every_published_view_equals_a_full_rebuild(batches, skip):
    store = Store(KINDS)
    standings = Standings(RULES)
    for kind in KINDS:
        store.replace(kind, {}, "1")
    rv = 1
    last = {kind: "1" for kind in KINDS}
    for batch in batches:
        for op in batch:
            rv += 1

            def apply(kind, k, rec):
                store.apply(kind, k, rec, str(rv))
                last[kind] = str(rv)

            if op[0] in GROUPS:
                kind, ns, app, minimum = op
                if minimum == "forget":
                    store.forget(kind)
                    last.pop(kind, None)
                    continue
                rec = group_minimum(kind, ns, app, minimum)
                if kind not in last:  # forgotten, served again: a fresh list
                    store.replace(kind, {f"{ns}/{app}": rec} if rec else {}, str(rv))
                    last[kind] = str(rv)
                else:
                    apply(kind, f"{ns}/{app}", rec)
                continue
            kind, i, spec = op
            rec = record(kind, i, spec)
            # budgets are keyed namespace/name in the live store
            k = key(kind, i, spec, rec)
            if kind == "poddisruptionbudgets":
                existing = [kk for kk in store.get(kind) if kk.endswith(f"/b{i}")]
                if rec is None:
                    for kk in existing:
                        apply(kind, kk, None)
                    continue
                for kk in existing:
                    if kk != rec.key:
                        apply(kind, kk, None)
                k = rec.key
            apply(kind, k, rec)
        _, versions, view = store.build_view()
        full = ClusterView.build(
            nodes=store.get("nodes").values(),
            pods=store.get("pods").values(),
            budgets=store.get("poddisruptionbudgets").values(),
            priority_classes=store.get("priorityclasses").values(),
            group_minimums=[m for kind in GROUPS for m in store.get(kind).values()],
        )
        assert digest(view) == digest(full)
        assert versions == last
        # The pending pods' queue, grouped (policy.criteria.pending_room): carried from the
        # previous view and updated for the pods changed, it is what the full view groups.
        assert grouping(view) == grouping(full)
        # Summaries carried over from the previous view (ClusterView.summary) are those of this
        # one; computing them every time keeps each view's memo full for the next.
        assert summaries(view) == summaries(full)
        if skip:  # several views pass between two assessments: their changes add up
            skip -= 1
            continue
        assert standing(standings.of(view)) == standing(tenancy.assess(RULES, full))


def grouping(view: ClusterView) -> tuple:
    counts, labelled, by_key = pending_room._grouped(view)
    return (
        {placement: dict(needs) for placement, needs in counts.items()},
        labelled,
        {key: sorted(p.uid for p in pods) for key, pods in by_key.items()},
    )


def group_minimum(kind: str, ns: str, app: str, minimum: int | None) -> GroupMinimum | None:
    """The record of a group object: the coscheduling kind's key is the one the builders' gang
    pods carry ("test ns/app"); the other kinds' keys are their own, as their frameworks' are."""
    if not minimum:
        return None
    key = f"test {ns}/{app}" if kind == COSCHEDULING_GROUPS else f"{kind} {ns}/{app}"
    return GroupMinimum(key, minimum, f"PodGroup {ns}/{app}")


# Queues by namespace and by label, so that pods move between them as they change.
RULES = tenancy.Rules(
    queues=(
        tenancy.Queue("labelled", selector=Selector((("app", "b"),)), weight=2, guaranteed={"cpu": 2000}),
        tenancy.Queue("one", namespaces=frozenset({"ns1"}), weight=1),
    ),
)


def standing(s: tenancy.Standing) -> tuple:
    """What decisions read of a standing, amounts of zero left out (an empty tally has none)."""

    def nonzero(v):
        return {r: x for r, x in v.items() if x}

    return (
        {n: (nonzero(q.usage), nonzero(q.demand), nonzero(q.deserved), nonzero(q.share)) for n, q in s.queues.items()},
        dict(s.membership),
    )


def summaries(view: ClusterView) -> dict:
    return {
        name: (
            [bounds.below(view, info, p) for p in range(5)],
            view.summary(("free", ("cpu", "memory")), prioritize._free)(name),
        )
        for name, info in view.nodes.items()
    }


def test_pods_carry_when_the_store_first_saw_them_bound():
    now = [100.0]
    store = Store(KINDS, clock=lambda: now[0])
    listed = pod("listed", node="n1", cpu=1)
    store.replace("pods", {listed.uid: listed}, "1")  # the first list: as old as the view
    pending = pod("p", cpu=1)
    store.apply("pods", pending.uid, pending, "2")
    now[0] = 105.0
    store.apply("pods", pending.uid, pod("p", cpu=1, node="n1"), "3")  # bound: news at 105
    now[0] = 107.0
    store.apply("pods", pending.uid, pod("p", cpu=1, node="n1", terminating=True), "4")  # still there
    late = pod("late", node="n2", cpu=1)
    store.replace("pods", {**store.get("pods"), late.uid: late}, "5")  # a relist finds it bound: news
    pods = store.build_view()[2].pods
    assert (pods[listed.uid].bound_at, pods[pending.uid].bound_at, pods[late.uid].bound_at) == (None, 105.0, 107.0)


def test_the_change_log_names_the_first_view_without_a_deleted_pod():
    store = Store(KINDS)
    for kind in KINDS:
        store.replace(kind, {}, "1")
    a, b, c = pod("a", cpu=1), pod("b", cpu=1), pod("c", cpu=1)
    for p in (a, b, c):
        store.apply("pods", p.uid, p, "2")
    first = store.build_view()[2]
    store.apply("pods", a.uid, None, "3")  # a watch event
    second = store.build_view()[2]
    store.replace("pods", {c.uid: c}, "4")  # a relist that no longer has b: deleted meanwhile
    third = store.build_view()[2]
    log = third.changes
    assert (log.deleted_at(a.uid), log.deleted_at(b.uid), log.deleted_at(c.uid)) == (second.revision, third.revision, None)
    assert first.revision < second.revision < third.revision


def test_the_change_log_forgets_deletions_no_record_can_ask_about():
    from extender.live.store import ChangeLog

    now = [0.0]
    log = ChangeLog(deleted_seconds=120.0, clock=lambda: now[0])
    log.record(None, deleted={"a"})
    now[0] = 100.0
    log.record(None, deleted={"b"})
    assert (log.deleted_at("a"), log.deleted_at("b")) == (1, 2)
    now[0] = 130.0
    log.record(None)
    assert (log.deleted_at("a"), log.deleted_at("b")) == (None, 2)


def test_a_group_objects_relist_or_loss_changes_only_the_minimums():
    # A PodGroup kind listed again (a 410, or discovery finding it) or forgotten changes no
    # node, pod or budget: the next view is incremental (it shares the previous view's nodes
    # and keeps its memo), not a rebuild of every node.
    store = Store(KINDS)
    store.replace("nodes", {"n1": node("n1", cpu=4)}, "1")
    store.replace(COSCHEDULING_GROUPS, {}, "1")
    first = store.build_view()[2]
    first.memo[("kept",)] = {}
    store.replace(COSCHEDULING_GROUPS, {"ns/a": group_minimum(COSCHEDULING_GROUPS, "ns", "a", 2)}, "2")
    second = store.build_view()[2]
    assert second.nodes is first.nodes and ("kept",) in second.memo
    assert list(second.group_minimums) == ["test ns/a"]
    store.forget(COSCHEDULING_GROUPS)
    third = store.build_view()[2]
    assert third.nodes is first.nodes and third.group_minimums == {}


def test_views_stay_whole_through_many_deletions():
    # The pod records' table is compacted when deletions pile up (Store._pods_copy): every view
    # on the way has every pod left, on its node, in NodeInfo.build's order and sums.
    store = Store(KINDS)
    for kind in KINDS:
        store.replace(kind, {}, "1")
    store.replace("nodes", {n: node(n, cpu=64) for n in NODES}, "1")
    pods = [pod(f"p{i}", node=NODES[i % 3], priority=i % 4, cpu=1 + i % 3, mem=i % 5 == 0, ns=pod_ns(i)) for i in range(90)]
    for i, p in enumerate(pods):
        store.apply("pods", p.uid, p, str(2 + i))
    store.build_view()
    for i, p in enumerate(pods[:80]):
        store.apply("pods", p.uid, None, str(100 + i))
        if i % 7 == 0 or i == 79:
            view = store.build_view()[2]
            full = ClusterView.build(nodes=store.get("nodes").values(), pods=store.get("pods").values())
            assert dict(view.nodes) == dict(full.nodes) and view.pods == full.pods
    assert len(view.pods) == 10


def test_the_pending_pods_grouping_is_carried_from_view_to_view():
    # Each view's queue grouping (policy.criteria.pending_room) is the last one's, updated for
    # the pods that changed between them: it must be what grouping the view afresh gives, through
    # every way a pod leaves the queue, comes into it or changes in it.
    store = Store(KINDS)
    for kind in KINDS:
        store.replace(kind, {}, "1")
    store.replace("nodes", {n: node(n, cpu=8) for n in NODES}, "1")
    rv = iter(range(2, 1000))

    def put(p):
        store.apply("pods", p.uid, p, str(next(rv)))

    waiting = [pod(f"w{i}", cpu=1 + i % 2, ns=pod_ns(i)) for i in range(6)]
    for p in waiting:
        put(p)
    steps = [
        lambda: put(pod("w0", cpu=3, ns=pod_ns(0))),  # resized: its old shape out, its new one in
        lambda: store.apply("pods", waiting[1].uid, None, str(next(rv))),  # deleted
        lambda: put(pod("w2", cpu=1, ns=pod_ns(2), nominated="n1")),  # nominated: its room is held
        lambda: put(pod("w3", cpu=2, ns=pod_ns(3), node="n2")),  # bound
        lambda: put(pod("w4", cpu=1, ns=pod_ns(4), terminating=True)),  # deleted, leaving
        lambda: put(pod("w2", cpu=1, ns=pod_ns(2))),  # its nomination cleared: back in the queue
        lambda: put(pod("w6", cpu=2, ns=pod_ns(6))),  # a new one
    ]
    view = store.build_view()[2]
    pending_room.queue(view, pod("x"))  # grouped once; from here on each view carries it
    for step in steps:
        step()
        view = store.build_view()[2]
        assert "grouped" in view._pending  # handed on, not grouped afresh below
        carried = grouping(view)
        assert carried == grouping(ClusterView.build(nodes=store.get("nodes").values(), pods=store.get("pods").values()))
    assert sum(sum(needs.values()) for needs in carried[0].values()) == 4  # w0, w2, w5, w6

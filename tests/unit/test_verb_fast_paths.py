"""filter and prioritize answer from the view's summaries where no room is held and no sibling
runs on a node asked (policy.filter.filter_nodes, policy.prioritize.score_nodes): the answer is
always the one computed node by node (filter_each, score_each) on a view built from scratch,
including on the live store's views, which carry those summaries over from one to the next."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from extender.live.store import Store
from policy.filter import filter_each, filter_nodes
from policy.prioritize import score_each, score_nodes
from policy.view import ClusterView
from tests.builders import node, pdb, pod

KINDS = ("priorityclasses", "nodes", "poddisruptionbudgets", "pods")
NODES = ["n1", "n2", "n3", "n4"]
SCHEDULERS = ["default-scheduler", "volcano"]

# A pod: bound, or nominated, or pending; its priority, cpu, scheduler and app label.
pod_spec = st.tuples(
    st.sampled_from([*NODES, None]), st.sampled_from([*NODES, None]), st.integers(0, 3), st.integers(1, 4),
    st.sampled_from(SCHEDULERS), st.sampled_from(["a", "b"]),
)
pod_op = st.tuples(st.just("pods"), st.integers(0, 9), st.one_of(st.none(), pod_spec))
budget_op = st.tuples(st.just("poddisruptionbudgets"), st.sampled_from(["a", "b"]), st.booleans())
asking = st.tuples(
    st.integers(0, 4),  # priority
    st.integers(1, 6),  # cpu
    st.sampled_from(SCHEDULERS),
    st.sampled_from(["a", "b", "c"]),  # app: which budgets cover it
    st.sampled_from([*NODES, None]),  # its own nomination
    st.integers(0, 9),  # which pod it is, if it is one of the view's (its own nomination, its own budget)
    st.booleans(),  # is it
)
names = st.lists(st.sampled_from([*NODES, "unknown"]), max_size=6)  # the scheduler sends each once; any list is answered


def make_pod(i, spec):
    bound, nominated, priority, cpu, scheduler, app = spec
    return pod(f"p{i}", node=bound, nominated=None if bound else nominated, priority=priority, cpu=cpu,
               scheduler=scheduler, labels={"app": app})


def the_pod(spec):
    priority, cpu, scheduler, app, nominated, i, existing = spec
    return pod(f"p{i}" if existing else "incoming", priority=priority, cpu=cpu, scheduler=scheduler,
               labels={"app": app}, nominated=nominated)


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(st.lists(st.one_of(pod_op, budget_op), max_size=8), min_size=1, max_size=5),
    asks=st.lists(st.tuples(asking, names), min_size=1, max_size=4),
)
# Held room on one node, nothing on the other: the summary must not pass the held one.
@example(batches=[[("pods", 0, ("n1", None, 0, 4, "volcano", "a")), ("pods", 1, (None, "n1", 3, 4, "volcano", "a"))]],
         asks=[((1, 4, "default-scheduler", "c", None, 0, False), ["n1", "n2"])])
# Room held on two nodes, one of them asked: only that one is answered, in the order asked.
@example(batches=[[("pods", 0, (None, "n1", 3, 4, "volcano", "a")), ("pods", 1, (None, "n2", 3, 4, "volcano", "a")),
                   ("pods", 2, ("n1", None, 0, 2, "volcano", "a")), ("pods", 3, ("n2", None, 0, 2, "volcano", "a"))]],
         asks=[((1, 4, "default-scheduler", "c", None, 0, False), ["n3", "n1", "unknown"])])
# The asking scheduler's own nominee is the highest on n1, another scheduler's holds room there too.
@example(batches=[[("pods", 0, (None, "n1", 3, 1, "default-scheduler", "a")), ("pods", 1, (None, "n1", 2, 4, "volcano", "a")),
                   ("pods", 2, ("n1", None, 0, 2, "volcano", "a"))]],
         asks=[((1, 4, "default-scheduler", "c", None, 0, False), ["n1"])])
# Nominations of priorities 3, 0 and 2 on three nodes, the first holding room against priority 1.
@example(batches=[[("pods", 0, (None, "n1", 3, 4, "volcano", "a")), ("pods", 1, (None, "n2", 0, 1, "volcano", "a")),
                   ("pods", 2, (None, "n3", 2, 1, "volcano", "a")), ("pods", 3, ("n1", None, 0, 2, "volcano", "a"))]],
         asks=[((1, 4, "default-scheduler", "c", None, 0, False), ["n1", "n2", "n3"])])
def test_the_fast_paths_answer_as_node_by_node(batches, asks):
    store = Store(KINDS)
    store.replace("priorityclasses", {}, "1")
    store.replace("nodes", {n: node(n, cpu=8) for n in NODES}, "1")
    store.replace("poddisruptionbudgets", {}, "1")
    store.replace("pods", {}, "1")
    for batch in batches:
        for op in batch:
            if op[0] == "pods":
                _, i, spec = op
                record = None if spec is None else make_pod(i, spec)
                store.apply("pods", f"uid-default-p{i}", record, "2")
            else:
                _, app, present = op
                store.apply("poddisruptionbudgets", f"default/{app}", pdb(app, allowed=1, match={"app": app}) if present else None, "2")
        view = store.build_view()[2]  # its summaries carried over from the previous view's
        scratch = ClusterView.build(nodes=store.get("nodes").values(), pods=store.get("pods").values(),
                                    budgets=store.get("poddisruptionbudgets").values())
        for spec, asked in asks:
            incoming = the_pod(spec)
            decision = filter_nodes(view=view, pod=incoming, node_names=asked)
            expected = filter_each(view=scratch, pod=incoming, node_names=asked)
            assert (decision.passed, list(decision.rejected.items())) == (expected.passed, list(expected.rejected.items()))
            for _ in range(3):  # the second keeps the pod shape's scores, the third answers from them
                fast = score_nodes(view=view, pod=incoming, node_names=asked)
                assert [tuple(s) for s in fast] == [tuple(s) for s in score_each(view=scratch, pod=incoming, node_names=asked)]

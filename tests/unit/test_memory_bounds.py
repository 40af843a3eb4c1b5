"""Nothing a request or a churning cluster sends can grow reprieve's memory or log lines
without limit: every cache has a bound, and every log field a length."""

from __future__ import annotations

import logging

import orjson
import pytest

from extender.serving import logs
from extender.state import kube, translate

CACHES = [
    pytest.param(translate._shared_mapping, id="label-sets-and-vectors"),
    pytest.param(translate._shared_name, id="names"),
    pytest.param(translate._units, id="quantities"),
    pytest.param(translate._shared_mark, id="gang-marks"),
    pytest.param(translate._shared_placement, id="placements"),
]


def _pod(i: int) -> kube.Pod:
    return kube.Pod.model_validate(
        {
            "metadata": {
                "name": f"p{i}",
                "namespace": f"ns{i}",
                "uid": f"u{i}",
                "labels": {"app": f"a{i}"},
                "annotations": {"scheduling.k8s.io/group-name": f"g{i}"},  # a Volcano gang each
            },
            "spec": {
                "nodeName": f"node-{i}",
                "nodeSelector": {"pool": f"p{i}"},  # a placement each (policy.placement)
                "containers": [{"resources": {"requests": {"cpu": f"{i}m", "memory": f"{i}Mi"}}}],
            },
        }
    )


@pytest.fixture(scope="module")
def churned():
    """Distinct pods from a churning cluster: more label sets, names and quantities than any bound."""
    for i in range(translate.SHARED_ENTRIES + 500):
        translate.pod_record(_pod(i), {})


@pytest.mark.parametrize("cache", CACHES)
def test_every_cache_stops_at_its_bound(churned, cache):
    bound = cache.cache_info().maxsize
    assert bound is not None and 0 < bound <= translate.SHARED_ENTRIES
    assert cache.cache_info().currsize == bound


def test_shared_values_are_shared_while_cached():
    a, b = translate.pod_record(_pod(1), {}), translate.pod_record(_pod(1), {})
    assert a.labels is b.labels and a.requests is b.requests and a.node_name is b.node_name and a.gang is b.gang
    assert a.placement is b.placement


def test_request_pods_never_enter_the_shared_tables():
    translate.pod_record(_pod(0), {})
    shared = (translate._shared_mapping, translate._shared_name, translate._shared_mark, translate._shared_placement)
    before = [cache.cache_info().currsize for cache in shared]
    for cache in shared:
        cache.cache_clear()
    for i in range(100):
        record = translate.pod_record(_pod(10**6 + i), {}, shared=False)
    assert record.labels == {"app": f"a{10**6 + 99}"} and record.node_name == f"node-{10**6 + 99}"
    assert record.gang.key == f"volcano ns{10**6 + 99}/g{10**6 + 99}"
    assert record.placement.node_selector == (("pool", f"p{10**6 + 99}"),)
    assert [cache.cache_info().currsize for cache in shared] == [0, 0, 0, 0]
    assert 0 not in before


def _line(**fields) -> str:
    record = logging.LogRecord("reprieve.decisions", logging.INFO, __file__, 1, "preempt", (), None)
    record.fields = fields
    return logs.JsonFormatter().format(record)


def test_log_fields_are_cut_to_their_documented_length():
    line = _line(
        pod="p" * 1_000_000,
        unknown=[f"node-{i}" for i in range(150_000)],
        nodes={f"node-{i}": {"reasons": ["r" * 5_000]} for i in range(5_000)},
        priority=2**70,
    )
    entry = orjson.loads(line)
    assert len(entry["pod"]) < logs.LOG_STRING_CHARS + 40 and entry["pod"].endswith("(998976 more characters)")
    assert len(entry["unknown"]) == logs.LOG_ITEMS + 1 and entry["unknown"][-1] == "... 149000 more entries"
    assert len(entry["nodes"]) == logs.LOG_ITEMS + 1 and entry["nodes"]["..."] == "4000 more entries"
    assert entry["priority"] == str(2**70)  # orjson cannot write it; the line is not lost
    assert len(line) < 1_500_000  # unbounded, it would be 12 MB


def test_short_log_fields_are_untouched():
    fields = {"pod": "ns/p", "nodes": {"a": {"victims": ["x", "y"], "pdb_violations": 0}}, "priority": 5}
    assert {k: orjson.loads(_line(**fields))[k] for k in fields} == fields


def test_a_view_keeps_a_bounded_number_of_tables_named_by_requests():
    # Every preemptor priority and every pod shape names tables of its own (policy.bounds,
    # policy.prioritize): requests can name any number, the view keeps REQUEST_TABLES, the
    # most recently asked.
    from policy import view as views
    from policy.prioritize import score_nodes
    from policy.preempt import Proposal, decide
    from tests.builders import node, pod, view

    v = view([node("n1", cpu=4)], [pod("low", node="n1", priority=0, cpu=4)])
    proposals = {"n1": Proposal(("uid-default-low",), 0)}

    def shaped():
        return [w for w in v.memo if views.REQUEST in w]

    # A shape asked once keeps nothing: a one-off request would only push out a table in use.
    decide(view=v, preemptor=pod("pre", priority=5, cpu=1), proposals=proposals)
    score_nodes(view=v, pod=pod("p", cpu=0.5), node_names=["n1"])
    assert shaped() == []
    for i in range(3 * views.REQUEST_TABLES):
        for _ in range(2):  # kept from the second request that names it
            decide(view=v, preemptor=pod("pre", priority=10 + i, cpu=1 + i % 3), proposals=proposals)
            score_nodes(view=v, pod=pod("p", cpu=0.001 * (i + 1)), node_names=["n1"])
        assert len(shaped()) <= views.REQUEST_TABLES
    assert len(shaped()) == views.REQUEST_TABLES
    # The names asked once are remembered up to a bound too.
    for i in range(2 * views.REQUEST_NAMES):
        score_nodes(view=v, pod=pod("p", cpu=100 + i), node_names=["n1"])
    assert len(v.memo[views._ASKED_ONCE]) == views.REQUEST_NAMES
    # A table asked for again moves to the end, so one in steady use is never dropped.
    first = shaped()[0]
    v.summary(first, lambda info, what: None)
    assert shaped()[-1] == first
    for _ in range(2):
        score_nodes(view=v, pod=pod("p", cpu=99), node_names=["n1"])
    assert first in shaped()


def test_a_request_table_dropped_for_a_budget_change_is_made_again_at_once():
    import dataclasses

    from policy import view as views
    from policy.preempt import Proposal, decide
    from tests.builders import node, pod, view

    v = view([node("n1", cpu=4)], [pod("low", node="n1", priority=0, cpu=4)])
    proposals = {"n1": Proposal(("uid-default-low",), 0)}
    for _ in range(2):
        decide(view=v, preemptor=pod("pre", priority=10, cpu=1), proposals=proposals)
    kept = [w for w in v.memo if views.REQUEST in w]
    assert kept and all(w[0] == views.BUDGETS for w in kept)
    after = dataclasses.replace(v, memo=v.carry_memo(dirty_nodes=(), budgets_changed=True))
    assert not [w for w in after.memo if views.REQUEST in w]
    decide(view=after, preemptor=pod("pre", priority=10, cpu=1), proposals=proposals)
    assert sorted(w for w in after.memo if views.REQUEST in w) == sorted(kept)

"""policy.scoring: where the replay binds a pod that fits, by kube-scheduler's resource scores.

Expected scores are worked out by hand from upstream's formulas (noderesources
least_allocated.go, most_allocated.go, balanced_allocation.go), not by calling the module."""

from __future__ import annotations

from policy import scoring
from policy.scoring import Placement
from tests.builders import node, pod, view

LEAST, MOST, FIRST = Placement.LEAST_ALLOCATED, Placement.MOST_ALLOCATED, Placement.FIRST


def test_least_allocated_and_balance_by_hand():
    # n1: 4 cpu, 8 GiB, 1 cpu and 2 GiB used; the pod asks 1 cpu, 2 GiB.
    # LeastAllocated: cpu (4000-2000)*100/4000 = 50, memory (8-4)*100/8 = 50 -> 50.
    # BalancedAllocation: fractions 0.5 and 0.5 -> std 0 -> 100. Total 150.
    v = view([node("n1", cpu=4, mem=8)], [pod("used", node="n1", cpu=1, mem=2)])
    assert scoring.score(v, pod("new", cpu=1, mem=2), "n1", LEAST) == 150


def test_least_allocated_counts_upstreams_non_zero_defaults_and_balance_skips_best_effort():
    # A BestEffort pod counts as 100m and 200 MiB for LeastAllocated; BalancedAllocation skips it.
    # n1: 1 cpu, 1 GiB, empty: cpu (1000-100)*100/1000 = 90, memory (1024-200)*100/1024 = 80 -> 85.
    v = view([node("n1", cpu=1, mem=1)], [])
    assert scoring.score(v, pod("be"), "n1", LEAST) == 85


def test_most_allocated_scores_the_extended_resource_the_pod_asks_for():
    # gpu node: 8000 milli-GPUs, 6000 used; the pod asks 1000: gpu 7000*100/8000 = 87;
    # cpu (1+1)/8 -> 25, memory (2+2)/16 -> 25: (25+25+87)//3 = 45. Balance: 0.25 and 0.25 -> 100.
    v = view([node("g", cpu=8, mem=16, **{"example.com/gpu-milli": 8000})],
             [pod("used", node="g", cpu=1, mem=2, **{"example.com/gpu-milli": 6000})])
    new = pod("new", cpu=1, mem=2, **{"example.com/gpu-milli": 1000})
    assert scoring.score(v, new, "g", MOST) == 145


def test_spread_packs_and_first_choose_differently():
    v = view([node("a", cpu=4, mem=8), node("b", cpu=4, mem=8)], [pod("used", node="a", cpu=2, mem=4)])
    new = pod("new", cpu=1, mem=2)
    assert scoring.choose(v, new, ["a", "b"], LEAST) == "b"  # the emptier node
    assert scoring.choose(v, new, ["a", "b"], MOST) == "a"  # the fuller node
    assert scoring.choose(v, new, ["b", "a"], FIRST) == "a"  # by name, whatever the order given


def test_ties_go_to_the_first_node_by_name():
    v = view([node("node-10", cpu=4), node("node-9", cpu=4), node("node-1", cpu=4)], [])
    assert scoring.choose(v, pod("new", cpu=1, mem=1), ["node-9", "node-10", "node-1"], LEAST) == "node-1"

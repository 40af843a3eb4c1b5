"""policy.criteria.work_lost: the work a victim loses since its start or last checkpoint, in
millicore-seconds (shown as core-seconds), and its bound (policy.bounds)."""

from __future__ import annotations

import pytest

from policy import bounds, ranking
from policy.criteria import WORK_LOST, Facts, work_lost
from policy.workload_gpu import GPU_MILLI
from tests.builders import node, pod, view

NOW = 10_000.0
NODE = {"cpu": 8000, "memory": 32 * 2**30, "pods": 110}  # 8 cores


def facts(now=NOW, allocatable=NODE) -> Facts:
    return Facts(lambda p: (), now=now, allocatable=allocatable)


def test_a_pod_checkpointed_ten_minutes_ago_loses_less_than_one_started_an_hour_ago_with_none():
    # Both ask 2 of the node's 8 cores (dominant share 2/8, times 8 cores = 2 cores).
    # saved: started 2 h before NOW, checkpointed 10 min before: 2 cores x 600 s = 1,200 core-seconds.
    # plain: started 1 h before NOW, no checkpoint: 2 cores x 3,600 s = 7,200 core-seconds.
    # (Values are in millicore-seconds: 2,000 millicores x 600 s = 1,200,000.)
    saved = pod("saved", node="n1", cpu=2, start=NOW - 7200, checkpoint=NOW - 600)
    plain = pod("plain", node="n1", cpu=2, start=NOW - 3600)
    assert WORK_LOST.of_pod(saved, facts()) == 1_200_000
    assert WORK_LOST.of_pod(plain, facts()) == 7_200_000
    assert WORK_LOST.show(1_200_000, None) == "1200 core-seconds"
    # As a victim set's cost: the sum, smaller first.
    assert ranking.DEFAULT.cost([saved], facts()).value(WORK_LOST) < ranking.DEFAULT.cost([plain], facts()).value(WORK_LOST)
    assert ranking.DEFAULT.cost([saved, plain], facts()).value(WORK_LOST) == 8_400_000


def test_a_checkpoint_before_the_start_or_after_now_and_an_unknown_start():
    # A checkpoint before the start (an earlier run's) counts from the start: 2 x 3,600.
    assert WORK_LOST.of_pod(pod("a", cpu=2, start=NOW - 3600, checkpoint=NOW - 9000), facts()) == 7_200_000
    # One after now (a clock ahead) and an unknown start read as just started: 0.
    assert WORK_LOST.of_pod(pod("b", cpu=2, start=NOW - 3600, checkpoint=NOW + 60), facts()) == 0
    assert WORK_LOST.of_pod(pod("c", cpu=2, start=None, checkpoint=NOW - 60), facts()) == 0
    # Without the request's now nothing is lost (the criterion decides nothing).
    assert WORK_LOST.of_pod(pod("d", cpu=2, start=NOW - 3600), facts(now=None)) == 0


def test_the_weight_is_the_dominant_share_in_the_nodes_cores():
    gpu_node = {"cpu": 96_000, GPU_MILLI: 8000, "memory": 512 * 2**30, "pods": 110}
    # 4 cores and one GPU of 8 on a 96-core node: the GPU share (1/8) dominates the cpu's (4/96),
    # so it weighs 96/8 = 12 cores (12,000 millicores): 12 x 100 s = 1,200 core-seconds.
    gpu = pod("g", cpu=4, start=NOW - 100, **{GPU_MILLI: 1000})
    assert work_lost.weight(gpu.requests, gpu_node) == 12_000
    assert WORK_LOST.of_pod(gpu, facts(allocatable=gpu_node)) == 1_200_000
    # The same pod without the GPU weighs its cores: 4 x 100.
    assert WORK_LOST.of_pod(pod("c", cpu=4, start=NOW - 100), facts(allocatable=gpu_node)) == 400_000
    # A BestEffort pod holds its pod slot: 1/110 of 8,000 millicores = 72 (rounded down), for 1,100 s.
    assert WORK_LOST.of_pod(pod("be", start=NOW - 1100), facts()) == 72 * 1100
    # GPU-seconds apart, in GPUs: one whole GPU of 1000 milli-GPUs x 100 s; and nvidia.com/gpu.
    assert work_lost.gpu_seconds([gpu], NOW) == 100
    assert work_lost.gpu_seconds([pod("n", cpu=1, start=NOW - 10, **{"nvidia.com/gpu": 2})], NOW) == 20
    assert work_lost.cpu_seconds([gpu], NOW) == 400  # 4 cores x 100 s


def test_the_bound_is_at_most_the_cheapest_set_and_equal_on_alike_pods():
    # n1 (12 cores) is full with three 4-core pods of priority 0, started 100, 200 and 300 s
    # before NOW; the preemptor asks 8 cores, so two of them must go.
    pods = [pod(f"p{i}", node="n1", cpu=4, start=NOW - 100 * (i + 1)) for i in range(3)]
    v = view([node("n1", cpu=12)], pods)
    pre = pod("pre", priority=10, cpu=8)
    floor = bounds.floor(v, v.nodes["n1"], pre, (), now=NOW)
    at = ranking.DEFAULT.position(WORK_LOST)
    # Two youngest (100 s and 200 s) at the smallest weight (4 cores): 4 x 100 + 4 x 200 = 1,200
    # core-seconds, which is what evicting p0 and p1 costs: the bound is exact on alike pods.
    assert floor[at] == 1_200_000
    assert ranking.DEFAULT.cost(pods[:2], facts(allocatable=v.nodes["n1"].node.allocatable)).value(WORK_LOST) == 1_200_000
    # Without now it bounds by 0.
    assert bounds.floor(v, v.nodes["n1"], pre, ())[at] == 0


@pytest.mark.parametrize("starts, count, expected", [
    ((), 1, 0),
    ((None, NOW - 10), 2, 2000 * 10),  # an unknown start loses nothing; the other 10 s at 2 cores
    ((NOW - 30, NOW - 10, NOW - 20), 2, 2000 * (10 + 20)),  # the two youngest
    ((NOW + 50, NOW - 10), 2, 2000 * 10),  # a checkpoint after now: none lost yet
    ((NOW - 10.5,), 1, 2000 * 10),  # begun at 9,989.5: whole seconds from 9,990
])
def test_the_bound_sums_the_youngest_ages_at_the_least_weight(starts, count, expected):
    pods = [pod(f"p{i}", cpu=2, start=None if t is None else NOW - 4000, checkpoint=t) for i, t in enumerate(starts)]
    assert work_lost.Youngest.of(pods, NODE).floor(count, NOW) == expected
    # ... never above what any ``count`` of them lose.
    values = sorted(WORK_LOST.of_pod(p, facts()) for p in pods)
    assert expected <= sum(values[:count])

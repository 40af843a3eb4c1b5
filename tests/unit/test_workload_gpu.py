"""policy.workload_gpu: the GPU-cluster workload has the published shape it claims, sized by pressure."""

from __future__ import annotations

import random

import pytest

from policy import workload_gpu
from policy.workload_gpu import GPU_MILLI, HIGH, LOW, MID


def test_tiers_and_gpu_shapes_follow_the_published_proportions():
    made = workload_gpu.generate(random.Random(7), 4000)
    tasks = made.pending
    share = lambda pred: sum(1 for t in tasks if pred(t)) / len(tasks)  # noqa: E731
    assert 0.54 < share(lambda t: t.priority == HIGH) < 0.60
    assert 0.003 < share(lambda t: t.priority == MID) < 0.02
    assert 0.39 < share(lambda t: t.priority == LOW) < 0.45
    gpu = lambda t: t.requests.get(GPU_MILLI, 0)  # noqa: E731
    assert 0.83 < share(lambda t: 0 < gpu(t) <= 1000) < 0.89
    assert share(lambda t: 0 < gpu(t) < 1000) > 0.5  # most of them a fraction of a GPU
    assert 0.10 < share(lambda t: gpu(t) == 0) < 0.16
    assert 0.003 < share(lambda t: gpu(t) >= 2000) < 0.02
    assert all(gpu(t) % 1000 == 0 and gpu(t) <= 8000 for t in tasks if gpu(t) > 1000)
    assert 0.05 < share(lambda t: t.placement.affinity is not None) < 0.15
    assert not any(p.node_name for p in made.view.pods.values())  # tasks arrive onto an empty cluster


@pytest.mark.parametrize("pressure", [0.6, 1.0, 1.5])
def test_pressure_is_the_gpu_demand_against_the_gpu_nodes(pressure):
    made = workload_gpu.generate(random.Random(3), 600, pressure=pressure)
    demand = sum(t.requests.get(GPU_MILLI, 0) for t in made.pending)
    gpus = sum(n.node.allocatable.get(GPU_MILLI, 0) for n in made.view.nodes.values())
    assert demand / gpus == pytest.approx(pressure, rel=0.08)
    assert any(GPU_MILLI not in n.node.allocatable for n in made.view.nodes.values())  # CPU-only nodes too


def test_the_same_seed_gives_the_same_workload():
    a = workload_gpu.generate(random.Random(11), 50, pressure=1.2)
    b = workload_gpu.generate(random.Random(11), 50, pressure=1.2)
    assert a == b
    assert a != workload_gpu.generate(random.Random(12), 50, pressure=1.2)


@pytest.mark.parametrize("pressure", [0, -1, 11])
def test_pressure_out_of_range_is_refused(pressure):
    with pytest.raises(ValueError, match="pressure"):
        workload_gpu.generate(random.Random(0), 10, pressure=pressure)

"""policy.scheduling_queue: which pending pods kube-scheduler queues, and PrioritySort's order."""

from __future__ import annotations

import dataclasses
import random

import pytest

from policy import scheduling_queue
from tests.builders import pod


@pytest.mark.parametrize(
    "record, reason",
    [
        pytest.param(pod("p"), "", id="pending"),
        pytest.param(pod("p", nominated="n1"), "", id="nominated-is-still-pending"),
        pytest.param(pod("p", kind="DaemonSet"), "", id="daemonset-pods-are-queued-too"),
        pytest.param(pod("p", node="n1"), scheduling_queue.BOUND, id="bound"),
        pytest.param(pod("p", terminating=True), scheduling_queue.TERMINATING, id="terminating"),
        pytest.param(dataclasses.replace(pod("p"), gated=True), scheduling_queue.GATED, id="scheduling-gated"),
    ],
)
def test_left_out(record, reason):
    assert scheduling_queue.left_out(record) == reason


def test_order_is_priority_then_creation_then_name():
    # Written in the expected order: 10 first; at 5, created 100 before 200, then one never
    # created (a hand-written pod) last; at equal creation, namespace then name.
    expected = [
        pod("z", priority=10, created=300),
        pod("b", priority=5, created=100, ns="a"),
        pod("a", priority=5, created=100, ns="b"),
        pod("c", priority=5, created=200),
        pod("d", priority=5),
        pod("e", priority=-1, created=1),
    ]
    shuffled = expected[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != expected
    assert [p.key for p in scheduling_queue.order(shuffled)] == [p.key for p in expected]

"""Bursts of preemptions through the real kube-scheduler, reprieve's and stock side by side
(issue 9): full nodes, then a wave of preemptors created together, each needing exactly one
victim (tests/e2e/burst.py says how everything is counted).

Every preemptor must be bound, with exactly one preemption and one distinct victim each (a
victim promised to two preemptors counts twice as a victim named, once as distinct), and the
scheduler must never have rejected the extender's answer ("claims to preempt"). The time is
recorded, not asserted (a loaded CI machine would make it flaky): ``make bench-burst`` reports
it side by side with stock.

The same bursts run under a queue policy in test_queues.py and through a shadow-mode reprieve
in test_shadow.py.
"""

from __future__ import annotations

import pytest

from tests.e2e.burst import SHAPES, burst, expect_one_victim_each
from tests.e2e.scenario import REPRIEVE, STOCK


@pytest.mark.parametrize("shape", [pytest.param(s, id=s.id) for s in SHAPES.values()])
@pytest.mark.parametrize(
    "scheduler",
    [
        pytest.param(REPRIEVE, id="reprieve-binds-all-with-one-victim-each"),
        pytest.param(STOCK, id="stock-binds-all-with-one-victim-each"),
    ],
)
def test_burst_of_preemptors(scenario, scheduler, shape, record_property):
    result = burst(scenario, shape, scheduler)
    record_property("burst", result.summary())
    expect_one_victim_each(result)

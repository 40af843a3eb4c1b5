"""policy.ranking: which candidate node's victims cost the least, criterion by criterion."""

from __future__ import annotations

import pytest

from policy.preempt import Proposal, Verdict, decide
from policy.qos import QoS
from tests.builders import node, pdb, pod, view

G, B = QoS.GUARANTEED, QoS.BURSTABLE


def proposals(**victims):
    return {n: Proposal(tuple(f"uid-default-{v}" for v in vs), 0) for n, vs in victims.items()}


def outcome(decision, name):
    return next(o for o in decision.outcomes if o.node == name)


@pytest.mark.parametrize(
    "running, budgets, chosen",
    [
        pytest.param(
            # Each node: 10 cpu, one 10-cpu victim. n1's victim is behind a zero-allowance budget
            # (1 violation); n2's is not (0). Fewest violations wins even though n2's victim has
            # the higher priority.
            [pod("a", node="n1", priority=1, cpu=10, labels={"app": "db"}), pod("b", node="n2", priority=5, cpu=10)],
            [pdb("db", allowed=0, match={"app": "db"})],
            ("n2",),
            id="fewest-pdb-violations",
        ),
        pytest.param(
            # No budgets: the lower highest-victim priority wins (1 < 5).
            [pod("a", node="n1", priority=1, cpu=10), pod("b", node="n2", priority=5, cpu=10)],
            [],
            ("n1",),
            id="lowest-highest-victim-priority",
        ),
        pytest.param(
            # Same priority: a Burstable victim is cheaper than a Guaranteed one.
            [pod("a", node="n1", priority=1, cpu=10, qos=G), pod("b", node="n2", priority=1, cpu=10, qos=B)],
            [],
            ("n2",),
            id="fewer-guaranteed-victims",
        ),
        pytest.param(
            # Same priority and QoS: one victim (n2) beats two (n1). Sums: n1 2*(1+2^31) > n2 1*(1+2^31).
            [
                pod("a1", node="n1", priority=1, cpu=5),
                pod("a2", node="n1", priority=1, cpu=5),
                pod("b", node="n2", priority=1, cpu=10),
            ],
            [],
            ("n2",),
            id="fewer-victims-by-shifted-sum",
        ),
        pytest.param(
            # Everything equal but start times: evict the younger work (n2's victim started later).
            [pod("a", node="n1", priority=1, cpu=10, start=100), pod("b", node="n2", priority=1, cpu=10, start=500)],
            [],
            ("n2",),
            id="latest-start-of-top-victims",
        ),
        pytest.param(
            # Exact ties: only the first is offered, so that the answer in flight is known.
            [pod("a", node="n1", priority=1, cpu=10, start=100), pod("b", node="n2", priority=1, cpu=10, start=100)],
            [],
            ("n1",),
            id="exact-tie-offers-the-first",
        ),
    ],
)
def test_node_ranking(running, budgets, chosen):
    v = view([node("n1"), node("n2")], running, budgets)
    preemptor = pod("pre", priority=10, cpu=10)
    on = {n: [p.name for p in running if p.node_name == n] for n in ("n1", "n2")}
    decision = decide(view=v, preemptor=preemptor, proposals=proposals(**on), exhaustive=True)
    assert tuple(decision.answer) == chosen
    for name in {"n1", "n2"} - set(chosen):
        assert outcome(decision, name).verdict is Verdict.OUTRANKED
        assert any(r.startswith("not chosen") for r in outcome(decision, name).reasons)
    # Solving only the nodes that can still win gives the same answer (an exact tie of the
    # node offered is not solved, so the tie is not reported).
    fast = decide(view=v, preemptor=preemptor, proposals=proposals(**on))
    assert fast.answer == decision.answer
    assert fast.reasons == tuple(r for r in decision.reasons if " tie; " not in r)

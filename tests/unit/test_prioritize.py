"""prioritize: score = floor(9 * room) + (1 unless the node runs the pod's PDB siblings)."""

from __future__ import annotations

import pytest

from policy.prioritize import score_nodes
from tests.builders import node, pdb, pod, view


def scores(running, preemptor, budgets=(), names=("n1", "n2")):
    v = view([node("n1", cpu=10, mem=10), node("n2", cpu=10, mem=10)], running, budgets)
    return {s.node: s.score for s in score_nodes(view=v, pod=preemptor, node_names=names)}


@pytest.mark.parametrize(
    "running, expected",
    [
        # Empty nodes, pod needs 2 cpu: room = (10-2)/10 = 0.8 -> floor(7.2) + 1 = 8.
        pytest.param([], {"n1": 8, "n2": 8}, id="empty"),
        # n1 has 6 cpu used: room (10-6-2)/10 = 0.2 -> floor(1.8) + 1 = 2.
        pytest.param([pod("a", node="n1", cpu=6)], {"n1": 2, "n2": 8}, id="fuller-scores-lower"),
        # A nominated pod of priority 9 (>= 5) holds 6 on n2: (10-6-2)/10 -> 2.
        pytest.param([pod("h", priority=9, cpu=6, nominated="n2")], {"n1": 8, "n2": 2}, id="held-room-counts"),
        # ...but not when its priority (1) is below the pod's.
        pytest.param([pod("h", priority=1, cpu=6, nominated="n2")], {"n1": 8, "n2": 8}, id="lower-nomination-ignored"),
        # Overcommitted: free room clamps at 0 -> 0 + 1.
        pytest.param([pod("a", node="n1", cpu=12)], {"n1": 1, "n2": 8}, id="overcommitted-clamps"),
    ],
)
def test_room(running, expected):
    assert scores(running, pod("p", priority=5, cpu=2)) == expected


def test_pdb_siblings_lower_the_score_of_an_otherwise_equal_node():
    # Both nodes run one 2-cpu pod; n1's is covered by the pod's own budget.
    # Room on both: (10-2-2)/10 = 0.6 -> floor(5.4) = 5; n2 gets the +1, n1 does not.
    running = [pod("sib", node="n1", cpu=2, labels={"app": "web"}), pod("other", node="n2", cpu=2, labels={"app": "db"})]
    result = scores(running, pod("p", priority=5, cpu=2, labels={"app": "web"}), [pdb("web", allowed=1, match={"app": "web"})])
    assert result == {"n1": 5, "n2": 6}


def test_scores_are_integers_in_range_for_exactly_the_given_nodes():
    result = scores([pod("a", node="n1", cpu=3)], pod("p", cpu=1), names=("n2", "unknown"))
    assert list(result) == ["n2", "unknown"]
    assert result["unknown"] == 0
    assert all(isinstance(s, int) and 0 <= s <= 10 for s in result.values())

"""Preemptions under way as a view shows them, and how long nominations have stood
(extender.state.preemptions): what a restarted reprieve reports, and the nomination-age gauge."""

from __future__ import annotations

import dataclasses

from extender.state.preemptions import Nominations, UnderWay, under_way
from tests.builders import node, pod, view


class Clock:
    now = 100.0

    def __call__(self) -> float:
        return self.now


def wave():
    """Mid-wave: p1 nominated to n1 with its victim terminating for it; p2 nominated to n2, its
    victim not marked yet; a pod deleted by someone else (no DisruptionTarget) and a pending pod
    with no nomination count for nothing."""
    pods = [
        pod("p1", cpu=8, priority=1000, nominated="n1"),
        dataclasses.replace(pod("v1", node="n1", cpu=8), terminating=True, preempted=True),
        pod("p2", cpu=8, priority=1000, nominated="n2"),
        pod("v2", node="n2", cpu=8),
        dataclasses.replace(pod("deleted", node="n2", cpu=1), terminating=True),
        pod("waiting", cpu=8, priority=1000),
    ]
    return view([node("n1", cpu=8), node("n2", cpu=16)], pods)


def test_under_way_counts_nominations_and_victims_terminating_for_a_preemption():
    found = under_way(wave())
    assert found == UnderWay(nominated=2, victims=1) and found
    assert found.describe() == "2 pod(s) nominated to a node and 1 victim(s) terminating for a preemption"
    assert not under_way(view([node("n1")], [pod("a", node="n1", cpu=1)]))


def test_a_nomination_ages_from_the_first_view_that_showed_it_there():
    clock = Clock()
    ages = Nominations(clock=clock)
    v = wave()
    assert ages.oldest(v) == 0.0
    clock.now += 30
    assert ages.oldest(v) == 30.0
    # p1 is bound (gone from the nominations), p2 nominated again elsewhere: it counts afresh.
    moved = view(
        [n.node for n in v.nodes.values()],
        [dataclasses.replace(p, node_name="n1", nominated_node_name=None) if p.name == "p1" else
         dataclasses.replace(p, nominated_node_name="n1") if p.name == "p2" else p for p in v.pods.values()],
    )
    clock.now += 10
    assert ages.oldest(moved) == 0.0
    clock.now += 5
    assert ages.oldest(moved) == 5.0
    # Not ready: no view. The nominations last seen go on ageing.
    clock.now += 5
    assert ages.oldest(None) == 10.0
    assert ages.oldest(view([node("n1")], [])) == 0.0

"""Properties of victim selection over random nodes (hypothesis)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from policy import resources
from policy.importance import importance
from policy.qos import QoS
from policy.victims import VictimSelection, select_victims
from tests.builders import node, pod, view

running_pods = st.lists(
    st.tuples(
        st.integers(0, 12),  # priority
        st.integers(0, 6),  # cpu
        st.sampled_from(list(QoS)),
        st.integers(0, 1000),  # start
        st.booleans(),  # terminating
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(running=running_pods, need=st.integers(1, 10), preemptor_priority=st.integers(1, 12), pod_slots=st.integers(1, 10))
def test_victims_make_room_and_none_could_be_spared(running, need, preemptor_priority, pod_slots):
    pods = [
        pod(f"p{i}", node="n1", priority=prio, cpu=cpu, qos=qos if cpu else QoS.BEST_EFFORT, start=start, terminating=term)
        for i, (prio, cpu, qos, start, term) in enumerate(running)
    ]
    v = view([node("n1", cpu=10, pods=pod_slots)], pods)
    preemptor = pod("pre", priority=preemptor_priority, cpu=need)
    result = select_victims(node=v.nodes["n1"], preemptor=preemptor, reservations=(), budgets_of=lambda p: ())
    if not isinstance(result, VictimSelection):
        return
    alloc = v.nodes["n1"].node.allocatable
    victims = {p.uid for p in result.victims}

    def fits_without(evicted: set[str]) -> bool:
        used = resources.add(*(p.requests for p in pods if p.uid not in evicted))
        return not resources.shortfalls(request=preemptor.requests, allocatable=alloc, used=used)

    assert fits_without(victims)
    assert all(p.priority < preemptor.priority for p in result.victims)
    assert list(result.victims) == sorted(result.victims, key=importance)
    for victim in result.victims:
        if not victim.terminating:
            assert not fits_without(victims - {victim.uid}), f"{victim.name} could have been spared"

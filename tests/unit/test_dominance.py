"""Never worse than stock, per node: reprieve's victims cost no more (policy.ranking's full
key) than the set upstream's SelectVictimsOnNode picks (policy.stock) on the same node."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from policy import ranking, stock
from policy.pdb import count_violations
from policy.qos import QoS
from policy.victims import VictimSelection, select_victims
from tests.builders import node, pdb, pod, view

G, B, BE = QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT


def both(v, preemptor, name="n1"):
    info = v.nodes[name]
    reservations = v.reservations(name, pod=preemptor)
    mine = select_victims(node=info, preemptor=preemptor, reservations=reservations, budgets_of=v.budgets_covering)
    theirs = stock.select_victims(node=info, preemptor=preemptor, reservations=reservations, budgets_of=v.budgets_covering)
    return mine, theirs


def key(victims, v):
    return ranking.cost(victims, count_violations(victims, v.budgets_covering)).key


def test_issue_10_case_reprieve_evicts_the_priority_0_pod_stock_evicts():
    # A 16-cpu node; a nominated pod (priority 10) holds 2 cpu. The PDB app=a allows 2
    # disruptions. The preemptor (priority 10) asks 2 cpu. Stock evicts p2 alone (priority 0,
    # Burstable, no violation). Protecting the budget's pods first reprieved p2, p4 and p5 and
    # evicted p0 and p3 (priority 2, two Guaranteed): the cheapest order is now kept.
    running = [
        pod("p0", node="n1", cpu=0.5, priority=2, qos=G, start=0),
        pod("p1", node="n1", cpu=3, priority=5, qos=B, start=1),
        pod("p2", node="n1", cpu=4, priority=0, qos=B, start=2, labels={"app": "a"}),
        pod("p3", node="n1", cpu=2, priority=2, qos=G, start=3),
        pod("p4", node="n1", cpu=1, priority=0, qos=G, start=4, labels={"app": "a"}),
        pod("p5", node="n1", cpu=4, priority=2, qos=G, start=5, labels={"app": "a"}),
        pod("p6", node="n1", priority=2, qos=BE, start=6),
        pod("held", cpu=2, priority=10, nominated="n1"),
    ]
    v = view([node("n1", cpu=16)], running, [pdb("a", allowed=2, match={"app": "a"})])
    mine, theirs = both(v, pod("pre", cpu=2, priority=10))
    assert [p.name for p in theirs.victims] == ["p2"]
    assert [p.name for p in mine.victims] == ["p2"]


running_pods = st.lists(
    st.tuples(
        st.integers(0, 6),  # priority
        st.integers(0, 6),  # cpu
        st.sampled_from([G, B]),  # QoS when the pod requests cpu (BestEffort otherwise)
        st.integers(0, 50),  # start
        st.booleans(),  # under the budget
        st.integers(0, 9),  # terminating when 0
    ),
    max_size=9,
)


@settings(max_examples=2000, deadline=None)
@given(
    running=running_pods,
    allowed=st.integers(0, 2),
    need=st.integers(1, 8),
    preemptor_priority=st.integers(1, 7),
    held=st.integers(0, 3),
    slots=st.integers(2, 12),
)
def test_reprieve_never_costs_more_than_stock_on_a_node(running, allowed, need, preemptor_priority, held, slots):
    pods = [
        pod(
            f"p{i}", node="n1", priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            labels={"app": "a"} if budgeted else {"app": f"x{i}"}, terminating=term == 0,
        )
        for i, (prio, cpu, qos, start, budgeted, term) in enumerate(running)
    ]
    if held:
        pods.append(pod("held", cpu=held, priority=preemptor_priority, nominated="n1"))
    v = view([node("n1", cpu=12, pods=slots)], pods, [pdb("a", allowed=allowed, match={"app": "a"})])
    mine, theirs = both(v, pod("pre", cpu=need, priority=preemptor_priority))
    if not isinstance(theirs, stock.Victims):
        return
    assert isinstance(mine, VictimSelection), mine
    assert key(mine.victims, v) <= key(theirs.victims, v), (
        [p.name for p in mine.victims], [p.name for p in theirs.victims]
    )

"""Never worse than stock: on every node, reprieve's victims cost no more (policy.ranking's full
key, broken gangs and Jobs failed included) than the set upstream's SelectVictimsOnNode picks (policy.stock)
on the same node; and cluster-wide, the node reprieve offers costs no more than the node stock
would pick among the same proposals (nominations, budgets, gangs with members elsewhere, Jobs
with and without retries left, terminating and BestEffort pods, pod-count limits).

With a multi-tenant policy there is no such guarantee: its rules protect pods stock would
take, so reprieve may need costlier victims or no node at all (docs/policy.md). With strict
budgets (policy.guards), which stock does not see, reprieve's victims on a node violate none
and cost no more than stock's by the strict order, or no set can keep them and the node is
dropped."""

from __future__ import annotations

from hypothesis import event, given, settings
from hypothesis import strategies as st

from policy import homes, preempt, ranking, stock
from policy.causes import Cause
from policy.qos import QoS
from policy.victims import Choosing, VictimSelection, select_victims
from policy.jobs import OnDisruption
from tests.builders import cost_key, group, job, node, pdb, pod, view

G, B, BE = QoS.GUARANTEED, QoS.BURSTABLE, QoS.BEST_EFFORT


# The grace periods the property tests' pods draw from: policy.criteria.time_to_room counts only
# the live victims' grace (a terminating pod reprieve names but stock reprieves must not count).
GRACES = (0, 30, 60)
# The requests' time, after every drawn start (0-50): the work lost since each start or checkpoint.
NOW = 60.0


def checkpoint(i: int, start: int) -> float | None:
    """Some pods' last checkpoint (policy.criteria.work_lost): none, after the start, or before it."""
    return (None, start + 5.0, start - 3.0, start + 1.0)[i % 4]


def both(v, preemptor, name="n1", order=ranking.DEFAULT):
    info = v.nodes[name]
    reservations = v.reservations(name, pod=preemptor)
    choosing = Choosing(
        preemptor, v.budgets_covering, gang_of=v.gang_of, order=order, homes=homes.of(v), app_of=v.app_of, stake_of=v.stake_of,
        now=NOW,
    )
    mine = select_victims(node=info, choosing=choosing, reservations=reservations)
    theirs = stock.select_victims(node=info, preemptor=preemptor, reservations=reservations, budgets_of=v.budgets_covering)
    return mine, theirs


# Who re-creates a pod, by its index: bare (no home), a ReplicaSet's (a home where it fits), a
# DaemonSet's (none elsewhere).
KINDS = (None, "ReplicaSet", "ReplicaSet", "DaemonSet")
# The Jobs a pod may belong to, by a drawn index (0: none): one victim fails "zero" and "fail",
# "two" survives one (backoffLimit 2, 1 failed), "ignore" never fails.
JOBS = [job("zero", backoff=0), job("two", backoff=2, failed=1), job("ignore", on=OnDisruption.IGNORE),
        job("fail", on=OnDisruption.FAIL_JOB)]
JOB_OF = (None, "zero", "two", "ignore", "fail")


def members_elsewhere(elsewhere):
    """Running members of gangs g1 and g2 on a node not offered (their spare depends on them),
    and two executors of Spark application s (ROLES)."""
    return [
        *(pod(f"{g}-far{k}", node="far", priority=9, cpu=1, gang=(g, None))
          for g, count in zip(("g1", "g2"), elsewhere) for k in range(count)),
        *(pod(f"s-far{k}", node="far", priority=9, cpu=1, labels=ROLES[2]) for k in range(2)),
    ]


# An application with a manager (policy.apps), by index: none, Spark application s's driver or
# executor, Ray cluster r's head.
ROLES = ({}, {"spark-role": "driver", "spark-app-selector": "s"}, {"spark-role": "executor", "spark-app-selector": "s"},
         {"ray.io/node-type": "head", "ray.io/cluster": "r"})


def test_reprieve_evicts_the_priority_0_pod_stock_evicts():
    # Issue 10's case.
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
        st.integers(0, 2),  # gang: none, g1, g2
        st.integers(0, 3),  # its role in an application with a manager (ROLES)
        st.integers(0, 4),  # its Job (JOB_OF)
    ),
    max_size=9,
)
gang_minimums = st.tuples(st.integers(1, 5), st.integers(1, 5))
gang_elsewhere = st.tuples(st.integers(0, 2), st.integers(0, 2))


@settings(max_examples=2000, deadline=None)
@given(
    running=running_pods,
    allowed=st.integers(0, 2),
    need=st.integers(1, 8),
    preemptor_priority=st.integers(1, 7),
    held=st.integers(0, 3),
    slots=st.integers(2, 12),
    minimums=gang_minimums,
    elsewhere=gang_elsewhere,
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),  # any order a policy may give
    spare=st.integers(0, 6),
)
def test_reprieve_never_costs_more_than_stock_on_a_node(
    running, allowed, need, preemptor_priority, held, slots, minimums, elsewhere, order, spare
):
    pods = [
        pod(
            f"p{i}", node="n1", priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            labels={"app": "a" if budgeted else f"x{i}", **ROLES[role]}, terminating=term == 0,
            gang=(f"g{gang}", None) if gang else None, kind=KINDS[i % 4], job=JOB_OF[owner],
            grace=GRACES[(start + i) % 3],
            checkpoint=checkpoint(i, start),
        )
        for i, (prio, cpu, qos, start, budgeted, term, gang, role, owner) in enumerate(running)
    ]
    if held:
        pods.append(pod("held", cpu=held, priority=preemptor_priority, nominated="n1"))
    pods += members_elsewhere(elsewhere)
    # A spare node with room for some replacements (their homes).
    v = view(
        [node("n1", cpu=12, pods=slots), node("spare", cpu=spare)], pods, [pdb("a", allowed=allowed, match={"app": "a"})],
        groups=[group("g1", minimums[0]), group("g2", minimums[1])], jobs=JOBS,
    )
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    mine, theirs = both(v, preemptor, order=order)
    if not isinstance(theirs, stock.Victims):
        return
    assert isinstance(mine, VictimSelection), mine
    assert cost_key(mine.victims, v, order, now=NOW, preemptor=preemptor) <= cost_key(theirs.victims, v, order, now=NOW, preemptor=preemptor), (
        [p.name for p in mine.victims], [p.name for p in theirs.victims]
    )


# ------------------------------------------------------------------ the node offered, cluster-wide

cluster_pods = st.lists(
    st.tuples(
        st.integers(0, 2),  # node index
        st.integers(0, 6),  # priority
        st.integers(0, 6),  # cpu
        st.sampled_from([G, B]),  # QoS when the pod requests cpu (BestEffort otherwise)
        st.integers(0, 50),  # start
        st.integers(0, 2),  # budget: none, a, b
        st.integers(0, 9),  # terminating when 0
        st.integers(0, 2),  # gang: none, g1, g2
        st.integers(0, 3),  # its role in an application with a manager (ROLES)
        st.integers(0, 4),  # its Job (JOB_OF)
    ),
    max_size=14,
)


@settings(max_examples=1000, deadline=None)
@given(
    running=cluster_pods,
    allowed=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    need=st.integers(1, 10),
    preemptor_priority=st.integers(1, 7),
    # a node index 3: pending and nominated nowhere (policy.criteria.pending_room counts it)
    nominations=st.lists(st.tuples(st.integers(0, 3), st.integers(1, 4), st.integers(0, 8)), max_size=3),
    sizes=st.tuples(st.integers(4, 12), st.integers(4, 12), st.integers(4, 12)),
    slots=st.integers(3, 12),
    minimums=gang_minimums,
    elsewhere=gang_elsewhere,
)
def test_the_node_reprieve_offers_never_costs_more_than_the_node_stock_picks(
    running, allowed, need, preemptor_priority, nominations, sizes, slots, minimums, elsewhere
):
    # Three nodes, two budgets, pods nominated to them (of any priority: those of the
    # preemptor's or more hold room), terminating pods, BestEffort pods, a pod-count limit.
    # The scheduler's proposals are stock's dry run; reprieve decides on them. By reprieve's
    # key, the victims it offers cost no more than those of the node stock would pick.
    pods = [
        pod(
            f"p{i}", node=f"n{n}", priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            labels={"app": ("x", "a", "b")[budget], "id": str(i), **ROLES[role]}, terminating=term == 0,
            gang=(f"g{gang}", None) if gang else None, kind=KINDS[i % 4], job=JOB_OF[owner],
            grace=GRACES[(start + i) % 3],
            checkpoint=checkpoint(i, start),
        )
        for i, (n, prio, cpu, qos, start, budget, term, gang, role, owner) in enumerate(running)
    ]
    pods += members_elsewhere(elsewhere)
    pods += [
        pod(f"nom{i}", cpu=cpu, priority=prio, nominated=f"n{n}" if n < 3 else None) for i, (n, cpu, prio) in enumerate(nominations)
    ]
    nodes = [node(f"n{i}", cpu=size, pods=slots) for i, size in enumerate(sizes)]
    budgets = [pdb("a", allowed=allowed[0], match={"app": "a"}), pdb("b", allowed=allowed[1], match={"app": "b"})]
    v = view(nodes, pods, budgets, groups=[group("g1", minimums[0]), group("g2", minimums[1])], jobs=JOBS)
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    dry = stock.decide(view=v, preemptor=preemptor, node_names=[n.name for n in nodes])
    if dry.refusal or dry.fits or dry.pick.chosen is None:
        return  # the scheduler would not preempt (or could not)
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=dry.proposals, now=NOW)
    theirs = dry.nodes[dry.pick.chosen].victims
    if not decision.answer:
        # Evicting no one: the pod waits for pods already terminating on a candidate.
        assert decision.reasons[0].startswith("evicts no one"), decision.reasons
        assert any(o.cause is Cause.LEAVING for o in decision.outcomes)
        return
    assert len(decision.answer) == 1, decision.reasons
    (offered,) = decision.answer
    outcome = next(o for o in decision.outcomes if o.node == offered)
    assert cost_key(outcome.victims, v, node=offered, now=NOW, preemptor=preemptor) <= cost_key(
        theirs, v, node=dry.pick.chosen, now=NOW, preemptor=preemptor
    ), (
        offered, dry.pick.chosen
    )


@settings(max_examples=500, deadline=None)
@given(
    running=cluster_pods,
    allowed=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    need=st.integers(1, 10),
    preemptor_priority=st.integers(1, 7),
    sizes=st.tuples(st.integers(4, 12), st.integers(4, 12), st.integers(4, 12)),
    minimums=gang_minimums,
    elsewhere=gang_elsewhere,
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),
    waiting=st.lists(st.integers(1, 6), max_size=3),  # pending pods' cpu (policy.criteria.pending_room)
)
def test_stocks_victims_are_costed_as_reprieves_own_and_never_cheaper(
    running, allowed, need, preemptor_priority, sizes, minimums, elsewhere, order, waiting
):
    # What explain shows on stock's side (NodeOutcome.proposed_cost): the scheduler's victims
    # on each node costed by the decision's order and facts, exactly as the independent key of
    # tests/builders costs them; and on every node reprieve solved, its own victims cost no more.
    pods = [
        pod(
            f"p{i}", node=f"n{n}", priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            labels={"app": ("x", "a", "b")[budget], "id": str(i), **ROLES[role]}, terminating=term == 0,
            gang=(f"g{gang}", None) if gang else None, kind=KINDS[i % 4], job=JOB_OF[owner],
            grace=GRACES[(start + i) % 3],
            checkpoint=checkpoint(i, start),
        )
        for i, (n, prio, cpu, qos, start, budget, term, gang, role, owner) in enumerate(running)
    ]
    pods += members_elsewhere(elsewhere)
    pods += [pod(f"w{i}", cpu=cpu) for i, cpu in enumerate(waiting)]
    nodes = [node(f"n{i}", cpu=size) for i, size in enumerate(sizes)]
    budgets = [pdb("a", allowed=allowed[0], match={"app": "a"}), pdb("b", allowed=allowed[1], match={"app": "b"})]
    v = view(nodes, pods, budgets, groups=[group("g1", minimums[0]), group("g2", minimums[1])], jobs=JOBS)
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    dry = stock.decide(view=v, preemptor=preemptor, node_names=[n.name for n in nodes])
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=dry.proposals, exhaustive=True, order=order, now=NOW)
    for outcome in decision.outcomes:
        theirs = dry.nodes[outcome.node].victims
        assert outcome.proposed_cost is not None, outcome
        assert outcome.proposed_cost.key == cost_key(theirs, v, order, node=outcome.node, now=NOW, preemptor=preemptor)
        if outcome.cost is not None:
            assert outcome.cost.key <= outcome.proposed_cost.key, (outcome.node, outcome.reasons)


# ------------------------------------------------------------------ strict budgets (policy.guards)


STRICT_RUNNING = st.lists(
    st.tuples(
        st.integers(0, 6),  # priority
        st.integers(0, 6),  # cpu
        st.sampled_from([G, B]),  # QoS when the pod requests cpu (BestEffort otherwise)
        st.integers(0, 50),  # start
        st.integers(0, 2),  # budget: none, a (strict: namespace kafka), b (not strict)
        st.integers(0, 9),  # terminating when 0
    ),
    max_size=9,
)


@settings(max_examples=1000, deadline=None)
@given(
    running=STRICT_RUNNING,
    allowed=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    need=st.integers(1, 8),
    preemptor_priority=st.integers(1, 7),
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),
)
def test_with_strict_budgets_reprieve_violates_none_where_stock_need_not(running, allowed, need, preemptor_priority, order):
    # Stock does not see strict budgets. On a node, reprieve's victims violate none, and by the
    # strict order cost no more than stock's; or no set does (stock's victims violate one too)
    # and the node is dropped (Cause.STRICT_BUDGET).
    strict_vs_stock(running, allowed, need, preemptor_priority, order)


@settings(max_examples=200, deadline=None)
@given(
    running=STRICT_RUNNING,
    allowed=st.tuples(st.integers(0, 2), st.integers(0, 2)),
    need=st.integers(1, 16),
    preemptor_priority=st.integers(1, 7),
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),
    fillers=st.integers(8, 12),
    swap=st.booleans(),
)
def test_with_strict_budgets_on_a_large_node_too(running, allowed, need, preemptor_priority, order, fillers, swap):
    # The same with 1-cpu fillers making the node's candidates more than the exact search
    # takes (policy.exact.EXACT_LIMIT): greedy orders, and the swap pass (on the node offered
    # with ``swap``; before a node is dropped for a strict budget without).
    strict_vs_stock(running, allowed, need, preemptor_priority, order, fillers=fillers, swap=swap)


def strict_vs_stock(running, allowed, need, preemptor_priority, order, *, fillers=0, swap=True):
    from policy.criteria import Facts
    from policy.guards import Guards, StrictBudgets
    from policy.pdb import count_violations
    from policy.victims import NodeRejected

    pods = [
        pod(
            f"p{i}", node="n1", priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            ns="kafka" if budget == 1 else "default", labels={"app": ("x", "a", "b")[budget], "id": str(i)},
            terminating=term == 0, kind=KINDS[i % 4],
        )
        for i, (prio, cpu, qos, start, budget, term) in enumerate(running)
    ]
    pods += [pod(f"f{i:02}", node="n1", priority=0, cpu=1, qos=B, start=i, kind="ReplicaSet") for i in range(fillers)]
    budgets = [pdb("a", allowed=allowed[0], match={"app": "a"}, ns="kafka"), pdb("b", allowed=allowed[1], match={"app": "b"})]
    v = view([node("n1", cpu=12 + fillers)], pods, budgets)
    strict_of = Guards(strict=StrictBudgets(namespaces=frozenset({"kafka"}))).strict_of(v.budgets_covering, v)
    strict = order.with_strict()
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    where = homes.of(v)
    choosing = Choosing(preemptor, v.budgets_covering, order=strict, homes=where, strict_of=strict_of)
    mine = select_victims(node=v.nodes["n1"], choosing=choosing, swap=swap)
    theirs = stock.select_victims(node=v.nodes["n1"], preemptor=preemptor, reservations=(), budgets_of=v.budgets_covering)
    if not isinstance(theirs, stock.Victims):
        return
    if isinstance(mine, NodeRejected):
        event("the node dropped for a strict budget")
        assert mine.cause is Cause.STRICT_BUDGET, mine
        assert count_violations(theirs.victims, strict_of).count > 0
        return
    assert count_violations(mine.victims, strict_of).count == 0
    if count_violations(theirs.victims, strict_of).count:
        event("stock violates a strict budget reprieve keeps")

    def key(victims):
        no_home = frozenset(p.uid for p in victims if where.home(p, excluding="n1") is None)
        return strict.cost(victims, Facts(v.budgets_covering, v.gang_of, no_home=no_home, strict_of=strict_of)).key

    assert key(mine.victims) <= key(theirs.victims), ([p.name for p in mine.victims], [p.name for p in theirs.victims])

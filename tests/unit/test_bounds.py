"""policy.bounds: the floor never exceeds the cost, and preempt solving only the nodes that can
still win answers exactly as solving every node does."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from policy import bounds, homes, ranking, tenancy
from policy.causes import Cause
from policy.criteria import pending_room
from policy.model import InFlight, PriorityClass
from policy.preempt import Proposal, Verdict, decide
from policy.victims import Choosing, VictimSelection, select_victims
from tests.builders import group, node, pdb, pod, view
from tests.unit.test_preempt_vs_stock import B, BE, G, GRACES, JOB_OF, JOBS, NOW, ROLES, checkpoint, running_pods


def _pods(running, on: str, *, prefix: str = ""):
    return [
        pod(
            f"{prefix}p{i}", node=on, priority=prio, cpu=cpu, qos=qos if cpu else BE, start=start,
            labels={"app": "a" if budgeted else "b" if i % 3 == 0 else f"x{i}", **ROLES[role]}, terminating=term == 0,
            pc="optout" if i % 4 == 1 else "", gang=(f"g{gang}", None) if gang else None,
            kind=(None, "ReplicaSet", "ReplicaSet", "DaemonSet")[i % 4],  # policy.homes: who re-creates it
            deletion_cost=(start * 7 + i) % 5 - 2,  # -2..2: the deletion-cost bound, negative costs too
            job=JOB_OF[owner], grace=GRACES[(start + i) % 3],
            checkpoint=checkpoint(i, start),  # the work-lost bound: checkpoints before and after the start
        )
        for i, (prio, cpu, qos, start, budgeted, term, gang, role, owner) in enumerate(running)
    ]


GROUPS = [group("g1", 2), group("g2", 3)]


OPT_OUT = PriorityClass("optout", 0, annotations={tenancy.OPT_OUT_ANNOTATION: "false"})


def _budgets(allowed: int, other: int):
    # Pods under "a" are also under "a2", which allows one more; "b" overlaps nothing and
    # counts p3 as disrupted already.
    return [
        pdb("a", allowed=allowed, match={"app": "a"}),
        pdb("a2", allowed=allowed + 1, match={"app": "a"}),
        pdb("b", allowed=other, match={"app": "b"}, disrupted={"p3"}),
    ]


@settings(max_examples=1500, deadline=None)
@given(
    running=running_pods,
    allowed=st.integers(0, 2),
    other=st.integers(0, 2),
    need=st.integers(0, 8),
    preemptor_priority=st.integers(1, 7),
    held=st.integers(0, 3),
    slots=st.integers(2, 12),
    unsettled=st.sets(st.integers(0, 8), max_size=3),
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),
    spare=st.integers(0, 6),
    waiting=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 8)), max_size=3),  # pending pods: cpu, memory
)
def test_floor_is_at_most_the_cost_criterion_by_criterion(
    running, allowed, other, need, preemptor_priority, held, slots, unsettled, order, spare, waiting
):
    pods = _pods(running, "n1")
    if held:
        pods.append(pod("held", cpu=held, priority=preemptor_priority, nominated="n1"))
    pods += [pod(f"w{i}", cpu=cpu, mem=mem) for i, (cpu, mem) in enumerate(waiting)]
    # A spare node where some replacements fit (their home), as many as ``spare`` says.
    v = view([node("n1", cpu=12, pods=slots), node("spare", cpu=spare)], pods, _budgets(allowed, other), groups=GROUPS, jobs=JOBS)
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    info = v.nodes["n1"]
    reservations = v.reservations("n1", pod=preemptor)
    queue = pending_room.queue(v, preemptor)
    floor = bounds.floor(v, info, preemptor, reservations, order, homes.of(v), now=NOW, pending=queue)
    # Pods the answer may not name stay, as select_victims' ``unnameable`` makes them.
    names = {f"p{i}" for i in unsettled}
    choosing = Choosing(
        preemptor, v.budgets_covering, gang_of=v.gang_of, order=order, homes=homes.of(v), app_of=v.app_of, stake_of=v.stake_of,
        now=NOW, pending=queue,
    )
    selection = select_victims(
        node=info, choosing=choosing, reservations=reservations, unnameable=lambda p: "unsettled" if p.name in names else ""
    )
    if not isinstance(selection, VictimSelection):
        return
    assert floor is not bounds.NO_ROOM
    key = selection.cost.key
    assert len(floor) == len(key)
    start = order.position(ranking.START)
    # The pending pods left without room are bounded only where the victims are the bound's.
    waits, victims = order.position(ranking.PENDING_ROOM), order.position(ranking.VICTIMS)
    assert key[victims] != floor[victims] or floor[waits] <= key[waits], (floor, key)
    assert all(f <= k for i, (f, k) in enumerate(zip(floor[:start], key[:start])) if i != waits), (floor, key)
    # The start criterion is bounded only where the most important victim's priority is the bound's.
    top = order.position(ranking.TOP_PRIORITY)
    assert key[top] != floor[top] or floor[start] <= key[start], (floor, key)
    assert floor <= key
    # Asked twice, the summary is the one kept with the view.
    assert bounds.below(v, info, preemptor_priority) is bounds.below(v, info, preemptor_priority)


def test_floor_counts_violations_no_victim_set_can_avoid():
    # 4 cpu to free among three 2-cpu pods under a budget allowing one disruption: any two
    # of them violate once, and nothing else runs there.
    running = [pod(f"a{i}", node="n1", priority=1, cpu=2, labels={"app": "a"}) for i in range(3)]
    v = view([node("n1", cpu=6)], running, [pdb("a", allowed=1, match={"app": "a"})])
    preemptor = pod("pre", priority=10, cpu=4)
    floor = bounds.floor(v, v.nodes["n1"], preemptor, ())
    at = ranking.DEFAULT.position
    # One violation, a victim of priority 1 at least.
    assert (floor[at(ranking.PDB_VIOLATIONS)], floor[at(ranking.TOP_PRIORITY)]) == (1, 1)
    assert floor[ranking.DEFAULT.position(ranking.VICTIMS)] == 2


def test_a_node_that_cannot_win_is_outranked_unsolved_with_its_bound():
    # n1 can free room without touching the budget; on n2 every pod is under a budget that
    # allows nothing, so n2 costs at least one violation and is not solved.
    running = [
        pod("free", node="n1", priority=1, cpu=10, labels={"app": "x"}),
        pod("kept", node="n2", priority=1, cpu=10, labels={"app": "a"}),
    ]
    v = view([node("n1"), node("n2")], running, [pdb("a", allowed=0, match={"app": "a"})])
    proposals = {"n1": Proposal(("uid-default-free",), 0), "n2": Proposal(("uid-default-kept",), 1)}
    fast = decide(view=v, preemptor=pod("pre", priority=10, cpu=10), proposals=proposals)
    n2 = next(o for o in fast.outcomes if o.node == "n2")
    assert (n2.verdict, n2.cause, n2.cost) == (Verdict.OUTRANKED, Cause.NOT_SOLVED, None)
    assert n2.reasons == ("not solved: cannot beat n1: PDB violations at least 1 here vs 0",)
    full = decide(view=v, preemptor=pod("pre", priority=10, cpu=10), proposals=proposals, exhaustive=True)
    assert next(o for o in full.outcomes if o.node == "n2").cause is Cause.NONE
    assert fast.answer == full.answer == {"n1": Proposal(("uid-default-free",), 0)}


@pytest.mark.parametrize("started", [False, True])
def test_on_identical_nodes_one_node_is_solved_and_the_rest_proven_no_better(started):
    # upstream's PreemptionBasic: every node runs four Guaranteed priority-0 pods and the
    # preemptor needs three of them gone. The QoS and start bounds equal the cost, so one node
    # is solved; with start times the node whose third-youngest pod is youngest wins (n3).
    names = [f"n{i}" for i in range(6)]
    pods = [
        pod(f"{n}-p{j}", node=n, priority=0, cpu=2, qos=G, start=(100 * j + (50 if n == "n3" else i)) if started else None)
        for i, n in enumerate(names)
        for j in range(4)
    ]
    v = view([node(n, cpu=8) for n in names], pods)
    preemptor = pod("pre", priority=10, cpu=6)
    proposals = {n: Proposal(tuple(p.uid for p in v.nodes[n].pods[:3]), 0) for n in names}
    fast = decide(view=v, preemptor=preemptor, proposals=proposals)
    full = decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True)
    assert fast.answer == full.answer
    winner = "n3" if started else "n0"
    assert list(fast.answer) == [winner]
    unsolved = [o for o in fast.outcomes if o.cause is Cause.NOT_SOLVED]
    assert len(unsolved) == len(names) - 1
    if not started:  # every node costs the same: the others at best tie with the first name
        assert {o.reasons for o in unsolved} == {("not solved: cannot beat n0: at best ties with n0, which sorts first",)}
    else:
        assert all("start of the most important victims" in o.reasons[0] for o in unsolved), unsolved


def test_on_identical_nodes_a_pending_pod_without_room_anywhere_still_leaves_one_node_solved():
    # As above, with a pending 1-cpu pod: once three 2-cpu victims are gone and the 6-cpu
    # preemptor placed no node has room for it, and the bound says so (three victims free at
    # most 6 cpu), so the other nodes are still proven no better without being solved.
    names = [f"n{i}" for i in range(6)]
    pods = [pod(f"{n}-p{j}", node=n, priority=0, cpu=2, qos=G) for n in names for j in range(4)]
    v = view([node(n, cpu=8) for n in names], [*pods, pod("w", cpu=1)])
    preemptor = pod("pre", priority=10, cpu=6)
    proposals = {n: Proposal(tuple(p.uid for p in v.nodes[n].pods[:3]), 0) for n in names}
    fast = decide(view=v, preemptor=preemptor, proposals=proposals)
    assert list(fast.answer) == ["n0"]
    assert fast.answer == decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True).answer
    won = next(o for o in fast.outcomes if o.node == "n0")
    assert won.cost.value(ranking.PENDING_ROOM) == 1
    assert len([o for o in fast.outcomes if o.cause is Cause.NOT_SOLVED]) == len(names) - 1


@settings(max_examples=600, deadline=None)
@given(
    nodes=st.lists(running_pods, min_size=1, max_size=5),
    allowed=st.integers(0, 2),
    other=st.integers(0, 2),
    need=st.integers(1, 8),
    preemptor_priority=st.integers(1, 7),
    held=st.lists(st.integers(0, 3), min_size=5, max_size=5),
    proposed=st.lists(st.sets(st.integers(0, 8), max_size=3), min_size=5, max_size=5),
    unknown=st.integers(0, 5),
    flying=st.integers(0, 5),
    with_rules=st.booleans(),
    order=st.permutations(ranking.MOVABLE).map(ranking.Order),
    at=st.sampled_from([None, NOW]),  # with a time, the work lost is bounded per request in the kept floors
    sizes=st.lists(st.integers(6, 14), min_size=5, max_size=5),
    # Pending pods (cpu, memory, the zone they select, if any): the pending room's bound, read lazily.
    waiting=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 8), st.sampled_from([None, "a", "b"])), max_size=5),
    self_pending=st.booleans(),  # the preemptor is in the view, pending
)
# n1's floor ties with n0's cost (no live victim), and n1 is where the pod waits for
# terminating pods: such a node is solved although its name sorts after n0.
@example(
    nodes=[[(0, 0, G, 0, False, 0, 0, 0, 0)] * 2, [(0, 0, G, 0, False, 0, 0, 0, 0)] * 3], allowed=0, other=0, need=1,
    preemptor_priority=1, held=[0] * 5, proposed=[{0, 1}, set(), set(), set(), set()], unknown=2, flying=0,
    with_rules=False, order=ranking.DEFAULT, at=None, sizes=[12] * 5, waiting=[], self_pending=False,
)
def test_fast_path_answers_as_solving_every_node(
    nodes, allowed, other, need, preemptor_priority, held, proposed, unknown, flying, with_rules, order, at, sizes, waiting,
    self_pending,
):
    names = [f"n{i}" for i in range(len(nodes))]
    pods = []
    for name, running in zip(names, nodes):
        pods += _pods(running, name, prefix=f"{name}-")
    for name, cpu in zip(names, held):
        if cpu:
            pods.append(pod(f"held-{name}", cpu=cpu, priority=preemptor_priority, nominated=name))
    pods += [pod(f"w{i}", cpu=cpu, mem=mem, node_selector={"zone": zone} if zone else None)
             for i, (cpu, mem, zone) in enumerate(waiting)]
    preemptor = pod("pre", cpu=need, priority=preemptor_priority)
    if self_pending:
        pods.append(preemptor)
    v = view([node(n, cpu=size, pods=10, labels={"zone": "ab"[i % 2]}) for i, (n, size) in enumerate(zip(names, sizes))],
             pods, _budgets(allowed, other), [OPT_OUT], groups=GROUPS, jobs=JOBS)
    # With rules, pods of the opted-out class are a last resort and pods of the preemptor's
    # own application ("b") are protected: both only make victims dearer than the floor.
    rules = tenancy.Rules(application_label="app") if with_rules else None
    if with_rules:
        preemptor = pod("pre", cpu=need, priority=preemptor_priority, labels={"app": "b"})
    proposals = {}
    for i, name in enumerate(names):
        on = [p for p in v.nodes[name].pods if p.priority < preemptor_priority]
        uids = tuple(on[j].uid for j in sorted(proposed[i]) if j < len(on))
        if i == unknown:
            uids = (*uids, "uid-gone")  # the scheduler sees a pod reprieve does not: passed through
        proposals[name] = Proposal(uids, len(uids))
    in_flight = []
    if flying < len(names) and v.nodes[names[flying]].pods:
        earlier = pod("earlier", cpu=1, priority=preemptor_priority + 1)
        in_flight.append(InFlight(earlier, names[flying], v.nodes[names[flying]].pods[:1]))

    common = dict(view=v, preemptor=preemptor, proposals=proposals, rules=rules, in_flight=in_flight, order=order, now=at)
    full = decide(**common, exhaustive=True)
    fast = decide(**common)
    assert (fast.answer, fast.refusal) == (full.answer, full.refusal)
    # Exact ties of the node offered may be left unsolved: the tie is then not reported.
    assert [r for r in fast.reasons if " tie; " not in r] == [r for r in full.reasons if " tie; " not in r]
    winner = next((o for o in full.outcomes if o.verdict is Verdict.CHOSEN), None)
    for quick, slow in zip(fast.outcomes, full.outcomes):
        assert quick.node == slow.node
        if quick.cause is not Cause.NOT_SOLVED:
            assert quick == slow
            continue
        # Not solved: it lost, and is dearer than the node offered (or cannot make room at all).
        assert slow.verdict is not Verdict.CHOSEN
        if winner is None:
            continue  # nothing offered: the pod waits for pods already terminating somewhere
        assert slow.cost is None or (slow.cost.key, slow.node) > (winner.cost.key, winner.node)
        assert quick.reasons[0].startswith(f"not solved: cannot beat {winner.node}: ")
        if slow.cost is not None and slow.cost.key == winner.cost.key:
            assert quick.reasons[0].endswith("at best ties with " + winner.node + ", which sorts first")


def test_a_start_bound_says_no_later_than():
    # n1 can spare its budgeted pod b only by evicting a, whose start (50) is earlier than b's
    # (100): the bound knows only that the victim started no later than 100, and says so.
    running = [
        pod("w", node="n0", priority=0, cpu=2, qos=G, start=150),
        pod("a", node="n1", priority=0, cpu=4, qos=G, start=50),
        pod("b", node="n1", priority=0, cpu=2, qos=G, start=100, labels={"app": "guarded"}),
    ]
    v = view([node("n0", cpu=2), node("n1", cpu=6)], running, [pdb("guarded", allowed=0, match={"app": "guarded"})])
    proposals = {"n0": Proposal(("uid-default-w",), 0), "n1": Proposal(("uid-default-b",), 0)}
    preemptor = pod("pre", priority=10, cpu=2)
    fast = decide(view=v, preemptor=preemptor, proposals=proposals)
    full = decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True)
    assert fast.answer == full.answer == {"n0": Proposal(("uid-default-w",), 0)}
    n1 = next(o for o in fast.outcomes if o.node == "n1")
    assert n1.reasons == (
        "not solved: cannot beat n0: start of the most important victims (later is better) "
        "no later than 100s since the epoch here vs 150s since the epoch",
    )
    assert next(o for o in full.outcomes if o.node == "n1").cost.value(ranking.START) == -50


def test_a_sum_bound_with_negative_priorities_names_victims_not_a_sum():
    # Priority -5 everywhere: n1's three victims sum to -15, below n0's -5, yet n1 costs more
    # (its shifted sum is larger); the bound speaks of victims, not of a sum it cannot promise.
    # Every pod is a ReplicaSet's with room for its replacement on the spare node: all have a home.
    running = [
        pod("w", node="n0", priority=-5, cpu=4, qos=G, kind="ReplicaSet"),
        pod("x", node="n1", priority=-5, cpu=2, qos=B, kind="ReplicaSet"),
        pod("a", node="n1", priority=-5, cpu=2, qos=G, labels={"app": "guarded"}, kind="ReplicaSet"),
        pod("b1", node="n1", priority=-5, cpu=1, qos=G, kind="ReplicaSet"),
        pod("b2", node="n1", priority=-5, cpu=1, qos=G, kind="ReplicaSet"),
    ]
    nodes = [node("n0", cpu=4), node("n1", cpu=6), node("spare", cpu=8)]
    v = view(nodes, running, [pdb("guarded", allowed=0, match={"app": "guarded"})])
    proposals = {"n0": Proposal(("uid-default-w",), 0), "n1": Proposal(("uid-default-x", "uid-default-b1", "uid-default-b2"), 0)}
    preemptor = pod("pre", priority=10, cpu=4)
    fast = decide(view=v, preemptor=preemptor, proposals=proposals)
    full = decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True)
    assert fast.answer == full.answer
    n1 = next(o for o in fast.outcomes if o.node == "n1")
    assert n1.reasons == (
        "not solved: cannot beat n0: sum of victim priorities from at least 2 victim(s), each of priority -5 or more, "
        "here vs 1 victim(s) summing to -5",
    ), n1.reasons
    solved = next(o for o in full.outcomes if o.node == "n1")
    assert len(solved.victims) >= 2 and all(p.priority >= -5 for p in solved.victims)

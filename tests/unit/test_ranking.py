"""policy.ranking: which candidate node's victims cost the least, criterion by criterion."""

from __future__ import annotations

import pytest

from policy import homes, ranking
from policy.causes import Cause
from policy.guards import Guards, StrictBudgets
from policy.jobs import OnDisruption
from policy.criteria import Facts
from policy.model import PriorityClass
from policy.preempt import Verdict, decide
from policy.qos import QoS
from policy.tenancy import Rules
from tests.builders import job, node, pdb, pod, reference_key, room_for_pending, scheduler_proposals, view

G = QoS.GUARANTEED
KEEP = PriorityClass("keep", 0, annotations={Rules().opt_out_annotation: "false"})  # opts its pods out
LOWEST = -(2**31)  # the lowest priority a pod can have (int32)


# A Spark application's driver and executors (policy.apps), by role.
SPARK = {role: {"spark-role": role, "spark-app-selector": "etl"} for role in ("driver", "executor")}


def outcome(decision, name):
    return next(o for o in decision.outcomes if o.node == name)


def row(name, cluster, preemptor, chosen, rules=None, guards=None, now=None):
    """A row of test_node_ranking: ``chosen`` offered of n1 and n2 in ``cluster``, ``name``
    (a Criterion.name) deciding. With ``guards`` (policy.guards) the other node is dropped,
    not outranked: a strict budget is never violated. ``now``: the request's time."""
    return pytest.param(name, cluster, preemptor, rules, chosen, guards, now, id=name)


def criterion_named(reason: str) -> ranking.Criterion | None:
    """The criterion an outranked node's reason says decided: its last clause starts with the
    criterion's name (the longest that fits: "victims with no home" is not "victims")."""
    clause = reason.rsplit(": ", 1)[-1]
    return max((c for c in ranking.CANONICAL if clause.startswith(f"{c.name} ")), key=lambda c: len(c.name), default=None)


# One row per criterion of ranking.CANONICAL, in the default order: n1 and n2 tie on every
# criterion before it and differ on it. Nodes have 10 cpu unless a row says otherwise; the
# preemptor has priority 10.
ROWS = [
    row(
        # n1: 1 strict budget violation (kafka/k allows none), n2: 0 (its budget is not strict);
        # 1 PDB violation each, and n1's victim has the lower priority (1 < 5), which would make
        # n1 the choice without the rule.
        "strict budget violations",
        view([node("n1"), node("n2")],
             [pod("k", node="n1", priority=1, cpu=10, ns="kafka"), pod("b", node="n2", priority=5, cpu=10)],
             [pdb("k", allowed=0, match={"app": "k"}, ns="kafka"), pdb("b", allowed=0, match={"app": "b"})]),
        pod("pre", priority=10, cpu=10), "n2", guards=Guards(strict=StrictBudgets(namespaces=frozenset({"kafka"}))),
    ),
    row(
        # n1: 1 opted-out victim, n2: 0; n2's victim has the higher priority (5 > 0), which
        # comes later.
        "opted-out victims",
        view([node("n1"), node("n2")], [pod("kept", node="n1", cpu=10, pc="keep"), pod("plain", node="n2", priority=5, cpu=10)],
             classes=[KEEP]),
        pod("pre", priority=10, cpu=10), "n2", Rules(),
    ),
    row(
        # n1: 1 PDB violation (its victim behind a budget allowing none), n2: 0; n2's victim has
        # the higher priority (5 > 1).
        "PDB violations",
        view([node("n1"), node("n2")],
             [pod("db", node="n1", priority=1, cpu=10, labels={"app": "db"}), pod("b", node="n2", priority=5, cpu=10)],
             [pdb("db", allowed=0, match={"app": "db"})]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: its victim's Job has backoffLimit 0: evicting it fails the Job (1 Job failed); n2's
        # victim's Job has backoffLimit 1 (a retry left). Both burn a retry, no budget, no gang;
        # n2's victim has the higher priority (5 > 1).
        "Jobs failed",
        view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, job="zero"), pod("b", node="n2", priority=5, cpu=10, job="one")],
             jobs=[job("zero", backoff=0), job("one", backoff=1)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: 1 broken gang (g0's gang runs 2 members, g1 on n3, and needs 2), n2: 0; 0 PDB
        # violations each; n2's victim has the higher priority (5 > 1).
        "broken gangs",
        view([node("n1"), node("n2"), node("n3")],
             [pod("g0", node="n1", priority=1, cpu=10, gang=("train", 2)), pod("g1", node="n3", priority=1, cpu=10, gang=("train", 2)),
              pod("b", node="n2", priority=5, cpu=10)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: its one pod, a1, is one of gang a's three running members (a2 and a3 on n3), and
        # the gang needs all three: evicting a1 loses 3 pods. n2: both members of gang b (needs
        # 2) go: 2 pods lost. One broken gang each, no budget, priority 1 everywhere; n2 has more
        # Burstable victims (2 > 1), which comes later.
        "pods lost with broken gangs",
        view([node("n1", cpu=2), node("n2", cpu=2), node("n3", cpu=4)],
             [pod("a1", node="n1", priority=1, cpu=2, gang=("a", 3)), pod("a2", node="n3", priority=1, cpu=2, gang=("a", 3)),
              pod("a3", node="n3", priority=1, cpu=2, gang=("a", 3)),
              pod("b1", node="n2", priority=1, cpu=1, gang=("b", 2)), pod("b2", node="n2", priority=1, cpu=1, gang=("b", 2))]),
        pod("pre", priority=10, cpu=2), "n2",
    ),
    row(
        # n1: most important victim at priority 5, n2: at 1; no budget, no gang.
        "highest victim priority",
        view([node("n1"), node("n2")], [pod("a", node="n1", priority=5, cpu=10), pod("b", node="n2", priority=1, cpu=10)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: its one pod is the Burstable driver of Spark application etl, whose 3 executors run
        # on n3: evicting it loses 4 pods. n2: a lone Guaranteed pod, which would lose the
        # Guaranteed count that comes later (1 > 0). Priority 1 everywhere; no budget, no gang.
        "pods lost with their managers",
        view([node("n1"), node("n2"), node("n3")],
             [pod("driver", node="n1", priority=1, cpu=10, labels=SPARK["driver"]),
              *(pod(f"exec-{i}", node="n3", priority=1, cpu=1, labels=SPARK["executor"]) for i in range(3)),
              pod("g", node="n2", priority=1, cpu=10, qos=G)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1's victim belongs to a Job that counts DisruptionTarget (backoffLimit 6: 1 retry
        # burned, no Job failed); n2's to a Job whose podFailurePolicy ignores it (0). Alike
        # otherwise, but n2's is Guaranteed and started earlier (100 < 500), which would make n1
        # the choice on the Guaranteed victims and the start, which come after.
        "retries burned",
        view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, start=500, job="counts"),
              pod("b", node="n2", priority=1, cpu=10, start=100, qos=G, job="ignores")],
             jobs=[job("counts"), job("ignores", on=OnDisruption.IGNORE)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: 1 Guaranteed victim, n2: 0 (Burstable); both at priority 1.
        "Guaranteed victims",
        view([node("n1"), node("n2")], [pod("g", node="n1", priority=1, cpu=10, qos=G), pod("b", node="n2", priority=1, cpu=10)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1: 1 Burstable victim (10 cpu), n2: 0; n2 has one pod slot, taken by a BestEffort pod
        # (no requests), which must go for the preemptor to fit. Both at priority 1, 0 Guaranteed.
        "Burstable victims",
        view([node("n1"), node("n2", pods=1)], [pod("b", node="n1", priority=1, cpu=10), pod("be", node="n2", priority=1)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # 4-cpu nodes, each 1 cpu at priority 100 and a 2-cpu Burstable victim at priority 1
        # (1 free + 2 = 3 for the preemptor). n1's victim is bare: 1 with no home; n2's is a
        # ReplicaSet's, whose replacement (2 cpu) fits on 'spare' (2 cpu, too small for the
        # preemptor's 3): 0.
        "victims with no home",
        view([node("n1", cpu=4), node("n2", cpu=4), node("spare", cpu=2)],
             [pod("high1", node="n1", priority=100, cpu=1), pod("bare", node="n1", priority=1, cpu=2),
              pod("high2", node="n2", priority=100, cpu=1), pod("owned", node="n2", priority=1, cpu=2, kind="ReplicaSet")]),
        pod("pre", priority=10, cpu=3), "n2",
    ),
    row(
        # Two 5-cpu Burstable bare victims each, the most important at priority 5 on both.
        # Sums of priorities: n1 5 + 5 = 10, n2 5 + 1 = 6.
        "sum of victim priorities",
        view([node("n1"), node("n2")],
             [pod("a1", node="n1", priority=5, cpu=5), pod("a2", node="n1", priority=5, cpu=5),
              pod("b1", node="n2", priority=5, cpu=5), pod("b2", node="n2", priority=1, cpu=5)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # The preemptor needs 2 gpus; BestEffort victims (gpus only), the most important at 0.
        # n1: 1 victim (2 gpus, bare); n2: 2 (1 gpu each): one bare at 0, one a ReplicaSet's at
        # the lowest priority, whose replacement fits on 'spare' (1 gpu): 1 with no home each.
        # Shifted sums: n1 (0 + 2^31) = 2^31, n2 (0 + 2^31) + (-2^31 + 2^31) = 2^31, equal.
        # Victims: n1 1, n2 2. (Each victim adds 2^31 to the sum, so only a priority of -2^31
        # leaves the sum equal with more victims.)
        "victims",
        view([node("n1", gpu=2), node("n2", gpu=2), node("spare", gpu=1)],
             [pod("a", node="n1", gpu=2), pod("b", node="n2", gpu=1),
              pod("lowest", node="n2", priority=LOWEST, gpu=1, kind="ReplicaSet")]),
        pod("pre", priority=10, gpu=2), "n1",
    ),
    row(
        # One Burstable bare victim each at priority 1, alike but for the grace period: n1's
        # 60 s, n2's 0 s; n2's started earlier (100 < 200), which would make n1 the choice on
        # the start, which comes after: n2, whose room is free at once.
        "longest time to room",
        view([node("n1"), node("n2")], [pod("a", node="n1", priority=1, cpu=10, start=200, grace=60),
                                         pod("b", node="n2", priority=1, cpu=10, start=100, grace=0)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # n1's victim has pod-deletion-cost 100, n2's none (0); alike otherwise, but n1's started
        # later (200 > 100), which would make n1 the choice on the start, which comes after.
        "highest pod-deletion-cost",
        view([node("n1"), node("n2")], [pod("a", node="n1", priority=1, cpu=10, start=200, deletion_cost=100),
                                         pod("b", node="n2", priority=1, cpu=10, start=100)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # At now = 7,200 s: n1's victim started 2 h ago (at 0) but checkpointed 10 min ago (6,600),
        # n2's started 1 h ago (3,600) with no checkpoint. Each holds the whole node's 10 cores:
        # n1 loses 10 x 600 = 6,000 core-seconds, n2 10 x 3,600 = 36,000. n1's victim goes,
        # though the start, which comes after, would pick n2 (its victim started later).
        "work lost since the last checkpoint",
        view([node("n1"), node("n2")], [pod("a", node="n1", priority=1, cpu=10, start=0, checkpoint=6600),
                                         pod("b", node="n2", priority=1, cpu=10, start=3600)]),
        pod("pre", priority=10, cpu=10), "n1", now=7200,
    ),
    row(
        # One Burstable bare victim each at priority 1, alike but n2 has 2 cpu more (12): once
        # the victim is gone and the preemptor placed, n2 has room for the pending pod w (2 cpu),
        # n1 none. n1's victim started later (500 > 100), which would make n1 the choice on the
        # start, which comes after: n2, where w still fits.
        "pending pods left without room",
        view([node("n1"), node("n2", cpu=12)], [pod("a", node="n1", priority=1, cpu=10, start=500),
                                                  pod("b", node="n2", priority=1, cpu=10, start=100),
                                                  pod("w", cpu=2)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
    row(
        # One Burstable bare victim each at priority 1: n1's started at 100 s, n2's at 500 s.
        # The younger work goes: n2.
        "start of the most important victims (later is better)",
        view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, start=100), pod("b", node="n2", priority=1, cpu=10, start=500)]),
        pod("pre", priority=10, cpu=10), "n2",
    ),
]


@pytest.mark.parametrize("name, v, preemptor, rules, chosen, guards, now", ROWS)
def test_node_ranking(name, v, preemptor, rules, chosen, guards, now):
    proposals = scheduler_proposals(v, preemptor, nodes=["n1", "n2"])
    assert set(proposals) == {"n1", "n2"}  # both are candidates, as the scheduler sees them
    [other] = {"n1", "n2"} - {chosen}
    exhaustive = decide(view=v, preemptor=preemptor, proposals=proposals, rules=rules, exhaustive=True, guards=guards, now=now)
    # Solving only the nodes that can still win (policy.bounds) gives the same answer.
    fast = decide(view=v, preemptor=preemptor, proposals=proposals, rules=rules, guards=guards, now=now)
    for decision in (exhaustive, fast):
        assert list(decision.answer) == [chosen], decision.reasons
        loser = outcome(decision, other)
        if guards is not None:  # a strict budget's violation drops the node: never offered
            assert (loser.verdict, loser.cause) == (Verdict.DROPPED, Cause.STRICT_BUDGET), loser.reasons
            assert "strict PodDisruptionBudget" in loser.reasons[0]
            # Without the rule the other node wins: the criterion decided.
            assert list(decide(view=v, preemptor=preemptor, proposals=proposals, rules=rules, now=now).answer) == [other]
            continue
        assert loser.verdict is Verdict.OUTRANKED
        assert getattr(criterion_named(loser.reasons[-1]), "name", None) == name, loser.reasons
    # ... and the same reasons (an exact tie of the node offered is not solved, so not reported).
    assert fast.reasons == tuple(r for r in exhaustive.reasons if " tie; " not in r)
    # The chosen node's cost is its victims' key, criterion by criterion (tests.builders.reference_key).
    won, where = outcome(exhaustive, chosen), homes.of(v)
    no_home = frozenset(p.uid for p in won.victims if where.home(p, excluding=chosen) is None)  # none opted out
    facts = Facts(v.budgets_covering, v.gang_of, no_home=no_home, app_of=v.app_of, stake_of=v.stake_of,
                  now=now, allocatable=v.nodes[chosen].node.allocatable, pending_room=room_for_pending(v, chosen, preemptor))
    assert won.cost.key == reference_key(won.victims, facts, won.cost.layout)


def test_every_criterion_has_a_row():
    # A criterion added to the ranking without a row here fails.
    assert sorted(p.id for p in ROWS) == sorted(c.name for c in ranking.CANONICAL)


def test_an_exact_tie_offers_the_first_node():
    # Everything equal, the start too: only n1 is offered, so that the answer in flight is known.
    v = view([node("n1"), node("n2")],
             [pod("a", node="n1", priority=1, cpu=10, start=100), pod("b", node="n2", priority=1, cpu=10, start=100)])
    preemptor = pod("pre", priority=10, cpu=10)
    proposals = scheduler_proposals(v, preemptor, nodes=["n1", "n2"])
    decision = decide(view=v, preemptor=preemptor, proposals=proposals, exhaustive=True)
    assert list(decision.answer) == ["n1"]
    assert outcome(decision, "n2").reasons[-1] == "not chosen: ties with n1, which is offered alone"
    # Unsolved, n2 is not reported as a tie (an exact tie of the node offered is not solved).
    fast = decide(view=v, preemptor=preemptor, proposals=proposals)
    assert fast.answer == decision.answer
    assert fast.reasons == tuple(r for r in decision.reasons if " tie; " not in r)

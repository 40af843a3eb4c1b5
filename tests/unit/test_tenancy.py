"""Multi-tenant rules: shares, the seed 001 worked example and every law of seed 002.

Kubernetes priority stays on top: the scheduler only offers nodes with strictly
lower-priority victims, so every preemptor here outranks its victims (law 6's "or equal"
cannot reach the extender; see docs/policy.md).
"""

from __future__ import annotations

import pytest

from policy import tenancy
from policy.causes import Cause, Refusal
from policy.labels import Selector
from policy.model import HOST_PORTS, PriorityClass
from policy.qos import QoS
from policy.preempt import Proposal, Verdict, decide
from policy.tenancy import OptOut, Preemption, Queue, Rules, water_fill
from policy.victims import Choosing, NodeRejected, select_victims
from tests.builders import node, pod, view

CPU = 1000  # millicores per core
G = QoS.GUARANTEED


def cpu(n: float) -> dict[str, int]:
    return {"cpu": round(n * CPU)}


# -- shares ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "capacity, claims, expected",
    [
        pytest.param(
            # Seed 001: 9 cpus, weights 2, 4, 3, all hungry: 9*2/9=2, 9*4/9=4, 9*3/9=3.
            cpu(9),
            [("q1", 2, cpu(100)), ("q2", 4, cpu(100)), ("q3", 3, cpu(100))],
            {"q1": cpu(2), "q2": cpu(4), "q3": cpu(3)},
            id="seed-001-weights-2-4-3",
        ),
        pytest.param(
            # Equal weights, 9 cpus: 3 each, but a wants only 1; its 2 spare go to b and c
            # by weight: 3 + 1 = 4 each.
            cpu(9),
            [("a", 1, cpu(1)), ("b", 1, cpu(100)), ("c", 1, cpu(100))],
            {"a": cpu(1), "b": cpu(4), "c": cpu(4)},
            id="capped-at-demand-rest-redistributed",
        ),
        pytest.param(
            # 10 cpus by weights 1 and 2: 3333.33m and 6666.67m, floored so the sum fits.
            cpu(10),
            [("a", 1, cpu(100)), ("b", 2, cpu(100))],
            {"a": {"cpu": 3333}, "b": {"cpu": 6666}},
            id="fractions-floored",
        ),
        pytest.param(
            # Everyone satisfied: nothing more is handed out, the rest stays unassigned.
            cpu(9),
            [("a", 1, cpu(1)), ("b", 5, cpu(2))],
            {"a": cpu(1), "b": cpu(2)},
            id="all-satisfied",
        ),
        pytest.param(
            # The pod-count slot is never shared out.
            {"cpu": 4000, "pods": 110},
            [("a", 1, {"cpu": 8000, "pods": 3})],
            {"a": cpu(4)},
            id="pods-slot-not-shared",
        ),
    ],
)
def test_water_fill(capacity, claims, expected):
    assert water_fill(capacity, claims) == expected


def seed_001():
    """Seed 001 after Queue-3 arrives: 9 cpus on one node. Queue-1 (weight 2) runs pod-2 (2
    cpu) and pod-3 (1); Queue-2 (weight 4) runs pod-1 (2), pod-2 (2), pod-3 (1); Queue-3
    (weight 3) has a pending pod needing 3 cpus. Deserved: 2, 4 and 3."""
    rules = Rules(
        queues=(
            Queue("queue-1", namespaces=frozenset({"q1"}), weight=2),
            Queue("queue-2", namespaces=frozenset({"q2"}), weight=4),
            Queue("queue-3", namespaces=frozenset({"q3"}), weight=3),
        )
    )
    running = [
        pod("pod-2", ns="q1", node="n1", cpu=2, start=1),
        pod("pod-3", ns="q1", node="n1", cpu=1, start=2),
        pod("pod-1", ns="q2", node="n1", cpu=2, start=1),
        pod("pod-2", ns="q2", node="n1", cpu=2, start=2),
        pod("pod-3", ns="q2", node="n1", cpu=1, start=3),
    ]
    preemptor = pod("pod-1", ns="q3", cpu=3, priority=1)
    return rules, view([node("n1", cpu=9)], [*running, preemptor]), preemptor


def test_seed_001_deserved_shares():
    rules, v, _ = seed_001()
    standing = tenancy.assess(rules, v)
    assert {q: s.deserved.get("cpu") for q, s in standing.queues.items() if q != "default"} == {
        "queue-1": 2 * CPU,
        "queue-2": 4 * CPU,
        "queue-3": 3 * CPU,
    }
    # Usage counts bound pods (3 and 5); Queue-3's demand is its pending pod (3).
    assert standing.queues["queue-1"].usage["cpu"] == 3 * CPU
    assert standing.queues["queue-2"].usage["cpu"] == 5 * CPU
    assert standing.queues["queue-3"].demand["cpu"] == 3 * CPU


def test_seed_001_victims_are_each_overused_queues_one_cpu_pod():
    # 8 of 9 cpus used; the Queue-3 pod needs 3, so 2 must go. Each of Queue-1 and Queue-2 is
    # 1 cpu over its deserved share: only their 1-cpu pod-3s may go (a 2-cpu pod would leave
    # its queue below: 3-2=1 < 2, 5-2=3 < 4). Exactly the seed's choice.
    rules, v, preemptor = seed_001()
    decision = decide(view=v, preemptor=preemptor, proposals={"n1": Proposal((), 0)}, rules=rules)
    assert [p.key for p in decision.outcomes[0].victims] == ["q1/pod-3", "q2/pod-3"]
    # Without the rules the cheapest set is one 2-cpu pod (the newest at that size).
    plain = decide(view=v, preemptor=preemptor, proposals={"n1": Proposal((), 0)})
    assert [p.key for p in plain.outcomes[0].victims] == ["q2/pod-2"]


# -- the laws of seed 002 -----------------------------------------------------------------

PROD = Queue("prod", namespaces=frozenset({"prod"}), guaranteed=cpu(4))
TEST = Queue("test", namespaces=frozenset({"test"}), guaranteed=cpu(2))
SIBLINGS = Rules(queues=(PROD, TEST))


def select(rules, pods, preemptor, *, nodes=None, classes=()):
    v = view(nodes or [node("n1", cpu=8)], [*pods, preemptor], classes=classes)
    standing = tenancy.with_in_flight(tenancy.assess(rules, v), v, ())
    screen = tenancy.screen(standing=standing, view=v, preemptor=preemptor)
    return select_victims(node=v.nodes["n1"], choosing=Choosing(preemptor, v.budgets_covering, screen=screen), reservations=())


def names(selection):
    assert not isinstance(selection, NodeRejected), selection.reason
    return sorted(p.key for p in selection.victims)


@pytest.mark.parametrize(
    "running, preemptor, expected",
    [
        pytest.param(
            # Law 4: prod uses 1 of its 4 guaranteed cpus, so it may take test's pods; test
            # (5 used, 2 guaranteed) stays at 4 >= 2 after losing one. Law 2 holds.
            [pod("p1", ns="prod", node="n1", cpu=1, priority=1), *(pod(f"t{i}", ns="test", node="n1", cpu=1, start=i) for i in range(5))],
            pod("p2", ns="prod", cpu=3, priority=1),
            ["test/t4"],
            id="law-4-queue-below-guarantee-preempts",
        ),
        pytest.param(
            # Law 4: prod already uses its 4 guaranteed cpus: it may not take test's pods.
            [*(pod(f"p{i}", ns="prod", node="n1", cpu=1, priority=1) for i in range(4)), *(pod(f"t{i}", ns="test", node="n1", cpu=1) for i in range(4))],
            pod("p9", ns="prod", cpu=1, priority=1),
            "queue prod is not below its share",
            id="law-4-queue-at-guarantee-may-not-preempt",
        ),
        pytest.param(
            # Law 2: prod (3 of 4) may preempt; test uses 3 of 2 guaranteed, so it can lose its
            # 1-cpu pod but not its 2-cpu one (3-2=1 < 2). 2 cpus are free, the preemptor needs
            # 4: without t1 there is not enough room.
            [pod("p1", ns="prod", node="n1", cpu=3, priority=1), pod("t1", ns="test", node="n1", cpu=2), pod("t2", ns="test", node="n1", cpu=1)],
            pod("p2", ns="prod", cpu=4, priority=1),
            "queue test would fall below its share",
            id="law-2-victim-queue-never-below-guarantee",
        ),
        pytest.param(
            # Law 2, over the whole victim set: test (4 used, 2 guaranteed) may lose 2 cpus.
            # 1 cpu free, the preemptor needs 4. The plain reprieve keeps the Guaranteed pod d
            # (default queue, no share) and t0, evicting t1-t3: test would drop to 1. Sparing
            # test's pods first evicts d and t3 instead.
            [pod("p1", ns="prod", node="n1", cpu=1, priority=1), pod("d", node="n1", cpu=2, qos=G),
             *(pod(f"t{i}", ns="test", node="n1", cpu=1, start=i) for i in range(4))],
            pod("p2", ns="prod", cpu=4, priority=1),
            ["default/d", "test/t3"],
            id="law-2-counted-over-the-victim-set",
        ),
        pytest.param(
            # Law 5: test is below its guarantee (1 of 2): its pod may not go, even though prod
            # (3 of 4) may preempt.
            [pod("p1", ns="prod", node="n1", cpu=3, priority=1), pod("d", node="n1", cpu=4, priority=1),
             pod("t1", ns="test", node="n1", cpu=1)],
            pod("p2", ns="prod", cpu=1, priority=1),
            "queue test would fall below its share",
            id="law-5-queue-below-guarantee-is-never-a-victim",
        ),
        pytest.param(
            # Own queue: Kubernetes rules only, even though prod is at its guarantee.
            [pod("low", ns="prod", node="n1", cpu=4), *(pod(f"t{i}", ns="test", node="n1", cpu=1) for i in range(4))],
            pod("high", ns="prod", cpu=2, priority=1),
            ["prod/low"],
            id="own-queue-kubernetes-rules-only",
        ),
        pytest.param(
            # Law 6 with Kubernetes on top: the equal-priority test pods are never candidates.
            [pod("p1", ns="prod", node="n1", cpu=1, priority=1), *(pod(f"t{i}", ns="test", node="n1", cpu=1, priority=1) for i in range(7))],
            pod("p2", ns="prod", cpu=1, priority=1),
            "no pod has priority below 1",
            id="law-6-lower-priority-only",
        ),
        pytest.param(
            # Protected namespaces: kube-system pods are never victims.
            [pod("dns", ns="kube-system", node="n1", cpu=8)],
            pod("p1", ns="prod", cpu=1, priority=1),
            "namespace kube-system is protected",
            id="protected-namespace",
        ),
    ],
)
def test_laws(running, preemptor, expected):
    result = select(SIBLINGS, running, preemptor)
    if isinstance(expected, list):
        assert names(result) == expected
    else:
        assert isinstance(result, NodeRejected)
        assert expected in result.reason


def test_law_3_same_application_by_owner():
    rules = Rules(application_owner=True)
    running = [pod("w1", node="n1", cpu=4, owner="rs-web"), pod("other", node="n1", cpu=4, owner="rs-api")]
    result = select(rules, running, pod("w2", cpu=8, priority=1, owner="rs-web"))
    assert isinstance(result, NodeRejected) and "same application as the preemptor" in result.reason
    assert names(select(rules, running, pod("w2", cpu=4, priority=1, owner="rs-web"))) == ["default/other"]


def test_law_3_same_application_by_label_is_per_namespace():
    rules = Rules(application_label="app.kubernetes.io/instance")
    mine = {"app.kubernetes.io/instance": "spark-1"}
    running = [pod("exec", ns="a", node="n1", cpu=4, labels=mine), pod("other", ns="b", node="n1", cpu=4, labels=mine)]
    # Same label value in another namespace is another application: only b/other may go.
    assert names(select(rules, running, pod("driver", ns="a", cpu=4, priority=1, labels=mine))) == ["b/other"]


# Law 7, the fence of seed 002's diagram: tenant-1 is fenced (queue B inside), tenant-2 is
# fenced with queue-1 and queue-2 inside, and the unfenced system queue may reach anywhere.
FENCED = Rules(
    queues=(
        Queue("tenant-1", preemption=Preemption.FENCE),
        Queue("queue-b", parent="tenant-1", namespaces=frozenset({"b"}), guaranteed=cpu(4)),
        Queue("tenant-2", preemption=Preemption.FENCE),
        Queue("queue-1", parent="tenant-2", namespaces=frozenset({"t2q1"}), guaranteed=cpu(4)),
        Queue("queue-2", parent="tenant-2", namespaces=frozenset({"t2q2"})),
        Queue("system", namespaces=frozenset({"system"}), guaranteed=cpu(4)),
        Queue("frozen", namespaces=frozenset({"frozen"}), preemption=Preemption.DISABLED),
    )
)


@pytest.mark.parametrize(
    "victim_ns, preemptor_ns, allowed",
    [
        pytest.param("t2q2", "t2q1", True, id="inside-the-fence"),
        pytest.param("b", "t2q1", False, id="outside-the-fence"),
        pytest.param("system", "b", False, id="fenced-tenant-cannot-reach-system"),
        pytest.param("t2q2", "system", True, id="unfenced-queue-reaches-into-a-fence"),
        pytest.param("frozen", "system", False, id="disabled-queue-is-never-a-victim"),
    ],
)
def test_law_7_fences_are_one_way(victim_ns, preemptor_ns, allowed):
    running = [pod("victim", ns=victim_ns, node="n1", cpu=8)]
    result = select(FENCED, running, pod("preemptor", ns=preemptor_ns, cpu=1, priority=1))
    if allowed:
        assert names(result) == [f"{victim_ns}/victim"]
    else:
        assert isinstance(result, NodeRejected) and result.cause is Cause.PROTECTED


def test_disabled_queue_still_follows_kubernetes_rules_inside():
    running = [pod("low", ns="frozen", node="n1", cpu=8)]
    assert names(select(FENCED, running, pod("high", ns="frozen", cpu=1, priority=1))) == ["frozen/low"]


def test_common_ancestor_is_not_charged():
    # prod and test share the parent 'org' (guaranteed 8). Moving room between siblings leaves
    # org's usage unchanged, so org's guarantee does not block it; test's own (none) neither.
    rules = Rules(
        queues=(
            Queue("org", guaranteed=cpu(8)),
            Queue("prod", parent="org", namespaces=frozenset({"prod"}), guaranteed=cpu(4)),
            Queue("test", parent="org", namespaces=frozenset({"test"})),
        )
    )
    running = [pod("t1", ns="test", node="n1", cpu=8)]
    assert names(select(rules, running, pod("p1", ns="prod", cpu=2, priority=1))) == ["test/t1"]


def test_ancestor_below_the_lowest_common_one_is_charged():
    # test's parent 'lab' is guaranteed 8 and uses 8: taking from test would leave lab below.
    rules = Rules(
        queues=(
            Queue("prod", namespaces=frozenset({"prod"}), guaranteed=cpu(4)),
            Queue("lab", guaranteed=cpu(8)),
            Queue("test", parent="lab", namespaces=frozenset({"test"})),
        )
    )
    running = [pod("t1", ns="test", node="n1", cpu=8)]
    result = select(rules, running, pod("p1", ns="prod", cpu=2, priority=1))
    assert isinstance(result, NodeRejected) and "queue lab would fall below its share" in result.reason


def test_nominated_pods_count_as_their_queues_usage():
    # Flow 1's guard: prod (guaranteed 4) runs 3 cpus and already has a 1-cpu pod nominated
    # after an earlier preemption. It is at its guarantee: the next prod pod may not preempt.
    running = [
        *(pod(f"p{i}", ns="prod", node="n1", cpu=1, priority=1) for i in range(3)),
        pod("p3", ns="prod", cpu=1, nominated="n1", priority=1),
        *(pod(f"t{i}", ns="test", node="n1", cpu=1) for i in range(5)),
    ]
    result = select(SIBLINGS, running, pod("p4", ns="prod", cpu=1, priority=1))
    assert isinstance(result, NodeRejected) and "queue prod is not below its share" in result.reason
    # The nominated pod itself, asking again, is judged without its own nomination.
    again = select(SIBLINGS, running[:3] + running[4:], pod("p3", ns="prod", cpu=1, nominated="n1", priority=1))
    assert len(names(again)) == 1 and names(again)[0].startswith("test/")


# -- opt-out ------------------------------------------------------------------------------

KEEP = PriorityClass("keep", 0, annotations={tenancy.OPT_OUT_ANNOTATION: "false"})


def test_soft_opt_out_is_taken_only_when_nothing_else_fits():
    rules = Rules(opt_out=OptOut.SOFT)
    # 8-cpu node: 'kept' (opted out, 4) and 'plain' (4). Needing 4, the plain pod goes.
    running = [pod("kept", node="n1", cpu=4, pc="keep"), pod("plain", node="n1", cpu=4)]
    assert names(select(rules, running, pod("x", cpu=4, priority=1), classes=[KEEP])) == ["default/plain"]
    # Needing 8, both must go: the opted-out pod is taken as a last resort, and said so.
    result = select(rules, running, pod("x", cpu=8, priority=1), classes=[KEEP])
    assert names(result) == ["default/kept", "default/plain"] and result.opted_out == 1
    assert any("opted out of preemption" in r for r in result.reasons)


def test_hard_opt_out_is_never_taken():
    rules = Rules(opt_out=OptOut.HARD)
    running = [pod("kept", node="n1", cpu=4, pc="keep"), pod("plain", node="n1", cpu=4)]
    result = select(rules, running, pod("x", cpu=8, priority=1), classes=[KEEP])
    assert isinstance(result, NodeRejected) and "opts out of preemption" in result.reason


def test_soft_opt_out_steers_to_another_node_first():
    # n1's only victim opted out; n2's victim has a higher priority but did not: n2 wins,
    # although stock ranking (lowest highest-victim priority) would pick n1.
    rules = Rules()
    v = view(
        [node("n1", cpu=4), node("n2", cpu=4)],
        [pod("kept", node="n1", cpu=4, pc="keep"), pod("plain", node="n2", cpu=4, priority=5)],
        classes=[KEEP],
    )
    preemptor = pod("x", cpu=4, priority=10)
    props = {"n1": Proposal(("uid-default-kept",), 0), "n2": Proposal(("uid-default-plain",), 0)}
    decision = decide(view=v, preemptor=preemptor, proposals=props, rules=rules)
    assert list(decision.answer) == ["n2"]
    n1 = next(o for o in decision.outcomes if o.node == "n1")
    assert n1.verdict is Verdict.OUTRANKED and "opted-out victims 1 here vs 0" in n1.reasons[-1]


# -- delay and fallbacks ------------------------------------------------------------------


@pytest.mark.parametrize(
    "rules, age, refused",
    [
        pytest.param(Rules(delay=30), 10, True, id="global-delay-not-yet"),
        pytest.param(Rules(delay=30), 31, False, id="global-delay-passed"),
        pytest.param(Rules(delay=30, queues=(Queue("fast", namespaces=frozenset({"default"}), delay=5),)), 10, False, id="queue-override"),
        pytest.param(Rules(), 0, False, id="no-delay"),
    ],
)
def test_preemption_delay(rules, age, refused):
    v = view([node("n1", cpu=4)], [pod("low", node="n1", cpu=4)])
    preemptor = pod("x", cpu=4, priority=1, created=1000.0)
    decision = decide(
        view=v, preemptor=preemptor, proposals={"n1": Proposal(("uid-default-low",), 0)}, rules=rules, now=1000.0 + age
    )
    assert (decision.refusal is Refusal.DELAY) is refused
    assert bool(decision.answer) is not refused


def test_scheduler_victims_kept_only_if_the_rules_allow_them():
    # The preemptor uses host ports (unmodelled): reprieve would keep the scheduler's victims,
    # but one is in kube-system, so the node is dropped instead.
    v = view([node("n1", cpu=4)], [pod("dns", ns="kube-system", node="n1", cpu=4)])
    preemptor = pod("x", cpu=4, priority=1, unmodelled=(HOST_PORTS,))
    decision = decide(view=v, preemptor=preemptor, proposals={"n1": Proposal(("uid-kube-system-dns",), 0)}, rules=Rules())
    assert decision.answer == {}
    assert decision.outcomes[0].cause is Cause.PROTECTED
    # Without rules the scheduler's victims stand.
    assert decide(view=v, preemptor=preemptor, proposals={"n1": Proposal(("uid-kube-system-dns",), 0)}).answer


def test_queue_membership_first_match_wins_with_selectors():
    rules = Rules(
        queues=(
            Queue("gpu", selector=Selector((("accel", "gpu"),))),
            Queue("team", namespaces=frozenset({"team"})),
        )
    )
    assert rules.queue_of(pod("a", ns="team", labels={"accel": "gpu"})) == "gpu"
    assert rules.queue_of(pod("b", ns="team")) == "team"
    assert rules.queue_of(pod("c", ns="other")) == "default"


def test_adding_a_pending_pod_later_equals_assessing_with_it():
    rules, v, preemptor = seed_001()
    without = view([node("n1", cpu=9)], [p for p in v.pods.values() if p.uid != preemptor.uid])
    direct = tenancy.assess(rules, without, pending=(preemptor,))
    later = tenancy.with_pending(tenancy.assess(rules, without), (preemptor,))
    assert direct.queues == later.queues and direct.membership == later.membership
    assert later.queues["queue-3"].deserved == {"cpu": 3 * CPU}


def test_with_a_policy_nodes_reprieve_cannot_judge_are_not_offered():
    v = view([node("n1", cpu=4)], [pod("low", node="n1", cpu=4)])
    preemptor = pod("x", cpu=4, priority=1)
    proposals = {"n1": Proposal(("uid-default-low",), 0), "elsewhere": Proposal(("uid-unknown",), 0)}
    plain = decide(view=v, preemptor=preemptor, proposals={"elsewhere": proposals["elsewhere"]})
    assert plain.answer == {"elsewhere": proposals["elsewhere"]}  # passed through as received
    ruled = decide(view=v, preemptor=preemptor, proposals=proposals, rules=Rules())
    assert set(ruled.answer) == {"n1"}
    dropped = next(o for o in ruled.outcomes if o.node == "elsewhere")
    assert dropped.verdict is Verdict.DROPPED and dropped.cause is Cause.UNKNOWN_NODE


# -- found in review ----------------------------------------------------------------------

PROD_2 = Queue("prod", namespaces=frozenset({"prod"}), guaranteed=cpu(2))


def test_a_nomination_the_view_has_not_counted_is_not_subtracted():
    # prod (guaranteed 2) uses 2. The scheduler already nominated p3, reprieve's view has not
    # seen it: prod's usage never counted p3, so it must not be taken off either.
    rules = Rules(queues=(PROD_2, TEST))
    running = [*(pod(f"p{i}", ns="prod", node="n1", cpu=1, priority=1) for i in (1, 2)), pod("t1", ns="test", node="n1", cpu=2)]
    v = view([node("n1", cpu=4)], [*running, pod("p3", ns="prod", cpu=1, priority=1)])
    fresher = pod("p3", ns="prod", cpu=1, priority=1, nominated="n1")
    decision = decide(view=v, preemptor=fresher, proposals={"n1": Proposal((), 0)}, rules=rules)
    assert decision.answer == {} and "queue prod is not below its share" in decision.outcomes[0].reasons[0]


def test_law_2_over_the_set_finds_a_set_the_reprieve_order_misses():
    # a and b are each guaranteed 1 and use 2; x has no share. The preemptor needs 3 of 5 busy
    # cpus. Reprieving most important first takes two pods of a (or, sparing a, two of b); taking
    # least important first within what each queue can afford gives a2, b2 and x.
    rules = Rules(
        queues=(
            Queue("prod", namespaces=frozenset({"prod"}), guaranteed=cpu(10)),
            Queue("a", namespaces=frozenset({"a"}), guaranteed=cpu(1)),
            Queue("b", namespaces=frozenset({"b"}), guaranteed=cpu(1)),
            Queue("x", namespaces=frozenset({"x"})),
        )
    )
    running = [
        pod("x", ns="x", node="n1", cpu=1, priority=5),
        pod("b1", ns="b", node="n1", cpu=1, priority=4),
        pod("b2", ns="b", node="n1", cpu=1, priority=3),
        pod("a1", ns="a", node="n1", cpu=1, priority=2),
        pod("a2", ns="a", node="n1", cpu=1, priority=1),
    ]
    result = select(rules, running, pod("p", ns="prod", cpu=3, priority=10), nodes=[node("n1", cpu=5)])
    assert names(result) == ["a/a2", "b/b2", "x/x"]


def test_terminating_pods_are_never_protected():
    # Leaving anyway: named as a victim (it costs nothing), not held as if it stayed.
    rules = Rules(queues=(Queue("prod", namespaces=frozenset({"prod"})), TEST))
    result = select(rules, [pod("old", ns="test", node="n1", cpu=8, terminating=True)], pod("p", ns="prod", cpu=2, priority=10))
    assert names(result) == ["test/old"]


# -- shares judged in the resources the preemption is for (issue 30) ------------------------------

QA = Queue("qa", namespaces=frozenset({"qa"}), weight=1)
QB = Queue("qb", namespaces=frozenset({"qb"}), weight=1)
FAIR = Rules(queues=(QA, QB))


def seven_in_qa() -> list:
    """Volcano's gang-reclaim fairness case (1 GiB here for 1G): qa fills a 7-cpu node with seven
    1-cpu, 1 GiB pods; qb's pod wants 2 cpus and 1 GiB. qa deserves 5 cpus."""
    return [pod(f"low-{i}", ns="qa", node="n1", cpu=1, mem=1, start=i) for i in range(7)]


def test_a_resource_the_node_has_free_protects_no_queue():
    # 16 GiB: memory is not short on the node, so qa's memory share (7 GiB, its whole demand: any
    # loss takes it below) does not protect it; cpu decides: 7 -> 5 >= 5.
    result = select(FAIR, seven_in_qa(), pod("high", ns="qb", cpu=2, mem=1, priority=1), nodes=[node("n1", cpu=7, mem=16)])
    assert names(result) == ["qa/low-5", "qa/low-6"]


def test_a_resource_the_node_is_short_of_protects_the_queue():
    # 7 GiB: memory is short too, and qa may not go below its share of it (7 GiB split by weight,
    # qb capped at the 1 GiB it wants: 6 GiB), law 2: 7 - 2 = 5 < 6.
    result = select(FAIR, seven_in_qa(), pod("high", ns="qb", cpu=2, mem=1, priority=1), nodes=[node("n1", cpu=7, mem=7)])
    assert isinstance(result, NodeRejected)
    assert "queue qa would fall below its share in memory, which the pod is short of on n1: memory=5Gi of memory=6Gi" in result.reason


def test_the_claiming_queue_is_judged_in_what_its_pod_is_short_of():
    # prod (guaranteed 4 cpus, 8 GiB) uses 6 cpus and 2 GiB: below its memory share, above its
    # cpu one. Its pod is short of cpu only (memory is free): it may not take test's pods.
    # test (guaranteed 2) uses 3 and could spare t1.
    rules = Rules(queues=(Queue("prod", namespaces=frozenset({"prod"}), guaranteed={"cpu": 4000, "memory": 8 * 2**30}), TEST))
    running = [pod("p1", ns="prod", node="n1", cpu=6, mem=2, priority=1), pod("t1", ns="test", node="n1", cpu=1),
               pod("t2", ns="test", node="n1", cpu=2)]
    result = select(rules, running, pod("p2", ns="prod", cpu=1, mem=1, priority=1), nodes=[node("n1", cpu=9, mem=64)])
    assert isinstance(result, NodeRejected)
    assert "queue prod is not below its share in cpu, which the pod is short of on n1 (cpu=6 of cpu=4)" in result.reason
    # Short of memory as well (a default-queue pod fills it), its memory share entitles it.
    full = [*running, pod("big", node="n1", mem=62)]
    result = select(rules, full, pod("p2", ns="prod", cpu=1, mem=1, priority=1), nodes=[node("n1", cpu=9, mem=64)])
    assert names(result) == ["default/big", "test/t1"]


def test_room_held_by_an_answer_in_flight_makes_a_resource_short():
    # Memory looks free on n1, but an answer in flight holds 9 GiB of it for another pod that
    # outranks the preemptor: memory is short after all, and qa's memory share protects it.
    from policy.model import InFlight

    running = seven_in_qa()
    v = view([node("n1", cpu=7, mem=16)], [*running, high := pod("high", ns="qb", cpu=2, mem=1, priority=1)])
    elsewhere = pod("held", ns="other", cpu=0.001, mem=9, priority=5)
    standing = tenancy.with_in_flight(tenancy.assess(FAIR, v), v, [InFlight(elsewhere, "n1", ())])
    screen = tenancy.screen(standing=standing, view=v, preemptor=high)
    assert screen.contended("n1") == ("cpu", "memory")
    assert "queue qa would fall below its share in memory" in screen.over_share(running[5:])


# -- guarantees flow down the tree (issue 30) ---------------------------------------------------


def test_inherited_guarantee_is_the_parents_less_the_siblings_usage():
    # YuniKorn's TestGetRemainingGuaranteedResource, its first snapshot (no usage): root
    # guaranteed 10 "first", child1 5 "second". parent inherits 10, child1 10 of "first" and keeps
    # its own "second", child2 10. Then child1 uses 4: child2 inherits 6 (parent's 10 less it).
    from policy.tenancy.inheritance import inherited

    rules = Rules(
        queues=(
            Queue("root", guaranteed={"cpu": 10_000}),
            Queue("parent", parent="root"),
            Queue("child1", parent="parent", namespaces=frozenset({"c1"}), guaranteed={"memory": 5 * 2**30}),
            Queue("child2", parent="parent", namespaces=frozenset({"c2"})),
        )
    )
    got = inherited(rules, {})
    assert {q: {r: i.amount for r, i in g.items()} for q, g in got.items()} == {
        "parent": {"cpu": 10_000}, "child1": {"cpu": 10_000}, "child2": {"cpu": 10_000},
    }
    v = view([node("n1", cpu=10)], [pod("a", ns="c1", node="n1", cpu=4)])
    standing = tenancy.assess(rules, v).queues
    assert standing["child2"].guaranteed == {"cpu": 6000}
    assert standing["child2"].inherited["cpu"].describe("cpu") == "cpu=6 from parent: its guarantee cpu=10 less cpu=4 used by its other queues (set on root)"
    assert standing["child1"].guaranteed == {"cpu": 10_000, "memory": 5 * 2**30}  # nothing used beside it
    assert standing["child2"].share == {"cpu": 6000}


def test_deserved_shares_split_an_inherited_guarantee_level_by_level():
    # org is guaranteed 8 cpus; team (no guarantee, no weight) inherits 8 less ops's 2 = 6, and
    # its weighted children a (1) and b (2) split those 6: 2 and 4.
    rules = Rules(
        queues=(
            Queue("org", guaranteed=cpu(8)),
            Queue("ops", parent="org", namespaces=frozenset({"ops"})),
            Queue("team", parent="org"),
            Queue("a", parent="team", namespaces=frozenset({"a"}), weight=1),
            Queue("b", parent="team", namespaces=frozenset({"b"}), weight=2),
        )
    )
    v = view([node("n1", cpu=20)], [pod("o", ns="ops", node="n1", cpu=2), pod("x", ns="a", cpu=10), pod("y", ns="b", cpu=10)])
    queues = tenancy.assess(rules, v).queues
    assert queues["team"].guaranteed == cpu(6)
    assert (queues["a"].deserved, queues["b"].deserved) == (cpu(2), cpu(4))


def test_a_guarantee_inherited_from_a_shared_ancestor_holds_only_against_queues_without_their_own():
    # YuniKorn's TestTryPreemption_OnNode_UGParent_*: parent1 is guaranteed 10; child1 inherits it
    # and runs two 1-cpu pods on a full 2-cpu node.
    def rules(child2_guarantee):
        return Rules(
            queues=(
                Queue("parent1", guaranteed=cpu(10)),
                Queue("child1", parent="parent1", namespaces=frozenset({"c1"})),
                Queue("child2", parent="parent1", namespaces=frozenset({"c2"}), guaranteed=child2_guarantee),
            )
        )

    running = [pod("a1", ns="c1", node="n1", cpu=1, start=1), pod("a2", ns="c1", node="n1", cpu=1, start=2)]
    ask = pod("a3", ns="c2", cpu=1, priority=1)
    # child2 guaranteed 1 of its own: the room moves inside parent1, child1's inheritance does not hold.
    assert names(select(rules(cpu(1)), running, ask, nodes=[node("n1", cpu=2)])) == ["c1/a2"]
    # child2 inherits too (and may claim: 9 once a2 is gone), but so does child1: no preemption storm.
    result = select(rules(None), running, ask, nodes=[node("n1", cpu=2)])
    assert isinstance(result, NodeRejected)
    assert "queue child1 would fall below its share in cpu, which the pod is short of on n1: cpu=1 of cpu=10, inherited from queue parent1" in result.reason


def test_the_inherited_guarantee_a_queue_claims_with_counts_its_victims_gone():
    # YuniKorn's ParentGuaranteed: parent 10, child1 (guaranteed 5) uses all 10. child2 inherits
    # 10 - 10 = 0 now, and 5 once child1's 5-cpu pod is gone: it may take it (child1 stays at 5).
    rules = Rules(
        queues=(
            Queue("parent", guaranteed=cpu(10)),
            Queue("child1", parent="parent", namespaces=frozenset({"c1"}), guaranteed=cpu(5)),
            Queue("child2", parent="parent", namespaces=frozenset({"c2"})),
        )
    )
    running = [pod("a1", ns="c1", node="n1", cpu=5, start=1), pod("a2", ns="c1", node="n1", cpu=5, start=2)]
    v = view([node("n1", cpu=10)], running)
    assert tenancy.assess(rules, v).queues["child2"].share == cpu(0)
    assert names(select(rules, running, pod("a3", ns="c2", cpu=5, priority=1), nodes=[node("n1", cpu=10)])) == ["c1/a2"]


def test_a_pod_short_only_of_a_pod_slot_claims_nothing_from_other_queues():
    # prod is below its cpu share, but the node has cpu to spare and no pod slot: the slot is
    # not shared out, so no queue is below its share of it.
    running = [pod("t1", ns="test", node="n1", cpu=1), pod("t2", ns="test", node="n1", cpu=1)]
    result = select(SIBLINGS, running, pod("p1", ns="prod", cpu=1, priority=1), nodes=[node("n1", cpu=8, pods=2)])
    assert isinstance(result, NodeRejected)
    assert "queue prod is not below its share in pods, which the pod is short of on n1 (no share of pods)" in result.reason


def test_count_holds_room_as_holds_room_says():
    # tally.count writes holds_room out for speed: the two must agree on every kind of pod.
    from policy.tenancy import tally

    for p in (pod("b", node="n1", cpu=1), pod("n", nominated="n1", cpu=1), pod("w", cpu=1)):
        usage, waiting = tally.Tally(dict), tally.Tally(dict)
        tally.count(usage, waiting, "q", p)
        assert bool(usage["q"]) == tally.holds_room(p) != bool(waiting["q"])

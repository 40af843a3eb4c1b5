"""policy.stock: upstream DefaultPreemption emulated, rule by rule, with the arithmetic written out."""

from __future__ import annotations

import pytest

from extender import wire

from extender.state import snapshot, translate
from policy import stock
from policy.causes import Cause
from policy.preempt import Proposal
from policy.qos import QoS
from tests.builders import keys, node, pdb, pod, term, tolerate, view
from tests.conftest import ROOT

G, B = QoS.GUARANTEED, QoS.BURSTABLE
WEB = {"app": "web"}
DB = {"app": "db"}


def select(pods, preemptor, budgets=(), **node_kw):
    v = view([node("n1", **node_kw)], pods, budgets)
    return stock.select_victims(
        node=v.nodes["n1"],
        preemptor=preemptor,
        reservations=v.reservations("n1", pod=preemptor),
        budgets_of=v.budgets_covering,
    )


# Every node has 10 cpu unless a case says otherwise; the preemptor has priority 10.
VICTIM_CASES = [
    pytest.param(
        # slack = 10 - 4 = 6. Sorted: a (2, start 100), b (2, start 200), c (1, start 50).
        # a back (6-3=3), b back (3-3=0), c does not fit: the lowest priority goes, however old.
        [pod("a", node="n1", priority=2, cpu=3, start=100), pod("b", node="n1", priority=2, cpu=3, start=200), pod("c", node="n1", priority=1, cpu=3, start=50)],
        pod("pre", priority=10, cpu=4),
        [],
        ["c"],
        0,
        id="priority-first-then-start-time",
    ),
    pytest.param(
        # Equal priority: the older pod is more important. slack = 10 - 5 = 5: 'old' back (0
        # left), 'young' goes, although it is Guaranteed and 'old' only Burstable (no QoS).
        [pod("old", node="n1", priority=1, cpu=5, qos=B, start=100), pod("young", node="n1", priority=1, cpu=5, qos=G, start=200)],
        pod("pre", priority=10, cpu=5),
        [],
        ["young"],
        0,
        id="no-qos-the-younger-goes",
    ),
    pytest.param(
        # A pod without status.startTime started "now", after every known start: it goes.
        [pod("unstarted", node="n1", priority=1, cpu=5), pod("started", node="n1", priority=1, cpu=5, start=100)],
        pod("pre", priority=10, cpu=5),
        [],
        ["unstarted"],
        0,
        id="missing-start-time-counts-as-now",
    ),
    pytest.param(
        # 'covered' (3) is behind a zero-allowance budget: violating, so tried first. slack 5:
        # covered back (0 left); the more important 'free' (5) goes. No violation.
        [pod("free", node="n1", priority=5, cpu=5), pod("covered", node="n1", priority=3, cpu=5, labels=DB)],
        pod("pre", priority=10, cpu=5),
        [pdb("db", allowed=0, match=DB)],
        ["free"],
        0,
        id="pdb-violators-reprieved-first",
    ),
    pytest.param(
        # The preemptor needs all 10: both go. Budget allows 0: 'c1' 0-1=-1 and 'c2' -2 are
        # both violating, neither is reprieved: numViolatingVictim = 2.
        [pod("c1", node="n1", priority=1, cpu=5, labels=DB, start=1), pod("c2", node="n1", priority=1, cpu=5, labels=DB, start=2)],
        pod("pre", priority=10, cpu=10),
        [pdb("db", allowed=0, match=DB)],
        ["c1", "c2"],
        2,
        id="each-unreprieved-violator-counts",
    ),
    pytest.param(
        # Upstream's count is decided before reprieving. Budget allows 1: 'small' (older) spends
        # it (1-1=0), 'big' is violating (0-1=-1). slack 10-6=4: big (6) cannot come back,
        # one violation counted; small (1) can. Evicting 'big' alone is within the budget, but
        # stock counts 1 (reprieve's exact count says 0).
        [pod("small", node="n1", priority=1, cpu=1, labels=WEB, start=1), pod("big", node="n1", priority=1, cpu=6, labels=WEB, start=2)],
        pod("pre", priority=10, cpu=6),
        [pdb("web", allowed=1, match=WEB)],
        ["big"],
        1,
        id="violation-counted-from-the-split-not-the-victims",
    ),
    pytest.param(
        # 'keep' (20) holds 6, so slack = 10 - 6 - 2 = 2. The budget allows 1 of a (2 cpu),
        # b (1), c (1), sorted by start: a spends it (1-1=0), b and c are violating and go back
        # first: b (2-1=1 left), c (0 left); a goes, a non-violator: 0 violations. (reprieve
        # tries this order too and takes it: tests/unit/test_victims.py.)
        [
            pod("keep", node="n1", priority=20, cpu=6),
            pod("a", node="n1", priority=1, cpu=2, labels=WEB, start=1),
            pod("b", node="n1", priority=1, cpu=1, labels=WEB, start=2),
            pod("c", node="n1", priority=1, cpu=1, labels=WEB, start=3),
        ],
        pod("pre", priority=10, cpu=2),
        [pdb("web", allowed=1, match=WEB)],
        ["a"],
        0,
        id="violators-first-keeps-the-budget-whole",
    ),
    pytest.param(
        # A pod in status.disruptedPods spends nothing: not violating though the budget allows
        # 0, and its eviction counts no violation.
        [pod("gone", node="n1", priority=1, cpu=10, labels=DB)],
        pod("pre", priority=10, cpu=10),
        [pdb("db", allowed=0, match=DB, disrupted=("gone",))],
        ["gone"],
        0,
        id="disrupted-pod-spends-no-allowance",
    ),
    pytest.param(
        # Upstream spends allowance on terminating pods too. Budget allows 1: 'leaving' (older)
        # takes it, 'w' is violating. slack 10-6=4: w (6) goes, 1 violation; leaving (2) back.
        [pod("leaving", node="n1", priority=1, cpu=2, labels=WEB, start=1, terminating=True), pod("w", node="n1", priority=1, cpu=6, labels=WEB, start=2)],
        pod("pre", priority=10, cpu=6),
        [pdb("web", allowed=1, match=WEB)],
        ["w"],
        1,
        id="terminating-pod-spends-allowance",
    ),
    pytest.param(
        # Both must go (need 10). 'c' (1, violating) is appended first, then 'free' (5); with
        # both groups non-empty the victims are re-sorted: free, c.
        [pod("free", node="n1", priority=5, cpu=5), pod("c", node="n1", priority=1, cpu=5, labels=DB)],
        pod("pre", priority=10, cpu=10),
        [pdb("db", allowed=0, match=DB)],
        ["free", "c"],
        1,
        id="victims-resorted-when-both-groups-used",
    ),
    pytest.param(
        # A nominated pod of priority 20 holds 4: slack 10 - 4 - 4 = 2, so 'low' (4) goes.
        [pod("low", node="n1", priority=1, cpu=4), pod("holder", priority=20, cpu=4, nominated="n1")],
        pod("pre", priority=10, cpu=4),
        [],
        ["low"],
        0,
        id="nominated-room-kept-free",
    ),
]


@pytest.mark.parametrize("pods, preemptor, budgets, victims, violations", VICTIM_CASES)
def test_select_victims(pods, preemptor, budgets, victims, violations):
    result = select(pods, preemptor, budgets)
    assert isinstance(result, stock.Victims), result
    assert keys(result.victims) == victims
    assert result.num_pdb_violations == violations
    assert result.proposal == Proposal(tuple(p.uid for p in result.victims), violations)


@pytest.mark.parametrize(
    "pods, preemptor, cause",
    [
        pytest.param([pod("high", node="n1", priority=50, cpu=8)], pod("pre", priority=10, cpu=4), Cause.NO_LOWER_PRIORITY, id="nothing-lower"),
        pytest.param(
            # Equal priority is not a victim: 'peer' keeps 8, 10 - 8 = 2 < 4.
            [pod("peer", node="n1", priority=10, cpu=8), pod("low", node="n1", priority=1, cpu=2)],
            pod("pre", priority=10, cpu=4),
            Cause.DOES_NOT_FIT,
            id="does-not-fit-when-emptied",
        ),
        pytest.param(
            # A nominated pod of equal priority holds 7: 10 - 7 = 3 < 4 with 'low' gone.
            [pod("low", node="n1", priority=1, cpu=2), pod("holder", priority=10, cpu=7, nominated="n1")],
            pod("pre", priority=10, cpu=4),
            Cause.DOES_NOT_FIT,
            id="held-room-makes-it-hopeless",
        ),
    ],
)
def test_not_a_candidate(pods, preemptor, cause):
    result = select(pods, preemptor)
    assert isinstance(result, stock.NotCandidate)
    assert result.cause is cause


@pytest.mark.parametrize(
    "pods, preemptor, short",
    [
        # 10 - 4 = 6 >= 4.
        pytest.param([pod("a", node="n1", cpu=4)], pod("pre", priority=10, cpu=4), {}, id="fits"),
        # 10 - 8 = 2 < 4: short 2 cpu (2000 millicores).
        pytest.param([pod("a", node="n1", cpu=8)], pod("pre", priority=10, cpu=4), {"cpu": 2000}, id="short-of-cpu"),
        # Held by an equal-priority nomination: 10 - 4 - 4 = 2 < 4.
        pytest.param(
            [pod("a", node="n1", cpu=4), pod("h", priority=10, cpu=4, nominated="n1")],
            pod("pre", priority=10, cpu=4),
            {"cpu": 2000},
            id="room-held-by-equal-priority-nomination",
        ),
        # A lower-priority nomination holds nothing against the pod: 10 - 4 = 6 >= 4.
        pytest.param(
            [pod("a", node="n1", cpu=4), pod("h", priority=5, cpu=4, nominated="n1")],
            pod("pre", priority=10, cpu=4),
            {},
            id="lower-priority-nomination-holds-nothing",
        ),
        # The pod's own nomination is not held against it.
        pytest.param([pod("a", node="n1", cpu=4)], pod("pre", priority=10, cpu=4, nominated="n1"), {}, id="own-nomination"),
        # 2 pod slots, both used; a BestEffort pod requests only its slot.
        pytest.param(
            [pod("a", node="n1"), pod("b", node="n1")], pod("pre", priority=10), {"pods": 1}, id="pod-count"
        ),
    ],
)
def test_shortfall_without_preemption(pods, preemptor, short):
    v = view([node("n1", pods=2 if "pods" in short else 110)], pods + [preemptor])
    assert stock.shortfall(view=v, pod=preemptor, node=v.nodes["n1"]) == short


# Two nodes; each case makes one pickOneNodeForPreemption criterion decide.
PICK_CASES = [
    pytest.param(
        # n1 violates 1 budget, n2 none: n2, though its victim's priority is higher (5 > 1).
        {"n1": ([pod("a", priority=1)], 1), "n2": ([pod("b", priority=5)], 0)},
        ("n2",),
        "PDB violations",
        id="fewest-pdb-violations",
    ),
    pytest.param(
        # Highest victim priority 1 < 5: n1, though it has two victims.
        {"n1": ([pod("a1", priority=1), pod("a2", priority=1)], 0), "n2": ([pod("b", priority=5)], 0)},
        ("n1",),
        "highest victim priority",
        id="lowest-highest-victim-priority",
    ),
    pytest.param(
        # Top 3 on both. Sums 3+2 = 5 > 3+1 = 4 (plus 2 * 2^31 on both): n2.
        {"n1": ([pod("a1", priority=3), pod("a2", priority=2)], 0), "n2": ([pod("b1", priority=3), pod("b2", priority=1)], 0)},
        ("n2",),
        "sum of victim priorities",
        id="smallest-sum-of-priorities",
    ),
    pytest.param(
        # Negative priorities: unshifted, -10 + -10 = -20 < -10 would favour more victims.
        # Shifted: 2 * (2^31 - 10) > 2^31 - 10, so the single victim (n2) wins.
        {"n1": ([pod("a1", priority=-10), pod("a2", priority=-10)], 0), "n2": ([pod("b", priority=-10)], 0)},
        ("n2",),
        "sum of victim priorities",
        id="sum-shifted-by-2-to-the-31",
    ),
    pytest.param(
        # Same top (0) and same shifted sum, different counts:
        # n1: 0 + 2 * -2^30 + 3 * 2^31 = 2^32; n2: 0 + 0 + 2 * 2^31 = 2^32. Fewer victims: n2.
        {
            "n1": ([pod("a0", priority=0), pod("a1", priority=-(2**30)), pod("a2", priority=-(2**30))], 0),
            "n2": ([pod("b0", priority=0), pod("b1", priority=0)], 0),
        },
        ("n2",),
        "victims",
        id="fewest-victims",
    ),
    pytest.param(
        # Everything equal but start times of the top victims: the later start (500) wins.
        {"n1": ([pod("a", priority=1, start=100)], 0), "n2": ([pod("b", priority=1, start=500)], 0)},
        ("n2",),
        "start of the most important victims",
        id="latest-start-of-top-victims",
    ),
    pytest.param(
        # The start that counts is the earliest among the highest-priority victims only:
        # n1's top victims (priority 2) started at 300 and 400 -> 300; n2's at 200. n1 wins,
        # although n1's lower-priority victim started at 10.
        {
            "n1": ([pod("a1", priority=2, start=300), pod("a2", priority=2, start=400), pod("a3", priority=1, start=10)], 0),
            "n2": ([pod("b1", priority=2, start=200), pod("b2", priority=2, start=900), pod("b3", priority=1, start=900)], 0),
        },
        ("n1",),
        "start of the most important victims",
        id="earliest-start-among-top-victims-only",
    ),
    pytest.param(
        # Equal on every criterion: both tied; upstream picks at random, the emulation by name.
        {"n1": ([pod("a", priority=1, start=100)], 0), "n2": ([pod("b", priority=1, start=100)], 0)},
        ("n1", "n2"),
        "tied",
        id="exact-tie",
    ),
]


@pytest.mark.parametrize("candidates, tied, decided_by", PICK_CASES)
def test_pick_one_node(candidates, tied, decided_by):
    result = stock.pick({n: stock.cost(victims, count) for n, (victims, count) in candidates.items()})
    assert result.tied == tied
    assert result.chosen == tied[0]
    assert decided_by in result.reasons[tied[0]]
    for loser in set(candidates) - set(tied):
        assert result.ranks[loser] == 2
        assert result.reasons[loser].startswith(f"not chosen: {decided_by}")
    assert stock.first(result.costs) == result.chosen


def test_ranks_count_the_nodes_strictly_cheaper():
    costs = {
        n: stock.cost([pod(n, priority=p)], 0)
        for n, p in {"d": 3, "a": 1, "c": 2, "b": 1, "e": 3, "f": 4}.items()
    }
    assert stock.pick(costs).ranks == {"a": 1, "b": 1, "c": 3, "d": 4, "e": 4, "f": 6}


def test_decide_dry_runs_every_node_and_proposes_what_the_scheduler_sends():
    # n1: 8 of 10 used by 'low' (1): needs 4, short; dry run evicts 'low'.
    # n2: 'high' (50) keeps 8: not a candidate. n3: room (0 used): fits.
    v = view(
        [node("n1"), node("n2"), node("n3")],
        [pod("low", node="n1", priority=1, cpu=8), pod("high", node="n2", priority=50, cpu=8)],
    )
    result = stock.decide(view=v, preemptor=pod("pre", priority=10, cpu=4), node_names=["n1", "n2", "n3"])
    assert result.refusal == ""
    assert result.fits == ("n3",)
    assert set(result.nodes) == {"n1", "n2"}
    assert result.nodes["n2"].cause is Cause.NO_LOWER_PRIORITY
    assert result.proposals == {"n1": Proposal(("uid-default-low",), 0)}
    assert result.pick.chosen == "n1"


@pytest.mark.parametrize(
    "preemptor, running, refusal",
    [
        pytest.param(pod("pre", priority=10, cpu=10, never=True), [], "preemptionPolicy=Never", id="never"),
        pytest.param(
            pod("pre", priority=10, cpu=10, nominated="n1"),
            [pod("leaving", node="n1", priority=1, cpu=5, terminating=True)],
            "terminating pod on the nominated node",
            id="waits-for-terminating-victim",
        ),
    ],
)
def test_ineligible_preemptor_preempts_nothing(preemptor, running, refusal):
    v = view([node("n1")], running + [pod("low", node="n1", priority=1, cpu=5)])
    result = stock.decide(view=v, preemptor=preemptor, node_names=["n1"])
    assert refusal in result.refusal
    assert result.proposals == {} and result.pick.chosen is None


GPU = "nvidia.com/gpu=present:NoSchedule"

# The preemptor's own constraints, as kube-scheduler's filters apply them before preemption.
# n1 runs 'low' (priority 1, 8 of 10 cpu): the preemptor (priority 10, 4 cpu) fits nowhere on
# it until 'low' goes, so an admitted n1 is a candidate. n2 is empty: an admitted n2 is a fit.
# Each case changes what the nodes carry or what the preemptor asks; ``reason`` is the filtered
# nodes' reason (upstream's words), or None where both nodes admit the pod.
FILTER_CASES = [
    pytest.param({}, {}, None, id="no-constraints"),
    pytest.param({"taints": (GPU,)}, {}, "had untolerated taint {nvidia.com/gpu: present} (NoSchedule)", id="noschedule-taint"),
    pytest.param({"taints": ("k:NoExecute",)}, {}, "had untolerated taint {k: } (NoExecute)", id="noexecute-taint"),
    pytest.param({"taints": ("k=v:PreferNoSchedule",)}, {}, None, id="prefernoschedule-does-not-filter"),
    pytest.param({"taints": (GPU,)}, {"tolerations": (tolerate("nvidia.com/gpu", effect="NoSchedule"),)}, None, id="tolerated-taint"),
    pytest.param(
        {"taints": (GPU,)}, {"tolerations": (tolerate("nvidia.com/gpu", "absent"),)},
        "had untolerated taint {nvidia.com/gpu: present}", id="toleration-of-another-value",
    ),
    pytest.param({"unschedulable": True}, {}, "were unschedulable: cordoned", id="cordon"),
    pytest.param(
        {"unschedulable": True}, {"tolerations": (tolerate("node.kubernetes.io/unschedulable", effect="NoSchedule"),)},
        None, id="cordon-tolerated",
    ),
    # NodeUnschedulable runs before TaintToleration: a cordoned, tainted node says cordoned.
    pytest.param({"unschedulable": True, "taints": (GPU,)}, {}, "were unschedulable", id="cordon-reported-first"),
    pytest.param({"labels": {"accelerator": "a100"}}, {"node_selector": {"accelerator": "h100"}}, "didn't match Pod's node affinity/selector", id="node-selector"),
    pytest.param({"labels": {"accelerator": "h100"}}, {"node_selector": {"accelerator": "h100"}}, None, id="node-selector-matches"),
    pytest.param(
        {"labels": {"accelerator": "a100"}}, {"affinity": (term(("accelerator", "In", "h100", "b200")),)},
        "didn't match Pod's node affinity/selector", id="affinity-expression",
    ),
    pytest.param(
        {"labels": {"accelerator": "a100"}}, {"affinity": (term(("accelerator", "In", "h100")), term(("accelerator", "Exists")))},
        None, id="affinity-any-term",
    ),
    pytest.param({}, {"affinity": (term(fields=(("metadata.name", "In", "elsewhere"),)),)}, "didn't match", id="affinity-field"),
    pytest.param({}, {"affinity": ()}, "didn't match", id="affinity-without-terms-matches-nothing"),
]


@pytest.mark.parametrize("node_kw, pod_kw, reason", FILTER_CASES)
def test_decide_applies_the_preemptors_own_constraints_first(node_kw, pod_kw, reason):
    v = view([node("n1", **node_kw), node("n2", **node_kw)], [pod("low", node="n1", priority=1, cpu=8)])
    preemptor = pod("pre", priority=10, cpu=4, **pod_kw)
    result = stock.decide(view=v, preemptor=preemptor, node_names=["n1", "n2"])
    if reason is None:
        assert result.fits == ("n2",)
        assert result.proposals == {"n1": Proposal(("uid-default-low",), 0)}
        return
    # Filtered out: neither a fit nor a candidate, on either node.
    assert result.fits == () and result.proposals == {} and result.pick.chosen is None
    for name in ("n1", "n2"):
        assert result.nodes[name].cause is Cause.FILTERED
        assert reason in result.nodes[name].reason
        assert result.nodes[name].reason.startswith("node(s) ")
    assert preemptor.placement.refusal(v.nodes["n1"].node) == result.nodes["n1"].reason


def test_a_filtered_nominated_node_does_not_keep_the_pod_waiting():
    # Upstream's PodEligibleToPreemptOthers: a pod nominated where a lower-priority pod is
    # terminating waits for it, unless its filters now reject that node (here: it was tainted).
    leaving = pod("leaving", node="n1", priority=1, cpu=5, terminating=True)
    running = [leaving, pod("low", node="n2", priority=1, cpu=8)]
    preemptor = pod("pre", priority=10, cpu=4, nominated="n1")
    waits = stock.decide(view=view([node("n1"), node("n2")], running), preemptor=preemptor, node_names=["n1", "n2"])
    assert "terminating pod on the nominated node" in waits.refusal
    tainted = view([node("n1", taints=(GPU,)), node("n2")], running)
    result = stock.decide(view=tainted, preemptor=preemptor, node_names=["n1", "n2"])
    assert result.refusal == ""
    assert result.nodes["n1"].cause is Cause.FILTERED
    assert result.pick.chosen == "n2"


@pytest.mark.parametrize("case", ["preempt-cache-scheduler", "preempt-nocache-scheduler"])
def test_matches_a_real_kube_scheduler(case):
    # These bodies are what kube-scheduler v1.37.2 sent reprieve, with the cluster at that
    # moment (tests/e2e/test_capture.py): the emulation must propose exactly the same.
    golden = ROOT / "tests" / "golden" / case
    v = snapshot.load(golden / "snapshot.yaml")
    args = wire.parse(wire.ExtenderPreemptionArgs, (golden / "request.json").read_bytes())
    preemptor = translate.pod_record(args.pod, v.priority_classes)
    result = stock.decide(view=v, preemptor=preemptor, node_names=sorted(v.nodes))
    sent = {n: Proposal(uids, count) for n, (uids, count) in args.proposals().items()}
    assert result.proposals == sent

"""policy.gangs: who belongs to a gang, what it can spare, and victims that keep gangs whole."""

from __future__ import annotations

import dataclasses

import pytest

from policy import gangs, preempt, ranking, stock
from policy.gangs import GangMark, GroupMinimum
from policy.model import InFlight
from policy.victims import Choosing, VictimSelection, select_victims
from tests.builders import group, keys, node, pdb, pod, scheduler_proposals, view

NS = "ml"


@pytest.mark.parametrize(
    ("labels", "annotations", "pod_group", "expected"),
    [
        pytest.param({}, {}, "train", GangMark("workload ml/train", None, "spec.schedulingGroup.podGroupName"), id="workload-api"),
        pytest.param(
            {gangs.COSCHEDULING_LABEL: "pg"}, {}, None,
            GangMark("coscheduling ml/pg", None, f"label {gangs.COSCHEDULING_LABEL}"), id="coscheduling",
        ),
        pytest.param(
            {}, {gangs.VOLCANO_ANNOTATION: "job-1"}, None,
            GangMark("volcano ml/job-1", None, f"annotation {gangs.VOLCANO_ANNOTATION}"), id="volcano",
        ),
        pytest.param(
            {gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "3"}, None,
            GangMark("kueue ml/g", 3, f"annotation {gangs.KUEUE_COUNT}=3"), id="kueue",
        ),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {}, None, None, id="kueue-without-a-count-is-independent"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "0"}, None, None, id="kueue-count-zero"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "-2"}, None, None, id="kueue-count-negative"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "1e9"}, None, None, id="kueue-count-not-an-integer"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "²"}, None, None, id="kueue-count-superscript"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "١٢"}, None, None, id="kueue-count-arabic-indic"),
        pytest.param({gangs.KUEUE_LABEL: "g"}, {gangs.KUEUE_COUNT: "1234567890"}, None, None, id="kueue-count-too-long"),
        pytest.param(
            {gangs.LWS_GROUP_KEY: "abc"}, {gangs.LWS_SIZE: "4"}, None,
            GangMark("leaderworkerset ml/abc", 4, f"annotation {gangs.LWS_SIZE}=4"), id="lws-group-key",
        ),
        pytest.param(
            {gangs.LWS_NAME: "llm", gangs.LWS_GROUP_INDEX: "2"}, {gangs.LWS_SIZE: "2"}, None,
            GangMark("leaderworkerset ml/llm-2", 2, f"annotation {gangs.LWS_SIZE}=2"), id="lws-name-and-index",
        ),
        pytest.param({gangs.LWS_GROUP_KEY: "abc"}, {}, None, None, id="lws-without-size"),
        pytest.param(
            {gangs.JOBSET_LABEL: "js"}, {}, None,
            GangMark("jobset ml/js", None, "JobSet: every pod required", everyone=True), id="jobset",
        ),
        pytest.param({"app": "web"}, {"unrelated": "x"}, None, None, id="no-marking"),
    ],
)
def test_membership_comes_from_what_the_pod_carries(labels, annotations, pod_group, expected):
    assert gangs.mark(namespace=NS, labels=labels, annotations=annotations, pod_group=pod_group) == expected


def test_a_gang_spares_what_it_runs_beyond_its_minimum():
    members = [
        pod("a", node="n1", gang=("g", None)),
        pod("b", node="n2", gang=("g", None)),
        pod("c", node="n2", gang=("g", None)),
        pod("d", node="n2", gang=("g", None), terminating=True),  # leaving: not running
        pod("e", gang=("g", None)),  # pending
    ]
    v = view([node("n1"), node("n2")], members, groups=[group("g", 2)])
    g = v.gang_of(members[0])
    assert (g.running, g.minimum, g.spare) == (3, 2, 1)
    assert "PodGroup default/g spec.minMember=2" in g.source
    # No group object: no minimum known, independent pods.
    assert view([node("n1")], members).gang_of(members[0]) is None
    # A minimum of 1 (Volcano's PodGroup of one plain pod): one member runs alone, no gang.
    assert view([node("n1")], members, groups=[group("g", 1)]).gang_of(members[0]) is None


def test_a_jobset_needs_every_member_it_has():
    mark = GangMark("jobset default/js", None, "JobSet: every pod required", everyone=True)
    members = [dataclasses.replace(pod(f"w{i}", node="n1"), gang=mark) for i in range(3)]
    g = view([node("n1")], members).gang_of(members[0])
    assert (g.running, g.minimum, g.spare) == (3, 3, 0)
    assert view([node("n1")], members[:1]).gang_of(members[0]) is None  # a JobSet of one pod
    # A member pending (its replacement, say): the JobSet is not whole, nothing breaks it now.
    waiting = [*members, dataclasses.replace(pod("w3"), gang=mark)]
    assert view([node("n1")], waiting).gang_of(members[0]) is None


def test_a_gang_below_its_minimum_is_not_whole_and_counts_as_independent_pods():
    members = [pod("a", node="n1", gang=("g", None)), pod("b", gang=("g", None))]  # b pending
    v = view([node("n1")], members, groups=[group("g", 2)])
    assert v.gang_of(members[0]) is None
    assert gangs.count_broken(members, v.gang_of).count == 0


def test_members_that_disagree_on_the_minimum_make_one_gang_at_the_largest_whoever_is_asked_first():
    # Kueue's total count is per pod (Kueue refuses a group whose pods disagree). Judged each by
    # its own count, b (1) was independent while a and c (2) were a gang; and a set breaking the
    # gang counted it by whichever member came last. One gang per key, at the largest count.
    a = pod("a", node="n1", gang=("g", 2))
    b = pod("b", node="n1", gang=("g", 1))
    c = pod("c", node="n1", gang=("g", 3))
    for first in (a, b, c):
        v = view([node("n1")], [a, b, c])
        v.gang_of(first)
        assert {v.gang_of(p) for p in (a, b, c)} == {v.gang_of(first)}
        g = v.gang_of(first)
        assert (g.running, g.minimum, g.spare) == (3, 3, 0)
    # Counted the same whatever the victims' order: one broken gang.
    v = view([node("n1")], [a, b, c])
    assert gangs.count_broken([a, b], v.gang_of).count == gangs.count_broken([b, a], v.gang_of).count == 1
    # The largest count is more than runs: the gang is not whole, nothing breaks it.
    v = view([node("n1")], [a, b, pod("d", node="n1", gang=("g", 4))])
    assert v.gang_of(a) is None


def test_counting_broken_gangs_skips_terminating_victims_and_spares():
    v = view(
        [node("n1")],
        [
            a := pod("a", node="n1", gang=("g", 2)),
            b := pod("b", node="n1", gang=("g", 2)),
            pod("a2", node="n2", gang=("g", 2)),
            c := pod("c", node="n1", gang=("h", 2), terminating=True),
            d := pod("d", node="n1", gang=("h", 2)),
            pod("e", node="n1", gang=("h", 2)),
        ],
    )
    assert gangs.count_broken([a], v.gang_of).count == 0  # g runs 3, needs 2: spares one
    broken = gangs.count_broken([a, b, c], v.gang_of)
    assert [g.key for g in broken.gangs] == ["test default/g"]
    assert broken.lost == 3
    assert "breaks 1 gang(s), 3 running pod(s) lose their work" in broken.describe()
    assert gangs.count_broken([c, d], v.gang_of).count == 1  # h runs 2 (c is leaving), needs 2


def four_member_gang_and_lone_pods(*, gang_start: float, lone_start: float, budget=None):
    """A node full of priority-1 pods of 2 cpu: a 4-pod gang needing all 4, and 4 lone pods."""
    members = [pod(f"gang-{i}", node="n1", priority=1, cpu=2, start=gang_start + i, gang=("train", 4)) for i in range(4)]
    lone = [pod(f"lone-{i}", node="n1", priority=1, cpu=2, start=lone_start + i, labels={"app": "lone"}) for i in range(4)]
    budgets = [pdb("lone", allowed=0, match={"app": "lone"})] if budget else []
    return view([node("n1", cpu=16)], [*members, *lone], budgets)


def test_the_victim_is_a_lone_pod_where_stock_breaks_the_gang():
    # The gang's members are the youngest: upstream evicts the youngest of equal priority.
    v = four_member_gang_and_lone_pods(gang_start=100, lone_start=0)
    preemptor = pod("pre", priority=10, cpu=2)
    theirs = stock.select_victims(node=v.nodes["n1"], preemptor=preemptor, reservations=(), budgets_of=v.budgets_covering)
    assert keys(theirs.victims) == ["gang-3"]
    mine = select_victims(node=v.nodes["n1"], choosing=Choosing(preemptor, v.budgets_covering, gang_of=v.gang_of), reservations=())
    assert isinstance(mine, VictimSelection)
    assert keys(mine.victims) == ["lone-3"]
    assert mine.broken.count == 0


@pytest.mark.parametrize("gang_start, lone_start", [(0, 100), (100, 0)], ids=["gang-older", "gang-younger"])
def test_a_gang_that_breaks_either_way_goes_whole_rather_than_stranding_a_member(gang_start, lone_start):
    # Issue 29's LeaderWorkerSet case: a group of 2 that needs both and 2 lone pods, all equal
    # (1 cpu, priority 1); the preemptor needs 3 pods' room, so the group breaks either way.
    # Evicting both lone pods and one member loses 4 pods' work (the leader stands idle);
    # evicting the group and one lone pod loses 3, whatever their starts.
    group = [pod(f"lws-{i}", node="n1", priority=1, cpu=1, start=gang_start + i, gang=("lws", 2)) for i in range(2)]
    lone = [pod(f"lone-{i}", node="n1", priority=1, cpu=1, start=lone_start + i) for i in range(2)]
    v = view([node("n1", cpu=4)], [*group, *lone])
    mine = select_victims(node=v.nodes["n1"], choosing=Choosing(pod("pre", priority=10, cpu=3), v.budgets_covering, gang_of=v.gang_of))
    assert isinstance(mine, VictimSelection)
    assert {"lws-0", "lws-1"} <= set(keys(mine.victims)) and len(mine.victims) == 3, keys(mine.victims)
    assert mine.broken.count == 1
    assert mine.cost.value(ranking.GANG_WORK) == 3
    assert mine.cost.detail(ranking.GANG_WORK) == 0  # no member left stranded


@pytest.mark.parametrize(
    ("order", "victim", "violations", "broken"),
    [
        # The default: a budget (its owner's promise of availability) before a gang.
        pytest.param(ranking.DEFAULT, "gang-3", 0, 1, id="default-spares-the-budget"),
        pytest.param(ranking.Order.named(["broken gangs"]), "lone-3", 1, 0, id="gangs-first-spares-the-gang"),
    ],
)
def test_a_budget_or_a_gang_as_the_ranking_orders_them(order, victim, violations, broken):
    # The lone pods are behind a budget allowing none; the gang needs all four members.
    v = four_member_gang_and_lone_pods(gang_start=100, lone_start=0, budget=True)
    mine = select_victims(node=v.nodes["n1"], choosing=Choosing(pod("pre", priority=10, cpu=2), v.budgets_covering, gang_of=v.gang_of, order=order), reservations=())
    assert keys(mine.victims) == [victim]
    assert (mine.violations.count, mine.broken.count) == (violations, broken)


def test_when_a_gang_must_break_the_reasons_say_which_and_why():
    members = [pod(f"gang-{i}", node="n1", priority=1, cpu=4, gang=("train", None)) for i in range(4)]
    v = view([node("n1", cpu=16)], members, groups=[group("train", 3)])
    mine = select_victims(node=v.nodes["n1"], choosing=Choosing(pod("pre", priority=10, cpu=8), v.budgets_covering, gang_of=v.gang_of), reservations=())
    assert len(mine.victims) == 2 and mine.broken.count == 1
    assert any(
        "gang test default/train (4 running, at least 3 needed: test gang, PodGroup default/train spec.minMember=3)" in r
        for r in mine.reasons
    ), mine.reasons


def test_preempt_offers_the_node_where_no_gang_breaks():
    # n1: the gang's members; n2: lone pods. Equal priority and size, the gang's younger:
    # stock picks n1 (the later start of its most important victims); reprieve n2.
    gang_members = [pod(f"gang-{i}", node="n1", priority=1, cpu=4, start=100 + i, gang=("train", 4)) for i in range(4)]
    lone = [pod(f"lone-{i}", node="n2", priority=1, cpu=4, start=i) for i in range(4)]
    v = view([node("n1", cpu=16), node("n2", cpu=16)], [*gang_members, *lone])
    preemptor = pod("pre", priority=10, cpu=4)
    dry = stock.decide(view=v, preemptor=preemptor, node_names=["n1", "n2"])
    assert dry.pick.chosen == "n1"
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor))
    assert list(decision.answer) == ["n2"]
    n1 = next(o for o in decision.outcomes if o.node == "n1")
    assert n1.cost.value(ranking.BROKEN_GANGS) == 1
    assert any("broken gangs 1 here vs 0" in r for r in n1.reasons), n1.reasons


def test_group_minimums_are_looked_up_by_the_members_key():
    mark = GangMark("coscheduling ml/pg", None, "label")
    p, q = (dataclasses.replace(pod(n, node="n1", ns="ml"), gang=mark) for n in ("a", "b"))
    v = view([node("n1")], [p, q], groups=[GroupMinimum("coscheduling ml/pg", 2, "PodGroup ml/pg spec.minMember")])
    assert v.gang_of(p).minimum == 2
    assert view([node("n1")], [p, q], groups=[GroupMinimum("volcano ml/pg", 2, "x")]).gang_of(p) is None


def test_the_reasons_name_the_gangs_a_choice_keeps_within_their_spare():
    v = four_member_gang_and_lone_pods(gang_start=100, lone_start=0)
    mine = select_victims(node=v.nodes["n1"], choosing=Choosing(pod("pre", priority=10, cpu=2), v.budgets_covering, gang_of=v.gang_of), reservations=())
    assert "takes no more than it can spare from gang test default/train (4 running, at least 4 needed: test gang)" in mine.reasons


def test_members_promised_to_an_answer_in_flight_are_not_spared_twice():
    # A gang of four needing three: one member may go. An answer in flight already takes w0 (the
    # view still shows it running). A second preemptor on n2 must not take w1 too: the lone pod goes.
    members = [pod(f"w{i}", node=f"n{1 + i // 2}", priority=1, cpu=2, start=100 + i, gang=("train", 3)) for i in range(4)]
    lone = pod("lone", node="n2", priority=1, cpu=2, start=0)
    v = view([node("n1", cpu=4), node("n2", cpu=6)], [*members, lone])
    earlier = InFlight(pod("first", priority=10, cpu=2), "n1", (members[0],))
    preemptor = pod("second", priority=10, cpu=2)
    proposals = {"n2": preempt.Proposal((members[3].uid,), 0)}
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=proposals, in_flight=[earlier])
    assert [p.name for p in next(o for o in decision.outcomes if o.node == "n2").victims] == ["lone"]
    # Without the earlier answer, the gang can spare one: the youngest pod (a member) goes.
    decision = preempt.decide(view=v, preemptor=preemptor, proposals=proposals)
    assert [p.name for p in next(o for o in decision.outcomes if o.node == "n2").victims] == ["w3"]

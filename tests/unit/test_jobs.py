"""policy.jobs: what evicting a Job's pods costs it, and the two criteria that count it."""

from __future__ import annotations

import pytest

from policy import jobs, ranking
from policy.jobs import OnDisruption
from policy.model import InFlight
from policy.preempt import decide
from tests.builders import job, node, pod, scheduler_proposals, view

I = OnDisruption


@pytest.mark.parametrize(
    "the_job, index, counts, budgets",
    [
        # backoffLimit 6, 2 failed: 4 more evictions are survived, the 5th fails it (failed > 6).
        pytest.param(job("j", failed=2), None, True, [("Job default/j", 4)], id="retries-left"),
        pytest.param(job("j", backoff=0), None, True, [("Job default/j", 0)], id="backoff-limit-0-fails-at-once"),
        pytest.param(job("j", backoff=6, failed=7), None, True, [], id="past-its-limit-fails-anyway"),
        pytest.param(job("j", on=I.IGNORE), None, False, [], id="ignore-spends-nothing"),
        pytest.param(job("j", finished=True), None, False, [], id="finished-loses-nothing"),
        pytest.param(job("j", on=I.FAIL_JOB), None, True, [("Job default/j", 0)], id="fail-job-rule"),
        # With a budget per index, one retry of the index's and one of the Job's.
        pytest.param(job("j", backoff=9, per_index=1), (2, 0), True, [("Job default/j index 2", 1), ("Job default/j", 9)], id="per-index"),
        pytest.param(job("j", backoff=9, per_index=1), (2, 1), True, [("Job default/j index 2", 0), ("Job default/j", 9)], id="index-at-its-limit"),
        pytest.param(job("j", backoff=9, per_index=1, failed_indexes=((1, 3),)), (2, 0), True, [("Job default/j", 9)], id="index-failed-already"),
        pytest.param(job("j", backoff=9, per_index=2, on=I.FAIL_INDEX), (4, 0), True, [("Job default/j index 4", 0), ("Job default/j", 9)], id="fail-index-rule"),
        # FailIndex needs backoffLimitPerIndex (the API refuses it otherwise): counted as usual.
        pytest.param(job("j", on=I.FAIL_INDEX), (4, 0), True, [("Job default/j", 6)], id="fail-index-without-per-index"),
    ],
)
def test_what_one_eviction_costs_its_job(the_job, index, counts, budgets):
    stake = jobs.stake(the_job, None if index is None else jobs.JobIndex(*index))
    assert stake.counts is counts
    assert [(b.key, b.left) for b in stake.budgets] == budgets


@pytest.mark.parametrize(
    "text, ranges",
    [("", ()), ("3", ((3, 3),)), ("1,3-5,9", ((1, 1), (3, 5), (9, 9)))],
)
def test_failed_indexes_are_read_as_ranges(text, ranges):
    assert jobs.parse_ranges(text) == ranges


@pytest.mark.parametrize("text", ["1,1", "3-1", "-1", "1,,2", "a", "1-", "²"])
def test_failed_indexes_that_are_not_ascending_ranges_are_refused(text):
    with pytest.raises(ValueError):
        jobs.parse_ranges(text)


def test_jobs_fail_when_more_victims_than_retries_left_are_taken():
    # "one": a retry left; "zero": none; "tolerant" ignores; the terminating pod was leaving.
    pods = [pod("a", job="one"), pod("b", job="one"), pod("c", job="zero"), pod("d", job="tolerant"),
            pod("e", job="zero", terminating=True), pod("bare")]
    v = view([node("n1")], pods, jobs=[job("one", backoff=1), job("zero", backoff=0), job("tolerant", on=I.IGNORE)])
    a, b, c, d, e, bare = pods
    assert jobs.failing([a], v.stake_of) == ()
    assert [x.key for x in jobs.failing([a, b], v.stake_of)] == ["Job default/one"]
    assert [x.key for x in jobs.failing([a, b, c, d, e, bare], v.stake_of)] == ["Job default/one", "Job default/zero"]
    assert jobs.failing([d, e, bare], v.stake_of) == ()
    key = ranking.DEFAULT.cost([a, b, c, d, e, bare], _facts(v))
    assert (key.value(ranking.JOBS_FAILED), key.value(ranking.RETRIES_BURNED)) == (2, 3)  # a, b, c burn; d, e, bare do not


def _facts(v):
    from policy.criteria import Facts

    return Facts(v.budgets_covering, v.gang_of, stake_of=v.stake_of)


def test_answers_in_flight_spend_the_retries_they_take():
    # Job "one" (backoffLimit 1) has two pods: an answer in flight takes one, the view still
    # shows it running. Evicting the other now fails the Job; n2's pod of a Job with retries
    # to spare (higher priority, 5 > 1) goes instead.
    taken = pod("taken", node="n3", priority=1, cpu=10, job="one")
    other = pod("other", node="n1", priority=1, cpu=10, job="one")
    spare = pod("spare", node="n2", priority=5, cpu=10, job="many")
    v = view([node("n1"), node("n2"), node("n3")], [taken, other, spare], jobs=[job("one", backoff=1), job("many")])
    preemptor = pod("pre", priority=10, cpu=10)
    earlier = pod("earlier", priority=10, cpu=10)
    in_flight = (InFlight(earlier, "n3", (taken,)),)
    proposals = scheduler_proposals(v, preemptor, in_flight=in_flight, nodes=["n1", "n2"])
    alone = decide(view=v, preemptor=preemptor, proposals=proposals)
    assert list(alone.answer) == ["n1"]  # without the answer in flight, "one" has a retry to spare
    after = decide(view=v, preemptor=preemptor, proposals=proposals, in_flight=in_flight)
    assert list(after.answer) == ["n2"], after.reasons
    loser = next(o for o in after.outcomes if o.node == "n1")
    assert loser.reasons[-1] == "not chosen: Jobs failed 1 here vs 0 on n2", loser.reasons
    assert "fails 1 Job(s) or index(es): Job default/one (backoffLimit 1, 0 failed, 1 more taken by answers in flight)" in loser.reasons, loser.reasons


def test_the_replays_jobs_count_failures_and_fail_indexes():
    pods = [pod("a", job="idx", index=(0, 0)), pod("b", job="idx", index=(1, 1)), pod("c", job="tolerant")]
    v = view([node("n1")], pods, jobs=[job("idx", backoff=5, failed=1, per_index=1), job("tolerant", on=I.IGNORE)])
    changed = jobs.spend(v.jobs, pods, v.stake_of)
    # a and b are counted (2 failures more); b's index had failed once already: it fails now.
    assert set(changed) == {"uid-job-default-idx"}
    idx = changed["uid-job-default-idx"]
    assert (idx.failed, idx.failed_indexes, idx.finished) == (3, ((1, 1),), False)
    # A Job whose own retries run out fails: finished.
    strict = [pod("s", job="zero")]
    w = view([node("n1")], strict, jobs=[job("zero", backoff=0)])
    assert [(j.failed, j.finished) for j in jobs.spend(w.jobs, strict, w.stake_of).values()] == [(1, True)]


def test_the_reasons_name_the_jobs_failed_and_the_retries_burned():
    pods = [pod("a", job="zero"), pod("b", job="many"), pod("c", job="tolerant")]
    v = view([node("n1")], pods, jobs=[job("zero", backoff=0), job("many"), job("tolerant", on=I.IGNORE)])
    failed = jobs.failing(pods, v.stake_of)
    assert jobs.reasons(pods, v.stake_of, failed) == (
        "fails 1 Job(s) or index(es): Job default/zero (backoffLimit 0, 0 failed)",
        "burns 2 Job retries: default/a (Job default/zero), default/b (Job default/many)",
    )


@pytest.mark.parametrize(
    "young_job, other_qos",
    [
        # Its Job's only chance (backoffLimit 0): n2's priority-5 victim would win on the Jobs failed.
        pytest.param(job("young", backoff=0), None, id="keeps-the-pod-whose-job-would-fail"),
        # A retry to burn: n2's victim, no Job's but Guaranteed, would win on the retries burned.
        pytest.param(job("young"), "guaranteed", id="keeps-the-pod-whose-job-would-burn-a-retry"),
    ],
)
def test_on_a_node_too_large_for_the_exact_search_a_greedy_order_keeps_the_jobs_pods(young_job, other_qos):
    # n1: 17 alike 1-cpu pods (more than policy.exact.EXACT_LIMIT: no exact search, and the
    # swap pass runs only on the node offered), full; the one the plain orders evict first (the
    # youngest) is a Job's. n2: one pod no Job owns, dearer by what comes after the Job's
    # criterion. Without an order that keeps the Job's pod first, n1's set costs its Job and n2
    # wins; with it n1 evicts the youngest of the other pods and wins.
    from policy.qos import QoS

    filler = [pod(f"f{i:02d}", node="n1", priority=1, cpu=1, start=i) for i in range(16)]
    young = pod("young", node="n1", priority=1, cpu=1, start=100, job="young")
    if other_qos is None:
        other = pod("other", node="n2", priority=5, cpu=1)
    else:
        other = pod("other", node="n2", priority=1, cpu=1, qos=QoS.GUARANTEED)
    v = view([node("n1", cpu=17), node("n2", cpu=1)], [*filler, young, other], jobs=[young_job])
    preemptor = pod("pre", priority=10, cpu=1)
    decision = decide(view=v, preemptor=preemptor, proposals=scheduler_proposals(v, preemptor, nodes=["n1", "n2"]))
    assert list(decision.answer) == ["n1"], decision.reasons
    (victim,) = next(o for o in decision.outcomes if o.node == "n1").victims
    assert victim.name == "f15"  # the youngest pod whose eviction costs no Job


def test_the_pods_whose_job_would_fail_are_kept_first_apart_from_those_that_only_burn_a_retry():
    # 17 alike 1-cpu pods, full (no exact search): 15 of priority 3 no Job owns, and two of
    # priority 1: "fails" (its Job has backoffLimit 0; the younger, which the plain orders
    # evict) and "burns" (its Job has retries left). Keeping every Job's pod first evicts a
    # priority-3 pod; keeping only the failing one first evicts "burns": no Job failed, and
    # priority 1.
    from policy import homes
    from policy.victims import Choosing, select_victims

    high = [pod(f"h{i:02d}", node="n1", priority=3, cpu=1, start=i) for i in range(15)]
    burns = pod("burns", node="n1", priority=1, cpu=1, start=50, job="burns")
    fails = pod("fails", node="n1", priority=1, cpu=1, start=60, job="fails")
    v = view([node("n1", cpu=17)], [*high, burns, fails], jobs=[job("burns"), job("fails", backoff=0)])
    choosing = Choosing(pod("pre", priority=10, cpu=1), v.budgets_covering, gang_of=v.gang_of, homes=homes.of(v), stake_of=v.stake_of)
    chosen = select_victims(node=v.nodes["n1"], choosing=choosing, swap=False)
    assert [p.name for p in chosen.victims] == ["burns"], chosen.reasons

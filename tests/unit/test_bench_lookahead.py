"""bench/lookahead.py, the bounded lookahead measured for issue 28 (docs/policy.md, "Under
pressure"): it must play the options out and keep reprieve's own choice where looking ahead
finds nothing better, or the table it prints measures something else."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from policy import replay
from tests.builders import node, pod, view

ROOT = Path(__file__).resolve().parents[2]
NOW = 1000.0


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


lookahead = _load("lookahead")


def _cluster():
    """Two 4-cpu nodes. n1 runs a0 (priority 0, started at 100) beside m1 (priority 500); n2 runs
    b0 (priority 0, started at 500: less work lost) beside c0 (priority 0). A 2-cpu priority-1000
    pod must evict one priority-0 pod: a0 and b0 tie on every criterion before the pending room,
    and on it (the whole-node pod after it fits in neither room left); the work lost picks b0.
    Then the whole-node pod evicts a0 and m1 on n1 (n2 holds the first pod), where evicting a0
    first would have left it b0 and c0: 503 against 3."""
    nodes = [node("n1", cpu=4), node("n2", cpu=4)]
    pods = [
        pod("a0", node="n1", cpu=2, start=100),
        pod("m1", node="n1", cpu=2, priority=500, start=100),
        pod("b0", node="n2", cpu=2, start=500),
        pod("c0", node="n2", cpu=2, start=100),
    ]
    pending = [pod("first", cpu=2, priority=1000), pod("whole", cpu=4, priority=1000)]
    return view(nodes, pods), pending


def _steps(run):
    return [(s.node, sorted(s.victims)) for s in run.steps]


def _run(v, pending, decider=None):
    return replay.replay(v, pending, side=replay.REPRIEVE, floor=0, decider=decider, now=NOW)


def test_the_lookahead_takes_the_option_whose_next_steps_lose_less():
    v, pending = _cluster()
    plain = _run(v, pending)
    assert _steps(plain) == [("n2", ["default/b0"]), ("n1", ["default/a0", "default/m1"])]
    assert plain.totals.priority_loss == 503

    ahead = lookahead.Lookahead(pending, horizon=1, width=2, floor=0, now=NOW, pending_weight=0)
    looked = _run(v, pending, ahead)
    assert _steps(looked) == [("n1", ["default/a0"]), ("n2", ["default/b0", "default/c0"])]
    assert looked.totals.priority_loss == 3
    assert (ahead.preemptions, ahead.with_options, ahead.changed) == (2, 1, 1)
    assert looked.steps[0].why == "the lookahead's pick: n1 over reprieve's n2 (3 lost against 503)"


def test_reprieves_own_choice_stands_where_the_next_steps_lose_as_much():
    # Without the whole-node pod nothing follows the first preemption: both options lose one
    # priority-0 victim, and reprieve's own (b0, by the work lost) stands.
    v, pending = _cluster()
    ahead = lookahead.Lookahead(pending[:1], horizon=10, width=3, floor=0, now=NOW, pending_weight=0)
    looked = _run(v, pending[:1], ahead)
    assert _steps(looked) == _steps(_run(v, pending[:1])) == [("n2", ["default/b0"])]
    assert (ahead.with_options, ahead.changed) == (1, 0)


def test_a_pod_left_pending_counts_as_a_victim_of_its_priority_where_weighed():
    # n2's second pod is priority 1000: once the first pod is on n1, the whole-node pod fits
    # nowhere and waits; once it is on n2 (reprieve's choice), it evicts a0 and m1 on n1.
    nodes = [node("n1", cpu=4), node("n2", cpu=4)]
    pods = [
        pod("a0", node="n1", cpu=2, start=100),
        pod("m1", node="n1", cpu=2, priority=500, start=100),
        pod("b0", node="n2", cpu=2, start=500),
        pod("x2", node="n2", cpu=2, priority=1000, start=100),
    ]
    v = view(nodes, pods)
    pending = [pod("first", cpu=2, priority=1000), pod("whole", cpu=4, priority=1000)]
    assert [s.node for s in _run(v, pending).steps] == ["n2", "n1"]

    # Counting victims only, leaving it pending loses 1 against 503.
    ahead = lookahead.Lookahead(pending, horizon=1, width=2, floor=0, now=NOW, pending_weight=0)
    assert [s.node for s in _run(v, pending, ahead).steps] == ["n1", None]
    # Counting it as a victim of its priority (1001), placing it is cheaper: reprieve's own stands.
    ahead = lookahead.Lookahead(pending, horizon=1, width=2, floor=0, now=NOW, pending_weight=1)
    assert [s.node for s in _run(v, pending, ahead).steps] == ["n2", "n1"]
    assert (ahead.with_options, ahead.changed) == (1, 0)


def test_the_options_are_the_sets_tied_before_the_pending_room_at_most_width_of_them():
    # n1, n2 and n5 each free room with one priority-0 victim; n5 leaves no room for the pending
    # pod only it admits (worse on the pending room, tied before it); n3 needs two victims and
    # n4 a priority-100 one: not tied. reprieve's own (n2: the least work lost) comes first, then
    # the others by their cost.
    nodes = [node("n1", cpu=4), node("n2", cpu=4), node("n3", cpu=4), node("n4", cpu=4),
             node("n5", cpu=4, labels={"zone": "five"})]
    pods = [
        pod("a0", node="n1", cpu=2, start=100), pod("m1", node="n1", cpu=2, priority=500, start=100),
        pod("b0", node="n2", cpu=2, start=500), pod("c0", node="n2", cpu=2, start=100),
        pod("q0", node="n3", cpu=1, start=900), pod("q1", node="n3", cpu=1, start=900),
        pod("h3", node="n3", cpu=2, priority=1000, start=100),
        pod("d0", node="n4", cpu=2, priority=100, start=900), pod("h4", node="n4", cpu=2, priority=1000, start=100),
        pod("e0", node="n5", cpu=2, start=100), pod("f0", node="n5", cpu=2, start=100),
    ]
    first = pod("first", cpu=2, priority=1000)
    waiting = pod("small", cpu=1, node_selector={"zone": "five"})
    v = view(nodes, [*pods, first, waiting])
    choice = replay.reprieve_with(now=NOW)(v, first, replay.scoring.DEFAULT)
    assert choice.node == "n2"

    def options(width):
        ahead = lookahead.Lookahead([first, waiting], horizon=1, width=width, floor=0, now=NOW, pending_weight=0)
        return [o.node for o in ahead._options(v, first, choice)]

    assert options(5) == ["n2", "n1", "n5"]
    assert options(2) == ["n2", "n1"]

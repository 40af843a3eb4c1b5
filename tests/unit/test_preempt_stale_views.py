"""A view older than the scheduler's never strands a preemptor the scheduler could place.

kube-scheduler's cache runs ahead of reprieve's watch: pods bound or deleted, pods re-created
under their names, nominations made or cleared, answers reprieve remembers whose preemptor is
gone. The property: generate the scheduler's view (the truth), let reprieve's view miss a random
subset of the latest changes, ask stock preemption (policy/stock.py) on the truth for its
proposals, and reprieve, deciding on its older view, never answers "no candidate" where those
proposals are viable, since every rule the scheduler cannot know is left out here (one scheduler,
no policy, no victim promised to another answer, no pod terminating).
"""

from __future__ import annotations

import dataclasses

from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from policy import resources, stock
from policy.model import InFlight
from policy.preempt import Verdict, decide
from policy.causes import Refusal
from tests.builders import node, pod, view

NODES = ("n0", "n1", "n2")

bound_pods = st.lists(st.tuples(st.integers(0, 4), st.integers(1, 4)), min_size=2, max_size=4)  # (priority, cpu)
pending_pods = st.lists(st.tuples(st.integers(0, 9), st.integers(1, 4), st.sampled_from(NODES)), max_size=3)
# One change each; the view misses those whose flag is True.
changes = st.lists(
    st.tuples(
        st.sampled_from(["delete", "bind", "clear", "nominate", "recreate", "gone-answer"]),
        st.integers(0, 3),  # which pod (bound: on the node; pending: by index)
        st.sampled_from(NODES),
        st.booleans(),  # missed by reprieve's view
    ),
    max_size=4,
)


def build(bound, pending, ops, preemptor):
    """(truth, reprieve's view, reprieve's answers in flight, the kinds of change the view
    missed). The changes are resolved against
    the truth in order, each a new state for one pod (or its deletion); reprieve's view misses
    those flagged missed and, as a watch delivers one pod's changes in order, every later change
    of the same pod."""
    pods = {}
    for name, running in zip(NODES, bound):
        used = 0
        for i, (priority, cpu) in enumerate(running):
            used += cpu
            if used > 8:  # the node's capacity: the scheduler never overcommits it
                break
            p = pod(f"{name}-b{i}", node=name, priority=priority, cpu=cpu, start=i)
            pods[p.uid] = p
    for i, (priority, cpu, where) in enumerate(pending):
        p = pod(f"w{i}", priority=priority, cpu=cpu, nominated=where)
        pods[p.uid] = p
    before, events, answers = dict(pods), [], []
    for op, index, where, missed in ops:
        if op == "recreate":
            # An earlier pod of the preemptor's name, nominated to ``where``, deleted since.
            old = dataclasses.replace(preemptor, uid=f"uid-old-{where}-{index}", nominated_node_name=where)
            before[old.uid] = old
            events.append((old.uid, None, missed, op))
            continue
        if op == "gone-answer":
            # reprieve answered a pod of the scheduler's for ``where``, naming a pod there, and
            # the pod was deleted before the answer was carried out (its victim still runs): the
            # change log did not see it go if the view missed the deletion.
            if missed:
                on = [p for p in pods.values() if p.node_name == where]
                answers.append(InFlight(pod(f"gone{index}", priority=preemptor.priority, cpu=2), where, tuple(on[:1])))
            continue
        if op == "delete":
            on = [p for p in pods.values() if p.node_name == where]
            target, new = (on[index % len(on)], None) if on else (None, None)
        else:
            waiting = [p for p in pods.values() if p.node_name is None]
            target = waiting[index % len(waiting)] if waiting else None
            if target is None:
                continue
            new = {
                "bind": lambda p: dataclasses.replace(p, node_name=p.nominated_node_name or where, nominated_node_name=None),
                "clear": lambda p: dataclasses.replace(p, nominated_node_name=None),
                "nominate": lambda p: dataclasses.replace(p, nominated_node_name=where),
            }[op](target)
        if target is None:
            continue
        if new is None:
            del pods[target.uid]
        else:
            pods[target.uid] = new
        events.append((target.uid, new, missed, op))
    older, stopped, kinds = dict(before), set(), {"gone-answer"} if answers else set()
    for uid, new, missed, op in events:
        if missed or uid in stopped:
            stopped.add(uid)
            kinds.add(op)
        elif new is None:
            older.pop(uid, None)
        else:
            older[uid] = new
    nodes = [node(n, cpu=8, pods=10) for n in NODES]
    return view(nodes, pods.values()), view(nodes, older.values()), answers, kinds


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    bound=st.lists(bound_pods, min_size=3, max_size=3),
    pending=pending_pods,
    ops=changes,
    priority=st.integers(5, 9),
    cpu=st.integers(2, 6),
)
# upstream's TestPreemptionRaces in small: the preemptor's earlier pod of its name still
# nominated in reprieve's view, and reprieve's answer for it still in flight.
@example(bound=[[(2, 4), (2, 4)], [], []], pending=[], ops=[("recreate", 0, "n0", True)], priority=9, cpu=4)
# Found by it: reprieve's answer for a preemptor since deleted (its victim never deleted) held
# n1, and the pod fit there once that victim went: it waited for nothing.
@example(bound=[[(0, 3), (0, 4)], [(0, 3), (1, 4)], [(0, 1), (0, 2), (0, 4)]], pending=[],
         ops=[("gone-answer", 0, "n1", True)], priority=5, cpu=2)
# Found by it: the view missed w1's binding to n1, where reprieve's answer for a preemptor since
# deleted holds room and names n1-b0; with w1 unseen the pod fit on n1 as the view stood, and
# reprieve "waited for the pods terminating there", though none was.
@example(bound=[[(0, 1), (0, 1), (0, 1), (0, 3)], [(0, 1), (1, 3)], [(0, 1), (0, 1), (0, 1), (0, 4)]],
         pending=[(0, 1, "n0"), (1, 3, "n1")],
         ops=[("bind", 0, "n0", False), ("bind", 0, "n0", True), ("gone-answer", 0, "n1", True)], priority=5, cpu=2)
def test_an_older_view_never_strands_a_preemptor_stock_would_place(bound, pending, ops, priority, cpu):
    preemptor = pod("pre", priority=priority, cpu=cpu, uid="uid-pre-now")
    truth, older, answers, missed = build(bound, pending, ops, preemptor)
    scheduler = stock.decide(view=truth, preemptor=preemptor, node_names=NODES)
    assume(not scheduler.refusal and not scheduler.fits and scheduler.proposals)
    decision = decide(view=older, preemptor=preemptor, proposals=scheduler.proposals, in_flight=answers)
    assert decision.refusal is Refusal.NONE
    assert decision.answer, (decision.reasons, [(o.node, o.cause, o.reasons) for o in decision.outcomes])
    (chosen,) = decision.answer
    assert chosen in scheduler.proposals
    if not missed & {"delete", "bind", "nominate", "gone-answer"}:
        # What reprieve's view misses only holds room it no longer holds (cleared nominations,
        # pods re-created): reprieve judges the node itself (sets that room aside), not on the
        # scheduler's word. (A missed binding or nomination, or an answer whose preemptor went
        # before it was carried out, its victim staying, shows reprieve more room than there is,
        # which the proposal does not always reveal: docs/upstream-semantics.md.)
        outcome = next(o for o in decision.outcomes if o.node == chosen)
        assert outcome.verdict is Verdict.CHOSEN, (outcome.cause, outcome.reasons)
        # And the answer makes room in the scheduler's view: never less safe than its proposal.
        info = truth.nodes[chosen]
        named = set(decision.answer[chosen].uids)
        assert named <= {p.uid for p in info.pods}
        used = resources.add(
            *(p.requests for p in info.pods if p.uid not in named),
            *(p.requests for p in truth.reservations(chosen, pod=preemptor)),
        )
        assert not resources.shortfalls(request=preemptor.requests, allocatable=info.node.allocatable, used=used)

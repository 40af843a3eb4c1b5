"""Who may preempt at all: not a pod whose preemptionPolicy is Never, nor one nominated where the
pods already terminating will make its room (it waits for them), nor, under a policy's rules, one
still inside its preemption delay."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from policy import resources, tenancy
from policy.causes import Refusal
from policy.model import InFlight, Pod
from policy.preempt.held import as_it_will_be, holds_against
from policy.preempt.unmodelled import unmodelled_here
from policy.tenancy import Rules, Standing
from policy.view import ClusterView, NodeInfo


def ineligible(
    view: ClusterView,
    preemptor: Pod,
    in_flight: Sequence[InFlight],
    proposed: Sequence[str] | None,
    own: Sequence[InFlight] = (),
    answered_since: Collection[str] = (),
) -> tuple[Refusal, str]:
    """preemptionPolicy Never; or nominated to a node where lower-priority pods are leaving
    and their room, once free, is enough for the preemptor: it waits for them. It also waits
    where the scheduler's victims there are all leaving already for other answers in flight
    (_room_coming; ``own``: reprieve's answers for this preemptor, its latest even settled; ``answered_since``:
    the UIDs of the preemptors of those answered after its own).

    Upstream waits whenever such a pod is terminating because of preemption, and checks that
    before it asks the extender: asked, the scheduler has judged that no pod it preempted is
    still terminating there (in its view, never behind reprieve's on its own deletions). So
    pods marked preempted (DisruptionTarget) are left to that judgement: waiting for them where
    the scheduler has already seen them go would leave the preemptor pending, with no deletion
    left to wake it. reprieve also waits for pods terminating for other reasons (deleted by a
    person or a controller), which upstream does not, if their room will be the preemptor's:
    pods nominated there that outrank it (or, at equal priority, were created first) and
    answers in flight hold it first. A preemptor whose room was taken by another may preempt
    again at once instead of waiting for nothing.

    Where reprieve's view still shows the pods the scheduler preempted there (marked, or the
    victims of ``own``, which its view may not show going yet), ``proposed`` (the UIDs of the
    scheduler's victims on the nominated node; None if it is not a candidate) can show the wait
    is enough all the same (_proposal_shows_room).
    """
    if preemptor.preemption_never:
        return Refusal.NEVER, "preemptionPolicy is Never"
    nominated = view.nodes.get(preemptor.nominated_node_name or "")
    if nominated is None:
        return Refusal.NONE, ""
    coming = _room_coming(view, nominated, preemptor, own, in_flight, proposed, answered_since)
    if coming:
        return Refusal.VICTIMS_LEAVING, coming
    leaving = [p for p in nominated.pods if p.terminating and not p.preempted and p.priority < preemptor.priority]
    if not leaving:
        return Refusal.NONE, ""
    holders = [
        p for p in view.nominated.get(nominated.name, ())
        if p.uid != preemptor.uid and _claim(p) > _claim(preemptor)
    ]
    node, holders = as_it_will_be(view, nominated, tuple(holders), preemptor, in_flight)
    # A pod the scheduler preempted frees no room the preemptor may count on: asked, the
    # scheduler has seen it go, and whatever it sees in its room instead, reprieve may not.
    staying = [p for p in node.pods if not p.terminating or p.preempted]
    used = resources.add(*(p.requests for p in staying), *(p.requests for p in holders))
    names = ", ".join(sorted(p.key for p in leaving))
    waiting = f"already nominated to {nominated.name}, where lower-priority {names} are terminating; waiting for them"
    if not resources.shortfalls(request=preemptor.requests, allocatable=node.node.allocatable, used=used):
        return Refusal.VICTIMS_TERMINATING, waiting
    preempted_for_it = {v.uid for f in own for v in f.victims}
    if holders or not _proposal_shows_room(view, nominated, preemptor, leaving, proposed, in_flight, preempted_for_it):
        return Refusal.NONE, ""  # preempting again is the only way: see the node's reasons
    return Refusal.VICTIMS_TERMINATING, (
        f"{waiting}: they free at least what the scheduler's own victims there would, and those make room in its view"
    )


def _room_coming(
    view: ClusterView,
    nominated: NodeInfo,
    preemptor: Pod,
    own: Sequence[InFlight],
    in_flight: Sequence[InFlight],
    proposed: Sequence[str] | None,
    answered_since: Collection[str],
) -> str:
    """Why the preemptor waits where its room on the node it is nominated to is already
    coming: every victim the scheduler proposes there is a victim of another answer of
    reprieve's in flight there, given after its own, still running; "" otherwise.

    Seen in the bursts with reprieve's watch late: A, B and C were answered a victim each
    on one node. The scheduler, once A's victim was gone, retried A; its nominator gave A's
    freed room to B and C until their victims went, so it proposed C's victim, not yet deleted,
    and A preempted a second time. Where C's victim is older than the node's last pod, the dry
    run keeps it and proposes that younger pod, a fresh victim (as stock takes): that is not
    caught here. Whether the scheduler still counts C's victim, or has seen it go and given its
    room to B, its proposal does not tell, and reprieve's lagging view cannot.

    Waiting rests on evidence, as an answer in flight may never have been taken (a call the
    scheduler gave up on, a leader gone), and then nothing deletes its victims:
    - the scheduler took this preemptor's own answer for the node: it was not nominated there
      when reprieve answered, and is now (so that answer's deletions are issued: upstream asks
      again only once they are);
    - it proposes only live victims of answers in flight there given after the preemptor's own
      (``answered_since``), whose preemptors hold room against it (priority at least its own):
      it still sees them, and their deletion wakes the preemptor. An answer given before its
      own, if taken, was counted when the scheduler chose its victims, and cannot be why the
      room is short now; waiting on it would only add the risk that it was never taken;
    - nothing reprieve does not model may be what blocks it there (policy.preempt.unmodelled);
    - it fits once they go whether each other answer there was taken or not: the node's pods
      (but its own answer's victims, and the pods the scheduler preempted, which it has seen
      go), the pods nominated there that hold room against it, and for each other answer the
      more, in each resource, of its victims staying and its preemptor holding room (a
      lower-priority answer's preemptor holds none against it; one the view shows nominated
      there is counted so, once; one bound there is one of its pods). Terminating pods it did
      not preempt still count, an answer's victims among them: the scheduler counts them until
      they are gone.
    ``own`` includes the preemptor's latest answer even where reprieve's view shows it carried
    out (extender.state.ledger hands it over settled, in its place among the answers, until it
    expires; not one the scheduler went another way on): with the watch 500 ms late the view had
    shown A's and B's answers carried out by A's retry, not C's.
    What it cannot see: a pod the scheduler has placed there that reprieve's view does not show
    yet, with an answer in flight never taken besides. Then the preemptor waits until a change
    the scheduler requeues it for, or its 5-minute flush."""
    node = nominated.name
    if not proposed or not any(f.node == node and f.preemptor.nominated_node_name != node for f in own):
        return ""
    here = [f for f in in_flight if f.node == node]
    on_node = {p.uid: p for p in nominated.pods}
    running = {uid: p for uid, p in on_node.items() if not p.terminating}
    promised = {
        v.uid for f in here if f.preemptor.uid in answered_since and holds_against(f, preemptor)
        for v in f.victims if v.uid in running
    }
    if not promised.issuperset(proposed) or unmodelled_here(view, preemptor, nominated):
        return ""
    gone = {v.uid for f in own for v in f.victims if v.uid not in proposed}
    gone.update(p.uid for p in nominated.pods if p.terminating and p.preempted and p.priority < preemptor.priority)
    answered = {v.uid for f in here for v in f.victims}
    staying = [p.requests for p in nominated.pods if p.uid not in gone and p.uid not in answered]
    # An answer's preemptor is counted with its answer, even where the view shows it nominated
    # here already; one the view shows bound is one of the node's pods.
    answering = {f.preemptor.uid for f in here}
    held = [p.requests for p in view.reservations(node, pod=preemptor) if p.uid not in answering]
    for f in here:
        victims = resources.add(*(on_node[v.uid].requests for v in f.victims if v.uid in on_node and v.uid not in gone))
        seen = view.pods.get(f.preemptor.uid)
        holding = holds_against(f, preemptor) and not (seen is not None and seen.node_name)
        held.append(resources.maximum(victims, f.preemptor.requests if holding else {}))
    used = resources.add(*staying, *held)
    if resources.shortfalls(request=preemptor.requests, allocatable=nominated.node.allocatable, used=used):
        return ""
    names = ", ".join(sorted(running[uid].key for uid in proposed))
    return (
        f"already nominated to {node}, where the scheduler's own victims ({names}) are already leaving "
        "for answers in flight; waiting for them"
    )


def _proposal_shows_room(
    view: ClusterView,
    nominated: NodeInfo,
    preemptor: Pod,
    leaving: Sequence[Pod],
    proposed: Sequence[str] | None,
    in_flight: Sequence[InFlight],
    preempted_for_it: Collection[str],
) -> bool:
    """Where reprieve's view is behind the scheduler's own deletions on the preemptor's
    nominated node, the pods ``leaving`` will make room in the scheduler's view too.

    Behind: with the pods the scheduler preempted there gone (asked, it has seen them go;
    reprieve's view may show them terminating, marked, or, for the victims of its own answers
    for this preemptor, ``preempted_for_it``, not even that yet, unless the scheduler proposes
    them again), the pods leaving make room in reprieve's view. The scheduler's victims there
    (``proposed``: non-empty, each on the node in reprieve's view) make room in its own view,
    beside whatever it counts that reprieve does not see; the pods leaving free at least as
    much in every resource the preemptor requests, so they make room as surely, if the
    scheduler still counts them and nothing reprieve does not model
    (policy.preempt.unmodelled) chose its victims. No answer in flight holds room there. So the
    preemptor waits for them, as upstream waits for pods it preempted, rather than preempt again
    (seen under churn, bench/churn.py: 1 victim named beside a pod a controller deleted went
    first, and the preemptor then took 1 more elsewhere).

    If the scheduler has already seen them go too (reprieve's view is behind on them as well)
    and something else took their room, the preemptor waits for nothing: until the next
    deletion of a pod bound anywhere wakes it, or the scheduler's flush of pods unschedulable
    for 5 minutes. The wait above, from reprieve's view alone, rests on the same premise."""
    if not proposed or any(f.node == nominated.name for f in in_flight):
        return False
    on_node = {p.uid: p for p in nominated.pods}
    if any(uid not in on_node for uid in proposed) or unmodelled_here(view, preemptor, nominated):
        return False
    # Where none of them is still there, the wait above decided. A victim of reprieve's answer
    # that the scheduler proposes is not gone in its view: that answer was not carried out.
    gone = set(preempted_for_it).difference(proposed)
    live = resources.add(*(p.requests for p in nominated.pods if not p.terminating and p.uid not in gone))
    if resources.shortfalls(request=preemptor.requests, allocatable=nominated.node.allocatable, used=live):
        return False
    needed = resources.add(*(on_node[uid].requests for uid in proposed))
    freed = resources.add(*(p.requests for p in leaving))
    return all(freed.get(r, 0) >= needed.get(r, 0) for r in resources.checked_resources(preemptor.requests))


def _claim(pod: Pod) -> tuple:
    """Who gets room first among pods nominated to one node: the higher priority, then the
    earlier creation, then namespace/name (a total order, so two pods never both wait)."""
    return (pod.priority, -(pod.created or 0), pod.key)


def under_rules(
    rules: Rules | Standing,
    view: ClusterView,
    preemptor: Pod,
    in_flight: Sequence[InFlight],
    now: float | None,
) -> tuple[Refusal, str, tenancy.Screen | None]:
    """A preemptor still inside its preemption delay is refused (Refusal.DELAY); any other gets
    the rules' screen of its victims (policy.tenancy), with the queues' usage counting it and
    the answers in flight. ``rules`` may be their standing in ``view`` already."""
    if isinstance(rules, Standing):
        standing, rules = rules, rules.rules
        if preemptor.uid not in standing.membership:
            standing = tenancy.with_pending(standing, (preemptor,))
    else:
        standing = tenancy.assess(rules, view, pending=(preemptor,))
    standing = tenancy.with_in_flight(standing, view, in_flight)
    wait = tenancy.delay_left(rules=rules, standing=standing, preemptor=preemptor, now=now)
    if wait > 0:
        return Refusal.DELAY, f"pending for less than its preemption delay: {wait:.0f}s to go", None
    return Refusal.NONE, "", tenancy.screen(standing=standing, view=view, preemptor=preemptor)

"""Who may preempt at all: not a pod whose preemptionPolicy is Never, nor one nominated where pods
already leaving (terminating, or victims of answers being carried out) will make its room (it
waits for them), nor, under a policy's rules, one still inside its preemption delay."""

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
    preempted_for_it: Collection[str] = (),
) -> tuple[Refusal, str]:
    """preemptionPolicy Never; or nominated to a node where its room is already coming: lower-
    priority pods are leaving and their room, once free, is enough for the preemptor
    (_waits_for_leaving), or the scheduler's own victims there are all leaving already
    (_victims_already_leaving). It waits for them.

    An empty answer keeps the preemptor's nomination (upstream returns no PostFilter result
    when the extender leaves no candidate), and the pods' deletion wakes it."""
    if preemptor.preemption_never:
        return Refusal.NEVER, "preemptionPolicy is Never"
    nominated = view.nodes.get(preemptor.nominated_node_name or "")
    if nominated is None:
        return Refusal.NONE, ""
    why = _waits_for_leaving(view, nominated, preemptor, in_flight, proposed, preempted_for_it)
    if not why:
        why = _victims_already_leaving(view, nominated, preemptor, in_flight, proposed, preempted_for_it)
    return (Refusal.VICTIMS_TERMINATING, why) if why else (Refusal.NONE, "")


def _waits_for_leaving(
    view: ClusterView,
    nominated: NodeInfo,
    preemptor: Pod,
    in_flight: Sequence[InFlight],
    proposed: Sequence[str] | None,
    preempted_for_it: Collection[str],
) -> str:
    """Why the preemptor waits for the lower-priority pods leaving the node it is nominated to,
    if their room, once free, is enough for it; "" if it may preempt.

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

    Where reprieve's view still shows the pods the scheduler preempted there (marked, or
    ``preempted_for_it``: the victims of reprieve's own answers for this preemptor, which its
    view may not show going yet), ``proposed`` (the UIDs of the scheduler's victims on the
    nominated node; None if it is not a candidate) can show the wait is enough all the same
    (_proposal_shows_room).
    """
    leaving = [p for p in nominated.pods if p.terminating and not p.preempted and p.priority < preemptor.priority]
    if not leaving:
        return ""
    holders = _holders(view, nominated, preemptor)
    node, holders = as_it_will_be(view, nominated, holders, preemptor, in_flight)
    # A pod the scheduler preempted frees no room the preemptor may count on: asked, the
    # scheduler has seen it go, and whatever it sees in its room instead, reprieve may not.
    staying = [p for p in node.pods if not p.terminating or p.preempted]
    used = resources.add(*(p.requests for p in staying), *(p.requests for p in holders))
    names = ", ".join(sorted(p.key for p in leaving))
    waiting = f"already nominated to {nominated.name}, where lower-priority {names} are terminating; waiting for them"
    if not resources.shortfalls(request=preemptor.requests, allocatable=node.node.allocatable, used=used):
        return waiting
    if holders or not _proposal_shows_room(view, nominated, preemptor, leaving, proposed, in_flight, preempted_for_it):
        return ""  # preempting again is the only way: see the node's reasons
    return f"{waiting}: they free at least what the scheduler's own victims there would, and those make room in its view"


def _victims_already_leaving(
    view: ClusterView,
    nominated: NodeInfo,
    preemptor: Pod,
    in_flight: Sequence[InFlight],
    proposed: Sequence[str] | None,
    preempted_for_it: Collection[str],
) -> str:
    """Why the preemptor waits where every victim the scheduler proposes on the node it is
    nominated to is leaving already, and the proposal shows it; "" otherwise.

    Leaving already: a pod reprieve's view shows terminating, or a victim of one of reprieve's
    answers in flight there for a preemptor that outranks this one (priority >= its own), which
    the scheduler took: it nominated that preemptor and deletes its victims asynchronously,
    after the cycle. Its dry run counts that nomination, and proposes the victim because it has
    not seen it go yet; the victim's deletion will wake this preemptor, nominated where the
    room comes. Preempting again names a victim twice (seen in the bursts of tests/e2e with
    reprieve's watch 2 s late: a preemptor retried once its own victim was gone, while another's
    answer on the node was still being carried out, was handed that answer's victim and
    preempted twice).

    An answer in flight may never have been taken (a call the scheduler gave up on, a leader
    gone): then its victims stay, and waiting is for nothing. So every such answer must show
    in the proposal: upstream's victims are each needed, and without that answer's preemptor
    holding room one of them could stay, so the scheduler counts it. A lower-priority answer
    never shows (the dry run does not count its preemptor) and is never waited on. The node is
    read as the scheduler sees it when it asks (_scheduler_fits): its victims gone, and the
    pods it preempted there (marked, or the victims of this preemptor's own earlier answer that
    it does not propose again: it asks again only once that preemption's deletions are issued),
    other terminating pods still there, the pods nominated there that outrank the preemptor
    and the preemptors of answers in flight there holding room."""
    if not proposed:
        return ""
    asked = set(proposed)
    on_node = {p.uid: p for p in nominated.pods}
    flights = [f for f in in_flight if f.node == nominated.name and holds_against(f, preemptor)]
    shown: list[InFlight] = []
    for uid in asked:
        pod = on_node.get(uid)
        flight = next((f for f in flights if any(v.uid == uid for v in f.victims)), None)
        if pod is None or not pod.terminating and flight is None:
            return ""
        if not pod.terminating and flight not in shown:
            shown.append(flight)
    gone = asked.union(set(preempted_for_it).difference(asked))
    gone.update(p.uid for p in nominated.pods if p.terminating and p.preempted and p.priority < preemptor.priority)
    if not _scheduler_fits(view, nominated, preemptor, flights, gone):
        return ""
    for flight in shown:
        others = [f for f in flights if f is not flight]
        mine = [v.uid for v in flight.victims if v.uid in asked]
        if not any(_scheduler_fits(view, nominated, preemptor, others, gone - {uid}) for uid in mine):
            return ""  # the proposal does not show the scheduler counts that answer
    names = ", ".join(sorted(on_node[uid].key for uid in asked))
    return (
        f"already nominated to {nominated.name}, where the scheduler's own victims ({names}) are already "
        "leaving (for answers in flight, or terminating); waiting for them"
    )


def _scheduler_fits(
    view: ClusterView, nominated: NodeInfo, preemptor: Pod, flights: Sequence[InFlight], gone: Collection[str]
) -> bool:
    """The preemptor fits on ``nominated`` with the pods ``gone`` gone, the pods nominated there
    that hold room against it (upstream's: priority >= its own) and the preemptors of
    ``flights`` (answers in flight there) placed, and those answers' victims gone."""
    node, holders = as_it_will_be(view, nominated, view.reservations(nominated.name, pod=preemptor), preemptor, flights)
    used = resources.add(*(p.requests for p in node.pods if p.uid not in gone), *(p.requests for p in holders))
    return not resources.shortfalls(request=preemptor.requests, allocatable=node.node.allocatable, used=used)


def _holders(view: ClusterView, nominated: NodeInfo, preemptor: Pod) -> tuple[Pod, ...]:
    """The pods nominated to the node that take its room before the preemptor (_claim)."""
    return tuple(
        p for p in view.nominated.get(nominated.name, ()) if p.uid != preemptor.uid and _claim(p) > _claim(preemptor)
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

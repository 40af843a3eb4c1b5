"""One candidate node's outcome: reprieve's own victims where it can choose them, else the
scheduler's kept, the node passed through as proposed, or dropped, each with its reasons."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from policy import guards, homes, jobs, ranking, resources, tenancy
from policy.causes import Cause
from policy.criteria import Facts, pending_room
from policy.model import Pod

from policy.preempt.decision import SETTLE_SECONDS, NodeOutcome, Proposal, Verdict
from policy.preempt.held import (
    Here, assumed_floor, freed, promised_on, records_here, room_after, scheduler_sees_less,
)
from policy.preempt.request import Request
from policy.preempt.unmodelled import unmodelled_here
from policy.resources import Vector
from policy.victims import ANSWERED, UNSETTLED, NodeRejected, VictimSelection, select_victims
from policy.view import ClusterView, NodeInfo, known_to_scheduler


def evaluate(request: Request, name: str, swap: bool = False) -> NodeOutcome:
    """Candidate ``name``'s outcome (with policy.exact's swap pass if ``swap``), as the rules
    allow it if there are any."""
    outcome = _judged(request, name, swap)
    judging = request.screen is not None or request.guarded
    if judging and outcome.verdict is Verdict.PASSED_THROUGH and not outcome.kept_scheduler_victims:
        # The rules (and the guards: strict budgets, minimum runtime) cannot be checked on
        # victims reprieve does not know: not offered.
        outcome = dataclasses.replace(
            outcome, verdict=Verdict.DROPPED, reasons=(*outcome.reasons, "with a policy, not offered unjudged")
        )
    return outcome


def _judged(request: Request, name: str, swap: bool) -> NodeOutcome:
    """The node's outcome in three steps: as proposed where reprieve cannot resolve the node or
    the scheduler's victims on it (_unresolved); the scheduler's victims kept where reprieve
    does not model what may block the pod (_unmodelled_outcome); else victims of reprieve's own
    choosing (_selected)."""
    view = request.view
    node = view.nodes.get(name)
    if node is None:
        return NodeOutcome(name, Verdict.PASSED_THROUGH, Cause.UNKNOWN_NODE, reasons=("node unknown to reprieve",))
    on_node = {p.uid: p for p in node.pods}
    proposal = request.proposals[name]
    unresolved = _unresolved(view, name, proposal, on_node)
    if unresolved is not None:
        return unresolved
    proposed = [on_node[uid] for uid in proposal.uids]
    unmodelled = unmodelled_here(view, request.preemptor, node)
    if unmodelled:
        return _unmodelled_outcome(request, name, proposed, unmodelled)
    return _selected(request, name, node, proposed, swap)


def _unresolved(view: ClusterView, name: str, proposal: Proposal, on_node: dict[str, Pod]) -> NodeOutcome | None:
    """The outcome of a node whose proposal names pods reprieve does not see on it: dropped if
    some are bound to other nodes (one victim unit spanning nodes), passed through if unknown
    (the scheduler's view is fresher). None if every proposed victim is on the node."""
    elsewhere = [view.pods[uid] for uid in proposal.uids if uid not in on_node and _bound_elsewhere(view, uid, name)]
    if elsewhere:
        # kube-scheduler 1.37 lists every member of a PodGroup with disruptionMode all under the
        # node it dry-ran, members on other nodes included, yet resolves an answer's UIDs on
        # that node only: the node cannot be answered, and naming only its own members would
        # break the group.
        return NodeOutcome(
            name,
            Verdict.DROPPED,
            Cause.VICTIMS_ELSEWHERE,
            victims=tuple(elsewhere),
            reasons=(
                f"the scheduler's victims include {_keys(elsewhere)} on other nodes, one victim unit with those "
                "here: an answer names only this node's pods, and naming fewer would break the unit",
            ),
        )
    unknown = [uid for uid in proposal.uids if uid not in on_node]
    if unknown:
        # The scheduler sees pods here that reprieve does not: its view of the node is fresher.
        return NodeOutcome(
            name,
            Verdict.PASSED_THROUGH,
            Cause.UNKNOWN_VICTIM,
            reasons=(f"victim UID(s) {', '.join(unknown)} unknown to reprieve on this node",),
        )
    return None


def _unmodelled_outcome(request: Request, name: str, proposed: list[Pod], unmodelled: str) -> NodeOutcome:
    """Where reprieve does not model what may block the pod (``unmodelled``): the scheduler's
    victims kept, or the node dropped if it proposed none or one already goes for another
    answer in flight."""
    if not proposed:
        return NodeOutcome(
            name, Verdict.DROPPED, Cause.UNMODELLED,
            reasons=(f"no victims proposed, and reprieve cannot choose them: {unmodelled}",),
        )
    # The scheduler's victims are kept; those promised to an earlier answer free nothing:
    # their room is already another preemptor's.
    promised = promised_on(request.in_flight, name, request.preemptor)
    taken = sorted(p.key for p in proposed if p.uid in promised)
    if taken:
        return _already_promised(name, taken)
    return _keep_scheduler_victims(request, name, proposed, Cause.UNMODELLED, unmodelled)


def _selected(request: Request, name: str, node: NodeInfo, as_proposed: list[Pod], swap: bool) -> NodeOutcome:
    """Victims of reprieve's own choosing, on the node as the records holding room leave it
    (records_here): chosen by policy.victims (_selection); where even every lower-priority pod
    gone makes no room, _no_room_here; where no live pod need go, _no_victims."""
    here = records_here(request.view, node, request.preemptor, request.in_flight, as_proposed)
    on = {p.uid for p in here.node.pods}
    proposed = [p for p in as_proposed if p.uid in on]  # promised ones are gone, unless terminating
    selection, at_least, unnameable = _selection(request, here, as_proposed, proposed, swap)
    if isinstance(selection, NodeRejected):
        preemptor = request.preemptor
        # Live pods the answer may not name stayed (the scheduler may have deleted them, or
        # not seen them yet): found without them, the scheduler's victims may still do.
        held_back = [p for p in here.node.pods if p.priority < preemptor.priority and not p.terminating and unnameable(p)]
        if selection.cause is Cause.DOES_NOT_FIT or (
            held_back and selection.cause in (Cause.STRICT_BUDGET, Cause.QUEUE_SHARE)
            and room_after(here.node, preemptor, here.reservations, [*proposed, *held_back]) is not None
        ):
            return _no_room_here(request, name, selection, here, as_proposed, proposed, held_back)
        return NodeOutcome(name, Verdict.DROPPED, selection.cause, reasons=(selection.reason,))
    if not selection.victims:
        return _no_victims(request, name, here, as_proposed)
    cause, reasons = Cause.NONE, selection.reasons
    if here.set_aside:
        cause = Cause.SCHEDULER_NEWER
        reasons = (
            f"room held for nominated {_keys(here.set_aside)} set aside: the scheduler's own victims make room "
            "here only without it, so the scheduler no longer holds it (reprieve's record is older)",
            *reasons,
        )
    elif at_least is not None:
        cause = Cause.SCHEDULER_SEES_LESS
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        cause,
        victims=selection.victims,
        violations=selection.violations,
        cost=selection.cost,
        reasons=reasons,
        broken=selection.broken,
    )


def _selection(
    request: Request, here: Here, as_proposed: list[Pod], proposed: list[Pod], swap: bool
) -> tuple[VictimSelection | NodeRejected, Vector | None, Callable[[Pod], str]]:
    """policy.victims' selection on the node as ``here`` leaves it, naming only pods the
    scheduler can resolve (_unnameable, returned too), and the least its victims must free
    (None: no floor).
    The floor is what the scheduler's victims free where its proposal shows it sees less room
    (scheduler_sees_less), where it has moved past a holder (set aside), or where evicting no
    one would count on room its own preemptions free; where pods it may have assumed here are
    nominated, what its victims free less the room they leave beyond the most those pods can
    take in its view (assumed_floor, none where they can take none)."""
    node, reservations, promised, set_aside = here
    preemptor = request.preemptor
    at_least = scheduler_sees_less(node, preemptor, reservations, proposed, promised)
    if at_least is None and set_aside:
        at_least = freed(proposed, promised)
    bounded = ""
    if at_least is None:
        at_least = assumed_floor(request.view, node, preemptor, reservations, proposed, promised)
        bounded = _bounded(at_least, freed(proposed, promised))
    unnameable = _unnameable({p.uid for p in proposed if p.uid not in promised}, request.answered, request.now)
    selection = _select(request, here, unnameable, at_least, swap)
    if bounded and isinstance(selection, VictimSelection):
        selection = dataclasses.replace(selection, reasons=(*selection.reasons, bounded))
    if (
        isinstance(selection, VictimSelection) and not selection.victims and as_proposed
        and any(p.terminating and p.preempted and p.priority < preemptor.priority for p in node.pods)
    ):
        # Waiting would count on room the scheduler's own preemptions free: it has seen those
        # pods (and may have seen them go, and something else take their room); its victims are
        # the floor, as where the proposal shows it sees less room.
        at_least = freed(proposed, promised)
        selection = _select(request, here, unnameable, at_least, swap)
    return selection, at_least, unnameable


def _bounded(floor: Vector | None, full: Vector) -> str:
    """The reason for a floor below what the scheduler's victims free (assumed_floor), or ""."""
    if floor is None or all(floor.get(r, 0) >= full.get(r, 0) for r in floor):
        return ""
    return (
        f"that floor ({resources.describe(floor)}) is less than the scheduler's victims free "
        f"({resources.describe({r: full.get(r, 0) for r in floor})}): they leave room for only some of its own "
        "lower-priority pods nominated here (which it may have assumed), so it can be counting no more of them"
    )


def _select(
    request: Request, here: Here, unnameable: Callable[[Pod], str], at_least: Vector | None, swap: bool
) -> VictimSelection | NodeRejected:
    """policy.victims.select_victims on the node as ``here`` leaves it: the one call."""
    return select_victims(
        node=here.node, choosing=request.choosing, reservations=here.reservations, unnameable=unnameable,
        at_least=at_least, swap=swap,
    )


def _no_victims(request: Request, name: str, here: Here, as_proposed: list[Pod]) -> NodeOutcome:
    """A node where the pod fits with no live pod evicted: dropped, as one another extender's
    filter rejected (proposed with no victims) or as one where the pod fits once the pods
    terminating here are gone (Cause.LEAVING: the pod waits for them); unless it fits only once
    victims promised to an earlier answer go, which the view does not show: the scheduler's
    victims are kept."""
    if not as_proposed:
        # kube-scheduler 1.38 proposes nodes its own filters pass, with no victims, when an
        # extender's filter rejected them: the pod fits there in the scheduler's view, and in
        # reprieve's too (or once pods the scheduler has already seen go are gone).
        return NodeOutcome(
            name, Verdict.DROPPED, Cause.NOTHING_TO_EVICT,
            reasons=("proposed with no victims, and the pod fits here in reprieve's view: "
                     "another extender's filter rejected the node, for a reason reprieve does not know",),
        )
    node, reservations, promised, _ = here
    preemptor = request.preemptor
    staying = [p for p in request.view.nodes[name].pods if p.uid in promised and not p.terminating]
    as_seen = _with(node, staying) if staying else node
    if staying and room_after(as_seen, preemptor, reservations, _leaving(node, preemptor)) is None:
        # The pod fits only once victims promised to an earlier answer go, and the view
        # does not show them going: that answer's preemptor may be gone, its victims never
        # deleted, and waiting would then be for nothing. The scheduler's victims are kept
        # (naming again one already going costs nothing).
        why = f"fits once {_keys(staying)} go for an earlier answer, which the view does not show yet"
        return _keep_scheduler_victims(request, name, as_proposed, Cause.IN_FLIGHT, why, here)
    if room_after(as_seen, preemptor, reservations, ()) is not None:
        # Nothing here is leaving that the pod needs: it fits as reprieve's view stands, and the
        # scheduler, whose view is never older, found it does not. Waiting would be for nothing
        # (a pod bound here that the view has not seen yet): the scheduler's victims are kept.
        why = "the pod fits here in reprieve's view with nothing evicted, so the scheduler's view is newer"
        return _keep_scheduler_victims(request, name, as_proposed, Cause.SCHEDULER_NEWER, why, here)
    return NodeOutcome(
        name, Verdict.DROPPED, Cause.LEAVING, reasons=("fits once the pods terminating here are gone",)
    )


def _no_room_here(
    request: Request,
    name: str,
    rejected: NodeRejected,
    here: Here,
    as_proposed: list[Pod],
    proposed: list[Pod],
    held_back: Sequence[Pod] = (),
) -> NodeOutcome:
    """A proposed node where reprieve finds no room even with every lower-priority pod it may
    name gone, or (``held_back``: live pods the answer may not name stayed) only sets that break
    a strict budget or a queue's share.

    The scheduler found room here with its own victims. Where they would make room in
    reprieve's view too (with the pods held back gone: the scheduler may have deleted them, or
    not count them) but for room held for nominations the scheduler cannot know (another
    scheduler's pods), those are what stand in the way: a reason of reprieve's own, and the
    node is dropped. Otherwise reprieve's view of the node is older than the scheduler's (a
    pod gone that it still shows, a nomination cleared): dropping the node would rest on that
    older record and could leave the preemptor pending where the scheduler would place it, so
    the scheduler's victims are kept as it proposed them (unless the rules or the guards
    protect one, or one already goes for another answer in flight)."""
    node, reservations, promised, preemptor = here.node, here.reservations, here.promised, request.preemptor
    others = [h for h in reservations if not known_to_scheduler(h, preemptor)]
    gone = [*proposed, *held_back]
    if not as_proposed or (
        others and room_after(node, preemptor, (), gone) is not None and room_after(node, preemptor, reservations, gone) is None
    ):
        held = f"; room held for {_keys(others)}, nominated by another scheduler" if others else ""
        return NodeOutcome(name, Verdict.DROPPED, rejected.cause, reasons=(rejected.reason + held,))
    taken = sorted(p.key for p in as_proposed if p.uid in promised)
    if taken:
        return _already_promised(name, taken)
    finding = rejected.reason
    if held_back:
        finding += f" (with {_keys(held_back)} staying: the answer may not name them)"
    why = f"the scheduler's view of the node is newer than reprieve's, whose own finding was: {finding}"
    kept = _keep_scheduler_victims(request, name, as_proposed, Cause.SCHEDULER_NEWER, why, here)
    if kept.verdict is Verdict.DROPPED:
        return kept
    # Not ranked with the nodes reprieve could judge: offered only if none of them can be.
    return dataclasses.replace(kept, verdict=Verdict.PASSED_THROUGH, cost=None)


def _keep_scheduler_victims(
    request: Request, name: str, victims: list[Pod], cause: Cause, why: str, here: Here | None = None
) -> NodeOutcome:
    """The scheduler's victims, unless the rules protect one of them or they break a guard (a
    pod inside its minimum runtime, a strict budget violated: policy.guards): reprieve cannot
    choose others here, so the node is dropped."""
    screen, choosing = request.screen, request.choosing
    guarded, broken_guard = guards.check(victims, inside=choosing.inside, strict_of=choosing.strict_of)
    if guarded is not Cause.NONE:
        return NodeOutcome(name, Verdict.DROPPED, guarded, reasons=(f"{why}; but {broken_guard}",))
    opted_out = []
    if screen is not None:
        for pod in victims:
            judgement, reason = screen.judge(pod)
            if judgement is tenancy.Judgement.PROTECTED:
                return NodeOutcome(
                    name, Verdict.DROPPED, Cause.PROTECTED, reasons=(f"{why}; but {pod.key} is protected: {reason}",)
                )
            if judgement is tenancy.Judgement.LAST_RESORT:
                opted_out.append(pod.uid)
        short = screen.over_share(victims)
        if short:
            return NodeOutcome(name, Verdict.DROPPED, Cause.QUEUE_SHARE, reasons=(f"{why}; but {short}",))
    cost, homeless = _priced(request, name, victims, frozenset(opted_out), here)
    violations, broken = cost.detail(ranking.PDB_VIOLATIONS), cost.detail(ranking.BROKEN_GANGS)
    ended = cost.detail(ranking.MANAGERS)
    return NodeOutcome(
        name,
        Verdict.CHOSEN,
        cause,
        victims=tuple(victims),
        violations=violations,
        cost=cost,
        kept_scheduler_victims=True,
        reasons=(
            f"kept the scheduler's victims: {why}", violations.describe(),
            *((broken.describe(),) if broken.count else ()),
            *((ended.describe(),) if ended.count else ()),
            *jobs.reasons(victims, request.stake_of, cost.detail(ranking.JOBS_FAILED)),
            *((homeless.describe(),) if homeless.count else ()),
        ),
        broken=broken,
    )


def price(request: Request, name: str, victims: Sequence[Pod]) -> ranking.Cost:
    """What evicting ``victims`` from node ``name`` costs by the request's order and facts, as
    reprieve's own victims there are costed: the scheduler's proposal beside reprieve's choice
    (explain, the decision log and Events say which criterion decided between them). Victims
    the rules would protect are costed as any other: a cost has no criterion for them."""
    screen = request.screen
    opted_out = frozenset(
        p.uid for p in victims if screen is not None and screen.judge(p)[0] is tenancy.Judgement.LAST_RESORT
    )
    return _priced(request, name, victims, opted_out)[0]


def _priced(
    request: Request, name: str, victims: Sequence[Pod], opted_out: frozenset[str], here: Here | None = None
) -> tuple[ranking.Cost, homes.Homeless]:
    """The cost of victims reprieve did not choose (the one Order.cost outside policy.victims),
    and those of them with no home off the node. ``here``: the node as records_here leaves it
    with ``victims`` proposed, where the caller has it already."""
    homeless = homes.homeless(victims, request.homes, node=name)
    no_home = frozenset(p.uid for p in victims if p.key in homeless.pods)
    info = request.view.nodes.get(name)
    facts = Facts(
        request.budgets, request.gang_of, opted_out, no_home,
        app_of=request.app_of, strict_of=request.choosing.strict_of, stake_of=request.stake_of,
        now=request.now, allocatable=info.node.allocatable if info is not None else None,
        pending_room=_pending_room(request, info, victims, here),
    )
    return request.order.cost(victims, facts), homeless


def _pending_room(
    request: Request, info: NodeInfo | None, victims: Sequence[Pod], here: Here | None = None
) -> pending_room.Room | None:
    """The node's room for the pending pods as policy.victims sees it when it chooses there:
    once the records holding room against the preemptor take effect (records_here, with the
    victims priced as the proposal; ``here`` where the caller made it so)."""
    pending = request.choosing.pending
    if info is None or pending is None or not pending.has_pods:
        return None
    if here is None:
        here = records_here(request.view, info, request.preemptor, request.in_flight, victims)
    # Victims already gone from the node as records_here leaves it (promised to an answer in
    # flight): their room is in it, and the criterion adds every victim's back.
    on_node = {p.uid for p in here.node.pods}
    gone = [v for v in victims if v.uid not in on_node]
    return pending_room.room(
        pending, here.node.node, here.node.requested, request.preemptor, (*here.reservations, *gone)
    )


def _unnameable(proposed: set[str], answered: frozenset[str], now: float | None) -> Callable[[Pod], str]:
    """Why an answer may not name a pod ("" where it may): the scheduler must find each pod it
    names on the node in the snapshot of its current cycle, or it rejects the whole answer. A
    pod it proposes is there; one it does not may be gone from it or not in it yet."""
    settled = None if now is None else now - SETTLE_SECONDS

    def unnameable(pod: Pod) -> str:
        if pod.uid in proposed:
            return ""
        if pod.terminating:
            return "terminating"  # may be gone from the scheduler's snapshot; leaving anyway
        if pod.uid in answered:
            # A victim of an earlier answer (the preemptor's own, one the proposal shows the
            # scheduler moved past, a lower-priority one's): the scheduler may have deleted it
            # and dropped it from its snapshot while the view, behind, shows it running.
            return ANSWERED
        if settled is not None and pod.bound_at is not None and pod.bound_at > settled:
            return UNSETTLED
        return ""

    return unnameable


def _bound_elsewhere(view: ClusterView, uid: str, name: str) -> bool:
    pod = view.pods.get(uid)
    return pod is not None and pod.node_name is not None and pod.node_name != name


def _already_promised(name: str, promised: list[str]) -> NodeOutcome:
    return NodeOutcome(
        name,
        Verdict.DROPPED,
        Cause.IN_FLIGHT,
        reasons=(f"the scheduler's victims {', '.join(promised)} already go for another preemption",),
    )


def _keys(pods: Sequence[Pod]) -> str:
    return ", ".join(sorted(p.key for p in pods))


def _with(node: NodeInfo, pods: Sequence[Pod]) -> NodeInfo:
    return NodeInfo.build(node.node, (*node.pods, *pods))


def _leaving(node: NodeInfo, preemptor: Pod) -> list[Pod]:
    """The lower-priority pods already terminating on ``node``: their room comes free anyway."""
    return [p for p in node.pods if p.terminating and p.priority < preemptor.priority]

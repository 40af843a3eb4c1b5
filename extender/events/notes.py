"""The words of reprieve's Events, in the terms `reprieve explain` uses.

An ``Answer`` is what a preempt answer was, captured when it was given (the witness writes the
Events later, from another thread): small records only, never a whole view. The notes say
which node and why (against stock preemption, i.e. the scheduler's own proposal, and the other
candidates), and for each victim why it rather than the lower-priority pods that stay.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from extender import times
from extender.state.preemptions import UnderWay
from policy import apps, gangs, homes, ranking, stock
from policy.causes import GUARDED, Refusal
from policy.criteria import Stay, work_lost
from policy.jobs import Stake
from policy.model import Pod
from policy.preempt import PreemptDecision, Proposal, Verdict
from policy.victims import most_important_first
from policy.view import ClusterView

# Event reasons (CamelCase, as the API wants them) and the action they report.
PREEMPTING = "Preempting"  # on the preemptor: reprieve's answer is being carried out
CHOSEN = "ChosenForPreemption"  # on each victim
SHADOW = "ShadowPreemption"  # on the preemptor, in shadow mode: what reprieve would have done
# On the preemptor, at once: no node offered because the policy's guards (strict budgets,
# minimum runtime: policy.guards) dropped nodes; the pod stays pending.
BLOCKED = "PreemptionBlocked"
DROPPED = "PreemptAnswerDropped"  # on the preemptor: its caller had gone when reprieve answered
STARTED = "StartedMidPreemption"  # on reprieve's own pod: its first view showed preemptions under way
ACTION = "Preempt"

_LIST = 3  # names per list before "and N more"


@dataclass(frozen=True)
class Answer:
    preemptor: Pod
    node: str | None  # the node reprieve offered; None: none
    victims: tuple[Pod, ...]  # reprieve's, most important first
    violations: int
    reasons: tuple[str, ...]  # the chosen node's (policy.victims), or why nothing was offered
    others: tuple[str, ...]  # "not node-b: PDB violations 1 there vs 0 on node-a", for the first other candidates
    more_others: int  # how many other candidates ``others`` leaves out
    proposed: Mapping[str, tuple[Pod | str, ...]]  # the scheduler's victims by node (a UID reprieve does not know)
    stock_node: str | None  # where stock preemption goes among the scheduler's proposals
    stayed: tuple[Pod, ...]  # lower-priority pods on reprieve's node that stay, most important first
    budgets: Mapping[str, tuple[str, ...]]  # UID -> PodDisruptionBudgets covering it (victims and stayed)
    # UID -> its gang, described, for the pods of gangs the victims could have broken and did not
    in_gangs: Mapping[str, str] | None = None
    broken: tuple[str, ...] = ()  # the gangs the victims break, described
    failed_jobs: tuple[str, ...] = ()  # the Jobs (or indexes) the victims fail, described (policy.jobs)
    no_home: Mapping[str, str] | None = None  # UID -> why it has no home off the node (victims and stayed)
    stakes: Mapping[str, Stake] | None = None  # UID -> what evicting it costs its Job (victims and stayed)
    order: ranking.Order = ranking.DEFAULT  # the decision's: why a pod stays is its first criterion that says
    # What decided against the scheduler's victims (policy.ranking.Cost.decided_by), worded when a
    # note is written: reprieve's victims' cost on its node, the scheduler's there costed alike,
    # and reprieve's own victims' cost on each other node it solved.
    cost: ranking.Cost | None = None
    proposed_cost: ranking.Cost | None = None
    costs: Mapping[str, ranking.Cost] | None = None
    manages: Mapping[str, str] | None = None  # UID -> the running pods it manages (victims and stayed), described
    lost: Mapping[str, int] | None = None  # UID -> its work lost at the decision's time, millicore-seconds (victims and stayed)
    ended: tuple[str, ...] = ()  # the applications whose managers the victims include, described


def capture(view: ClusterView, preemptor: Pod, proposals: Mapping[str, Proposal], decision: PreemptDecision) -> Answer:
    """The Answer for ``decision``, read from the view it was decided on."""
    chosen = next(
        (o for o in decision.outcomes if o.node in decision.answer and o.verdict is Verdict.CHOSEN), None
    )
    proposed = {n: tuple(view.pods.get(uid) or uid for uid in p.uids) for n, p in proposals.items()}
    costs = {
        n: stock.cost(pods, proposals[n].num_pdb_violations)
        for n, pods in proposed.items()
        if pods and all(isinstance(p, Pod) for p in pods)
    }
    others = []
    more = 0  # the notes name _LIST other candidates, and count the rest
    for o in decision.outcomes:
        if chosen is not None and o.node == chosen.node or not o.reasons:
            continue
        if len(others) == _LIST:
            more += 1
            continue
        why = o.reasons[-1] if o.verdict is Verdict.OUTRANKED else o.reasons[0]
        why = why.removeprefix("not chosen: ").removeprefix("not offered: ").replace(" here vs ", " there vs ")
        others.append(f"not {o.node}: {why}")
    stayed: tuple[Pod, ...] = ()
    victims: tuple[Pod, ...] = ()
    if chosen is not None:
        victims = chosen.victims
        gone = {p.uid for p in victims}
        node = view.nodes.get(chosen.node)
        stayed = most_important_first(
            p for p in (node.pods if node else ())
            if p.priority < preemptor.priority and not p.terminating and p.uid not in gone
        )
    budgets = {p.uid: tuple(sorted(b.key for b in view.budgets_covering(p))) for p in (*victims, *stayed)}
    kept = {g.key for g in gangs.kept_whole((*victims, *stayed), victims, view.gang_of)}
    in_gangs = {p.uid: g.describe() for p in stayed if (g := view.gang_of(p)) is not None and g.key in kept}
    manages = {p.uid: why for p in (*victims, *stayed) if (why := _manages(p, view)) is not None}
    where = homes.of(view)
    no_home = {
        p.uid: why for p in (*victims, *stayed) if (why := where.why_not(p, excluding=chosen.node)) is not None
    } if chosen is not None else {}
    stakes = {p.uid: stake for p in (*victims, *stayed) if (stake := view.stake_of(p)) is not None}
    allocatable = node.node.allocatable if chosen is not None and node is not None else {}
    lost = {p.uid: work_lost.lost(p, allocatable, decision.now) for p in (*victims, *stayed)}
    return Answer(
        preemptor=preemptor,
        node=chosen.node if chosen else None,
        victims=victims,
        violations=chosen.violations.count if chosen else 0,
        reasons=chosen.reasons if chosen else decision.reasons,
        others=tuple(others),
        more_others=more,
        proposed=proposed,
        stock_node=stock.first(costs),
        stayed=stayed,
        budgets={uid: keys for uid, keys in budgets.items() if keys},
        in_gangs=in_gangs,
        no_home=no_home,
        stakes=stakes,
        broken=tuple(g.describe() for g in chosen.broken.gangs) if chosen else (),
        failed_jobs=tuple(b.describe() for b in chosen.cost.detail(ranking.JOBS_FAILED)) if chosen and chosen.cost else (),
        order=decision.order,
        cost=chosen.cost if chosen else None,
        proposed_cost=chosen.proposed_cost if chosen else None,
        costs={o.node: o.cost for o in decision.outcomes if o.cost is not None},
        manages=manages,
        ended=_ended(chosen),
        lost=lost,
    )


def _ended(chosen) -> tuple[str, ...]:
    """The applications the chosen victims end, as the cost counted them (policy.apps)."""
    found = chosen.cost.details.get(ranking.MANAGERS) if chosen is not None and chosen.cost is not None else None
    return tuple(a.describe() for a in found.apps) if found is not None else ()


def _manages(pod: Pod, view: ClusterView) -> str | None:
    """``it manages 4 running pod(s) of Spark application ns/etl`` for a manager of running pods."""
    found = apps.manages(pod, view.app_of)
    if found is None or found.running < 2:
        return None
    return f"it manages {found.running - 1} running pod(s) of {apps.named(found.key)}"


def preemptor_note(a: Answer) -> str:
    """``On node-a: 0 PDB violations; evicts the Burstable batch/report-1, not the Guaranteed
    batch/report-2 stock would have taken. Not node-b: PDB violations 1 there vs 0 on node-a.``"""
    text = f"On {a.node}: {_broken(a)}{_failed(a)}{_ends(a)}{_count(a.violations, 'PDB violation')}; evicts {_pods(a.victims)}"
    text += _against_stock(a)
    return times.readable(text + "." + _others(a))


def blocked_note(decision: PreemptDecision) -> str | None:
    """Why the preemptor stays pending, where no node is offered and the policy's guards dropped
    some (policy.preempt words it: each such node and why); None otherwise."""
    if decision.answer or decision.refusal is not Refusal.NONE or decision.defers:
        return None
    if not any(o.verdict is Verdict.DROPPED and o.cause in GUARDED for o in decision.outcomes):
        return None
    return times.readable(f"Not preempting, the pod stays pending: {decision.reasons[0]}.")


def victim_note(a: Answer, victim: Pod) -> str:
    """Why ``victim``, and not the lower-priority pods that stay on the node."""
    text = f"For {a.preemptor.key} (priority {a.preemptor.priority}) on {a.node}"
    if a.stayed:
        stay = Stay(
            a.budgets, a.in_gangs or {}, a.no_home or {}, manages=a.manages or {}, stakes=a.stakes or {}, lost=a.lost or {}
        )
        groups: dict[str, list[str]] = {}
        for pod in a.stayed:
            groups.setdefault(_why_stays(pod, victim, stay, a.order), []).append(pod.key)
        parts = [f"{_names(keys)} ({why})" for why, keys in groups.items()]
        text += ", chosen over the pods that stay: " + "; ".join(parts)
    else:
        text += ": no lower-priority pod on the node stays"
    return times.readable(f"{text}. {'; '.join(a.reasons)}.")


def dropped_note(node: str, victims: int, why: str) -> str:
    """A preempt answer the scheduler no longer waited for (extender.serving.verbs.preempt)."""
    return (
        f"reprieve's answer (on {node}, {_count(victims, 'victim')}) came after the scheduler had stopped "
        f"waiting ({why}): not held for this pod. The scheduler went on without reprieve for this attempt."
    )


def started_note(found: UnderWay) -> str:
    """reprieve started (again) while preemptions were under way (extender.state.preemptions)."""
    return (
        f"Started with {_count(found.nominated, 'pod')} nominated to a node and "
        f"{_count(found.victims, 'victim')} terminating for a preemption: their room is held and their victims "
        "counted from the cluster; answers an earlier reprieve held in flight are gone."
    )


def shadow_note(a: Answer, taken: str) -> str:
    """What reprieve would have done, next to the preemption the scheduler carries out on ``taken``."""
    theirs = a.proposed.get(taken, ())
    if a.node is None:
        why = "; ".join(a.reasons) or "no candidate node"
        return times.readable(f"reprieve would not have preempted ({why}); the scheduler evicts {_pods(theirs)} on {taken}.")
    if a.node == taken and {p.uid for p in a.victims} == {_uid(p) for p in theirs}:
        return times.readable(
            f"reprieve would have done the same: on {taken}, {_count(a.violations, 'PDB violation')}, evicting {_pods(a.victims)}."
        )
    text = f"reprieve would have preempted on {a.node}: {_count(a.violations, 'PDB violation')}; evicts {_pods(a.victims)}"
    text += f", not {_pods(theirs)} the scheduler evicts" + ("" if a.node == taken else f" on {taken}")
    return times.readable(text + _decided(a, taken) + "." + _others(a))


def _against_stock(a: Answer) -> str:
    node = a.stock_node if a.stock_node in a.proposed else a.node
    theirs = a.proposed.get(node, ())
    if not theirs:
        return ""
    if node == a.node and {p.uid for p in a.victims} == {_uid(p) for p in theirs}:
        return ", as stock preemption would"
    return f", not {_pods(theirs)} stock would have taken" + ("" if node == a.node else f" on {node}") + _decided(a, node)


def _decided(a: Answer, node: str) -> str:
    """`` (decided by ...)``: the first criterion, in the decision's order, on which reprieve's
    victims beat the scheduler's on ``node`` (there, costed alike; on another node, reprieve's own
    victims there, as its ranking compared them); empty where reprieve did not cost them. Where
    the scheduler's cost less (the rules or guards protect one of them, or reprieve's view leaves
    less room: explain_report._why_other_victims), ``(though they rank first by ...)``."""
    if a.cost is None:
        return ""
    if node == a.node:
        other, here, there = a.proposed_cost, "", ""
    else:
        other, here, there = (a.costs or {}).get(node), f" on {a.node}", f" on {node}"
    if other is None:
        return ""
    if a.cost.key < other.key:
        return f" ({a.cost.decided_by(other, here, there)})"
    if other.key == a.cost.key:
        return " (equal on every criterion: a tie, broken differently)"
    c = a.cost.deciding(other)
    return f" (though they rank first by {c.name}: {other.show(c)}{there} against {a.cost.show(c)}{here})"


def _why_stays(pod: Pod, victim: Pod, stay: Stay, order: ranking.Order) -> str:
    """The first of the decision's criteria, in its order, by which ``pod`` is kept before
    ``victim`` (each criterion's own words: policy.criteria)."""
    for criterion in order.criteria:
        if criterion.stays is not None and (why := criterion.stays(pod, victim, stay)):
            return why
    return "too small to make room"


def _pods(pods: Sequence[Pod | str]) -> str:
    """``the Burstable batch/report-1``; several: ``the Burstable a, the BestEffort b and 2 more``."""
    if not pods:
        return "nothing"
    shown = [f"the {p.qos.wire} {p.key}" if isinstance(p, Pod) else f"pod UID {p}" for p in pods[:_LIST]]
    more = len(pods) - _LIST
    if more > 0:
        return ", ".join(shown) + f" and {more} more"
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"


def _names(keys: Sequence[str]) -> str:
    more = len(keys) - _LIST
    return ", ".join(keys[:_LIST]) + (f" and {more} more" if more > 0 else "")


def _others(a: Answer) -> str:
    if not a.others:
        return ""
    text = "; ".join(a.others) + (f"; and {a.more_others} more node(s)" if a.more_others else "")
    return f" {text[0].upper()}{text[1:]}."


def _broken(a: Answer) -> str:
    """``breaks gang ...; `` when the victims break gangs (no victim set spared them)."""
    return "".join(f"breaks {g}; " for g in a.broken)


def _failed(a: Answer) -> str:
    """``fails Job ...; `` when the victims fail Jobs or indexes (no victim set spared them)."""
    return "".join(f"fails {j}; " for j in a.failed_jobs)


def _ends(a: Answer) -> str:
    """``ends Spark application ...; `` when the victims include applications' managers."""
    return "".join(f"ends {app}; " for app in a.ended)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _uid(pod: Pod | str) -> str:
    return pod.uid if isinstance(pod, Pod) else pod

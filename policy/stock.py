"""Stock kube-scheduler preemption (DefaultPreemption), emulated over a ClusterView.

What upstream would do for a pod that fits nowhere, so that ``reprieve explain`` can set it
beside reprieve's decision, and so that the explain report can feed reprieve exactly the
proposals the scheduler would send (``policy.preempt.Proposal``). The rules, from
``defaultpreemption/default_preemption.go`` and ``preemption/preemption.go``:

- no QoS: victims are ordered by ``MoreImportantPod`` (priority, then the earlier start);
- PDB-violating victims are reprieved first, where "violating" is decided once, on the
  sorted potential victims, before any is reprieved (``filterPodsWithPDBViolation``);
- a terminating pod is an ordinary potential victim and spends PDB allowance;
- nodes are picked by ``pickOneNodeForPreemption``, whose last tie-break is Go map order.

The preemptor's own constraints are applied first, as the scheduler's filters are: a node
that its cordon, taints, node selector or required node affinity keep the pod off
(policy.placement) is neither a place it fits nor a candidate (upstream's
``nodesWherePreemptionMightHelp`` skips UnschedulableAndUnresolvable nodes).

Not emulated: the filters reprieve does not model (inter-pod affinity, topology spread, host
ports, volumes, dynamic resource claims: ``Pod.unmodelled``; use explain's ``--nodes`` to leave
out nodes they would reject), and the candidate sampling of clusters with more than 100
potential nodes (every node is dry-run here).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from policy import ranking, resources
from policy.causes import Cause
from policy.model import Pod
from policy.pdb import BudgetsOf, violating
from policy.preempt import Proposal
from policy.importance import more_important
from policy.view import ClusterView, NodeInfo

_SHIFT = 2**31  # upstream adds MaxInt32+1 to each priority so that negative ones sum sensibly

# pickOneNodeForPreemption's criteria, in its order (reprieve's own: policy.ranking).
UPSTREAM = ranking.Layout(
    (ranking.PDB_VIOLATIONS, ranking.TOP_PRIORITY, ranking.PRIORITY_SUM, ranking.VICTIMS, ranking.START)
)
CRITERIA = UPSTREAM.names


def shortfall(*, view: ClusterView, pod: Pod, node: NodeInfo) -> dict[str, int]:
    """What ``pod`` is short of on ``node`` without preemption; empty if it fits.

    The bound pods plus the room held by pods nominated there with priority >= the pod's
    (``ClusterView.reservations``, upstream's ``addGENominatedPods``), as policy.filter counts.
    """
    held = (p.requests for p in view.reservations(node.name, pod=pod))
    return resources.shortfalls(
        request=pod.requests, allocatable=node.node.allocatable, used=resources.add(node.requested, *held)
    )


def split_by_pdb(pods: Sequence[Pod], budgets_of: BudgetsOf) -> tuple[list[Pod], list[Pod]]:
    """Upstream's ``filterPodsWithPDBViolation``: (violating, non-violating), order kept.

    Walking ``pods`` in order, each pod spends one allowance of every budget covering it
    (unless the budget lists it in ``status.disruptedPods``); a pod that takes any budget
    below zero is violating. Unlike reprieve's accounting, terminating pods spend allowance too.
    """
    bad = violating(pods, budgets_of, terminating_spends=True)
    return [p for p in pods if p.uid in bad], [p for p in pods if p.uid not in bad]


@dataclass(frozen=True, slots=True)
class Victims:
    """A successful ``SelectVictimsOnNode``: the proposal the scheduler sends the extender."""

    node: str
    victims: tuple[Pod, ...]  # MoreImportantPod order
    num_pdb_violations: int
    reasons: tuple[str, ...]

    @property
    def proposal(self) -> Proposal:
        return Proposal(tuple(p.uid for p in self.victims), self.num_pdb_violations)


@dataclass(frozen=True, slots=True)
class NotCandidate:
    node: str
    reason: str
    cause: Cause


def select_victims(
    *, node: NodeInfo, preemptor: Pod, reservations: Sequence[Pod], budgets_of: BudgetsOf
) -> Victims | NotCandidate:
    """Upstream's ``SelectVictimsOnNode`` for the resources it checks.

    1. Potential victims: the pods on the node with priority strictly below the preemptor's.
    2. Remove them all; if the preemptor still does not fit next to the rest and the room
       held for nominated pods (``reservations``), the node is not a candidate.
    3. Sort the potential victims by ``more_important``.
    4. Split them with ``split_by_pdb`` (stable, so each group stays sorted).
    5. Reprieve the violating group, then the other, each pod in turn if the preemptor still
       fits with it back; every violating pod that cannot be reprieved is one PDB violation.
    6. The victims are the pods not reprieved, re-sorted by ``more_important`` when both
       groups were non-empty (otherwise they already are).
    """
    alloc = node.node.allocatable
    request = preemptor.requests
    # Step 1.
    potential = [p for p in node.pods if p.priority < preemptor.priority]
    if not potential:
        return NotCandidate(node.name, "no preemption victims found for incoming pod", Cause.NO_LOWER_PRIORITY)
    # Step 2.
    kept = resources.add(node.requested_at_or_above(preemptor.priority), *(p.requests for p in reservations))
    missing = resources.shortfalls(request=request, allocatable=alloc, used=kept)
    if missing:
        return NotCandidate(
            node.name,
            f"does not fit even with every lower-priority pod removed: short of {resources.describe(missing)}",
            Cause.DOES_NOT_FIT,
        )
    # Steps 3 and 4.
    violating, others = split_by_pdb(sorted(potential, key=more_important), budgets_of)
    # Step 5. ``slack`` is what the preemptor leaves free of each resource it is checked on.
    checked = resources.checked_resources(request)
    slack = {r: alloc.get(r, 0) - kept.get(r, 0) - request[r] for r in checked}
    victims: list[Pod] = []
    num_violations = 0
    for group in (violating, others):
        for pod in group:
            if all(pod.requests.get(r, 0) <= slack[r] for r in checked):
                for r in checked:
                    slack[r] -= pod.requests.get(r, 0)
            else:
                victims.append(pod)
                num_violations += group is violating
    if not victims:  # upstream turns this into an error for the node
        return NotCandidate(node.name, "fits without evicting anyone", Cause.VIEW_HAS_ROOM)
    # Step 6.
    if violating and others:
        victims.sort(key=more_important)
    return Victims(
        node.name,
        tuple(victims),
        num_violations,
        (
            f"{len(potential)} lower-priority pod(s), {len(potential) - len(victims)} reprieved"
            + (f" ({len(violating)} PDB-violating tried first)" if violating else ""),
            f"{num_violations} PDB violation(s) counted",
            *([f"room held for nominated {', '.join(sorted(p.key for p in reservations))} kept free"] if reservations else []),
        ),
    )


@dataclass(frozen=True, slots=True)
class Cost(ranking.Cost):
    """A candidate's key for ``pickOneNodeForPreemption``; smaller is better, criterion by criterion.

    policy.ranking.Cost's comparison and explanation over upstream's fixed criteria (reprieve's
    own key grows with its QoS criteria and its policy).
    """

    default_layout: ClassVar[ranking.Layout] = UPSTREAM
    unknown_start: ClassVar[str] = "unknown (now)"

    def describe(self) -> str:
        violations, top, _, count, _ = self.key
        return f"{violations} PDB violation(s), highest victim priority {top}, {count} victim(s)"


def cost(victims: Sequence[Pod], num_pdb_violations: int) -> Cost:
    """The score functions of ``pickOneNodeForPreemption``, as one lexicographic key.

    Applying upstream's functions one after the other, each keeping the best nodes, leaves
    exactly the nodes with the smallest key. Unlike reprieve (policy.ranking), upstream has
    no QoS criteria and counts terminating victims too. ``victims`` must be non-empty and in
    the order the proposal lists them: upstream reads the highest priority from the first.
    """
    top = max(p.priority for p in victims)  # GetEarliestPodStartTime's "highest priority"
    starts = [p.start_time if p.start_time is not None else math.inf for p in victims if p.priority == top]
    return Cost(
        (
            num_pdb_violations,
            victims[0].priority,
            sum(p.priority + _SHIFT for p in victims),
            len(victims),
            -min(starts),
        )
    )


@dataclass(frozen=True, slots=True)
class Pick:
    """``pickOneNodeForPreemption`` over some candidates."""

    chosen: str | None
    tied: tuple[str, ...]  # every node as good as ``chosen``; upstream picks one at random
    costs: Mapping[str, Cost]
    ranks: Mapping[str, int]  # 1 is best; nodes with equal keys share a rank
    reasons: Mapping[str, str]  # node -> why it was or was not chosen


def pick(costs: Mapping[str, Cost]) -> Pick:
    """The best node; exact ties are broken by name here (upstream: Go map order)."""
    if not costs:
        return Pick(None, (), {}, {}, {})
    ordered = sorted(costs, key=lambda n: (costs[n].key, n))
    best = costs[ordered[0]]
    tied = tuple(n for n in ordered if costs[n].key == best.key)
    ranks: dict[str, int] = {}  # 1 + how many nodes cost strictly less
    for i, n in enumerate(ordered):
        ranks[n] = ranks[ordered[i - 1]] if i and costs[n].key == costs[ordered[i - 1]].key else i + 1
    reasons = {n: f"not chosen: {costs[n].versus(best)} on {tied[0]}" for n in ordered[len(tied):]}
    for n in tied:
        reasons[n] = _why_chosen(best, [costs[m] for m in ordered[len(tied):]], tied)
    return Pick(tied[0], tied, dict(costs), ranks, reasons)


def first(costs: Mapping[str, Cost]) -> str | None:
    """``pick(costs).chosen`` without the ranks and reasons."""
    return min(costs, key=lambda n: (costs[n].key, n), default=None)


def _why_chosen(best: Cost, others: Iterable[Cost], tied: tuple[str, ...]) -> str:
    if len(tied) > 1:
        return f"tied on every criterion with {', '.join(tied)}: upstream picks one at random"
    steps = [next(i for i, (a, b) in enumerate(zip(c.key, best.key)) if a != b) for c in others]
    if not steps:
        return "chosen: the only candidate"
    return f"chosen: decided by {CRITERIA[max(steps)]}"


@dataclass(frozen=True, slots=True)
class Decision:
    """Stock preemption for one pod over some nodes."""

    refusal: str  # why the pod may not preempt at all; empty when it may
    fits: tuple[str, ...]  # nodes where the pod fits without preemption (then none is run)
    # the dry run on every node it does not fit (with the refusal: none), and every node the
    # pod's constraints reject (NotCandidate, Cause.FILTERED)
    nodes: Mapping[str, Victims | NotCandidate]
    pick: Pick

    @property
    def proposals(self) -> dict[str, Proposal]:
        """The candidates as the scheduler sends them to the extender's preempt verb."""
        return {n: r.proposal for n, r in self.nodes.items() if isinstance(r, Victims)}


def eligibility(*, view: ClusterView, preemptor: Pod) -> str:
    """Upstream's ``PodEligibleToPreemptOthers``: why the pod may not preempt, or ''.

    Any terminating lower-priority pod on the nominated node counts (newer releases also
    require the DisruptionTarget condition the scheduler sets when it preempts), unless the
    pod's constraints now reject that node: then it may preempt again.
    """
    if preemptor.preemption_never:
        return "not eligible due to preemptionPolicy=Never"
    nominated = view.nodes.get(preemptor.nominated_node_name or "")
    if nominated and preemptor.placement.refusal(nominated.node):
        return ""
    if nominated and any(p.terminating and p.priority < preemptor.priority for p in nominated.pods):
        return "not eligible due to a terminating pod on the nominated node"
    return ""


def decide(*, view: ClusterView, preemptor: Pod, node_names: Iterable[str]) -> Decision:
    """Dry-run stock preemption on every named node that admits the pod and where it does not
    fit, then pick. A node the pod's constraints reject is a NotCandidate (Cause.FILTERED).

    The dry run is done even when the pod fits somewhere (then the scheduler would bind it
    and not preempt: see ``Decision.fits``), so that explain can show what preemption would do
    among the other nodes.
    """
    refusal = eligibility(view=view, preemptor=preemptor)
    placement = preemptor.placement
    fitting: list[str] = []
    nodes: dict[str, Victims | NotCandidate] = {}
    for name in node_names:
        info = view.nodes[name]
        filtered = placement.refusal(info.node)
        if filtered:  # the scheduler's filters reject it before any preemption
            nodes[name] = NotCandidate(name, filtered, Cause.FILTERED)
        elif not shortfall(view=view, pod=preemptor, node=info):
            fitting.append(name)
        elif not refusal:
            nodes[name] = select_victims(
                node=info,
                preemptor=preemptor,
                reservations=view.reservations(name, pod=preemptor),
                budgets_of=view.budgets_covering,
            )
    costs = {n: cost(r.victims, r.num_pdb_violations) for n, r in nodes.items() if isinstance(r, Victims)}
    return Decision(refusal, tuple(fitting), nodes, pick(costs))

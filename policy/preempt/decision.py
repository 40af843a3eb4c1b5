"""What the preempt decision reads and returns: the scheduler's proposals, each node's outcome
and verdict, the decision, and how long a newly bound pod takes to settle."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import NamedTuple

from policy import gangs, ranking
from policy.causes import Cause, Refusal
from policy.model import Pod
from policy.pdb import NO_VIOLATIONS, Violations


class Proposal(NamedTuple):
    """A candidate node's victims as the scheduler proposes them (or as reprieve answers); a
    named tuple, as up to 500 are read per request."""

    uids: tuple[str, ...]
    num_pdb_violations: int


class Verdict(str, Enum):
    CHOSEN = "chosen"  # offered to the scheduler with reprieve's victims
    OUTRANKED = "outranked"  # feasible, but another node costs less
    DROPPED = "dropped"  # preemption cannot make room here
    # As the scheduler proposed it: unknown to reprieve, or its view of the node is older
    # (Cause.SCHEDULER_NEWER); offered only if no node reprieve could judge is.
    PASSED_THROUGH = "passed through"


@dataclass(frozen=True, slots=True)
class NodeOutcome:
    node: str
    verdict: Verdict
    cause: Cause = Cause.NONE  # for DROPPED, PASSED_THROUGH and kept scheduler victims
    victims: tuple[Pod, ...] = ()
    violations: Violations = NO_VIOLATIONS
    cost: ranking.Cost | None = None
    kept_scheduler_victims: bool = False
    reasons: tuple[str, ...] = ()
    broken: gangs.Broken = gangs.NONE_BROKEN  # the gangs the victims break, as the cost counts them
    # The scheduler's proposed victims here, costed as ``cost`` is (policy.preempt.answer.
    # with_proposed_costs: on the node offered where its victims differ; on every node when
    # exhaustive); None where not costed, or a proposed victim is not on the node in the view.
    # Words beside the outcome, not part of it: outcomes compare equal without it.
    proposed_cost: ranking.Cost | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class PreemptDecision:
    answer: Mapping[str, Proposal]
    outcomes: tuple[NodeOutcome, ...]
    reasons: tuple[str, ...]
    refusal: Refusal = Refusal.NONE  # why no node was even considered
    # No answer reprieve can give would be accepted, and answering none would leave the pod
    # pending: every candidate's victims span nodes (Cause.VICTIMS_ELSEWHERE). The scheduler's
    # own choice must stand (the verb answers with an error, which it skips for an ignorable
    # extender).
    defers: bool = False
    order: ranking.Order = ranking.DEFAULT  # the ranking that decided (Events name its criteria)
    now: float | None = None  # the time it was decided at (the work lost is measured at it)

    @property
    def waits(self) -> bool:
        """Told to wait for pods leaving the node it is nominated to: it stays nominated there,
        and an earlier answer of reprieve's for it is still being carried out (the verb keeps
        it in flight, the Events witness keeps awaiting its Events)."""
        return self.refusal in (Refusal.VICTIMS_TERMINATING, Refusal.VICTIMS_LEAVING)


# A pod that reprieve's view shows bound for less than this may not be in the scheduler's
# snapshot yet (taken at the start of its scheduling cycle): reprieve names it only if the
# scheduler proposed it, since the scheduler rejects a preemption that names a pod it cannot
# find on the node. Pods the scheduler binds itself are in its snapshot before reprieve sees
# them; this covers pods bound by others (another scheduler, a controller, a person).
SETTLE_SECONDS = 1.0

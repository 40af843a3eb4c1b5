"""One preempt request as every step of the decision reads it, gathered once by decide()."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policy import apps, gangs, homes, ranking, tenancy, victims
from policy.jobs import StakeOf
from policy.model import InFlight, Pod
from policy.pdb import BudgetsOf
from policy.preempt.decision import Proposal
from policy.view import ClusterView


@dataclass(frozen=True, slots=True)
class Request:
    """A preemptor allowed to preempt, its candidates and what judges their victims; the same
    for every candidate node, so each step takes it whole."""

    view: ClusterView
    preemptor: Pod
    proposals: Mapping[str, Proposal]  # the scheduler's, by candidate node
    in_flight: tuple[InFlight, ...]  # earlier answers, none of them the preemptor's own
    screen: tenancy.Screen | None  # the rules' judgement of each victim; None without rules
    now: float | None  # seconds since the epoch (policy.preempt.candidate._unnameable)
    order: ranking.Order  # ranks victim sets and nodes
    exhaustive: bool  # every candidate solved, no lower bounds (policy.preempt.search)
    # The gangs and budgets as answers in flight leave them: their victims still run in the
    # view (decide).
    gang_of: gangs.GangOf
    budgets: BudgetsOf
    app_of: apps.AppOf  # the applications with a manager, as answers in flight leave them
    stake_of: StakeOf  # what evicting a pod costs its Job, as answers in flight leave the budgets
    homes: homes.Homes  # homes.of(view)
    choosing: victims.Choosing  # what policy.victims needs of it, the same for every node
    # Victims of every answer in flight (the preemptor's own and those set aside included) and of
    # those given lately and no longer in flight (decide's ``named``): named again only where the
    # scheduler proposes them (policy.preempt.candidate._unnameable).
    answered: frozenset[str] = frozenset()
    guarded: bool = False  # the policy's guards are on (policy.guards: choosing holds their judgements)

"""The answers in flight: a standing as it will be once the view shows reprieve's own answers.

A view catches up with an answer late (extender.state.ledger holds the answers meanwhile): it
counts a preemptor's usage only once the preemptor is nominated, and a victim's until the
victim terminates. ``with_in_flight`` is the last step of the accounting and returns a
``Projected``, the only standing ``delay_left`` and ``screen`` take. A ``Projected`` has no
tally, so no pending pod can be added after it (``with_pending`` recomputes usage from the
tally and would drop the answers in flight).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from policy import resources
from policy.model import InFlight, Pod
from policy.tenancy.shares import QueueStanding, Standing
from policy.tenancy.tally import Tally, accumulate, holds_room
from policy.view import ClusterView


@dataclass(frozen=True, slots=True)
class Projected:
    """``base`` with the answers in flight applied: ``queues`` replaces its queues' usage, and
    ``holding`` has, per node, the preemptors of those answers that the view does not show
    holding room there yet."""

    base: Standing
    queues: Mapping[str, QueueStanding]
    holding: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)


def with_in_flight(standing: Standing, view: ClusterView, in_flight: Iterable[InFlight]) -> Projected:
    """The standing as it will be once the view shows these preemptions: each preemptor counts
    in its queue's usage until the view has it nominated or bound, and each victim stops
    counting until the view has it terminating or gone."""
    rules = standing.rules
    delta: Tally = defaultdict(dict)
    gone: set[str] = set()
    holding: dict[str, list[Pod]] = defaultdict(list)
    for flight in in_flight:
        seen = view.pods.get(flight.preemptor.uid)
        if seen is None or not holds_room(seen):
            holding[flight.node].append(flight.preemptor)
            for queue in rules.lineage(standing.queue_of(flight.preemptor)):
                accumulate(delta[queue], flight.preemptor.requests)
        for victim in flight.victims:
            seen = view.pods.get(victim.uid)
            if seen is not None and not seen.terminating and victim.uid not in gone:
                gone.add(victim.uid)
                for queue in rules.lineage(standing.queue_of(victim)):
                    accumulate(delta[queue], victim.requests, -1)
    queues = dict(standing.queues)
    for name, change in delta.items():
        if name in queues:
            queues[name] = replace(queues[name], usage=resources.add(queues[name].usage, change))
    return Projected(standing, queues, {node: tuple(pods) for node, pods in holding.items()})

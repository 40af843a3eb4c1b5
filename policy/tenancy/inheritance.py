"""Guarantees that flow down the queue tree, as YuniKorn's ``GetRemainingGuaranteedResource``
has them (yunikorn-core pkg/scheduler/objects: a queue without a guarantee of its own takes its
parent's remaining one, recursively up to the root).

A queue whose own ``guaranteed`` does not name a resource inherits a guarantee in it: what its
parent's guarantee in that resource (the parent's own, or inherited in turn) leaves after the
usage of the parent's other children, at least 0. Its remaining guarantee (inherited less its
usage) is then exactly its parent's remaining one, as in YuniKorn. Every figure is a function
of the queues' usage, so policy.tenancy.screening computes it again with the victims gone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from policy import resources
from policy.resources import Vector
from policy.tenancy.rules import Rules


@dataclass(frozen=True, slots=True)
class Inherited:
    """A guarantee a queue inherits in one resource, and where it came from."""

    amount: int  # the parent's guarantee less the siblings' usage, at least 0
    parent: str  # the queue it flows from
    of: int  # the parent's guarantee in the resource (its own, or inherited)
    siblings: int  # what the parent's other children use of it
    origin: str  # the ancestor whose own guarantee it is

    def describe(self, resource: str) -> str:
        """"cpu=4 from org: its guarantee cpu=10 less cpu=6 used by its other queues"."""

        def amount(value: int) -> str:
            return resources.describe({resource: value})

        text = (
            f"{amount(self.amount)} from {self.parent}: its guarantee {amount(self.of)} "
            f"less {amount(self.siblings)} used by its other queues"
        )
        return text if self.origin == self.parent else f"{text} (set on {self.origin})"


def inherited_along(rules: Rules, usage: Mapping[str, Vector], name: str) -> dict[str, Inherited]:
    """What ``name`` inherits, per resource its own guarantee does not name, given each
    queue's ``usage`` (its whole subtree's): its lineage walked from the top."""
    above: dict[str, tuple[int, str]] = {}  # resource -> (guarantee, origin) of the queue just passed
    got: dict[str, Inherited] = {}
    parent: str | None = None
    for queue in reversed(rules.lineage(name)):
        own = rules.queue(queue).guaranteed or {}
        got = {}
        if parent is not None and above:
            others = [s for s in rules.children(parent) if s != queue]
            for resource, (guarantee, origin) in above.items():
                if resource in own:
                    continue
                siblings = sum(usage.get(s, {}).get(resource, 0) for s in others)
                got[resource] = Inherited(max(guarantee - siblings, 0), parent, guarantee, siblings, origin)
        above = {r: (i.amount, i.origin) for r, i in got.items()}
        above.update((r, (v, queue)) for r, v in own.items())
        parent = queue
    return got


def inherited(rules: Rules, usage: Mapping[str, Vector]) -> dict[str, dict[str, Inherited]]:
    """``inherited_along`` for every queue that inherits anything."""
    result = {}
    for name in rules.queue_names():
        got = inherited_along(rules, usage, name)
        if got:
            result[name] = got
    return result


def guarantee(own: Vector | None, got: Mapping[str, Inherited]) -> dict[str, int]:
    """A queue's guarantee: its own where it sets one, else what it inherits."""
    return {**{r: i.amount for r, i in got.items()}, **(own or {})}

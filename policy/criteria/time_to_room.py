"""Shortest time to room: how long the preemptor waits for its victims to be gone, shorter first.

kube-scheduler deletes a victim with default DeleteOptions (util.DeletePod), so the API server
gives it its own ``spec.terminationGracePeriodSeconds`` (``Pod.grace``, 30 unless set) and the
kubelet lets it run that long before the room is free; a victim already terminating goes by its
``metadata.deletionTimestamp`` (``Pod.deletion_deadline``), and the scheduler sends no second
deletion for it. A set's value is its longest: the largest over its live victims of their grace
and over its terminating victims of the whole seconds left to their deadline at the request's
``Facts.now`` (0 without a now, or past the deadline). A set-wide criterion rather than a
per-pod maximum because terminating victims count too, and they have no per-pod values; the
exact search counts it as the largest grace so far (terminating victims only raise it, and
every set on a node names the same ones).

Terminating pods that are not victims (of the preemptor's priority or above, or not nameable)
are left out: their room is the node's whatever set is chosen there, and the answer cannot name
them. Never lower with a victim more; no victim: 0. No set on a node that needs a live victim
goes sooner than its candidate with the shortest grace (policy.bounds)."""

from __future__ import annotations

import math
from collections.abc import Sequence

from policy.criteria.criterion import Criterion, Facts, Kind, Running, Stay
from policy.model import Pod


def left(pod: Pod, now: float | None) -> int:
    """Whole seconds until a terminating ``pod`` must be gone, at ``now`` (0 unknown or past)."""
    if pod.deletion_deadline is None or now is None:
        return 0
    return max(0, math.ceil(pod.deletion_deadline - now))


def time_to_room(victims: Sequence[Pod], now: float | None) -> int:
    """The seconds until the last of ``victims`` is gone once the live ones are deleted."""
    return max((left(p, now) if p.terminating else p.grace for p in victims), default=0)


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, None]:
    return time_to_room(victims, facts.now), None


class _Longest(Running):
    """The largest grace among the live victims so far; pods of one grace are alike."""

    def start(self, live: Sequence[Pod], facts: Facts) -> int:
        return 0

    def alike(self, state: int, pod: Pod, facts: Facts) -> int:
        return pod.grace

    def of_class(self, state: int, pod: Pod, facts: Facts) -> int:
        return pod.grace

    def add(self, state: int, of_class: int, pods, before, facts) -> tuple[int, int]:
        return max(state, of_class), max(0, of_class - state)


def _seconds(value: float) -> str:
    return "at once" if value <= 0 else f"in {value:.0f} s"


def _show(value: float, _) -> str:
    return f"{value:.0f} s"


def _at_least(value: float, _) -> str:
    return f"at least {value:.0f} s (the shortest grace period among the candidates)"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if not pod.terminating and not victim.terminating and pod.grace > victim.grace:
        return f"goes {_seconds(pod.grace)} (terminationGracePeriodSeconds), {victim.key} {_seconds(victim.grace)}"
    return None


CRITERION = Criterion(
    name="longest time to room", field="time_to_room_seconds", kind=Kind.SET, of_set=_of_set, running=_Longest(),
    floor="grace", show=_show, at_least=_at_least, stays=_stays,
)

"""Shortest time to room: how long the preemptor waits for its victims to be gone, shorter first.

kube-scheduler deletes a victim with default DeleteOptions (util.DeletePod), so the API server
gives it its own ``spec.terminationGracePeriodSeconds`` (``Pod.grace``, 30 unless set) and the
kubelet lets it run up to that long before its room is free; the preemptor binds once the last
victim it needs is gone. A set's value is the longest grace among its live victims (0 without
one).

Terminating victims count nothing, like every other criterion: reprieve names every terminating
lower-priority pod a node has (they leave anyway), where stock's reprieve step may keep some,
and the scheduler binds once the preemptor fits, not once every named pod is gone; so a
terminating victim's deadline (its ``metadata.deletionTimestamp``) says nothing of one set's wait against
another's on the node (counted, reprieve's set would wait longer than stock's for a terminating
pod the room never needed). Counting only the terminating pods the room needs would not do
either: the more live victims, the less room is awaited from them, so a set's value would drop
as a victim is added, which the exact search and its bounds rule out. Terminating pods that are
not victims are the node's whatever set is chosen.

A per-pod maximum: never lower with a victim more. No set on a node that needs a live victim
goes sooner than its candidate with the shortest grace (policy.bounds)."""

from __future__ import annotations

from collections.abc import Sequence

from policy.criteria.criterion import Criterion, Facts, Kind, Stay
from policy.model import Pod


def time_to_room(victims: Sequence[Pod]) -> int:
    """The seconds until the last of the live ``victims`` is gone, once they are deleted."""
    return max((p.grace for p in victims if not p.terminating), default=0)


def _of_pod(pod: Pod, facts: Facts) -> int:
    return pod.grace


def _seconds(value: float) -> str:
    return "at once" if value <= 0 else f"in {int(value)} s"


def _show(value: float, _) -> str:
    return f"{int(value)} s"


def _at_least(value: float, _) -> str:
    return f"at least {int(value)} s (the shortest grace period among the candidates)"


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if not victim.terminating and pod.grace > victim.grace:  # a terminating victim counts nothing
        return f"goes {_seconds(pod.grace)} (terminationGracePeriodSeconds), {victim.key} {_seconds(victim.grace)}"
    return None


CRITERION = Criterion(
    name="longest time to room", field="time_to_room_seconds", kind=Kind.MAX, of_pod=_of_pod,
    floor="grace", show=_show, at_least=_at_least, stays=_stays,
)

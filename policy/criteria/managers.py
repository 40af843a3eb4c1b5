"""Fewest pods lost with their managers (policy.apps): evicting a Spark driver, a Ray head, a
LeaderWorkerSet leader or an MPI launcher ends its application, and every running pod of it
loses its work, not only the manager. Where a victim set evicts managers, its cost is the
pods lost in all: every running pod of the applications it ends, plus its other victims,
each once. Zero where it evicts no manager: it decides only between sets that end
applications, and there the one that loses fewer pods wins. Right after the priority of the
most important victim: docs/policy.md says why, with the measurements of the places tried.

Adding a victim never lowers it: a victim outside the applications ended adds one; a manager
adds its application's running pods, less those already counted as victims; a pod of an
application already ended adds nothing (it was counted lost with it).

Gangs: a LeaderWorkerSet group whose size is known is also a gang that needs every member, so
evicting its leader breaks the gang too, and broken gangs and the pods lost with them (before
this criterion) already count the group whole. The two count the same pods, each in its own
value (never summed): between sets that break the same gangs and lose as many pods with them,
this one then prefers a set that spares the leader (a worker's loss takes the group only
under the default RecreateGroupOnPodRestart; the leader's always does).
"""

from __future__ import annotations

from collections.abc import Sequence

from policy import apps
from policy.criteria.criterion import Criterion, Facts, Kind, Running, Stay
from policy.model import Pod


def _of_set(victims: Sequence[Pod], live: Sequence[Pod], facts: Facts) -> tuple[int, apps.Ended]:
    ended = apps.ended(live, facts.app_of)
    return ended.lost, ended


def _class(pod: Pod, facts: Facts) -> tuple[apps.App, bool] | None:
    """The application ``pod`` counts in, and whether evicting it ends it."""
    if pod.app is None or facts.app_of is None:
        return None
    found = facts.app_of(pod)
    return None if found is None else (found, pod.app.manager)


class _Running(Running):
    """(victims taken per application, the applications ended, their running pods together,
    the other victims); the value is the last two summed once an application ends. Pods of one
    application and role are alike."""

    def start(self, live: Sequence[Pod], facts: Facts) -> tuple:
        return ((), (), 0, 0)

    def alike(self, state: tuple, pod: Pod, facts: Facts) -> object:
        found = _class(pod, facts)
        return None if found is None else (found[0].key, found[1])

    def of_class(self, state: tuple, pod: Pod, facts: Facts) -> object:
        return _class(pod, facts)

    def add(self, state, of_class, pods, before, facts) -> tuple[tuple, int]:
        taken, ended, members, loose = state
        was_value = members + loose if ended else 0
        if of_class is None:
            loose += len(pods)
        else:
            app, manager = of_class
            counts = dict(taken)
            was = counts.get(app.key, 0)
            counts[app.key] = was + len(pods)
            taken = tuple(counts.items())
            if app.key in ended:
                pass  # already ended: its running pods are counted with it
            elif manager:
                ended, members, loose = (*ended, app.key), members + app.running, loose - was
            else:
                loose += len(pods)
        state = (taken, ended, members, loose)
        return state, (members + loose if ended else 0) - was_value


def _stays(pod: Pod, victim: Pod, stay: Stay) -> str | None:
    if pod.uid in stay.manages and victim.uid not in stay.manages and pod.priority <= victim.priority:
        return stay.manages[pod.uid]
    return None


def _brief(value: float, _) -> str | None:
    return f"{value} pod(s) lost with their managers" if value else None


# No floor: an application's pods run on other nodes too (0 bounds it, as for the gangs).
CRITERION = Criterion(
    name="pods lost with their managers", field="pods_lost_with_managers", kind=Kind.SET, of_set=_of_set,
    running=_Running(), brief=_brief, stays=_stays,
)

"""Applications with a manager: a pod whose loss ends its application.

A Spark driver's loss ends its application: its executors stop with it, and their work is
lost. So does a Ray cluster's head (KubeRay recreates the cluster's processes: every worker's
tasks and actors are lost), a LeaderWorkerSet group's leader (its workers' StatefulSet is the
leader's: they go with it) and an MPIJob's launcher (``mpirun`` runs there: the workers only
serve it). Operators already mark these pods, and their applications:

| framework | the manager carries | the application | its other pods carry |
|---|---|---|---|
| Spark on Kubernetes | label ``spark-role: driver`` | label ``spark-app-selector`` | ``spark-role: executor`` |
| KubeRay | label ``ray.io/node-type: head`` | label ``ray.io/cluster`` | ``ray.io/node-type: worker`` |
| LeaderWorkerSet | label ``leaderworkerset.sigs.k8s.io/worker-index: "0"`` | labels ``leaderworkerset.sigs.k8s.io/name`` and ``group-index`` (the group) | another worker index |
| MPI Operator | label ``training.kubeflow.org/job-role: launcher`` | label ``training.kubeflow.org/job-name`` | ``job-role: worker`` |

Applications are per namespace. A pod whose markings are incomplete (a role without its
application, a role the table does not name) belongs to none, never an error; policy.criteria's
``managers`` counts what evicting a manager loses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # policy.model holds an AppMark per pod: imported for types only
    from policy.model import Pod

# Frameworks, as the first word of an application's key.
SPARK = "spark"
RAY = "ray"
LWS = "leaderworkerset"
MPI = "mpi"

SPARK_APP = "spark-app-selector"
SPARK_ROLE = "spark-role"
RAY_CLUSTER = "ray.io/cluster"
RAY_NODE_TYPE = "ray.io/node-type"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_WORKER_INDEX = "leaderworkerset.sigs.k8s.io/worker-index"
MPI_JOB = "training.kubeflow.org/job-name"
MPI_ROLE = "training.kubeflow.org/job-role"

# framework -> (the application's label, the role's label, the manager's role, the other roles,
# what the application is called). LeaderWorkerSet is read apart (two labels name its group).
_ROLES: dict[str, tuple[str, str, str, frozenset[str], str]] = {
    SPARK: (SPARK_APP, SPARK_ROLE, "driver", frozenset({"executor"}), "Spark application"),
    RAY: (RAY_CLUSTER, RAY_NODE_TYPE, "head", frozenset({"worker"}), "Ray cluster"),
    MPI: (MPI_JOB, MPI_ROLE, "launcher", frozenset({"worker"}), "MPIJob"),
}
_KINDS = {**{f: row[4] for f, row in _ROLES.items()}, LWS: "LeaderWorkerSet group"}


@dataclass(frozen=True, slots=True)
class AppMark:
    """What makes a pod part of an application with a manager."""

    key: str  # "<framework> <namespace>/<application>": one per application
    manager: bool  # its loss ends the application
    source: str  # the label that says so, for reasons


@dataclass(frozen=True, slots=True)
class App:
    """An application as a decision sees it: how many of its pods run (its manager included)."""

    key: str
    running: int

    def describe(self) -> str:
        """``Spark application ns/name (5 running pod(s))``."""
        return f"{named(self.key)} ({self.running} running pod(s))"


def named(key_: str) -> str:
    """An application's key in words: ``Spark application ns/name``."""
    framework, _, name = key_.partition(" ")
    return f"{_KINDS.get(framework, framework)} {name}"


# pod -> its application in the view deciding, or None (ClusterView.app_of)
AppOf = Callable[["Pod"], App | None]


def key(framework: str, namespace: str, name: str) -> str:
    return f"{framework} {namespace}/{name}"


def mark(*, namespace: str, labels: Mapping[str, str]) -> AppMark | None:
    """The application a pod belongs to by its labels (see the module docstring), or None."""
    for framework, (app_label, role_label, manager, others, _) in _ROLES.items():
        role = labels.get(role_label)
        if role is None:
            continue
        name = labels.get(app_label)
        if name and (role == manager or role in others):
            return AppMark(key(framework, namespace, name), role == manager, f"label {role_label}={role}")
    group, index = labels.get(LWS_NAME), labels.get(LWS_GROUP_INDEX)
    worker = labels.get(LWS_WORKER_INDEX)
    if group and index and worker:
        return AppMark(key(LWS, namespace, f"{group}-{index}"), worker == "0", f"label {LWS_WORKER_INDEX}={worker}")
    return None


def _running(pod: "Pod") -> bool:
    return pod.node_name is not None and not pod.terminating


def app(members: Sequence["Pod"]) -> App | None:
    """The application of ``members``, every pod that carries its key (bound, pending or
    terminating); None when none of them runs."""
    running = sum(1 for p in members if _running(p))
    return App(members[0].app.key, running) if running else None


def manages(pod: "Pod", app_of: AppOf | None) -> App | None:
    """The application ``pod`` manages, as ``app_of`` sees it, or None (not a manager, or an
    application already ending)."""
    if pod.app is None or not pod.app.manager or app_of is None:
        return None
    return app_of(pod)


def less_taken(app_of: AppOf, taken: Iterable["Pod"]) -> AppOf:
    """``app_of`` with the live pods of ``taken`` (victims of answers in flight: going, though
    the view still shows them running) no longer counted as running. An application whose
    manager they take already ends with those answers: no further eviction loses it again."""
    gone: dict[str, int] = {}
    ending: set[str] = set()
    for pod in taken:
        if pod.app is not None and not pod.terminating:
            gone[pod.app.key] = gone.get(pod.app.key, 0) + 1
            if pod.app.manager:
                ending.add(pod.app.key)
    if not gone:
        return app_of

    def after(pod: "Pod") -> App | None:
        a = app_of(pod)
        if a is None or a.key not in gone:
            return a
        running = a.running - gone[a.key]
        return App(a.key, running) if a.key not in ending and running > 0 else None

    return after


@dataclass(frozen=True, slots=True)
class Ended:
    """The applications a set of victims ends, and the pods lost with them."""

    apps: tuple[App, ...]  # sorted by key
    lost: int  # the live victims and every running pod of the applications ended; 0 if none
    victims: int = 0  # the live victims

    @property
    def count(self) -> int:
        return len(self.apps)

    @property
    def stranded(self) -> int:
        """Running pods of the applications ended that are not victims themselves."""
        return self.lost - self.victims if self.apps else 0

    def describe(self) -> str:
        if not self.apps:
            return "ends no application"
        return f"evicts the manager of {self.count} application(s), {self.lost} pod(s) lost in all: " + "; ".join(
            a.describe() for a in self.apps
        )


NONE_ENDED = Ended((), 0)


def ended(victims: Iterable["Pod"], app_of: AppOf | None) -> Ended:
    """The applications whose managers are among the live ``victims``, and the pods lost: every
    live victim and every running pod of those applications, each once. Terminating victims
    are leaving anyway and take nothing."""
    if app_of is None:
        return NONE_ENDED
    live = [p for p in victims if not p.terminating]
    found: dict[str, App] = {}
    for pod in live:
        a = manages(pod, app_of)
        if a is not None:
            found[a.key] = a
    if not found:
        return NONE_ENDED
    inside = sum(1 for p in live if p.app is not None and p.app.key in found)
    lost = sum(a.running for a in found.values()) + len(live) - inside
    return Ended(tuple(sorted(found.values(), key=lambda a: a.key)), lost, len(live))

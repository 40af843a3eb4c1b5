"""Gangs: pods that run all together or not at all, and what evicting some of them costs.

A distributed training job, an MPI job or a LeaderWorkerSet group runs only while a minimum
of its members run: with ``running`` members up and a minimum ``minimum``, ``running -
minimum`` may go without harm (the gang's *spare*); evicting one more breaks the gang, and
every running member's work is lost. policy.victims treats a gang like a disruption budget
whose allowance is its spare, and policy.ranking counts broken gangs before PDB violations.

Membership comes from what the pod carries (``mark``); the minimum from the pod too, or from
the group object it names (``GroupMinimum``, read from the cluster by the extender):

| framework | the pod carries | the minimum |
|---|---|---|
| Kubernetes Workload API | ``spec.schedulingGroup.podGroupName`` | PodGroup ``spec.schedulingPolicy.gang.minCount`` |
| scheduler-plugins coscheduling | label ``scheduling.x-k8s.io/pod-group`` | PodGroup ``spec.minMember`` |
| Volcano | annotation ``scheduling.k8s.io/group-name`` | PodGroup ``spec.minMember`` |
| Kueue plain pod groups | label ``kueue.x-k8s.io/pod-group-name`` | annotation ``kueue.x-k8s.io/pod-group-total-count`` |
| LeaderWorkerSet | label ``leaderworkerset.sigs.k8s.io/group-key`` (or ``name`` and ``group-index``) | annotation ``leaderworkerset.sigs.k8s.io/size`` |
| JobSet | label ``jobset.sigs.k8s.io/jobset-name`` | every member |

Unknown or incomplete markings (no minimum anywhere, a count that is not a positive integer)
mean independent pods, never an error; so does a minimum of 1 (one member runs alone: Volcano
makes such a PodGroup for every plain pod it schedules) or a JobSet of one pod. A gang with
fewer members running than its minimum is not whole now (still assembling, a member waiting
for its replacement, members finished and gone from the view): nothing an eviction does
breaks it, and its pods count as independent until it is whole again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # policy.model holds a GangMark per pod: imported for types only
    from policy.model import Pod

# Frameworks, as the first word of a gang's key.
WORKLOAD = "workload"
COSCHEDULING = "coscheduling"
VOLCANO = "volcano"
KUEUE = "kueue"
LWS = "leaderworkerset"
JOBSET = "jobset"

COSCHEDULING_LABEL = "scheduling.x-k8s.io/pod-group"
VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
KUEUE_LABEL = "kueue.x-k8s.io/pod-group-name"
KUEUE_COUNT = "kueue.x-k8s.io/pod-group-total-count"
LWS_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
LWS_NAME = "leaderworkerset.sigs.k8s.io/name"
LWS_GROUP_INDEX = "leaderworkerset.sigs.k8s.io/group-index"
LWS_SIZE = "leaderworkerset.sigs.k8s.io/size"
JOBSET_LABEL = "jobset.sigs.k8s.io/jobset-name"

# The pod annotations mark() reads (the extender keeps only these of a pod's annotations).
ANNOTATIONS = frozenset({VOLCANO_ANNOTATION, KUEUE_COUNT, LWS_SIZE})


@dataclass(frozen=True, slots=True)
class GangMark:
    """What makes a pod a member of a gang."""

    key: str  # "<framework> <namespace>/<group>": one per gang
    # The minimum the pod itself carries; None: the group object's (GroupMinimum), or, with
    # ``everyone``, every member's.
    minimum: int | None
    source: str  # where membership and minimum come from, for reasons
    everyone: bool = False


@dataclass(frozen=True, slots=True)
class GroupMinimum:
    """A group object's minimum (a PodGroup's), for the pods that name it."""

    key: str  # the members' GangMark.key
    minimum: int
    source: str  # e.g. "PodGroup ml/train spec.minMember"


@dataclass(frozen=True, slots=True)
class Gang:
    """A gang as a decision sees it: how many of its members run, and how many must."""

    key: str
    minimum: int
    running: int
    source: str

    @property
    def spare(self) -> int:
        """Members that may go without breaking it (a Gang runs at least its minimum)."""
        return self.running - self.minimum

    def describe(self) -> str:
        return f"gang {self.key} ({self.running} running, at least {self.minimum} needed: {self.source})"


# pod -> its gang in the view deciding, or None (ClusterView.gang_of)
GangOf = Callable[["Pod"], Gang | None]


def key(framework: str, namespace: str, group: str) -> str:
    """A gang's key: members and their group object must name it alike."""
    return f"{framework} {namespace}/{group}"


def mark(
    *, namespace: str, labels: Mapping[str, str], annotations: Mapping[str, str], pod_group: str | None
) -> GangMark | None:
    """The gang a pod belongs to by what it carries (see the module docstring), or None."""
    if pod_group:
        return GangMark(key(WORKLOAD, namespace, pod_group), None, "spec.schedulingGroup.podGroupName")
    if name := labels.get(COSCHEDULING_LABEL):
        return GangMark(key(COSCHEDULING, namespace, name), None, f"label {COSCHEDULING_LABEL}")
    if name := annotations.get(VOLCANO_ANNOTATION):
        return GangMark(key(VOLCANO, namespace, name), None, f"annotation {VOLCANO_ANNOTATION}")
    if name := labels.get(KUEUE_LABEL):
        count = _positive(annotations.get(KUEUE_COUNT))
        if count is None:
            return None
        return GangMark(key(KUEUE, namespace, name), count, f"annotation {KUEUE_COUNT}={count}")
    group = labels.get(LWS_GROUP_KEY)
    if not group and labels.get(LWS_NAME) and labels.get(LWS_GROUP_INDEX):
        group = f"{labels[LWS_NAME]}-{labels[LWS_GROUP_INDEX]}"
    if group:
        size = _positive(annotations.get(LWS_SIZE))
        if size is None:
            return None
        return GangMark(key(LWS, namespace, group), size, f"annotation {LWS_SIZE}={size}")
    if name := labels.get(JOBSET_LABEL):
        return GangMark(key(JOBSET, namespace, name), None, "JobSet: every pod required", everyone=True)
    return None


def _positive(text: str | None) -> int | None:
    # ASCII digits only: str.isdigit() is true for "²" (int() refuses it) and "١٢" (read as 12).
    if text is None or not (text.isascii() and text.isdigit()) or len(text) > 9:
        return None
    value = int(text)
    return value if value > 0 else None


def gang(members: Sequence["Pod"], groups: Mapping[str, GroupMinimum]) -> Gang | None:
    """The gang of ``members``, every pod that carries its key (bound, pending or terminating),
    given the group objects' minimums; None when no minimum is known or it is 1, or when fewer
    members run than the minimum (independent pods: see the module docstring).

    One minimum per gang, the largest its members' marks give: members may disagree (Kueue's
    total count and LeaderWorkerSet's size are per pod; Kueue refuses such a group), and a gang
    judged by each member's own count broke once per count, or not at all, depending on which
    member was counted last (the exact search's running count and count_broken disagreed). The
    largest never counts a member as spare where another member's count says it is needed."""
    running = sum(1 for p in members if p.node_name is not None and not p.terminating)
    best: tuple[int, str] | None = None
    for mark_ in {p.gang for p in members if p.gang is not None}:
        found = _minimum(mark_, members, groups)
        if found is not None and (best is None or found > best):
            best = found
    if best is None:
        return None
    minimum, source = best
    key = next(p.gang.key for p in members if p.gang is not None)
    return Gang(key, minimum, running, source) if minimum >= 2 and running >= minimum else None


def _minimum(mark_: GangMark, members: Sequence["Pod"], groups: Mapping[str, GroupMinimum]) -> tuple[int, str] | None:
    """The minimum ``mark_`` gives its gang, and where it comes from; None if it gives none."""
    if mark_.everyone:
        return sum(1 for p in members if not p.terminating), mark_.source
    if mark_.minimum is not None:
        return mark_.minimum, mark_.source
    if (found := groups.get(mark_.key)) is not None:
        return found.minimum, f"{mark_.source}, {found.source}={found.minimum}"
    return None


@dataclass(frozen=True, slots=True)
class Broken:
    """The gangs a set of victims breaks."""

    gangs: tuple[Gang, ...]  # sorted by key

    @property
    def count(self) -> int:
        return len(self.gangs)

    @property
    def lost(self) -> int:
        """Running members whose work is lost with them."""
        return sum(g.running for g in self.gangs)

    def describe(self) -> str:
        if not self.gangs:
            return "breaks no gang"
        return f"breaks {self.count} gang(s), {self.lost} running pod(s) lose their work: " + "; ".join(
            g.describe() for g in self.gangs
        )


NONE_BROKEN = Broken(())


def _by_gang(pods: Iterable["Pod"], gang_of: GangOf) -> dict[str, tuple[Gang, list["Pod"]]]:
    """The live ``pods`` that belong to a gang, by its key, with the gang (as ``gang_of`` gave
    it for the last of them). Terminating pods are leaving anyway: they count neither way."""
    last: dict[str, Gang] = {}
    members: dict[str, list["Pod"]] = {}
    for pod in pods:
        g = None if pod.terminating else gang_of(pod)
        if g is not None:
            last[g.key] = g
            members.setdefault(g.key, []).append(pod)
    return {k: (last[k], ms) for k, ms in members.items()}


def _over_spare(pods: Iterable["Pod"], gang_of: GangOf) -> dict[str, tuple[Gang, list["Pod"]]]:
    """``_by_gang`` for the gangs of which ``pods`` hold more live members than they can spare."""
    return {k: (g, members) for k, (g, members) in _by_gang(pods, gang_of).items() if len(members) > g.spare}


def count_broken(victims: Iterable["Pod"], gang_of: GangOf | None) -> Broken:
    """The gangs that lose more live members to ``victims`` than they can spare. Terminating
    victims are leaving anyway and take nothing."""
    if gang_of is None:
        return NONE_BROKEN
    return Broken(tuple(sorted((g for g, _ in _over_spare(victims, gang_of).values()), key=lambda g: g.key)))


def less_taken(gang_of: GangOf, taken: Iterable["Pod"]) -> GangOf:
    """``gang_of`` with the live pods of ``taken`` (victims of answers in flight: going, though
    the view still shows them running) no longer counted as running. A gang they take below its
    minimum is already broken by those answers: no further eviction breaks it."""
    gone = {k: len(members) for k, (_, members) in _by_gang(taken, gang_of).items()}
    if not gone:
        return gang_of

    def after(pod: "Pod") -> Gang | None:
        g = gang_of(pod)
        if g is None or g.key not in gone:
            return g
        running = g.running - gone[g.key]
        return Gang(g.key, g.minimum, running, g.source) if running >= g.minimum else None

    return after


def kept_whole(candidates: Iterable["Pod"], victims: Iterable["Pod"], gang_of: GangOf | None) -> tuple[Gang, ...]:
    """The gangs that could have been broken by evicting ``candidates`` and are not by
    ``victims`` (for reasons: what the choice kept whole), sorted by key."""
    if gang_of is None:
        return ()
    broken = _over_spare(victims, gang_of)
    at_risk = _over_spare(candidates, gang_of)
    return tuple(sorted((g for k, (g, _) in at_risk.items() if k not in broken), key=lambda g: g.key))


def protected(candidates: Iterable["Pod"], gang_of: GangOf | None) -> frozenset[str]:
    """UIDs of the live candidates whose gang cannot spare all of them (policy.pdb.protected's
    rule for gangs): policy.victims tries to keep those first."""
    if gang_of is None:
        return frozenset()
    return frozenset(p.uid for _, members in _over_spare(candidates, gang_of).values() for p in members)

"""An immutable view of the cluster, indexed the way the verbs read it."""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from policy import apps, gangs, resources
from policy.jobs import Job, Stake, stake
from policy.model import DisruptionBudget, Node, Pod, PriorityClass
from policy.resources import Vector


class Changes(Protocol):
    """What changed between the views of one source (the live store), for incremental work."""

    def since(self, revision: int) -> tuple[frozenset[str], frozenset[str]] | None:
        """(UIDs of pods, names of nodes) changed after view ``revision`` up to the latest
        published view, or None if that is no longer known (too old, or a full rebuild)."""

    def deleted_at(self, uid: str) -> int | None:
        """The revision of the first view without the pod ``uid``, if it was seen deleted."""


# The first element of a summary's name (ClusterView.summary) when it reads the budgets too.
BUDGETS = "budgets"
# An element of a summary's name when the name holds values taken from a request (a preemptor's
# priority, a pod's requests): requests can name any number of them, so a view keeps only the
# REQUEST_TABLES most recently asked of these tables, and only from the second request that
# names one (a one-off shape would only push out a table in use). The names asked once are
# remembered up to REQUEST_NAMES.
REQUEST = "request"
REQUEST_TABLES = 8
REQUEST_NAMES = 64
_ASKED_ONCE = ("request names asked once",)  # the memo's entry for them (not a table)
_UNSEEN = object()  # ClusterView.gang_of: not asked yet in this view (None is an answer)


def known_to_scheduler(holder: Pod, pod: Pod) -> bool:
    """Whether the scheduler that asks about ``pod`` knows ``holder``'s nomination: a pod of
    the same ``spec.schedulerName`` is in that scheduler's own nominator, which it updates
    before the API server (and so before reprieve's view) hears of it, and counts in its own
    filters and preemption. Another scheduler's nominations are invisible to it; so are those
    of its other profiles to reprieve, which cannot tell them from another scheduler's.
    """
    return holder.scheduler_name == pod.scheduler_name


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A node with every pod bound to it, terminating ones included (they still hold room)."""

    node: Node
    pods: tuple[Pod, ...]
    requested: Vector
    # The distinct pod priorities, negated and ascending, and what the pods of each priority
    # or more request together, so that "what do pods of priority >= p request here" is one
    # bisect (see requested_at_or_above). One sum per priority level, not per pod.
    _levels: tuple[int, ...] = field(repr=False)
    _sums: tuple[Vector, ...] = field(repr=False)

    @classmethod
    def build(cls, node: Node, pods: Iterable[Pod]) -> "NodeInfo":
        ordered = tuple(sorted(pods, key=lambda p: (-p.priority, p.key)))
        levels: list[int] = []
        sums: list[Vector] = []
        running: dict[str, int] = {}
        for i, pod in enumerate(ordered):
            for name, value in pod.requests.items():
                running[name] = running.get(name, 0) + value
            if i + 1 == len(ordered) or ordered[i + 1].priority != pod.priority:
                levels.append(-pod.priority)
                sums.append(dict(running))
        return cls(
            node=node,
            pods=ordered,
            requested=sums[-1] if sums else {},
            _levels=tuple(levels),
            _sums=tuple(sums),
        )

    @property
    def name(self) -> str:
        return self.node.name

    def requested_at_or_above(self, priority: int) -> Vector:
        """Requests of the pods here whose priority is >= ``priority`` (those preemption keeps)."""
        count = bisect.bisect_right(self._levels, -priority)
        return self._sums[count - 1] if count else resources.EMPTY


@dataclass(frozen=True, slots=True)
class ClusterView:
    nodes: Mapping[str, NodeInfo]
    pods: Mapping[str, Pod]  # every known pod by UID, pending ones included
    nominated: Mapping[str, tuple[Pod, ...]]  # node name -> pending pods nominated to it
    budgets: Mapping[str, tuple[DisruptionBudget, ...]]  # namespace -> its PDBs
    priority_classes: Mapping[str, PriorityClass]
    # PDB coverage, computed once: matching selectors is the costliest step of a decision.
    pod_budgets: Mapping[str, tuple[DisruptionBudget, ...]]  # pod UID -> budgets covering it
    budget_members: Mapping[str, tuple[Pod, ...]]  # budget key -> the pods it covers
    # Gangs (policy.gangs): key -> every pod that carries it; key -> its group object's minimum.
    gang_members: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)
    group_minimums: Mapping[str, gangs.GroupMinimum] = field(default_factory=dict)
    # Applications with a manager (policy.apps): key -> every pod that carries it.
    app_members: Mapping[str, tuple[Pod, ...]] = field(default_factory=dict)
    jobs: Mapping[str, Job] = field(default_factory=dict)  # Jobs by UID (policy.jobs)
    # Pending pods nominated nowhere, by UID: the queue policy.criteria.pending_room reads.
    waiting: Mapping[str, Pod] = field(default_factory=dict)
    # Per-node summaries that do not depend on the pod being decided (see summary()):
    # what -> node name -> summary, computed on first use and kept for the view's lifetime.
    memo: dict[tuple, dict[str, object]] = field(default_factory=dict, compare=False, repr=False)
    # The live store numbers its views and keeps what changed between them (0 / None: a snapshot).
    revision: int = field(default=0, compare=False)
    changes: Changes | None = field(default=None, compare=False, repr=False)
    # gang key -> policy.gangs.Gang (or None), computed on first use (gang_of): never carried over.
    _gangs: dict[str, gangs.Gang | None] = field(default_factory=dict, init=False, compare=False, repr=False)
    # application key -> policy.apps.App (or None), computed on first use (app_of): never carried over.
    _apps: dict[str, apps.App | None] = field(default_factory=dict, init=False, compare=False, repr=False)
    # policy.homes.Homes of this view, made on first use (policy.homes.of): never carried over,
    # and not an init field, so that a view made with dataclasses.replace starts without it.
    _homes: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)
    # policy.criteria.pending_room's grouping of ``waiting``, made on first use (or handed on by
    # the live store: pending_room.carry); not an init field, so a replaced view starts without it.
    _pending: dict[str, object] = field(default_factory=dict, init=False, compare=False, repr=False)
    # (owner UID, job index) -> policy.jobs.Stake (or None), computed on first use (stake_of): never carried over.
    _stakes: dict[tuple, Stake | None] = field(default_factory=dict, init=False, compare=False, repr=False)

    @classmethod
    def build(
        cls,
        *,
        nodes: Iterable[Node],
        pods: Iterable[Pod],
        budgets: Iterable[DisruptionBudget] = (),
        priority_classes: Iterable[PriorityClass] = (),
        group_minimums: Iterable[gangs.GroupMinimum] = (),
        jobs: Iterable[Job] = (),
    ) -> "ClusterView":
        pods = tuple(pods)
        in_gang: dict[str, list[Pod]] = defaultdict(list)
        in_app: dict[str, list[Pod]] = defaultdict(list)
        for pod in pods:
            if pod.gang is not None:
                in_gang[pod.gang.key].append(pod)
            if pod.app is not None:
                in_app[pod.app.key].append(pod)
        bound: dict[str, list[Pod]] = defaultdict(list)
        nominated: dict[str, list[Pod]] = defaultdict(list)
        waiting: dict[str, Pod] = {}
        for pod in pods:
            if pod.node_name is not None:
                bound[pod.node_name].append(pod)
            elif pod.nominated_node_name is not None:
                nominated[pod.nominated_node_name].append(pod)
            else:
                waiting[pod.uid] = pod
        by_namespace: dict[str, list[DisruptionBudget]] = defaultdict(list)
        for budget in budgets:
            by_namespace[budget.namespace].append(budget)
        pod_budgets: dict[str, tuple[DisruptionBudget, ...]] = {}
        members: dict[str, list[Pod]] = defaultdict(list)
        for pod in pods:
            covering = tuple(b for b in by_namespace.get(pod.namespace, ()) if b.covers(pod))
            if covering:
                pod_budgets[pod.uid] = covering
                for budget in covering:
                    members[budget.key].append(pod)
        return cls(
            nodes={n.name: NodeInfo.build(n, bound.get(n.name, ())) for n in nodes},
            pods={p.uid: p for p in pods},
            nominated={name: tuple(ps) for name, ps in nominated.items()},
            budgets={ns: tuple(bs) for ns, bs in by_namespace.items()},
            priority_classes={c.name: c for c in priority_classes},
            pod_budgets=pod_budgets,
            budget_members={key: tuple(ps) for key, ps in members.items()},
            gang_members={key: tuple(ps) for key, ps in in_gang.items()},
            group_minimums={g.key: g for g in group_minimums},
            app_members={key: tuple(ps) for key, ps in in_app.items()},
            jobs={j.uid: j for j in jobs},
            waiting=waiting,
        )

    def summary(self, what: tuple, compute: Callable[[NodeInfo, tuple], object]) -> Callable[[str], object]:
        """node name -> ``compute(node, what)``, computed once per view and node (None for a node
        the view does not have). ``what`` names the summary and everything it depends on
        besides the node; a summary that also reads the budgets starts with BUDGETS, so that
        the live store knows what to carry over to its next view (carry_memo); one whose name
        holds values from a request also holds REQUEST."""
        table = self.table(what)
        nodes = self.nodes

        def lookup(name: str) -> object:
            found = table.get(name)
            if found is None:
                info = nodes.get(name)
                if info is None:
                    return None
                found = table[name] = compute(info, what)
            return found

        return lookup

    def table(self, what: tuple) -> dict[str, object]:
        """The dict behind summary(what, ...), for a caller that fills it itself (a hot loop)."""
        table = self.memo.get(what)
        if table is None:
            if REQUEST in what:
                once = self.memo.setdefault(_ASKED_ONCE, {})
                if what not in once:  # the first time: a table for this request alone
                    once[what] = None
                    for oldest in list(once)[: max(0, len(once) - REQUEST_NAMES)]:
                        once.pop(oldest, None)
                    return {}
                once.pop(what, None)
                # The second time: kept, and room made by dropping the least recently asked.
                shaped = [w for w in list(self.memo) if REQUEST in w]
                for oldest in shaped[: max(0, len(shaped) - REQUEST_TABLES + 1)]:
                    self.memo.pop(oldest, None)
            table = self.memo.setdefault(what, {})
        elif REQUEST in what:  # the most recently asked goes last (dicts keep insertion order)
            self.memo[what] = self.memo.pop(what, table)
        return table

    def carry_memo(self, *, dirty_nodes: Iterable[str], budgets_changed: bool) -> dict:
        """The summaries still true in the next view: all but those of ``dirty_nodes``, and none
        that read the budgets if they changed."""
        dirty = set(dirty_nodes)
        carried = {}
        dropped = []  # request tables dropped for the budgets
        for what, table in list(self.memo.items()):
            if budgets_changed and what[0] == BUDGETS:
                if REQUEST in what:
                    dropped.append(what)
                continue
            table = dict(table)
            for name in dirty & table.keys():
                del table[name]
            carried[what] = table
        # A request table dropped for the budgets was asked for twice already: the next
        # request naming it makes it again at once.
        if dropped:
            carried[_ASKED_ONCE] = {**carried.get(_ASKED_ONCE, {}), **dict.fromkeys(dropped)}
        return carried

    def reservations(self, node_name: str, *, pod: Pod) -> tuple[Pod, ...]:
        """Pods nominated to the node that hold room against ``pod``.

        Upstream's ``addGENominatedPods``: priority >= the pod's, and not the pod itself.
        Room freed for a lower-priority pod may be taken. Nor an earlier pod of ``pod``'s name:
        the API server holds one pod per namespace and name, so another UID under it is one
        deleted that this view still shows (a lagging watch, a pod re-created under its name).
        """
        return tuple(
            other
            for other in self.nominated.get(node_name, ())
            if other.priority >= pod.priority
            and other.uid != pod.uid
            and (other.name != pod.name or other.namespace != pod.namespace)
        )

    def budgets_covering(self, pod: Pod) -> tuple[DisruptionBudget, ...]:
        """The PodDisruptionBudgets that cover ``pod`` (see DisruptionBudget.covers)."""
        if pod.uid in self.pods:
            return self.pod_budgets.get(pod.uid, ())
        return tuple(b for b in self.budgets.get(pod.namespace, ()) if b.covers(pod))

    def gang_of(self, pod: Pod) -> gangs.Gang | None:
        """``pod``'s gang as this view shows it (policy.gangs.gang), or None."""
        mark = pod.gang
        if mark is None:
            return None
        # One gang per key, whichever member asks (members may carry different counts: the
        # largest holds, policy.gangs.gang). A pod the view does not hold has the gang its
        # key's members make, if any.
        cache = self._gangs
        found = cache.get(mark.key, _UNSEEN)
        if found is _UNSEEN:
            found = cache[mark.key] = gangs.gang(self.gang_members.get(mark.key, ()), self.group_minimums)
        return found

    def app_of(self, pod: Pod) -> apps.App | None:
        """``pod``'s application with a manager as this view shows it (policy.apps.app), or None."""
        mark = pod.app
        if mark is None:
            return None
        cache = self._apps
        found = cache.get(mark.key, _UNSEEN)
        if found is _UNSEEN:
            found = cache[mark.key] = apps.app(self.app_members.get(mark.key, ()))
        return found

    def stake_of(self, pod: Pod) -> Stake | None:
        """What evicting ``pod`` costs the Job that controls it (policy.jobs.stake), or None."""
        if pod.owner is None or not self.jobs:
            return None
        cache = self._stakes
        key = (pod.owner, pod.job_index)
        found = cache.get(key, _UNSEEN)
        if found is _UNSEEN:
            job = self.jobs.get(pod.owner)
            found = cache[key] = None if job is None else stake(job, pod.job_index)
        return found

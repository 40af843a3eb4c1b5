"""The live records of each kind, and the immutable ClusterView published from them.

The store keeps, next to the records, the indexes a ClusterView is made of (pods by node, in
NodeInfo's order and with their requests summed per priority; nominated pods by node, PDB
coverage, gang members and their group objects' minimums, the pods of applications with a
manager, Jobs by UID) and updates them with every change,
remembering what changed since the last view. Publishing is
then incremental: the new view shares every NodeInfo, tuple and record that did not change
with the previous one, and copies only the top-level mappings, so that a view of 150,000 pods
costs milliseconds rather than seconds;
the per-node summaries the verbs computed on the previous view (ClusterView.summary) are
carried over for the nodes that did not change.
A view is never changed after it is built: policy reads it without locks.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable, Iterable
from typing import Any

from extender.state.translate import GROUP_KINDS, group_kind
from policy.criteria import pending_room
from policy.gangs import GroupMinimum
from policy.jobs import Job
from policy.model import DisruptionBudget, Node, Pod
from policy.view import ClusterView, NodeInfo

PODS, NODES, BUDGETS, CLASSES, JOBS = "pods", "nodes", "poddisruptionbudgets", "priorityclasses", "jobs"
# The gang group objects (extender.state.translate.GROUP_KINDS): records are policy.gangs.GroupMinimum.
GROUPS = frozenset(group_kind(version) for version in GROUP_KINDS)


class Store:
    """Records per kind, changed in place by the reflectors under one lock.

    Policy never sees these dicts: ``build_view`` publishes copies into a new ClusterView.
    """

    def __init__(self, kinds: tuple[str, ...], *, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock  # stamps Pod.bound_at: when this store first saw a pod bound to its node
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {kind: {} for kind in kinds}
        self._generation = 0  # bumped by every change; tells the publisher a view is due
        self._versions: dict[str, str] = {}  # kind -> resourceVersion of the latest list, event or bookmark
        self._classes: dict[str, Any] = {}  # priority classes by name; replaced, never changed
        # Indexes over the records (pods by UID, budgets by namespace/name).
        self._order = itertools.count()
        self._seq: dict[str, int] = {}  # pod UID -> its position in the pod records (store order)
        # node name -> _placed(pod) for each pod bound there, in NodeInfo's order (_node_info);
        # the pods themselves are the records
        self._bound: dict[str, list[_Placed]] = {}
        # node name -> priority -> (pods there of that priority, {resource: (their requests, pods asking)})
        self._levels: dict[str, dict[int, tuple]] = {}
        self._nominated: dict[str, dict[str, Pod]] = {}  # node name -> UID -> pending pod nominated there
        self._waiting: dict[str, Pod] = {}  # UID -> pending pod nominated nowhere
        self._in_namespace: dict[str, dict[str, Pod]] = {}  # namespace -> UID -> pod
        self._ns_budgets: dict[str, dict[str, DisruptionBudget]] = {}  # namespace -> key -> budget
        self._pod_budgets: dict[str, tuple[DisruptionBudget, ...]] = {}  # UID -> budgets covering it
        self._members: dict[str, dict[str, Pod]] = {}  # budget key -> UID -> covered pod
        self._gangs: dict[str, dict[str, Pod]] = {}  # gang key -> UID -> member (policy.gangs)
        self._apps: dict[str, dict[str, Pod]] = {}  # application key -> UID -> its pod (policy.apps)
        self._minimums: dict[str, GroupMinimum] = {}  # gang key -> its group object's minimum (GROUPS)
        self._jobs: dict[str, Job] = {}  # UID -> Job (its records are keyed by namespace/name)
        # What changed since the last view.
        self._view: ClusterView | None = None
        self._all_dirty = True
        self._dirty_nodes: set[str] = set()
        self._dirty_nominated: set[str] = set()
        self._dirty_members: set[str] = set()
        self._dirty_gangs: set[str] = set()
        self._dirty_apps: set[str] = set()
        self._minimums_changed = False
        self._jobs_changed = False
        self._waiting_changed = False
        self._dirty_kinds: set[str] = set(kinds)
        self._dirty_pods: set[str] = set()  # UIDs of pods changed since the last view
        self._deleted_pods: set[str] = set()  # UIDs of pods deleted since the last view
        self._pod_deletions = 0  # pods deleted since the pod records' table was last compacted (_pods_copy)
        self.changes = ChangeLog()

    @property
    def generation(self) -> int:
        return self._generation

    def priority_classes(self) -> dict[str, Any]:
        """Priority classes by name (a snapshot: do not change it)."""
        return self._classes

    def replace(self, kind: str, records: dict[str, Any], resource_version: str) -> None:
        """A fresh list: the kind's records become exactly these (ghosts of missed deletes go)."""
        with self._lock:
            if kind == PODS and self._records[PODS]:
                # A relist: pods bound since the last event are news, like a watch event's;
                # pods missing from it were deleted meanwhile.
                records = {key: self._stamped(self._records[PODS].get(key), pod) for key, pod in records.items()}
                self._deleted_pods.update(self._records[PODS].keys() - records.keys())
            self._records[kind] = records
            if kind == PODS:
                self._pod_deletions = 0  # a new table
            self._versions[kind] = resource_version
            self._generation += 1
            self._dirty_kinds.add(kind)
            if kind == PODS:
                self._reindex_pods()
            elif kind == BUDGETS:
                self._reindex_budgets()
            elif kind == CLASSES:
                self._classes = dict(records)
            elif kind in GROUPS:
                self._minimums_changed = True  # nothing else changes: the next view stays incremental
                self._reindex_minimums()
                return
            elif kind == JOBS:
                self._jobs_changed = True  # nor here: no summary reads the Jobs
                self._jobs = {job.uid: job for job in records.values()}
                return
            self._all_dirty = True

    def forget(self, kind: str) -> None:
        """The kind is no longer served or readable (an optional kind whose CRD went, or whose
        RBAC is missing): no records, no resourceVersion, until it lists again."""
        with self._lock:
            old = self._records[kind]
            if not old and kind not in self._versions:
                return  # never listed (refused every discovery round): no new view for nothing
            self._records[kind] = {}
            self._versions.pop(kind, None)
            self._generation += 1
            self._dirty_kinds.add(kind)
            if kind in GROUPS:
                self._minimums_changed = True
                self._reindex_minimums()
            elif kind == JOBS:
                self._jobs_changed = True
                self._jobs = {}
            else:
                self._all_dirty = True

    def apply(self, kind: str, key: str, record: Any | None, resource_version: str) -> None:
        with self._lock:
            records = self._records[kind]
            old = records.get(key)
            if kind == PODS and record is not None:
                record = self._stamped(old, record)
            if record is None:
                records.pop(key, None)
            else:
                records[key] = record
            self._versions[kind] = resource_version
            self._generation += 1
            self._dirty_kinds.add(kind)
            if kind == PODS:
                self._dirty_pods.add(key)
                if old is not None:
                    self._unindex_pod(old, moving=record is not None)
                if record is not None:
                    if old is None:
                        self._seq[key] = next(self._order)
                    self._index_pod(record)
                else:
                    self._seq.pop(key, None)
                    if old is not None:
                        self._deleted_pods.add(key)
                        self._pod_deletions += 1
            elif kind == NODES:
                self._dirty_nodes.add(key)
            elif kind == BUDGETS:
                self._budget_changed(old, record)
            elif kind == CLASSES:
                self._classes = dict(records)
            elif kind in GROUPS:
                if old is not None:
                    self._minimums.pop(old.key, None)
                    self._minimums_changed = True
                if record is not None:
                    self._minimums[record.key] = record
                    self._minimums_changed = True
            elif kind == JOBS:
                if old is not None:
                    self._jobs.pop(old.uid, None)
                if record is not None:
                    self._jobs[record.uid] = record
                self._jobs_changed = True

    def current(self, kind: str, key: str) -> Any | None:
        """The record of ``key``, read by the reflector of ``kind`` (its only writer) without the
        lock: a publish in progress need not hold it back."""
        return self._records[kind].get(key)

    def unchanged(self, kind: str, resource_version: str) -> None:
        """An event that changes no record: only the resourceVersion moves, with no new view.
        Without the lock, by the reflector of ``kind`` (its only writer): a view built meanwhile
        that reads the newer version has every change before it, the event having none."""
        self._versions[kind] = resource_version

    def versions_at(self, generation: int) -> dict[str, str] | None:
        """The resourceVersion per kind if the records are still those of ``generation`` (the
        events since changed nothing), else None: a view of that generation includes them."""
        with self._lock:
            return dict(self._versions) if self._generation == generation else None

    def bookmark(self, kind: str, resource_version: str) -> None:
        with self._lock:
            self._versions[kind] = resource_version
            self._generation += 1

    def get(self, kind: str) -> dict[str, Any]:
        with self._lock:
            return dict(self._records[kind])

    def counts(self) -> dict[str, int]:
        with self._lock:
            return {kind: len(records) for kind, records in self._records.items()}

    def _stamped(self, old: Pod | None, new: Pod) -> Pod:
        """``new`` with bound_at: kept while the pod stays on its node, now when it arrives."""
        if new.node_name is None:
            return new
        if old is not None and old.node_name == new.node_name:
            return new if old.bound_at == new.bound_at else dataclasses.replace(new, bound_at=old.bound_at)
        return dataclasses.replace(new, bound_at=self._clock())

    # indexes (all under self._lock)

    def _index_pod(self, pod: Pod) -> None:
        uid = pod.uid
        if pod.node_name is not None:
            bisect.insort(self._bound.setdefault(pod.node_name, []), _placed(pod))
            _count(self._levels.setdefault(pod.node_name, {}), pod, 1)
            self._dirty_nodes.add(pod.node_name)
        elif pod.nominated_node_name is not None:
            self._nominated.setdefault(pod.nominated_node_name, {})[uid] = pod
            self._dirty_nominated.add(pod.nominated_node_name)
        else:
            self._waiting[uid] = pod
            self._waiting_changed = True
        self._in_namespace.setdefault(pod.namespace, {})[uid] = pod
        if pod.gang is not None:
            self._gangs.setdefault(pod.gang.key, {})[uid] = pod
            self._dirty_gangs.add(pod.gang.key)
        if pod.app is not None:
            self._apps.setdefault(pod.app.key, {})[uid] = pod
            self._dirty_apps.add(pod.app.key)
        self._cover(pod)

    def _unindex_pod(self, pod: Pod, *, moving: bool) -> None:
        uid = pod.uid
        if pod.node_name is not None:
            placed = self._bound[pod.node_name]
            entry = _placed(pod)
            at = bisect.bisect_left(placed, entry)
            assert placed[at] == entry, f"{pod.key} is not where its node's order puts it"
            del placed[at]
            if not placed:
                del self._bound[pod.node_name]
            if not _count(self._levels[pod.node_name], pod, -1):
                del self._levels[pod.node_name]
            self._dirty_nodes.add(pod.node_name)
        elif pod.nominated_node_name is not None:
            _discard(self._nominated, pod.nominated_node_name, uid)
            self._dirty_nominated.add(pod.nominated_node_name)
        else:
            self._waiting.pop(uid, None)
            self._waiting_changed = True
        if not moving:
            _discard(self._in_namespace, pod.namespace, uid)
        if pod.gang is not None:
            _discard(self._gangs, pod.gang.key, uid)
            self._dirty_gangs.add(pod.gang.key)
        if pod.app is not None:
            _discard(self._apps, pod.app.key, uid)
            self._dirty_apps.add(pod.app.key)
        for budget in self._pod_budgets.pop(uid, ()):
            _discard(self._members, budget.key, uid)
            self._dirty_members.add(budget.key)

    def _cover(self, pod: Pod) -> None:
        budgets = self._ns_budgets.get(pod.namespace)
        if not budgets or not pod.labels:
            return
        covering = tuple(b for b in budgets.values() if b.covers(pod))
        if covering:
            self._pod_budgets[pod.uid] = covering
            for budget in covering:
                self._members.setdefault(budget.key, {})[pod.uid] = pod
                self._dirty_members.add(budget.key)

    def _budget_changed(self, old: DisruptionBudget | None, new: DisruptionBudget | None) -> None:
        budget = new or old
        if budget is None:
            return
        namespace, key = budget.namespace, budget.key
        in_ns = self._ns_budgets.setdefault(namespace, {})
        if new is None:
            in_ns.pop(key, None)
        else:
            in_ns[key] = new
        if old is not None and new is not None and old.selector == new.selector:
            # Same pods covered: swap the new record in where the old one was.
            for uid in self._members.get(key, {}):
                self._pod_budgets[uid] = tuple(new if b.key == key else b for b in self._pod_budgets[uid])
            return
        # Coverage changes only for the pods the old budget covered and those the new one
        # covers; recompute just theirs (every pod of a namespace per change is quadratic).
        affected = dict(self._members.get(key, {}))
        if new is not None:
            affected.update((p.uid, p) for p in self._in_namespace.get(namespace, {}).values() if new.covers(p))
        for pod in affected.values():
            for b in self._pod_budgets.pop(pod.uid, ()):
                _discard(self._members, b.key, pod.uid)
                self._dirty_members.add(b.key)
            self._cover(pod)
        self._dirty_members.add(key)

    def _reindex_pods(self) -> None:
        self._seq = {uid: next(self._order) for uid in self._records[PODS]}
        self._bound, self._levels = {}, {}
        self._nominated, self._in_namespace, self._gangs, self._apps = {}, {}, {}, {}
        self._waiting = {}
        self._pod_budgets, self._members = {}, {}
        for pod in self._records[PODS].values():
            self._index_pod(pod)

    def _reindex_minimums(self) -> None:
        # Each kind's keys start with its framework ("coscheduling ns/name"): kinds never collide.
        self._minimums = {m.key: m for kind in GROUPS & self._records.keys() for m in self._records[kind].values()}

    def _reindex_budgets(self) -> None:
        self._ns_budgets = {}
        for budget in self._records[BUDGETS].values():
            self._ns_budgets.setdefault(budget.namespace, {})[budget.key] = budget
        self._pod_budgets, self._members = {}, {}
        for pod in self._records[PODS].values():
            self._cover(pod)

    # views

    def build_view(self) -> tuple[int, dict[str, str], ClusterView]:
        """(generation, resourceVersion per kind, view) as of one instant."""
        with self._lock:
            generation = self._generation
            versions = dict(self._versions)
            prev = None if self._all_dirty else self._view
            revision = self.changes.record(
                None if prev is None else (frozenset(self._dirty_pods), frozenset(self._dirty_nodes)),
                deleted=self._deleted_pods,
            )
            view = self._incremental(prev) if prev is not None else self._full()
            view = dataclasses.replace(view, revision=revision, changes=self.changes)
            if prev is not None:
                pending_room.carry(prev, view, self._dirty_pods)
            self._view = view
            self._all_dirty = False
            self._dirty_nodes, self._dirty_nominated, self._dirty_members, self._dirty_gangs = set(), set(), set(), set()
            self._dirty_apps = set()
            self._dirty_kinds, self._dirty_pods, self._deleted_pods = set(), set(), set()
            self._minimums_changed = False
            self._jobs_changed = False
            self._waiting_changed = False
        return generation, versions, view

    def _pods_copy(self) -> dict[str, Pod]:
        """The pod records for a view. dict.copy() clones the table in one go while at most a
        third of its slots are deleted entries (dict(...) only one that never lost an entry),
        else it inserts every entry anew, ten times slower at 150,000 pods; so the store's own
        table is compacted once deletions near a third of the pods (about once per 50,000
        deletions at that size: nothing per event)."""
        records = self._records[PODS]
        if self._pod_deletions * 3 > len(records):
            records = self._records[PODS] = dict(records)
            self._pod_deletions = 0
        return records.copy()

    def _refreshed(self, previous, dirty: set[str], index: dict[str, dict[str, Pod]]):
        """``previous`` (a mapping of a published view) with the ``dirty`` keys rebuilt from
        ``index`` (a pod index: its pods in store order), gone where empty."""
        if not dirty:
            return previous
        out = dict(previous)
        for key in dirty:
            entry = index.get(key)
            if entry:
                out[key] = self._by_seq(entry)
            else:
                out.pop(key, None)
        return out

    def _by_seq(self, pods: dict[str, Pod]) -> tuple[Pod, ...]:
        """Pods in store order, as ClusterView.build would list them."""
        seq = self._seq
        return tuple(sorted(pods.values(), key=lambda p: seq[p.uid]))

    def _budgets_by_namespace(self) -> dict[str, tuple[DisruptionBudget, ...]]:
        return {ns: tuple(budgets.values()) for ns, budgets in self._ns_budgets.items() if budgets}

    def _full(self) -> ClusterView:
        bound = self._bound
        return ClusterView(
            nodes={name: _node_info(node, bound.get(name), self._levels.get(name), self._records[PODS]) for name, node in self._records[NODES].items()},
            pods=self._pods_copy(),
            nominated={name: self._by_seq(pods) for name, pods in self._nominated.items() if pods},
            budgets=self._budgets_by_namespace(),
            priority_classes=dict(self._classes),
            pod_budgets=self._pod_budgets.copy(),
            budget_members={key: self._by_seq(pods) for key, pods in self._members.items() if pods},
            gang_members={key: self._by_seq(pods) for key, pods in self._gangs.items() if pods},
            group_minimums=dict(self._minimums),
            app_members={key: self._by_seq(pods) for key, pods in self._apps.items() if pods},
            jobs=dict(self._jobs),
            waiting=dict(self._waiting),
        )

    def _incremental(self, prev: ClusterView) -> ClusterView:
        nodes = prev.nodes
        if self._dirty_nodes:
            nodes = dict(nodes)
            records = self._records[NODES]
            for name in self._dirty_nodes:
                node = records.get(name)
                if node is None:
                    nodes.pop(name, None)
                else:
                    nodes[name] = _node_info(node, self._bound.get(name), self._levels.get(name), self._records[PODS])
        nominated = self._refreshed(prev.nominated, self._dirty_nominated, self._nominated)
        members = self._refreshed(prev.budget_members, self._dirty_members, self._members)
        dirty = self._dirty_kinds
        # Per-node summaries (ClusterView.summary) stay true for the nodes that did not change.
        budgets_changed = BUDGETS in dirty
        return ClusterView(
            nodes=nodes,
            pods=self._pods_copy() if PODS in dirty else prev.pods,
            nominated=nominated,
            budgets=self._budgets_by_namespace() if BUDGETS in dirty else prev.budgets,
            priority_classes=dict(self._classes) if CLASSES in dirty else prev.priority_classes,
            pod_budgets=self._pod_budgets.copy() if (PODS in dirty or BUDGETS in dirty) else prev.pod_budgets,
            budget_members=members,
            gang_members=self._refreshed(prev.gang_members, self._dirty_gangs, self._gangs),
            group_minimums=dict(self._minimums) if self._minimums_changed else prev.group_minimums,
            app_members=self._refreshed(prev.app_members, self._dirty_apps, self._apps),
            jobs=dict(self._jobs) if self._jobs_changed else prev.jobs,
            waiting=dict(self._waiting) if self._waiting_changed else prev.waiting,
            memo=prev.carry_memo(dirty_nodes=self._dirty_nodes, budgets_changed=budgets_changed),
        )


# A pod bound to a node, as the store keeps it there: NodeInfo.build's sort key (priority
# descending, then namespace/name), made once when the pod is indexed, then its UID (between two
# pods of one key, a pod re-created under its name while the old one still shows, build keeps
# the order it is given them in; here the UID's, which means no less). Plain values only: the
# collector stops tracking such tuples, and a full collection walks every tracked object (at
# 150,000 pods, most of an initial sync's time).
_Placed = tuple[int, str, str]


def _placed(pod: Pod) -> _Placed:
    return (-pod.priority, pod.key, pod.uid)


def _count(levels: dict[int, tuple], pod: Pod, sign: int) -> dict[int, tuple]:
    """Add ``pod`` (sign 1) to or take it (-1) from a node's ``levels``: per priority, how many
    pods of it are there, and per resource the sum of their requests and how many ask for it (a
    resource none asks for any more leaves the sums, as it would build's). Tuples of plain
    values, replaced rather than changed, which the collector stops tracking (_Placed)."""
    count, sums = levels.get(pod.priority, (0, None))
    if sums is None:
        sums = {}
    for name, value in pod.requests.items():
        total, asking = sums.get(name, (0, 0))
        if asking + sign:
            sums[name] = (total + sign * value, asking + sign)
        else:
            del sums[name]
    if count + sign:
        levels[pod.priority] = (count + sign, sums)
    else:
        del levels[pod.priority]
    return levels


def _node_info(node: Node, placed: list[_Placed] | None, levels: dict[int, tuple] | None, pods: dict[str, Pod]) -> NodeInfo:
    """NodeInfo.build(node, pods) from what the store keeps up to date as pods come and go: the
    pods ``placed`` on the node in build's order (their records in ``pods``, by UID), and their
    ``levels`` (_count). A changed node
    costs no sort and no walk over its pods when a view is built. The sums are build's: per
    distinct priority, highest first, what the pods of that priority or more request (equal as
    mappings; tests/unit/test_store.py holds the two equal)."""
    if not placed:
        return NodeInfo.build(node, ())
    running: dict[str, int] = {}
    priorities: list[int] = []
    sums: list[dict[str, int]] = []
    for priority in sorted(levels, reverse=True):
        for name, (total, _) in levels[priority][1].items():
            running[name] = running.get(name, 0) + total
        priorities.append(-priority)
        sums.append(dict(running))
    return NodeInfo(
        node=node, pods=tuple([pods[entry[2]] for entry in placed]), requested=sums[-1], _levels=tuple(priorities), _sums=tuple(sums)
    )


def _discard(index: dict[str, dict[str, Any]], name: str, uid: str) -> None:
    group = index.get(name)
    if group is not None:
        group.pop(uid, None)
        if not group:
            del index[name]


class ChangeLog:
    """What changed between the store's recent views (policy.view.Changes): enough for work
    done once per view (queue assessment) to update the last result instead of starting over;
    and which pods were deleted, by the revision of the first view without them, so that a
    record keyed by a pod's UID (extender.state.ledger) can tell a pod deleted from one not
    seen yet even if no view in between was ever asked about it."""

    def __init__(
        self, keep: int = 256, keep_deleted: int = 65_536, deleted_seconds: float = 120.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._lock = threading.Lock()
        self._revision = 0
        self._oldest = 1  # the first revision whose predecessor's changes are known
        self._log: deque[tuple[int, frozenset[str], frozenset[str]]] = deque(maxlen=keep)
        # Deletions are kept as long as a record keyed by the pod can still ask about them
        # (extender.state.ledger forgets its answers after 30 s), and no more than keep_deleted.
        self._keep_deleted, self._deleted_seconds, self._clock = keep_deleted, deleted_seconds, clock
        self._deleted: OrderedDict[str, tuple[int, float]] = OrderedDict()  # UID -> (revision, when); oldest first

    def record(self, changed: tuple[frozenset[str], frozenset[str]] | None, *, deleted: Iterable[str] = ()) -> int:
        """Number the next view; ``changed``: (pods, nodes) since the previous one, None for a
        full rebuild; ``deleted``: UIDs of the pods deleted since the previous one."""
        with self._lock:
            self._revision += 1
            if changed is None:
                self._log.clear()
                self._oldest = self._revision + 1
            else:
                self._log.append((self._revision, *changed))
                self._oldest = max(self._oldest, self._log[0][0])
            now = self._clock()
            for uid in deleted:
                self._deleted[uid] = (self._revision, now)
            while self._deleted and (
                len(self._deleted) > self._keep_deleted or now - next(iter(self._deleted.values()))[1] > self._deleted_seconds
            ):
                self._deleted.popitem(last=False)
            return self._revision

    def deleted_at(self, uid: str) -> int | None:
        """The revision of the first view that no longer had this pod; None if it was never
        seen deleted (or so long ago that it was forgotten: the last two minutes' are kept,
        65,536 at most)."""
        with self._lock:
            found = self._deleted.get(uid)
        return None if found is None else found[0]

    def since(self, revision: int) -> tuple[frozenset[str], frozenset[str]] | None:
        with self._lock:
            if revision < 1 or revision + 1 < self._oldest or revision > self._revision:
                return None
            pods: set[str] = set()
            nodes: set[str] = set()
            for number, p, n in self._log:
                if number > revision:
                    pods |= p
                    nodes |= n
            return frozenset(pods), frozenset(nodes)

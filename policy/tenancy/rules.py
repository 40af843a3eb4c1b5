"""The multi-tenant rules as data: the queue tree and the policy's settings.

extender.policy_file reads and validates the file into ``Rules``; ``Rules`` answers what they
say about a pod (its queue, whether its PriorityClass opts out, whether two pods are one
application) and about a queue (its ancestors, its preemption delay).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum

from policy.labels import Selector
from policy.model import Pod
from policy.resources import Vector
from policy.view import ClusterView


class Preemption(str, Enum):
    DEFAULT = "default"
    FENCE = "fence"  # pods in or below this queue take victims only inside its subtree
    DISABLED = "disabled"  # pods in or below this queue are never taken by other queues


class OptOut(str, Enum):
    SOFT = "soft"  # opted-out pods are victims only when nothing else works
    HARD = "hard"  # never victims


@dataclass(frozen=True, slots=True)
class Queue:
    name: str
    parent: str | None = None
    namespaces: frozenset[str] = frozenset()
    selector: Selector | None = None
    guaranteed: Vector | None = None
    weight: int | None = None  # None: takes no part in the proportional split
    preemption: Preemption = Preemption.DEFAULT
    delay: float | None = None  # seconds; overrides Rules.delay for this queue's pods

    def matches(self, pod: Pod) -> bool:
        """A queue with neither namespaces nor a selector holds no pods directly."""
        if not self.namespaces and self.selector is None:
            return False
        if self.namespaces and pod.namespace not in self.namespaces:
            return False
        return self.selector is None or self.selector.matches(pod.labels)


# YuniKorn's annotation, so that PriorityClasses already marked for YuniKorn keep their meaning.
OPT_OUT_ANNOTATION = "yunikorn.apache.org/allow-preemption"


@dataclass(frozen=True, slots=True)
class Rules:
    """A validated policy. ``queues`` are in file order: a pod joins the first that matches."""

    queues: tuple[Queue, ...] = ()
    default_queue: str = "default"
    opt_out_annotation: str = OPT_OUT_ANNOTATION
    opt_out: OptOut = OptOut.SOFT
    protected_namespaces: frozenset[str] = frozenset({"kube-system"})
    application_label: str | None = None
    application_owner: bool = False
    delay: float = 0.0
    # Indexes, derived once: decisions ask for a queue's record and ancestors per victim.
    _by_name: Mapping[str, Queue] = field(init=False, repr=False, compare=False)
    _lineages: Mapping[str, tuple[str, ...]] = field(init=False, repr=False, compare=False)
    _children: Mapping[str | None, tuple[str, ...]] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_name = {q.name: q for q in self.queues}
        by_name.setdefault(self.default_queue, Queue(self.default_queue))
        lineages = {}
        for name in by_name:
            chain = [name]
            while (up := by_name[chain[-1]].parent) is not None and up not in chain:
                chain.append(up)
            lineages[name] = tuple(chain)
        children: dict[str | None, list[str]] = {}
        for name, queue in by_name.items():
            children.setdefault(queue.parent, []).append(name)
        object.__setattr__(self, "_by_name", by_name)
        object.__setattr__(self, "_lineages", lineages)
        object.__setattr__(self, "_children", {p: tuple(c) for p, c in children.items()})

    def queue_names(self) -> tuple[str, ...]:
        return tuple(self._by_name)

    def parent(self, name: str) -> str | None:
        return self.queue(name).parent

    def children(self, name: str | None) -> tuple[str, ...]:
        """The queues whose parent is ``name`` (None: the top-level queues), in file order."""
        return self._children.get(name, ())

    def lineage(self, name: str) -> tuple[str, ...]:
        """The queue and its ancestors, nearest first."""
        return self._lineages.get(name) or (name,)

    def queue(self, name: str) -> Queue:
        return self._by_name.get(name) or Queue(name)

    def queue_of(self, pod: Pod) -> str:
        return next((q.name for q in self.queues if q.matches(pod)), self.default_queue)

    def delay_for(self, queue: str) -> float:
        own = self.queue(queue).delay
        return self.delay if own is None else own

    def opted_out(self, pod: Pod, view: ClusterView) -> bool:
        pc = view.priority_classes.get(pod.priority_class)
        return pc is not None and pc.annotations.get(self.opt_out_annotation, "").strip().lower() == "false"

    def same_application(self, a: Pod, b: Pod) -> bool:
        if self.application_owner and a.owner is not None and a.owner == b.owner:
            return True
        label = self.application_label
        if label is None or a.namespace != b.namespace:
            return False
        value = a.labels.get(label)
        return value is not None and b.labels.get(label) == value

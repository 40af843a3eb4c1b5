"""Multi-tenant preemption rules: queues with guaranteed and deserved shares, fences, opt-out,
protected namespaces, same-application protection and the preemption delay."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from policy.labels import Selector
from policy.resources import Vector


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
    weight: int | None = None
    preemption: Preemption = Preemption.DEFAULT
    delay: float | None = None  # seconds; overrides Rules.delay for this queue's pods


@dataclass(frozen=True, slots=True)
class Rules:
    queues: tuple[Queue, ...] = ()
    default_queue: str = "default"
    opt_out_annotation: str = "yunikorn.apache.org/allow-preemption"
    opt_out: OptOut = OptOut.SOFT
    protected_namespaces: frozenset[str] = frozenset({"kube-system"})
    application_label: str | None = None
    application_owner: bool = False
    delay: float = 0.0

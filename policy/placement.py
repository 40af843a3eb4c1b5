"""Which nodes a pod may go to by the nodes alone, as kube-scheduler's NodeAffinity,
TaintToleration and NodeUnschedulable filters judge it: the pod's node selector, its required
node affinity and its tolerations against a node's labels, name, taints and cordon. Used for
victims' replacements (policy.homes) and for the preemptor itself (policy.stock's dry run).

Invalid terms (an operator upstream does not know, ``In`` without values, ``Gt`` on a value
that is not an integer) match nothing, as upstream's parse errors do. Tolerations with the
alpha ``Lt``/``Gt`` operators (feature gate TaintTolerationComparisonOperators, off by
default) tolerate nothing, as with the gate off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # policy.model holds a Placement per pod: imported for types only
    from policy.model import Node

NO_SCHEDULE = "NoSchedule"
NO_EXECUTE = "NoExecute"
# The taint of a cordoned node (spec.unschedulable); the node controller also adds it.
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NODE_NAME = "metadata.name"  # the one field matchFields may name

_INT64 = re.compile(r"[+-]?[0-9]+")  # Go's strconv.ParseInt(s, 10, 64), range checked below


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""  # empty: every key (with operator Exists)
    operator: str = "Equal"  # "Equal" (or empty) or "Exists"
    value: str = ""
    effect: str = ""  # empty: every effect

    def tolerates(self, taint: Taint) -> bool:
        """Upstream's ``Toleration.ToleratesTaint``."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class Requirement:
    """A node selector requirement: In, NotIn, Exists, DoesNotExist, Gt or Lt."""

    key: str
    operator: str
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Upstream's ``labels.Requirement.Matches``, with its parse errors matching nothing."""
        op, values = self.operator, self.values
        if op == "In":
            return bool(values) and labels.get(self.key) in values
        if op == "NotIn":
            return bool(values) and labels.get(self.key) not in values
        if op == "Exists":
            return not values and self.key in labels
        if op == "DoesNotExist":
            return not values and self.key not in labels
        if op in ("Gt", "Lt") and len(values) == 1:
            bound, value = _int64(values[0]), _int64(labels.get(self.key))
            if bound is None or value is None:
                return False
            return value > bound if op == "Gt" else value < bound
        return False

    def matches_field(self, node_name: str) -> bool:
        """A matchFields requirement: In or NotIn, one value, on ``metadata.name``."""
        if self.operator not in ("In", "NotIn") or len(self.values) != 1:
            return False
        field_value = node_name if self.key == NODE_NAME else ""  # upstream's fields.Set.Get
        return (field_value == self.values[0]) == (self.operator == "In")


def _int64(text: str | None) -> int | None:
    if text is None or not _INT64.fullmatch(text):
        return None
    value = int(text)
    return value if -(2**63) <= value < 2**63 else None


@dataclass(frozen=True, slots=True)
class Term:
    """A nodeSelectorTerm: every expression and every field requirement; an empty term
    matches nothing."""

    expressions: tuple[Requirement, ...] = ()
    fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.expressions and not self.fields:
            return False
        return all(r.matches(labels) for r in self.expressions) and all(r.matches_field(node_name) for r in self.fields)


@dataclass(frozen=True, slots=True)
class Placement:
    """What a pod's replacement would carry: the kind of its controller (what re-creates it)
    and the node constraints of its spec. Shared by every pod with the same values."""

    owner_kind: str | None = None  # the controlling ownerReference's kind; None: a bare pod
    node_selector: tuple[tuple[str, str], ...] = ()  # spec.nodeSelector, sorted
    # spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms,
    # any of which must match; None: no such requirement (an empty tuple matches no node).
    affinity: tuple[Term, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()

    @property
    def constrained(self) -> bool:
        """Whether it names nodes by their labels or name (taints aside)."""
        return bool(self.node_selector) or self.affinity is not None

    def selects(self, node: Node) -> bool:
        """The node selector and the required node affinity (NodeAffinity's filter)."""
        labels = node.labels
        for key, value in self.node_selector:  # loops, not any(): this runs once per node
            if labels.get(key) != value:
                return False
        if self.affinity is None:
            return True
        for term in self.affinity:
            if term.matches(labels, node.name):
                return True
        return False

    def tolerates(self, node: Node) -> bool:
        """Every NoSchedule and NoExecute taint tolerated, and the cordon if the node has one
        (TaintToleration's and NodeUnschedulable's filters)."""
        tolerations = self.tolerations
        if node.unschedulable and not _tolerated(_CORDON, tolerations):
            return False
        for taint in node.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not _tolerated(taint, tolerations):
                return False
        return True

    def admits(self, node: Node) -> bool:
        return self.selects(node) and self.tolerates(node)

    def refusal(self, node: Node) -> str:
        """Why the scheduler's filters keep the pod off ``node``, or '' if they admit it.

        The filters in kube-scheduler's default order (NodeUnschedulable, TaintToleration,
        NodeAffinity), the first that fails giving the reason, in upstream's words. Each
        failure is UnschedulableAndUnresolvable: preemption never considers the node.
        """
        tolerations = self.tolerations
        if node.unschedulable and not _tolerated(_CORDON, tolerations):
            return "node(s) were unschedulable: cordoned (spec.unschedulable)"
        for taint in node.taints:
            if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not _tolerated(taint, tolerations):
                return f"node(s) had untolerated taint {{{taint.key}: {taint.value}}} ({taint.effect})"
        if not self.selects(node):
            return "node(s) didn't match Pod's node affinity/selector"
        return ""


def _tolerated(taint: Taint, tolerations: tuple[Toleration, ...]) -> bool:
    for toleration in tolerations:
        if toleration.tolerates(taint):
            return True
    return False


_CORDON = Taint(UNSCHEDULABLE, "", NO_SCHEDULE)
BARE = Placement()  # no controller, no node constraints: a Pod's default

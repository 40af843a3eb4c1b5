"""Label selectors (``metav1.LabelSelector``) as the scheduler evaluates them for PDBs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: frozenset[str] = frozenset()

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return labels.get(self.key) in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class Selector:
    """``matchLabels`` and ``matchExpressions`` ANDed together."""

    match_labels: tuple[tuple[str, str], ...] = ()
    expressions: tuple[Requirement, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.match_labels and not self.expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Whether ``labels`` satisfy every term; an empty selector matches nothing here."""
        if self.empty:
            return False
        return all(labels.get(k) == v for k, v in self.match_labels) and all(
            requirement.matches(labels) for requirement in self.expressions
        )

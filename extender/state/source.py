"""Where the verbs get their view of the cluster from."""

from __future__ import annotations

from typing import Protocol

from policy.view import ClusterView


class ClusterSource(Protocol):
    def view(self) -> ClusterView | None:
        """The current immutable view, or None while it is not trustworthy (not ready)."""

    def describe(self) -> str:
        """One line for logs and /readyz."""

    def resource_versions(self) -> dict[str, str]:
        """For a live view, the resourceVersion each kind is current to; empty for a snapshot."""


class StaticCluster:
    """A view that never changes: a snapshot file, or a test's hand-built cluster."""

    def __init__(self, view: ClusterView, *, source: str = "snapshot") -> None:
        self._view = view
        self._source = source

    def view(self) -> ClusterView:
        return self._view

    def resource_versions(self) -> dict[str, str]:
        return {}

    def describe(self) -> str:
        v = self._view
        return f"{self._source}: {len(v.nodes)} nodes, {len(v.pods)} pods, {sum(map(len, v.budgets.values()))} PDBs"

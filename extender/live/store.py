"""The live records of each kind, and the immutable ClusterView built from them."""

from __future__ import annotations

import threading
from typing import Any

from policy.view import ClusterView


class Store:
    """Records per kind, changed in place by the reflectors under one lock.

    Policy never sees these dicts: ``build_view`` copies them into a new ClusterView.
    """

    def __init__(self, kinds: tuple[str, ...]) -> None:
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = {kind: {} for kind in kinds}
        self._generation = 0  # bumped by every change; tells the publisher a view is due
        self._versions: dict[str, str] = {}  # kind -> resourceVersion of the latest list, event or bookmark

    @property
    def generation(self) -> int:
        return self._generation

    def replace(self, kind: str, records: dict[str, Any], resource_version: str) -> None:
        """A fresh list: the kind's records become exactly these (ghosts of missed deletes go)."""
        with self._lock:
            self._records[kind] = records
            self._versions[kind] = resource_version
            self._generation += 1

    def apply(self, kind: str, key: str, record: Any | None, resource_version: str) -> None:
        with self._lock:
            if record is None:
                self._records[kind].pop(key, None)
            else:
                self._records[kind][key] = record
            self._versions[kind] = resource_version
            self._generation += 1

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

    def build_view(self) -> tuple[int, dict[str, str], ClusterView]:
        """(generation, resourceVersion per kind, view) as of one instant."""
        with self._lock:
            generation = self._generation
            versions = dict(self._versions)
            copies = {kind: list(records.values()) for kind, records in self._records.items()}
        view = ClusterView.build(
            nodes=copies["nodes"],
            pods=copies["pods"],
            budgets=copies["poddisruptionbudgets"],
            priority_classes=copies["priorityclasses"],
        )
        return generation, versions, view

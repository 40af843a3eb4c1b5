"""Which connections may open: at most so many at once from one IP address, and in all."""

from __future__ import annotations

from collections import Counter

PER_CLIENT = "per-client limit"
TOTAL = "connection limit"


class Admission:
    """Counts open connections; ``admit`` answers None (come in) or the limit that refuses."""

    def __init__(self, *, total: int, per_client: int) -> None:
        self._total, self._per_client = total, per_client
        self._open: Counter[str] = Counter()
        self._count = 0

    def admit(self, client: str) -> str | None:
        if self._count >= self._total:
            return TOTAL
        if self._open[client] >= self._per_client:
            return PER_CLIENT
        self._open[client] += 1
        self._count += 1
        return None

    def release(self, client: str) -> None:
        self._count -= 1
        self._open[client] -= 1
        if not self._open[client]:
            del self._open[client]  # the table holds only clients with connections open

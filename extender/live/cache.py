"""LiveCluster: the ClusterSource backed by list+watch, with readiness and staleness."""

from __future__ import annotations

import logging
from collections.abc import Callable
import threading
import time

from extender.live.apiserver import ApiServer
from extender.live.changes import KINDS
from extender.live.lag import Lag
from extender.live.reflector import Reflector
from extender.live.store import Store
from extender.metrics import Metrics
from policy.model import PriorityClass
from policy.view import ClusterView

log = logging.getLogger(__name__)


class LiveCluster:
    """Keeps an immutable ClusterView in step with the API server.

    Reflector threads apply events to the Store; a publisher thread turns the Store into a
    new ClusterView whenever it changed, at most every ``publish_interval`` seconds. The
    verbs get that view only while it is trustworthy: every kind has listed, and no kind has
    been out of sync (watch broken, relisting) for longer than ``staleness_bound`` seconds.
    Otherwise ``view()`` is None and the verbs give their safe answers.
    """

    def __init__(
        self,
        api: ApiServer,
        *,
        metrics: Metrics,
        staleness_bound: float = 5.0,
        publish_interval: float = 0.05,
        watch_seconds: int = 60,
        silence_timeout: float = 75.0,
        watch_delay: float = 0.0,
        on_first_view: Callable[[], None] = lambda: None,
        clock=time.monotonic,
    ) -> None:
        self._api = api
        self._metrics = metrics
        self._store = Store(tuple(KINDS))
        self._staleness_bound = staleness_bound
        self._publish_interval = publish_interval
        self._watch_seconds = watch_seconds
        self._silence_timeout = max(silence_timeout, watch_seconds + 1)
        self._clock = clock
        self._on_first_view = on_first_view
        self._stop = threading.Event()
        self._changed = threading.Event()
        self._lock = threading.Lock()
        self._listed: set[str] = set()
        self._out_of_sync_since: dict[str, float] = {kind: clock() for kind in KINDS}
        self._lag = Lag(clock)
        self._watch_delay = watch_delay
        self._view: ClusterView | None = None
        self._versions: dict[str, str] = {}
        self._published_generation = -1
        self._threads: list[threading.Thread] = []
        metrics.cache_staleness.set_function(self.staleness)
        metrics.cache_lag.set_function(self._lag.seconds)

    # ClusterSource

    def view(self) -> ClusterView | None:
        return self._view if self.ready() else None

    def describe(self) -> str:
        counts = self._store.counts()
        with self._lock:
            syncing = sorted(self._out_of_sync_since)
        state = f"syncing {', '.join(syncing)}" if syncing else "in sync"
        return f"live from {self._api.describe()}: {counts['nodes']} nodes, {counts['pods']} pods, {state}"

    def resource_versions(self) -> dict[str, str]:
        """The resourceVersion of each kind in the published view: it includes every change up to there."""
        return dict(self._versions)

    def ready(self) -> bool:
        return self._view is not None and self.staleness() <= self._staleness_bound

    def staleness(self) -> float:
        """Seconds the longest-broken kind has been out of sync; 0 when all are in sync."""
        with self._lock:
            if len(self._listed) < len(KINDS):
                return float("inf")
            if not self._out_of_sync_since:
                return 0.0
            return self._clock() - min(self._out_of_sync_since.values())

    # lifecycle

    def start(self) -> "LiveCluster":
        for kind in KINDS.values():
            self._threads.append(
                Reflector(
                    kind,
                    api=self._api,
                    store=self._store,
                    classes=self._classes,
                    on_sync=self._sync_changed,
                    on_event=self._count_event,
                    stop=self._stop,
                    lag=self._lag,
                    watch_delay=self._watch_delay,
                    watch_seconds=self._watch_seconds,
                    silence_timeout=self._silence_timeout,
                )
            )
        self._threads.append(threading.Thread(target=self._publish_loop, name="publisher", daemon=True))
        for thread in self._threads:
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        self._api.close()  # blocked watch reads return now, not when the server hangs up

    # internals

    def _classes(self) -> dict[str, PriorityClass]:
        return self._store.priority_classes()

    def _sync_changed(self, kind: str, in_sync: bool) -> None:
        with self._lock:
            if in_sync:
                self._listed.add(kind)
                self._out_of_sync_since.pop(kind, None)
            else:
                self._out_of_sync_since.setdefault(kind, self._clock())
        self._changed.set()

    def _count_event(self, kind: str, what: str) -> None:
        {
            "relist": self._metrics.cache_relists,
            "watch_restart": self._metrics.cache_watch_restarts,
            "event": self._metrics.cache_events,
            "bookmark": self._metrics.cache_bookmarks,
        }[what].labels(kind).inc()
        self._changed.set()

    def _publish_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._publish_once()
            except Exception:  # noqa: BLE001 - keep publishing; the view ages, so readiness will say so
                log.exception("publishing a new view failed")
                with self._lock:
                    self._out_of_sync_since.setdefault("publisher", self._clock())
            else:
                with self._lock:
                    self._out_of_sync_since.pop("publisher", None)
            self._stop.wait(self._publish_interval)

    def _publish_once(self) -> None:
        """Wait for a change (or a second), then publish a view of the store if it moved."""
        self._changed.wait(timeout=1.0)
        self._changed.clear()
        if self._stop.is_set():
            return
        with self._lock:
            all_listed = len(self._listed) == len(KINDS)
        if all_listed and self._store.generation != self._published_generation:
            pending_since = self._lag.publishing()
            started = self._clock()
            first = self._view is None
            self._published_generation, self._versions, self._view = self._store.build_view()
            if first:
                self._on_first_view()
            done = self._clock()
            self._metrics.cache_publish_seconds.observe(done - started)
            if pending_since is not None:
                self._metrics.cache_event_lag.observe(done - pending_since)
        for kind, count in self._store.counts().items():
            self._metrics.cache_objects.labels(kind).set(count)

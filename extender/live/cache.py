"""LiveCluster: the ClusterSource backed by list+watch, with readiness and staleness."""

from __future__ import annotations

import logging
from collections.abc import Callable
import threading
import time

import urllib3

from extender.apiserver import ApiError, ApiServer
from extender.live.changes import KINDS, Kind
from extender.live.lag import Lag
from extender.live.reflector import Reflector
from extender.live.store import Store
from extender.metrics import UNDER_WAY, Metrics
from extender.state.preemptions import UnderWay, under_way
from policy.model import PriorityClass
from policy.view import ClusterView

log = logging.getLogger(__name__)

REQUIRED = frozenset(name for name, kind in KINDS.items() if not kind.optional)
OPTIONAL = tuple(kind for kind in KINDS.values() if kind.optional)

# What discovery says of an optional kind.
SERVED, NOT_SERVED, FORBIDDEN, UNKNOWN = "served", "not served", "forbidden", "unknown"


class LiveCluster:
    """Keeps an immutable ClusterView in step with the API server.

    Reflector threads apply events to the Store; a publisher thread turns the Store into a
    new ClusterView whenever it changed, at most every ``publish_interval`` seconds. The
    verbs get that view only while it is trustworthy: every kind has listed, and no kind has
    been out of sync (watch broken, relisting) for longer than ``staleness_bound`` seconds.
    Otherwise ``view()`` is None and the verbs give their safe answers.

    Optional kinds (the gang PodGroups, served only where their CRD or feature gate is) are
    watched while discovery finds them, looking again every ``discovery_interval`` seconds. They
    never make the cache not ready: the first view waits for the first discovery and for the
    first list attempt of each optional kind found then, nothing more. One that is not served
    (404) or not readable (403) is forgotten (no records) until discovery finds it again; one
    whose watch fails keeps its records and relists like any kind, without counting as stale.
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
        discovery_interval: float = 30.0,
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
        self._listed: set[str] = set()  # required kinds that have listed
        self._out_of_sync_since: dict[str, float] = {kind: clock() for kind in REQUIRED}
        self._discovery_interval = discovery_interval
        self._discovered = False  # the first discovery round is over
        self._watching: set[str] = set()  # optional kinds with a running reflector
        self._pending: set[str] = set()  # optional kinds the first view waits for (first list attempt)
        self._optional_state: dict[str, str] = {}  # optional kind -> what was last logged of it
        self._lag = Lag(clock)
        self._watch_delay = watch_delay
        self._view: ClusterView | None = None
        self.under_way_at_start: UnderWay | None = None  # what the first view showed (_started)
        self._versions: dict[str, str] = {}
        self._published_generation = -1
        self._published_at: float | None = None  # when the published view was done
        self._counters: dict[tuple[str, str], object] = {}  # (kind, what) -> labelled counter (_count_event)
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
            if not self._all_listed():
                return float("inf")
            if not self._out_of_sync_since:
                return 0.0
            return self._clock() - min(self._out_of_sync_since.values())

    # lifecycle

    def start(self) -> "LiveCluster":
        threads = [self._reflector(kind) for kind in KINDS.values() if not kind.optional]
        threads.append(threading.Thread(target=self._publish_loop, name="publisher", daemon=True))
        threads.append(threading.Thread(target=self._discover_loop, name="discovery", daemon=True))
        for thread in threads:  # daemons, like the optional kinds' reflectors discovery starts
            thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._changed.set()
        self._api.close()  # blocked watch reads return now, not when the server hangs up

    # internals

    def _reflector(self, kind: Kind) -> Reflector:
        return Reflector(
            kind,
            api=self._api,
            store=self._store,
            classes=self._classes,
            on_sync=self._sync_changed,
            on_event=self._count_event,
            on_unavailable=self._unavailable,
            stop=self._stop,
            lag=self._lag,
            watch_delay=self._watch_delay,
            watch_seconds=self._watch_seconds,
            silence_timeout=self._silence_timeout,
        )

    def _all_listed(self) -> bool:
        """Whether a first view may be published (under self._lock)."""
        return self._discovered and not self._pending and len(self._listed) == len(REQUIRED)

    def _classes(self) -> dict[str, PriorityClass]:
        return self._store.priority_classes()

    def _sync_changed(self, kind: str, in_sync: bool) -> None:
        with self._lock:
            if kind not in REQUIRED:
                # Listed, or failed to: either way the first view no longer waits for it.
                self._pending.discard(kind)
            elif in_sync:
                self._listed.add(kind)
                self._out_of_sync_since.pop(kind, None)
            else:
                self._out_of_sync_since.setdefault(kind, self._clock())
        if in_sync and kind not in REQUIRED:
            self._metrics.cache_kind_watched.labels(kind).set(1)
            self._note(kind, "watched", "")
        self._changed.set()

    # optional kinds

    def _discover_loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._discover_once()
            except Exception:  # noqa: BLE001 - discovery must go on; the required kinds do not depend on it
                log.exception("discovering the optional kinds failed")
            with self._lock:
                self._discovered = True  # even after a failure: the first view never waits on discovery twice
            self._changed.set()
            self._stop.wait(self._discovery_interval)

    def _discover_once(self) -> None:
        """Start watching each optional kind the API server serves that is not watched yet (a
        watched kind's reflector finds out itself when it goes: _unavailable)."""
        for kind in OPTIONAL:
            with self._lock:
                if kind.name in self._watching:
                    continue
            state, why = self._served(kind)
            with self._lock:
                start = state == SERVED and kind.name not in self._watching and not self._stop.is_set()
                if start:
                    self._watching.add(kind.name)
                    if not self._discovered:
                        self._pending.add(kind.name)
                watching = kind.name in self._watching
            if start:  # it counts as watched once it has listed (_sync_changed)
                self._reflector(kind).start()  # not kept: a forbidden kind's ends at once, every round
            elif not watching:
                self._metrics.cache_kind_watched.labels(kind.name).set(0)
                if state != SERVED:
                    self._note(kind.name, state, why)

    def _served(self, kind: Kind) -> tuple[str, str]:
        """(SERVED, NOT_SERVED, FORBIDDEN or UNKNOWN, why) from the kind's discovery document."""
        try:
            document = self._api.get(kind.group_version, {}, timeout=5)  # three per round, before the first view
        except ApiError as exc:
            state = {404: NOT_SERVED, 403: FORBIDDEN}.get(exc.status, UNKNOWN)
            return state, f"GET {kind.group_version}: {exc}"
        except (urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
            return UNKNOWN, f"GET {kind.group_version}: {exc}"
        for resource in (document.get("resources") if isinstance(document, dict) else None) or ():
            if isinstance(resource, dict) and resource.get("name") == kind.resource:
                verbs = resource.get("verbs")
                if verbs is None or (isinstance(verbs, list) and {"list", "watch"} <= {v for v in verbs if isinstance(v, str)}):
                    return SERVED, ""
                return NOT_SERVED, f"{kind.group_version} serves {kind.resource} without list and watch"
        return NOT_SERVED, f"{kind.group_version} does not serve {kind.resource}"

    def _unavailable(self, kind: str, error: ApiError) -> None:
        """A reflector's optional kind answered 404 or 403: forget it until discovery finds it again."""
        self._store.forget(kind)
        with self._lock:
            self._watching.discard(kind)
            self._pending.discard(kind)
        self._metrics.cache_kind_watched.labels(kind).set(0)
        self._note(kind, NOT_SERVED if error.status == 404 else FORBIDDEN, str(error))
        self._changed.set()

    def _note(self, kind: str, state: str, why: str) -> None:
        """Log what became of an optional kind, once per change: discovery repeats every round,
        and a kind served but forbidden is tried (and refused) every round."""
        with self._lock:
            if self._optional_state.get(kind) == state:
                return
            self._optional_state[kind] = state
        if state == "watched":
            log.info("%s: served; watching it", kind)
        elif state == NOT_SERVED:
            log.info("%s: not served (%s); looking again every %gs", kind, why, self._discovery_interval)
        else:  # forbidden (RBAC), or discovery could not tell
            log.warning("%s: %s (%s); not watched, looking again every %gs", kind, state, why, self._discovery_interval)

    def _started(self, view: ClusterView) -> None:
        """The first view: say what it shows of preemptions under way (extender.state.preemptions).
        reprieve keeps no ledger across a restart; the nominations and terminating victims are
        all it needs of those, and this is where an operator sees it started in the middle of them."""
        found = self.under_way_at_start = under_way(view)
        for what, count in zip(UNDER_WAY, found):
            self._metrics.restart_in_flight.labels(what).set(count)
        if found:
            self._metrics.restart_in_flight_timestamp.set(time.time())
            log.warning(
                "started with preemptions under way: %s; their room is held and their victims counted from the view "
                "(no answer in flight survives a restart)", found.describe(),
            )

    def _count_event(self, kind: str, what: str) -> None:
        counter = self._counters.get((kind, what))
        if counter is None:  # once per kind and what: labels() takes a lock and builds a tuple
            counter = self._counters[kind, what] = {
                "relist": self._metrics.cache_relists,
                "watch_restart": self._metrics.cache_watch_restarts,
                "event": self._metrics.cache_events,
                "unchanged": self._metrics.cache_events,  # applied, changing nothing
                "bookmark": self._metrics.cache_bookmarks,
            }[what].labels(kind)
        counter.inc()
        if not self._changed.is_set():  # set() takes a lock every time
            self._changed.set()  # after "unchanged" too: the published resourceVersion moves

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
            all_listed = self._all_listed()
        # Every event marked applied by now is in the store, so in the view built below or in the
        # one already published (the reflector applies an event before it marks it applied: a
        # view built in between holds it, and only this round's call takes its arrival off the lag).
        pending_since = self._lag.publishing() if all_listed else None
        if all_listed and self._store.generation == self._published_generation:
            # Only events that changed nothing since the last view (or none): no new view, but
            # /readyz's resourceVersions say the view is that recent.
            versions = self._store.versions_at(self._published_generation)
            if versions is not None:
                self._versions = versions
            published = self._published_at
            if pending_since is not None and published is not None and pending_since <= published:
                # Marked applied only after the published view was built, which holds it.
                self._metrics.cache_event_lag.observe(published - pending_since)
        elif all_listed:
            started = self._clock()
            first = self._view is None
            self._published_generation, self._versions, self._view = self._store.build_view()
            if first:
                self._started(self._view)
                self._on_first_view()
            done = self._published_at = self._clock()
            self._metrics.cache_publish_seconds.observe(done - started)
            if pending_since is not None:
                self._metrics.cache_event_lag.observe(done - pending_since)
        for kind, count in self._store.counts().items():
            self._metrics.cache_objects.labels(kind).set(count)

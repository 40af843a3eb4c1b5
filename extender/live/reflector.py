"""One kind's list+watch loop: list, remember resourceVersion, watch, relist on 410, back off on errors.
An optional kind (Kind.optional) that is not served (404) or not readable (403) ends its loop instead."""

from __future__ import annotations

import functools
import logging
import random
import threading
import time
from collections.abc import Callable, Mapping

import urllib3

from extender.apiserver import ApiError, ApiServer, Gone
from extender.live.changes import UNCHANGED, Decoder, Kind
from extender.live.lag import Lag, delayed
from extender.live.store import Store
from policy.model import PriorityClass

log = logging.getLogger(__name__)

# An optional kind answered with these is not served (its CRD is gone, its API version or feature
# gate off) or not readable (RBAC): its reflector ends, and discovery looks again later.
UNAVAILABLE = frozenset({403, 404})
# A watch the server accepts and ends sooner than this without an event is taken as failed and
# backed off from, as client-go's "very short watch": a server or proxy that closes every stream
# at once must not be asked again in a tight loop.
SHORT_WATCH = 1.0


class Reflector(threading.Thread):
    def __init__(
        self,
        kind: Kind,
        *,
        api: ApiServer,
        store: Store,
        classes: Callable[[], Mapping[str, PriorityClass]],
        on_sync: Callable[[str, bool], None],
        on_event: Callable[[str, str], None],
        stop: threading.Event,
        lag: Lag | None = None,
        watch_delay: float = 0.0,
        page_size: int = 500,
        watch_seconds: int = 60,
        silence_timeout: float = 75.0,
        max_backoff: float = 2.0,
        on_unavailable: Callable[[str, ApiError], None] = lambda kind, error: None,
    ) -> None:
        super().__init__(name=f"reflector-{kind.name}", daemon=True)
        self.kind = kind
        self._api, self._store, self._classes = api, store, classes
        self._on_sync, self._on_event, self._on_unavailable = on_sync, on_event, on_unavailable
        self._stopping = stop
        self._lag = lag or Lag()
        self._watch_delay = watch_delay  # a fault injected for tests (extender.live.lag.delayed)
        self._page_size = page_size
        self._watch_seconds = watch_seconds
        self._silence_timeout = silence_timeout
        self._max_backoff = max_backoff
        self._decoder = Decoder(kind)
        self._current = functools.partial(store.current, kind.name)
        # The resourceVersion of the last list or event applied (None: list first). A watch
        # resumes from it, also after a stream broken partway: from the version the broken watch
        # started at, the server would send again events already applied, and the store would go
        # back in time (a deleted pod back, a bound one pending again).
        self._version: str | None = None

    def run(self) -> None:
        backoff = 0.2
        self._version = None
        while not self._stopping.is_set():
            try:
                if self._version is None:
                    self._version = self._list()
                    self._on_event(self.kind.name, "relist")
                    self._on_sync(self.kind.name, True)
                # After a failed watch the kind is in sync again only once a new watch is
                # accepted (on_connect in _watch): reconnecting is not enough.
                started = time.monotonic()
                brought = self._watch()
                if self._stopping.is_set():
                    break  # stop() ended it: no restart to count
                if brought or time.monotonic() - started >= SHORT_WATCH:
                    backoff = 0.2
                else:
                    log.warning("%s: watch ended at once without an event; watching again in %.1fs",
                                self.kind.name, backoff)
                    self._on_event(self.kind.name, "watch_restart")
                    backoff = self._pause(backoff)
            except Gone:
                log.info("%s: resourceVersion %s is gone; relisting", self.kind.name, self._version)
                self._version = None
                self._on_sync(self.kind.name, False)
                # The server answered, so it is up: relist after a short pause, not the backoff
                # accumulated while it was down (that would delay recovery by seconds).
                backoff = self._pause(0.2)
            except (ApiError, urllib3.exceptions.HTTPError, OSError, ValueError) as exc:
                if self._stopping.is_set():
                    break  # stop() closed the stream
                if self.kind.optional and isinstance(exc, ApiError) and exc.status in UNAVAILABLE:
                    self._on_unavailable(self.kind.name, exc)
                    return
                # Connection refused or reset, a silent stream timing out, a 5xx: keep the
                # resourceVersion of the last event applied and watch again from it after a pause.
                log.warning("%s: watch failed (%s); retrying in %.1fs", self.kind.name, exc, backoff)
                self._on_sync(self.kind.name, False)
                self._on_event(self.kind.name, "watch_restart")
                backoff = self._pause(backoff)
            except Exception:  # noqa: BLE001 - a dead reflector would freeze its kind while /readyz stays green
                log.exception("%s: unexpected error; relisting in %.1fs", self.kind.name, backoff)
                self._version = None
                self._on_sync(self.kind.name, False)
                self._on_event(self.kind.name, "watch_restart")
                backoff = self._pause(backoff)

    def _pause(self, backoff: float) -> float:
        self._stopping.wait(backoff * random.uniform(0.8, 1.2))
        return min(backoff * 2, self._max_backoff)

    def _list(self) -> str:
        listed: dict[str, str] = {}

        def pages():
            cont = None
            while True:
                params = {**self.kind.params, "limit": self._page_size}
                if cont:
                    params["continue"] = cont
                page = self._api.get(self.kind.path, params, timeout=60)
                yield page.get("items") or (), self._classes()
                meta = page.get("metadata") or {}
                cont = meta.get("continue")
                if not cont:
                    listed["resourceVersion"] = meta["resourceVersion"]
                    return

        records = self._decoder.list(pages())
        self._store.replace(self.kind.name, records, listed["resourceVersion"])
        return listed["resourceVersion"]

    def _watch(self) -> int:
        """Apply events from ``_version`` on until the server closes the stream, ``_version``
        following each one applied; returns how many came."""
        params = {
            **self.kind.params,
            "resourceVersion": self._version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": self._watch_seconds,
        }
        # The server ends the stream after timeoutSeconds and sends bookmarks meanwhile, so a
        # stream silent for longer than silence_timeout (> watch_seconds) is dead.
        connected = lambda: self._on_sync(self.kind.name, True)  # noqa: E731
        name, lag = self.kind.name, self._lag
        lag.restarted(name)
        events = self._api.watch(self.kind.path, params, read_timeout=self._silence_timeout, on_connect=connected)
        if self._watch_delay > 0:
            events = delayed(events, self._watch_delay, lambda: lag.arrived(name))
        seen = 0
        for event in events:
            seen += 1
            if self._watch_delay <= 0:
                lag.arrived(name)
            what = "event"
            try:
                self._version, what = self._handle(event, self._version)
            finally:
                # Before the publisher hears of it (on_event): a view built in between would
                # include the event but leave its arrival counted as unpublished.
                lag.applied(name, changed=what != "unchanged")
            self._on_event(name, what)
        return seen

    def _handle(self, event: dict, resource_version: str) -> tuple[str, str]:
        """Apply one watch event: (the resourceVersion it brings, "event", "unchanged" (it changes
        nothing reprieve reads: no new record, no new view) or "bookmark")."""
        kind = event.get("type")
        obj = event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise Gone(410, obj.get("message", "too old resource version"))
            raise ApiError(obj.get("code", 500), obj.get("message", "watch error"))
        resource_version = (obj.get("metadata") or {}).get("resourceVersion", resource_version)
        if kind == "BOOKMARK":
            self._store.bookmark(self.kind.name, resource_version)
            return resource_version, "bookmark"
        key, record = self._decoder.event(event, self._classes(), self._current)
        if record is UNCHANGED:
            self._store.unchanged(self.kind.name, resource_version)
            return resource_version, "unchanged"
        self._store.apply(self.kind.name, key, record, resource_version)
        return resource_version, "event"

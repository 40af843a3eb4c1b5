"""Writing events.k8s.io/v1 Events the way client-go's tools/events recorder does, without blocking.

client-go (k8s.io/client-go/tools/events, event_broadcaster.go) keys each Event by type,
action, reason, reporting controller and instance, regarding and related object (not by its
note). The first Event of a key is created; the second turns it into a series, patched to
count 2; later ones only count up in memory. Every 30 minutes open series are written again,
and a series silent for 6 minutes gets its final count written and is forgotten (a single
Event is forgotten after 6 minutes). Its legacy recorder (tools/record, events_cache.go) also
limits each object to a burst of 25 Events refilled at one per 5 minutes (a token bucket);
that is done here too.

Unlike client-go, which retries a failed write up to 12 times, 10 s apart, holding every
later Event back, nothing here waits for the API server: ``record`` only puts the Event on a
bounded queue (full: dropped), and the one writer thread gives up on a write that fails or
takes longer than ``write_timeout`` (dropped). Every drop is counted in
``reprieve_events_dropped_total`` by cause.
"""

from __future__ import annotations

import datetime
import logging
import queue
import re
import socket
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import urllib3

from extender.apiserver import ApiError, ApiServer
from extender.metrics import Metrics

log = logging.getLogger(__name__)

CONTROLLER = "reprieve"
NORMAL = "Normal"
WARNING = "Warning"
QUEUE_SIZE = 1000  # client-go's maxQueuedEvents
BURST = 25  # client-go's defaultSpamBurst: Events per object at once ...
REFILL_SECONDS = 300.0  # ... and one more per 5 minutes (defaultSpamQPS 1/300)
FINISH_SECONDS = 360.0  # client-go's finishTime: a series silent this long is finished
REFRESH_SECONDS = 1800.0  # client-go's refreshTime: open series are written again this often
HOUSEKEEPING_SECONDS = 10.0  # how often the writer looks for series to finish or refresh
MAX_KEYS = 4096  # client-go's maxLruCacheEntries, for the rate limits and the series alike
WRITE_TIMEOUT = 2.0  # seconds; a slower write is dropped: the API server is struggling
NOTE_LIMIT = 1024  # the API server's limit on note


@dataclass(frozen=True, slots=True)
class Ref:
    """A core/v1 ObjectReference."""

    kind: str
    name: str
    namespace: str = ""
    uid: str = ""
    api_version: str = "v1"

    def wire(self) -> dict:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "name": self.name}
        if self.namespace:
            ref["namespace"] = self.namespace
        if self.uid:
            ref["uid"] = self.uid
        return ref


@dataclass(frozen=True, slots=True)
class Event:
    """What a caller records; the recorder adds the names, times and series."""

    regarding: Ref
    reason: str
    action: str
    note: str
    related: Ref | None = None
    type: str = NORMAL


class Sink(Protocol):
    """Where Events go: the API server (ApiSink) or, in tests, a fake."""

    def create(self, namespace: str, body: dict) -> None: ...

    def patch(self, namespace: str, name: str, patch: dict) -> None: ...


class ApiSink:
    """events.k8s.io/v1 through reprieve's own raw API access."""

    def __init__(self, api: ApiServer, *, timeout: float = WRITE_TIMEOUT) -> None:
        self._api, self._timeout = api, timeout

    def create(self, namespace: str, body: dict) -> None:
        self._api.write("POST", f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", body, timeout=self._timeout)

    def patch(self, namespace: str, name: str, patch: dict) -> None:
        self._api.write(
            "PATCH",
            f"/apis/events.k8s.io/v1/namespaces/{namespace}/events/{name}",
            patch,
            content_type="application/strategic-merge-patch+json",
            timeout=self._timeout,
        )


@dataclass
class _Bucket:
    tokens: float
    at: float


@dataclass
class _Cached:
    """An Event as written, and its series once it has one."""

    body: dict
    first: float
    count: int = 1
    last: float = 0.0
    written_count: int = 1  # the count the API server has


@dataclass(frozen=True, slots=True)
class _Item:
    event: Event
    at: float  # when it was recorded


class Recorder:
    """Records Events from any thread without blocking; one thread writes them.

    ``clock`` is the wall clock (seconds since the epoch): Events carry it, and the rate
    limits, series and housekeeping are measured by it.
    """

    def __init__(
        self,
        sink: Sink,
        *,
        metrics: Metrics,
        instance: str | None = None,
        queue_size: int = QUEUE_SIZE,
        burst: int = BURST,
        refill_seconds: float = REFILL_SECONDS,
        finish_seconds: float = FINISH_SECONDS,
        refresh_seconds: float = REFRESH_SECONDS,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._sink = sink
        self._metrics = metrics
        # client-go: reportingController + "-" + hostname (the pod name, in a cluster).
        self.instance = (instance or f"{CONTROLLER}-{socket.gethostname()}")[:128]
        self._queue: queue.Queue[_Item] = queue.Queue(maxsize=queue_size)
        self._burst, self._refill = burst, refill_seconds
        self._finish, self._refresh = finish_seconds, refresh_seconds
        self._clock = clock
        self._limits_lock = threading.Lock()
        self._buckets: OrderedDict[Ref, _Bucket] = OrderedDict()
        self._series: OrderedDict[tuple, _Cached] = OrderedDict()  # only the writer thread touches it
        self._last_refresh = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        metrics.events_queued.set_function(self._queue.qsize)

    # any thread

    def record(self, event: Event) -> bool:
        """Queue ``event`` for writing; False if it was dropped (rate limit, full queue). Never blocks."""
        self._metrics.events.labels(event.reason).inc()
        now = self._clock()
        if not self._allow(event.regarding, now):
            return self._dropped("rate limited", event)
        try:
            self._queue.put_nowait(_Item(event, now))
        except queue.Full:
            return self._dropped("queue full", event)
        return True

    def start(self) -> "Recorder":
        self._thread = threading.Thread(target=self._run, name="event-recorder", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    # the writer (its thread, or a test calling drain)

    def drain(self) -> None:
        """Write everything queued now, in the calling thread (tests; the thread does this itself)."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            self._write(item)

    def housekeeping(self) -> None:
        """client-go's finishSeries and refreshExistingEventSeries."""
        now = self._clock()
        refresh = now - self._last_refresh >= self._refresh
        if refresh:
            self._last_refresh = now
        for key, cached in list(self._series.items()):
            if cached.count > 1:
                if cached.last < now - self._finish:
                    self._write_series(cached)
                    del self._series[key]
                elif refresh:
                    self._write_series(cached)
            elif cached.first < now - self._finish:
                del self._series[key]

    def _run(self) -> None:
        due = self._clock() + HOUSEKEEPING_SECONDS
        while not self._stop.is_set():
            try:
                item = self._queue.get(timeout=1.0)
            except queue.Empty:
                item = None
            try:
                if item is not None:
                    self._write(item)
                if self._clock() >= due:
                    due = self._clock() + HOUSEKEEPING_SECONDS
                    self.housekeeping()
            except Exception:  # noqa: BLE001 - a bug must not stop every later Event
                log.exception("writing an Event failed")

    def _write(self, item: _Item) -> None:
        event, now = item.event, item.at
        key = (event.type, event.action, event.reason, self.instance, event.regarding, event.related)
        cached = self._series.get(key)
        if cached is None:
            cached = _Cached(self._body(event, now), first=now, last=now)
            self._series[key] = cached
            while len(self._series) > MAX_KEYS:
                self._series.popitem(last=False)
            self._send("create", event, lambda: self._sink.create(cached.body["metadata"]["namespace"], cached.body))
            return
        self._series.move_to_end(key)
        cached.count += 1
        cached.last = now
        if cached.count == 2:  # the Event becomes a series: written now; later counts at housekeeping
            self._write_series(cached)

    def _write_series(self, cached: _Cached) -> None:
        if cached.written_count == cached.count:
            return
        series = {"count": cached.count, "lastObservedTime": _micro_time(cached.last)}
        meta = cached.body["metadata"]
        reason = cached.body["reason"]

        def patch() -> None:
            try:
                self._sink.patch(meta["namespace"], meta["name"], {"series": series})
            except ApiError as exc:
                if exc.status != 404:
                    raise
                # Gone (expired, or its create failed): create it again, series and all.
                self._sink.create(meta["namespace"], {**cached.body, "series": series})

        if self._send("patch", reason, patch):
            cached.written_count = cached.count

    def _send(self, operation: str, event: Event | str, call: Callable[[], None]) -> bool:
        try:
            call()
        except urllib3.exceptions.NewConnectionError as exc:
            return self._dropped("apiserver error", event, exc)
        except urllib3.exceptions.TimeoutError as exc:
            return self._dropped("apiserver slow", event, exc)
        except (ApiError, urllib3.exceptions.HTTPError, OSError) as exc:
            return self._dropped("apiserver error", event, exc)
        self._metrics.events_writes.labels(operation).inc()
        return True

    def _dropped(self, cause: str, event: Event | str, exc: Exception | None = None) -> bool:
        self._metrics.events_dropped.labels(cause).inc()
        reason = event if isinstance(event, str) else event.reason
        log.debug("dropped a %s Event (%s)%s", reason, cause, f": {exc}" if exc else "")
        return False

    def _allow(self, ref: Ref, now: float) -> bool:
        """A token bucket per object: ``burst`` at once, refilled at one per ``refill`` seconds."""
        with self._limits_lock:
            bucket = self._buckets.get(ref)
            if bucket is None:
                bucket = self._buckets[ref] = _Bucket(float(self._burst), now)
                while len(self._buckets) > MAX_KEYS:
                    self._buckets.popitem(last=False)
            else:
                self._buckets.move_to_end(ref)
                bucket.tokens = min(float(self._burst), bucket.tokens + (now - bucket.at) / self._refill)
                bucket.at = now
            if bucket.tokens < 1:
                return False
            bucket.tokens -= 1
            return True

    def _body(self, event: Event, now: float) -> dict:
        regarding = event.regarding
        namespace = regarding.namespace or "default"
        body = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": _event_name(regarding.name, now), "namespace": namespace},
            "eventTime": _micro_time(now),
            "reportingController": CONTROLLER,
            "reportingInstance": self.instance,
            "action": event.action,
            "reason": event.reason,
            "regarding": regarding.wire(),
            "note": _fit(event.note),
            "type": event.type,
        }
        if event.related is not None:
            body["related"] = event.related.wire()
        return body


_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _event_name(name: str, now: float) -> str:
    """client-go's GenerateEventName: ``<name>.<unix nanoseconds in hex>``, else a UUID."""
    candidate = f"{name}.{int(now * 1e9):x}"
    if len(candidate) <= 253 and _DNS_SUBDOMAIN.fullmatch(candidate):
        return candidate
    return str(uuid.uuid4())


def _micro_time(seconds: float) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, UTC."""
    return datetime.datetime.fromtimestamp(seconds, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _fit(note: str) -> str:
    """The API server refuses a note over 1024 bytes: cut it at a character, with an ellipsis."""
    data = note.encode()
    if len(data) <= NOTE_LIMIT:
        return note
    return data[: NOTE_LIMIT - 3].decode(errors="ignore") + "..."

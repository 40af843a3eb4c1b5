"""A reflector never dies: whatever goes wrong, its kind goes out of sync and it lists again."""

from __future__ import annotations

import threading

from extender.live.changes import KINDS
from extender.live.lag import Lag
from extender.live import reflector as reflector_module
from extender.live.reflector import Reflector
from extender.live.store import Store
from tests.e2e.client import wait_for


class FlakyApi:
    """Lists fine; the first watch raises something no handler expects, later watches end at once."""

    def __init__(self) -> None:
        self.lists = 0
        self.watches = 0

    def get(self, path, params, *, timeout):
        self.lists += 1
        return {"items": [], "metadata": {"resourceVersion": str(self.lists)}}

    def watch(self, path, params, *, read_timeout, on_connect):
        self.watches += 1
        if self.watches == 1:
            raise RuntimeError("token file exists but is empty")
        on_connect()
        return iter(())


def test_unexpected_errors_mark_the_kind_out_of_sync_and_relist():
    api, syncs, stop = FlakyApi(), [], threading.Event()
    reflector = Reflector(
        KINDS["pods"],
        api=api,
        store=Store(tuple(KINDS)),
        classes=dict,
        on_sync=lambda kind, ok: syncs.append(ok),
        on_event=lambda kind, what: None,
        stop=stop,
    )
    reflector.start()
    try:
        wait_for("a relist after the error", lambda: api.lists >= 2, timeout=5)
        assert reflector.is_alive()
        assert syncs[:3] == [True, False, True]  # listed, broke, listed again
    finally:
        stop.set()
        reflector.join(timeout=5)


class OneEvent:
    """A watch that sends one pod and ends."""

    def watch(self, path, params, *, read_timeout, on_connect):
        on_connect()
        pod = {"metadata": {"uid": "u1", "name": "a", "namespace": "default", "resourceVersion": "2"},
               "spec": {"containers": []}, "status": {}}
        return iter([{"type": "ADDED", "object": pod}])


def test_an_event_is_applied_for_the_lag_before_the_publisher_hears_of_it():
    # The publisher wakes on on_event and may build a view at once: the event must already be
    # counted applied, or its arrival would stay "unpublished" and the lag gauge climb until the
    # next event (found in review).
    now = [100.0]
    lag, store, published = Lag(clock=lambda: now[0]), Store(tuple(KINDS)), []

    def on_event(kind, what):
        published.append(lag.publishing())
        store.build_view()

    reflector = Reflector(KINDS["pods"], api=OneEvent(), store=store, classes=dict, on_sync=lambda k, ok: None,
                          on_event=on_event, stop=threading.Event(), lag=lag)
    reflector._version = "1"
    reflector._watch()
    assert published == [100.0]
    now[0] = 400.0
    assert lag.seconds() == 0.0


def test_closing_the_api_tolerates_a_watch_that_ended_meanwhile():
    # Seen in make test: a stream that ended and gave its connection back to the pool, still in
    # the open set when LiveCluster.stop() closed the client, made urllib3 raise.
    from extender.apiserver import ApiServer

    class Ended:
        def shutdown(self):
            raise RuntimeError("Cannot shutdown as connection has already been released to the pool")

    api = ApiServer.__new__(ApiServer)
    api._watches, api._closed = {Ended()}, False
    api._pool = type("Pool", (), {"clear": lambda self: None})()
    api.close()
    assert api._closed


class Refusing:
    """Every list answers ``status``."""

    def __init__(self, status: int) -> None:
        self.status, self.lists = status, 0

    def get(self, path, params, *, timeout):
        from extender.apiserver import ApiError

        self.lists += 1
        raise ApiError(self.status, "no")


def test_an_optional_kind_not_served_or_forbidden_ends_its_reflector_and_says_so():
    for status in (403, 404):
        api, gone, syncs = Refusing(status), [], []
        reflector = Reflector(
            KINDS["podgroups.scheduling.x-k8s.io"], api=api, store=Store(tuple(KINDS)), classes=dict,
            on_sync=lambda kind, ok: syncs.append(ok), on_event=lambda kind, what: None,
            on_unavailable=lambda kind, error: gone.append((kind, error.status)), stop=threading.Event(),
        )
        reflector.start()
        reflector.join(timeout=5)
        assert not reflector.is_alive()
        assert (gone, api.lists, syncs) == ([("podgroups.scheduling.x-k8s.io", status)], 1, [])


def test_a_required_kind_refused_keeps_retrying_out_of_sync():
    api, gone, syncs, stop = Refusing(403), [], [], threading.Event()
    reflector = Reflector(
        KINDS["pods"], api=api, store=Store(tuple(KINDS)), classes=dict, on_sync=lambda kind, ok: syncs.append(ok),
        on_event=lambda kind, what: None, on_unavailable=lambda kind, error: gone.append(kind), stop=stop, max_backoff=0.05,
    )
    reflector.start()
    try:
        wait_for("a few retries", lambda: api.lists >= 3, timeout=5)
        assert reflector.is_alive() and gone == [] and set(syncs) == {False}
    finally:
        stop.set()
        reflector.join(timeout=5)


class Events:
    """A watch that sends the given events and ends."""

    def __init__(self, events: list[dict]) -> None:
        self.events = events

    def watch(self, path, params, *, read_timeout, on_connect):
        on_connect()
        return iter(self.events)


def pod_event(kind: str, rv: str, **status) -> dict:
    return {"type": kind, "object": {
        "metadata": {"uid": "u1", "name": "a", "namespace": "default", "resourceVersion": rv},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Pending", **status},
    }}


def test_an_event_that_changes_nothing_read_moves_the_resource_version_and_nothing_else():
    now = [100.0]
    lag, store, seen = Lag(clock=lambda: now[0]), Store(tuple(KINDS)), []
    events = [pod_event("ADDED", "2"), pod_event("MODIFIED", "3", podIP="10.0.0.1", containerStatuses=[{"name": "c"}])]
    reflector = Reflector(KINDS["pods"], api=Events(events[:1]), store=store, classes=dict, on_sync=lambda k, ok: None,
                          on_event=lambda kind, what: seen.append(what), stop=threading.Event(), lag=lag)
    reflector._version = "1"
    reflector._watch()
    generation, _, view = store.build_view()
    lag.publishing()
    reflector._api = Events(events[1:])
    now[0] = 105.0
    reflector._watch()  # from "2", the first event's
    assert seen == ["event", "unchanged"]
    assert store.generation == generation  # no new view is due
    assert store.versions_at(generation) == {"pods": "3"}  # but it is as recent as the event
    assert lag.seconds() == 0.0  # and the event is in it already
    assert store.current("pods", "u1") is view.pods["u1"]


def _pod(rv: str, node: str | None = None) -> dict:
    return {"metadata": {"uid": "u1", "name": "a", "namespace": "default", "resourceVersion": rv},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], **({"nodeName": node} if node else {})},
            "status": {"phase": "Pending"}}


class History:
    """An API server that keeps its history: a watch from resourceVersion x sends every event
    after x. The first watch breaks (a connection reset) once it has sent them all; the second
    stops the reflector when it ends."""

    def __init__(self, stop: threading.Event) -> None:
        self.events = [(3, {"type": "ADDED", "object": _pod("3")}),
                       (4, {"type": "MODIFIED", "object": _pod("4", node="n1")}),
                       (5, {"type": "DELETED", "object": _pod("5", node="n1")})]
        self.watched_from: list[str] = []
        self.stop = stop

    def get(self, path, params, *, timeout):
        return {"items": [], "metadata": {"resourceVersion": "2"}}

    def watch(self, path, params, *, read_timeout, on_connect):
        self.watched_from.append(params["resourceVersion"])
        on_connect()
        start, first = int(params["resourceVersion"]), len(self.watched_from) == 1

        def stream():
            yield from (event for rv, event in self.events if rv > start)
            if first:
                raise ConnectionResetError("connection reset by peer")
            self.stop.set()

        return stream()


def test_a_watch_broken_partway_resumes_from_the_last_event_applied():
    # From the version the broken watch began at, the server would send the pod's creation and
    # binding again: the deleted pod would come back, pending (found in review).
    stop = threading.Event()
    api, store, pods = History(stop), Store(tuple(KINDS)), []

    def on_event(kind, what):
        if what == "event":
            pods.append({uid: p.node_name for uid, p in store.build_view()[2].pods.items()})

    reflector = Reflector(KINDS["pods"], api=api, store=store, classes=dict, on_sync=lambda k, ok: None,
                          on_event=on_event, stop=stop)
    reflector._pause = lambda backoff: backoff
    reflector.run()
    assert api.watched_from == ["2", "5"]
    assert pods == [{"u1": None}, {"u1": "n1"}, {}]


class EndsAtOnce:
    """Accepts every watch and ends it at once, with ``events`` in it; stops the reflector at the third."""

    def __init__(self, stop: threading.Event, events: list[dict]) -> None:
        self.stop, self.events, self.watches = stop, events, 0

    def get(self, path, params, *, timeout):
        return {"items": [], "metadata": {"resourceVersion": "1"}}

    def watch(self, path, params, *, read_timeout, on_connect):
        self.watches += 1
        on_connect()
        if self.watches == 3:
            self.stop.set()
        return iter(self.events)


def test_a_watch_ended_at_once_without_an_event_is_backed_off_from(monkeypatch):
    # A server or proxy closing every stream as it opens would otherwise be asked again in a
    # tight loop (an in-process fake took 645,053 watches a second: found in review).
    monkeypatch.setattr(reflector_module, "SHORT_WATCH", float("inf"))  # however slow the machine
    stop, pauses = threading.Event(), []
    api = EndsAtOnce(stop, [])
    reflector = Reflector(KINDS["nodes"], api=api, store=Store(tuple(KINDS)), classes=dict,
                          on_sync=lambda k, ok: None, on_event=lambda k, w: None, stop=stop)
    reflector._pause = lambda backoff: pauses.append(backoff) or min(backoff * 2, 2.0)
    reflector.run()
    assert pauses == [0.2, 0.4]  # growing; the third ended by stop(), not paused after


def test_a_short_watch_that_brought_events_is_watched_again_at_once(monkeypatch):
    monkeypatch.setattr(reflector_module, "SHORT_WATCH", float("inf"))  # short, however fast
    stop, pauses = threading.Event(), []
    node = {"metadata": {"uid": "n1", "name": "n1", "resourceVersion": "2"}, "spec": {}, "status": {"allocatable": {"cpu": "4"}}}
    api = EndsAtOnce(stop, [{"type": "ADDED", "object": node}])
    reflector = Reflector(KINDS["nodes"], api=api, store=Store(tuple(KINDS)), classes=dict,
                          on_sync=lambda k, ok: None, on_event=lambda k, w: None, stop=stop)
    reflector._pause = lambda backoff: pauses.append(backoff) or backoff
    reflector.run()
    assert api.watches == 3 and pauses == []

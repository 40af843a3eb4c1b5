"""The Event recorder (extender.events.recorder): client-go's series and per-object limits,
a bounded queue that never blocks, and drops counted by cause."""

from __future__ import annotations

import threading

import pytest
import urllib3

from extender.events.recorder import Event, Recorder, Ref
from extender.apiserver import ApiError
from extender.metrics import Metrics

POD = Ref("Pod", "web-0", "shop", "uid-web-0")
NODE = Ref("Node", "node-a")
T0 = 1_800_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class FakeSink:
    """The API server: remembers what was written, or fails as told."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.objects: dict[str, dict] = {}
        self.fail: Exception | None = None

    def create(self, namespace, body):
        if self.fail:
            raise self.fail
        self.calls.append(("create", namespace, body))
        self.objects[body["metadata"]["name"]] = body

    def patch(self, namespace, name, patch):
        if self.fail:
            raise self.fail
        self.calls.append(("patch", namespace, name, patch))
        if name not in self.objects:
            raise ApiError(404, f'events.events.k8s.io "{name}" not found')
        self.objects[name] = {**self.objects[name], **patch}


def recorder(**kwargs):
    metrics, sink, clock = Metrics(), FakeSink(), Clock()
    return Recorder(sink, metrics=metrics, instance="reprieve-test", clock=clock, **kwargs), sink, clock, metrics


def value(metrics, name, **labels):
    return metrics.registry.get_sample_value(name, labels) or 0.0


def event(note="evicted", *, regarding=POD, related=NODE, reason="Preempting"):
    return Event(regarding, reason, "Preempt", note, related=related)


def test_the_first_event_is_created_as_the_events_api_wants_it():
    rec, sink, clock, metrics = recorder()
    assert rec.record(event("On node-a: 0 PDB violations"))
    rec.drain()
    [(op, ns, body)] = sink.calls
    assert (op, ns) == ("create", "shop")
    assert body == {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        # client-go's GenerateEventName: the object's name and the time in nanoseconds, in hex.
        "metadata": {"name": f"web-0.{int(T0 * 1e9):x}", "namespace": "shop"},
        "eventTime": "2027-01-15T08:00:00.000000Z",
        "reportingController": "reprieve",
        "reportingInstance": "reprieve-test",
        "action": "Preempt",
        "reason": "Preempting",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "name": "web-0", "namespace": "shop", "uid": "uid-web-0"},
        "related": {"apiVersion": "v1", "kind": "Node", "name": "node-a"},
        "note": "On node-a: 0 PDB violations",
        "type": "Normal",
    }
    assert value(metrics, "reprieve_events_total", reason="Preempting") == 1
    assert value(metrics, "reprieve_events_writes_total", operation="create") == 1


def test_repeated_events_become_one_series_counted_in_memory_and_finished_later():
    rec, sink, clock, metrics = recorder()
    for second in range(4):  # isomorphic: same object, reason, action, related; the note is not part of the key
        clock.now = T0 + second
        rec.record(event(f"attempt {second}"))
    rec.drain()
    # client-go: create, then a patch turning it into a series of 2; later ones only count.
    assert [c[0] for c in sink.calls] == ["create", "patch"]
    name = sink.calls[0][2]["metadata"]["name"]
    assert sink.calls[1] == ("patch", "shop", name, {"series": {"count": 2, "lastObservedTime": "2027-01-15T08:00:01.000000Z"}})
    assert sink.objects[name]["note"] == "attempt 0"

    clock.now = T0 + 3 + 300  # silent for 5 minutes: not finished yet
    rec.housekeeping()
    assert len(sink.calls) == 2
    clock.now = T0 + 3 + 361  # past client-go's 6-minute finishTime: the final count is written
    rec.housekeeping()
    assert sink.calls[2] == ("patch", "shop", name, {"series": {"count": 4, "lastObservedTime": "2027-01-15T08:00:03.000000Z"}})
    # ... and the series forgotten: the next one is a new Event.
    rec.record(event("later"))
    rec.drain()
    assert sink.calls[3][0] == "create" and sink.calls[3][2]["note"] == "later"
    assert value(metrics, "reprieve_events_writes_total", operation="patch") == 2


def test_open_series_are_written_again_every_30_minutes():
    rec, sink, clock, _ = recorder()
    for second in range(3):
        clock.now = T0 + second
        rec.record(event())
        rec.drain()
        rec.housekeeping()
    assert [c[0] for c in sink.calls] == ["create", "patch"]  # count 3 is only in memory
    for minute in range(1, 6):  # every 5 minutes a new one keeps the series open
        clock.now = T0 + minute * 300
        rec.record(event())
        rec.drain()
        rec.housekeeping()
    assert [c[0] for c in sink.calls] == ["create", "patch"]
    clock.now = T0 + 1800
    rec.record(event())
    rec.drain()
    rec.housekeeping()
    assert sink.calls[-1][3]["series"]["count"] == 9


def test_a_different_object_reason_or_related_object_is_a_different_event():
    rec, sink, _, _ = recorder()
    rec.record(event())
    rec.record(event(related=Ref("Node", "node-b")))
    rec.record(event(reason="ChosenForPreemption"))
    rec.record(event(regarding=Ref("Pod", "web-1", "shop", "uid-web-1")))
    rec.drain()
    assert [c[0] for c in sink.calls] == ["create"] * 4


def test_a_series_whose_event_is_gone_is_created_again():
    rec, sink, clock, _ = recorder()
    rec.record(event())
    rec.drain()
    sink.objects.clear()  # expired on the server (its TTL) or deleted
    clock.now = T0 + 1
    rec.record(event())
    rec.drain()
    assert [c[0] for c in sink.calls] == ["create", "patch", "create"]
    assert sink.calls[2][2]["series"] == {"count": 2, "lastObservedTime": "2027-01-15T08:00:01.000000Z"}


def test_each_object_gets_a_burst_of_25_then_one_event_per_5_minutes():
    rec, sink, clock, metrics = recorder()
    accepted = [rec.record(event(reason=f"R{i}")) for i in range(30)]  # distinct keys: no aggregation
    assert accepted == [True] * 25 + [False] * 5
    assert rec.record(event(regarding=Ref("Pod", "other", "shop", "uid-other")))  # another object: its own bucket
    clock.now = T0 + 299
    assert not rec.record(event(reason="R30"))
    clock.now = T0 + 301  # one token back
    assert rec.record(event(reason="R31"))
    assert not rec.record(event(reason="R32"))
    rec.drain()
    assert len(sink.calls) == 27
    assert value(metrics, "reprieve_events_dropped_total", cause="rate limited") == 7
    assert value(metrics, "reprieve_events_total", reason="R30") == 1  # recorded, then dropped


def test_a_full_queue_drops_and_counts():
    rec, sink, _, metrics = recorder(queue_size=3)
    results = [rec.record(event(reason=f"R{i}")) for i in range(5)]
    assert results == [True, True, True, False, False]
    assert value(metrics, "reprieve_events_dropped_total", cause="queue full") == 2
    assert value(metrics, "reprieve_events_queued") == 3
    rec.drain()
    assert len(sink.calls) == 3 and value(metrics, "reprieve_events_queued") == 0


def test_record_never_waits_for_a_stuck_api_server():
    """The writer thread is stuck in a write that never returns; recording goes on regardless
    (no timing: if record() waited for the writer, the recording thread would never finish)."""
    release, entered = threading.Event(), threading.Event()

    class StuckSink(FakeSink):
        def create(self, namespace, body):
            entered.set()
            release.wait()
            super().create(namespace, body)

    metrics = Metrics()
    rec = Recorder(StuckSink(), metrics=metrics, instance="reprieve-test", queue_size=10).start()
    try:
        rec.record(event(regarding=Ref("Pod", "first", "shop", "uid-first")))
        assert entered.wait(10), "the writer took the first Event"
        results = []
        recording = threading.Thread(
            target=lambda: results.extend(
                rec.record(event(regarding=Ref("Pod", f"p{i}", "shop", f"uid-{i}"))) for i in range(1000)
            )
        )
        recording.start()
        recording.join(timeout=30)
        assert not recording.is_alive(), "record() blocked behind the stuck write"
        assert results.count(True) == 10 and results.count(False) == 990
        assert value(metrics, "reprieve_events_dropped_total", cause="queue full") == 990
    finally:
        release.set()
        rec.stop()


@pytest.mark.parametrize(
    "failure, cause",
    [
        pytest.param(urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"), "apiserver slow", id="slow"),
        pytest.param(urllib3.exceptions.ConnectTimeoutError("connect timed out"), "apiserver slow", id="connect-slow"),
        pytest.param(urllib3.exceptions.NewConnectionError(None, "refused"), "apiserver error", id="unreachable"),
        pytest.param(ApiError(500, "etcdserver: request timed out"), "apiserver error", id="server-error"),
        pytest.param(ApiError(403, "forbidden"), "apiserver error", id="forbidden"),
    ],
)
def test_a_failed_write_is_dropped_not_retried(failure, cause):
    rec, sink, _, metrics = recorder()
    sink.fail = failure
    assert rec.record(event())  # queued: the failure comes later, in the writer
    rec.drain()
    assert sink.calls == []
    assert value(metrics, "reprieve_events_dropped_total", cause=cause) == 1
    assert value(metrics, "reprieve_events_writes_total", operation="create") == 0
    sink.fail = None
    rec.drain()
    assert sink.calls == [], "nothing was kept for a retry"


def test_a_note_over_the_api_limit_is_cut():
    rec, sink, _, _ = recorder()
    rec.record(event("é" * 600))  # 1200 bytes
    rec.drain()
    note = sink.calls[0][2]["note"]
    assert len(note.encode()) <= 1024 and note.endswith("...") and note.startswith("é" * 500)

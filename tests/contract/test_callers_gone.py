"""A preempt answer whose caller has gone is not recorded in flight (issue 27, point 1).

kube-scheduler gives up on a call after its ``httpTimeout`` and closes the connection (Go's
http.Client); with ``ignorable: true`` it goes on without reprieve for that cycle. An answer
reprieve decides after that reaches nobody, so it must hold nothing: its victims were never
promised, its room never taken. Each case here sends the README's preempt request for
``shop/checkout-0`` so that its caller is gone when the answer is ready, then asks the same
question for a twin preemptor: a reprieve holding the first answer in flight answers the twin
otherwise (the first's victim is promised), one that dropped it answers the twin as it answered
the first. The controls (the first answer taken in time) show the difference is there to see.

Real ``reprieve serve`` processes on loopback (tests/served.py), and the app in process for the
closed connection over the worker threads' path.
"""

from __future__ import annotations

import json
import signal
import socket
import time

import orjson

from extender.config import Settings
from extender.serving.app import create_app
from extender.state.source import StaticCluster
from tests.conftest import ROOT
from tests.served import REQUESTS, call, serve

PREEMPT = (REQUESTS / "preempt.json").read_bytes()


def twin(body: bytes) -> bytes:
    """The same preemptor under another name and UID: a second pod the scheduler asks about."""
    request = json.loads(body)
    request["Pod"]["metadata"] |= {"name": "checkout-1", "uid": "7c2e3d4f-0a1b-4c8d-9e2f-3a4b5c6d7e8f"}
    return json.dumps(request).encode()


def proposals(body: bytes) -> dict:
    return json.loads(body)["NodeNameToMetaVictims"]


def head(length: int) -> bytes:
    return b"POST /preempt HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % length


def answer_of(raw: bytes) -> dict:
    status, _, payload = raw.partition(b"\r\n\r\n")
    assert status.startswith(b"HTTP/1.1 200 "), raw[:200]
    return json.loads(payload)


def read_answer(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    data = b""
    while b"\r\n\r\n" not in data or len(data.partition(b"\r\n\r\n")[2]) < _length(data):
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    return data


def _length(data: bytes) -> int:
    for line in data.partition(b"\r\n\r\n")[0].split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return int(line.split(b":")[1])
    return 1 << 30


def dropped(base: str) -> dict[str, float]:
    from prometheus_client.parser import text_string_to_metric_families

    text = call(f"{base}/metrics")[1].decode()
    return {
        s.labels["reason"]: s.value
        for f in text_string_to_metric_families(text) for s in f.samples
        if s.name == "reprieve_answers_dropped_total" and s.labels["verb"] == "preempt"
    }


def held_for_first(log: str) -> bool:
    """Whether the twin's decision counted the first answer as held: the twin's proposal (the
    same as the first's) shows the scheduler holds no room for checkout-0 on node-a, so a held
    answer is set aside there, and its decision line says so."""
    [line] = [json.loads(l) for l in log.splitlines() if '"msg":"preempt"' in l and '"shop/checkout-1"' in l]
    return any("nominated shop/checkout-0" in r for r in line["nodes"]["node-a"]["reasons"])


def test_control_an_answer_taken_in_time_is_held(tmp_path):
    with serve(tmp_path) as served:
        first = json.loads(call(f"{served.base}/preempt", PREEMPT)[1])
        assert first != {"NodeNameToMetaVictims": proposals(PREEMPT)}, "reprieve's own answer, not the scheduler's"
        call(f"{served.base}/preempt", twin(PREEMPT))
        assert held_for_first(served.output())
        assert dropped(served.base) == {"connection closed": 0, "past httpTimeout": 0}


def test_an_answer_ready_after_httpTimeout_is_dropped_and_the_scheduler_gets_its_own(tmp_path):
    with serve(tmp_path, "--http-timeout", "300ms") as served:
        with socket.create_connection(("127.0.0.1", served.port)) as sock:
            sock.sendall(head(len(PREEMPT)) + PREEMPT[:100])
            time.sleep(0.6)  # the head arrived 0.6 s before the body ends: past the 300 ms
            sock.sendall(PREEMPT[100:])
            late = answer_of(read_answer(sock))
        assert late == {"NodeNameToMetaVictims": proposals(PREEMPT)}, "the scheduler's own proposal, held nowhere"
        call(f"{served.base}/preempt", twin(PREEMPT))
        assert not held_for_first(served.output())
        assert dropped(served.base) == {"connection closed": 0, "past httpTimeout": 1}
        log = served.output()
        assert "preempt answer for shop/checkout-0 (node node-a, 1 victim(s)) not held in flight: its caller has gone (past httpTimeout)" in log
        [line] = [json.loads(l) for l in log.splitlines() if '"msg":"preempt"' in l and '"shop/checkout-0"' in l]
        assert line["dropped"] == "past httpTimeout" and line["chosen"] == ["node-a"]


def test_an_answer_to_a_closed_connection_is_dropped(tmp_path):
    with serve(tmp_path) as served:
        # Stopped for less than the stall guard's second (extender/stall.py): the request and its
        # connection's end wait in the socket together, as for a scheduler that gave up.
        served.proc.send_signal(signal.SIGSTOP)
        try:
            with socket.create_connection(("127.0.0.1", served.port)) as sock:
                sock.sendall(head(len(PREEMPT)) + PREEMPT)
            time.sleep(0.3)
        finally:
            served.proc.send_signal(signal.SIGCONT)
        call(f"{served.base}/preempt", twin(PREEMPT))
        assert not held_for_first(served.output())
        assert dropped(served.base) == {"connection closed": 1, "past httpTimeout": 0}


def test_in_process_only_the_answer_whose_caller_waits_is_held(example_view):
    """The app's answer callable as the server calls it (inline, or on a worker thread for a
    body over INLINE_BYTES: the same ``arrived`` and ``closed`` either way)."""
    app = create_app(Settings(), cluster=StaticCluster(example_view))
    answer, ledger = app.extensions["reprieve"]["answers"]["/preempt"], app.extensions["reprieve"]["ledger"]
    code, body = answer(PREEMPT, arrived=time.monotonic(), closed=lambda: True)
    assert (code, orjson.loads(body)) == (200, {"NodeNameToMetaVictims": proposals(PREEMPT)})
    assert len(ledger) == 0
    code, body = answer(PREEMPT, arrived=time.monotonic() - 2.5, closed=lambda: False)  # past the default 2 s
    assert (code, orjson.loads(body)) == (200, {"NodeNameToMetaVictims": proposals(PREEMPT)})
    assert len(ledger) == 0
    # The twin's caller waits (1.9 s is within 2 s): reprieve's own answer, and held.
    code, body = answer(twin(PREEMPT), arrived=time.monotonic() - 1.9, closed=lambda: False)
    assert code == 200 and orjson.loads(body) != {"NodeNameToMetaVictims": proposals(PREEMPT)}
    assert [f.preemptor.name for f in ledger.in_flight(example_view)] == ["checkout-1"]


def test_the_default_http_timeout_is_the_shipped_scheduler_configurations():
    import yaml

    from extender.policy_file import parse_duration

    shipped = yaml.safe_load((ROOT / "manifests" / "scheduler-config.yaml").read_text())["extenders"][0]["httpTimeout"]
    assert parse_duration(shipped) == Settings.http_timeout == Settings().http_timeout
